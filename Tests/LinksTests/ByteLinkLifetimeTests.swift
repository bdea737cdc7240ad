import CPseudoTerminal
import Foundation
import Synchronization
@testable import Links
import TestSupport
import Testing

/// A closed link must never touch its old descriptor number again: the process reuses the number for the next socket
/// it opens, and a band frame written there lands in a stranger's stream (two full test runs saw an HTTP exchange
/// in another suite receive bytes nobody in it had sent).
@Suite struct ByteLinkLifetimeTests {
    private static func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

    private static func socketPair() -> (Int32, Int32)? {
        var pair: [Int32] = [-1, -1]
        // Close-on-exec: a program another suite starts meanwhile would otherwise hold an end open (and a peer that
        // goes would never be seen).
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            return nil
        }
        return (pair[0], pair[1])
    }

    @Test func aClosedLinkWritesNothingToTheNextSocketGivenItsNumber() async throws {
        // Another part of this process could still take the freed number and keep it: then the whole check is made
        // again with a new link, a few times.
        var checked = false
        var holders: [String] = []
        for _ in 0..<5 where !checked {
            switch try await Self.writeAfterCloseReachesNoStranger() {
            case .checked: checked = true
            case let .numberHeldElsewhere(holder): holders.append(holder)
            }
        }
        #expect(checked, "the freed number was taken elsewhere in this process every time: \(holders)")
    }

    private enum Attempt { case checked, numberHeldElsewhere(String) }

    /// `fd` moved to the lowest free number at or above `minimum` (close-on-exec), or nil.
    private static func moved(_ fd: Int32, to minimum: Int32) -> Int32? {
        let moved = fcntl(fd, F_DUPFD_CLOEXEC, minimum)
        close(fd)
        return moved >= 0 ? moved : nil
    }

    private static func writeAfterCloseReachesNoStranger() async throws -> Attempt {
        // The link's descriptor sits far above the numbers the rest of this process takes (the lowest free ones: its
        // suites open and close descriptors all the time), so that the freed number can be given to a new socket
        // here without racing them for it.
        let (low, far) = try #require(Self.socketPair())
        defer { close(far) }
        let near = try #require(Self.moved(low, to: 700 + Int32.random(in: 0..<200)))
        let link = ByteLink(descriptor: near)
        let closedAt = Mutex<Int32?>(nil)
        link.whenClosing { fd in closedAt.withLock { $0 = fd } }
        #expect(link.write(Array("before".utf8)))
        link.close()
        #expect(link.isClosed)
        // The descriptor goes back to the system once the reading thread has left it, after the closing actions.
        #expect(await eventually(within: 5) { closedAt.withLock { $0 } == near })

        // A new socket at the old number (the lowest free one from there: it, unless something else took it), then a
        // write through the closed link: nothing is written and nothing arrives.
        let (fresh, strangersPeer) = try #require(Self.socketPair())
        defer { close(strangersPeer) }
        let stranger = try #require(Self.moved(fresh, to: near))
        defer { close(stranger) }
        guard stranger == near else {
            return .numberHeldElsewhere(
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(near)")) ?? "nothing")
        }
        #expect(!link.write(Array("a band frame".utf8)))
        link.close()
        var waiting = pollfd(fd: strangersPeer, events: Int16(POLLIN), revents: 0)
        #expect(poll(&waiting, 1, 200) == 0, "the closed link wrote into the socket that now has its number")
        #expect(Self.isOpen(stranger), "the closed link closed the socket that now has its number")
        return .checked
    }

    @Test func aReaderThatStopsListeningLeavesTheLinkOpenAndAPeerThatGoesClosesIt() async throws {
        let (near, far) = try #require(Self.socketPair())
        let link = ByteLink(descriptor: near)
        // The task reading the link is cancelled (a band's stage stopping): its owner can still send the last frame.
        let reader = Task { for await _ in link.chunks {} }
        reader.cancel()
        _ = await reader.value
        #expect(!link.isClosed)
        #expect(link.write(Array("stop".utf8)))
        var buffer = [UInt8](repeating: 0, count: 16)
        var waiting = pollfd(fd: far, events: Int16(POLLIN), revents: 0)
        #expect(poll(&waiting, 1, 2000) == 1)
        #expect(read(far, &buffer, buffer.count) == 4)
        // The peer goes: the link sees it within the reading thread's wait, and no write starts after that.
        close(far)
        #expect(await eventually(within: 5) { link.isClosed })
        #expect(!link.write(Array("late".utf8)))
        link.close()
    }

    @Test func closingALinkOnAPseudoTerminalEndsItsReadingWithinASecond() async throws {
        var name = [CChar](repeating: 0, count: 256)
        let master = hn_open_pseudo_terminal(&name, name.count)
        try #require(master >= 0)
        defer { close(master) }
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(slave >= 0)
        let link = ByteLink(descriptor: slave)
        let freed = Mutex(false)
        link.whenClosing { _ in freed.withLock { $0 = true } }
        let ended = Mutex(false)
        let reader = Task {
            for await _ in link.chunks {}
            ended.withLock { $0 = true }
        }
        defer { reader.cancel() }
        let started = Date()
        link.close()
        // A terminal is not woken by shutdown; the reading thread's bounded wait sees the close.
        #expect(await eventually(within: 5) { ended.withLock { $0 } })
        #expect(await eventually(within: 5) { freed.withLock { $0 } })
        print(
            "bytelink: a pseudo-terminal link closed and its descriptor freed after \(Date().timeIntervalSince(started)) s"
        )
    }
}
