import CPseudoTerminal
import Foundation
@testable import Links
import Synchronization
import SystemIO
import TestSupport
import Testing

/// A device that stops reading (a band's firmware hung, a BLE bridge stuck, flow control holding a serial port) must
/// not hold its writer for ever: the band's actor would hang with it, and with the actor the sink's fallback and its
/// warning. A write gives up at its time limit; a peer that reads slowly still gets every byte.
@Suite struct ByteLinkWriteTests {
    /// A pseudo-terminal in raw mode (no line discipline between the bytes written and those read): the link's end
    /// and the other end, which the test reads or leaves unread.
    private static func pseudoTerminal() throws -> (link: ByteLink, master: Int32) {
        var name = [CChar](repeating: 0, count: 256)
        let master = hn_open_pseudo_terminal(&name, name.count)
        try #require(master >= 0)
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(slave >= 0)
        var options = termios()
        try #require(tcgetattr(slave, &options) == 0)
        cfmakeraw(&options)
        try #require(tcsetattr(slave, TCSANOW, &options) == 0)
        return (ByteLink(descriptor: slave), master)
    }

    /// Writes `chunk` again and again on a thread of its own, each write limited to `timeoutSeconds`, until one fails
    /// (or `limit` writes went through): the number of writes that went through and how long the failing one took
    /// [seconds], once one failed.
    private static func writeUntilRefused(
        _ link: ByteLink, chunk: [UInt8], timeoutSeconds: Double, limit: Int
    ) async -> (accepted: Int, refusedAfterSeconds: Double)? {
        let outcome = Mutex<(Int, Double)?>(nil)
        SystemThread.start(name: "test-writer") {
            var accepted = 0
            var started = SystemClock.monotonicNanoseconds()
            while accepted < limit {
                started = SystemClock.monotonicNanoseconds()
                guard link.write(chunk, timeoutSeconds: timeoutSeconds) else { break }
                accepted += 1
            }
            let took = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
            outcome.withLock { $0 = (accepted, took) }
        }
        // Bounded: a write that waited for ever would fail the test here (closing the link then frees the thread).
        _ = await eventually(within: 30) { outcome.withLock { $0 } != nil }
        return outcome.withLock { $0.map { (accepted: $0.0, refusedAfterSeconds: $0.1) } }
    }

    /// Writes chunks of `chunkBytes` to a `peer` that reads nothing, each within 0.2 s: the peer's buffers take some,
    /// then a write finds no room, waits its 0.2 s for some and gives up (not at the first sign of a full buffer; how
    /// much later is the machine's business).
    private static func expectWritesGiveUpAtTheirLimit(_ link: ByteLink, chunkBytes: Int, peer: String) async throws {
        let outcome = try #require(
            await Self.writeUntilRefused(
                link, chunk: [UInt8](repeating: 0x55, count: chunkBytes), timeoutSeconds: 0.2, limit: 65_536),
            "a write to \(peer) never returned")
        #expect(outcome.accepted > 0 && outcome.accepted < 65_536)
        #expect(outcome.refusedAfterSeconds >= 0.2)
    }

    @Test func aWriteToATerminalNobodyReadsGivesUpAtItsTimeLimit() async throws {
        let (link, master) = try Self.pseudoTerminal()
        defer {
            link.close()
            close(master)
        }
        try await Self.expectWritesGiveUpAtTheirLimit(link, chunkBytes: 1024, peer: "an unread terminal")
        // The link itself is still open: its owner decides (a band closes it and connects again).
        #expect(!link.isClosed)
    }

    @Test func aWriteToATCPPeerThatAcceptedButNeverReadsGivesUpAtItsTimeLimit() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 }
        }
        try #require(bound && listen(listener, 1) == 0)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let link = try ByteLink.tcp(host: "127.0.0.1", port: UInt16(bigEndian: address.sin_port))
        let peer = accept(listener, nil, nil)
        try #require(peer >= 0)
        _ = fcntl(peer, F_SETFD, FD_CLOEXEC)
        defer {
            link.close()
            close(peer)
        }
        // The peer holds its connection open and reads nothing: the kernel's buffers fill, then a write waits.
        try await Self.expectWritesGiveUpAtTheirLimit(link, chunkBytes: 16_384, peer: "a TCP peer that never reads")
    }

    @Test func aPeerThatReadsSlowlyGetsEveryByteInOrder() async throws {
        let (link, master) = try Self.pseudoTerminal()
        defer { link.close() }
        // Far more than a terminal's buffer holds, so that the write waits for room many times.
        let message = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        let received = Mutex<[UInt8]>([])
        let readerEnded = Atomic<Bool>(false)
        // The reading thread owns the terminal's other end and closes it as it ends: no descriptor number is read
        // after it was given back (another suite's socket may have it by then).
        SystemThread.start(name: "test-reader") {
            defer {
                close(master)
                readerEnded.store(true, ordering: .releasing)
            }
            var buffer = [UInt8](repeating: 0, count: 512)
            while received.withLock({ $0.count }) < message.count {
                var waiting = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, 30_000) == 1 else { return }
                let count = read(master, &buffer, buffer.count)
                guard count > 0 else { return }
                received.withLock { $0 += buffer[0..<count] }
                // The reader is slow: a little at a time, with pauses.
                SystemThread.sleep(seconds: 0.0005)
            }
        }
        let written = Mutex<Bool?>(nil)
        SystemThread.start(name: "test-writer") {
            let ok = link.write(message, timeoutSeconds: 60)
            written.withLock { $0 = ok }
        }
        #expect(await eventually(within: 90) { written.withLock { $0 } != nil })
        #expect(written.withLock { $0 } == true)
        #expect(await eventually(within: 90) { readerEnded.load(ordering: .acquiring) })
        #expect(received.withLock { $0 } == message)
    }
}
