import Foundation
import NavCore
import Synchronization
import SystemIO
import Testing
import TestSupport

@testable import Links

/// When each phone's pushes were answered [monotonic seconds].
private final class Pushes: Sendable {
    let times = Mutex<[String: [Double]]>([:])
}

/// What the phones and the strangers of one test share.
private final class Attack: Sendable {
    let stop = Atomic<Bool>(false)
    let phoneErrors = Mutex<[String]>([])
    let held = Mutex<[RawClient]>([])
    let slowOpened = Atomic<Int>(0)
    let strangersDone = Atomic<Int>(0)
    let phonesDone = Atomic<Int>(0)
}

extension HTTPServer {
    /// A counter's value by name (0 when absent).
    fileprivate func counter(_ name: String) -> UInt64 {
        self.counters.first { $0.name == name }?.value ?? 0
    }
}

/// Hostile traffic against the push server, as a stranger on the lab's Wi-Fi could send it, while phones push.
@Suite(.serialized) struct HTTPServerHostileTests {
    private static let token = "s3cret"

    /// A push server as the Sensor Logger source runs one: the secret checked on the head, every push answered.
    private static func pushServer(_ pushes: Pushes) throws -> HTTPServer {
        try HTTPServer(
            host: "127.0.0.1", port: 0,
            admit: { request in
                guard request.path == "/push" else { return .text(404, "not found") }
                guard request.query["token"] == token else { return .text(403, "forbidden") }
                return nil
            },
            handler: { request in
                let phone = request.query["phone"] ?? "?"
                pushes.times.withLock { $0[phone, default: []].append(SystemClock.monotonicSeconds()) }
                return .text(200, "ok")
            })
    }

    /// Longest time between two pushes that came through, and from the first push to `until` [seconds].
    private static func longestGap(_ times: [Double], from start: Double, until end: Double) -> Double {
        let inside = [start] + times.filter { $0 > start && $0 < end } + [end]
        return zip(inside, inside.dropFirst()).map { $1 - $0 }.max() ?? .infinity
    }

    /// Strangers (from addresses of their own) hold five hundred connections without a byte, opening another
    /// whenever the server closes one, and a hundred more send their heads a byte at a time. Then two phones come and
    /// push ten times a second for eight seconds, one on a kept-alive connection and one with a new connection each
    /// time: neither goes more than 3 s without a push answered (the time from the phones' start counts as a gap),
    /// where a phone locked out would wait for a stranger's slot to free (up to its 10 or 15 s limit).
    @Test func strangersHoldingConnectionsDoNotLockAPhoneOut() async throws {
        let pushes = Pushes()
        let server = try Self.pushServer(pushes)
        defer { server.close() }
        let port = server.port
        let attack = Attack()
        // The phones push from threads of their own: on the test process's cooperative pool, shared with the suites
        // running beside this one, a loaded machine starved them for seconds (the gap was theirs, not the server's).
        func phone(_ name: String, newConnectionEachTime: Bool) {
            SystemThread.start(name: "phone-\(name)") {
                let request =
                    "POST /push?token=\(Self.token)&phone=\(name) HTTP/1.1\r\nHost: lab\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
                var client: RawClient?
                while !attack.stop.load(ordering: .relaxed) {
                    if newConnectionEachTime || client == nil { client = RawClient(from: "127.0.0.1", to: port) }
                    let status = client?.exchange(request, within: 2)
                    if status != 200 {
                        attack.phoneErrors.withLock { $0.append("\(name): \(status.map(String.init) ?? "no answer")") }
                        client = nil
                    }
                    SystemThread.sleep(seconds: 0.1)
                }
                attack.phonesDone.add(1, ordering: .relaxed)
            }
        }
        let attackStart = SystemClock.monotonicSeconds()
        // Five hundred silent connections from five addresses, opened again as soon as the server closes one, and a
        // hundred slow senders from five more, on threads of their own (they block).
        let silent = SilentStrangers(from: (10..<15).map { "127.0.0.\($0)" }, to: port, connections: 100)
        for host in 0..<5 {
            SystemThread.start(name: "slow-\(host)") {
                let slow = (0..<20).compactMap { _ in RawClient(from: "127.0.0.\(20 + host)", to: port) }
                attack.slowOpened.add(slow.count, ordering: .relaxed)
                let head = Array("POST /push?token=\(Self.token) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n".utf8)
                for byte in head.prefix(12) {
                    if attack.stop.load(ordering: .relaxed) { break }
                    for client in slow { client.send([byte]) }
                    SystemThread.sleep(seconds: 0.4)
                }
                attack.held.withLock { $0 += slow }
                attack.strangersDone.add(1, ordering: .relaxed)
            }
        }
        // The phones come once the strangers hold their connections, and push for eight seconds.
        while silent.opened + attack.slowOpened.load(ordering: .relaxed) < 300 {
            try #require(
                SystemClock.monotonicSeconds() - attackStart < 30,
                "the strangers opened \(silent.opened + attack.slowOpened.load(ordering: .relaxed)) connections in 30 s; evicted \(server.counter("http.evicted")), refused \(server.counter("http.refusedConnections"))"
            )
            try await Task.sleep(for: .milliseconds(20))
        }
        let phonesStart = SystemClock.monotonicSeconds()
        phone("kept", newConnectionEachTime: false)
        phone("fresh", newConnectionEachTime: true)
        while SystemClock.monotonicSeconds() - phonesStart < 8 { try await Task.sleep(for: .milliseconds(100)) }
        let attackEnd = SystemClock.monotonicSeconds()
        attack.stop.store(true, ordering: .relaxed)
        silent.stop()
        while attack.phonesDone.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(50)) }
        while attack.strangersDone.load(ordering: .relaxed) < 5 || !silent.stopped {
            try await Task.sleep(for: .milliseconds(50))
        }
        let openedCount = silent.opened + attack.slowOpened.load(ordering: .relaxed)
        attack.held.withLock { $0.removeAll() }
        let times = pushes.times.withLock { $0 }
        let keptGap = Self.longestGap(times["kept"] ?? [], from: phonesStart, until: attackEnd)
        let freshGap = Self.longestGap(times["fresh"] ?? [], from: phonesStart, until: attackEnd)
        print(
            "hostile: \(openedCount) strangers' connections opened; longest gap between pushes: kept-alive phone "
                + String(format: "%.2f s, new-connection phone %.2f s; ", keptGap, freshGap)
                + "evicted \(server.counter("http.evicted")), refused \(server.counter("http.refusedConnections")); "
                + "phone errors \(attack.phoneErrors.withLock { $0.count })")
        #expect(openedCount >= 300, "the strangers could not even connect: the test shows nothing")
        // A phone locked out waits for a slot to free: a silent stranger holds one up to the 15 s idle limit, a slow
        // one up to the 10 s request limit, and the strangers open another at once. Let in by the eviction of a quiet
        // stranger, it goes 0.15-0.4 s without an answer on a quiet machine and up to 1.9 s with two busy loops
        // beside the suite (its threads, the strangers' and the server's sharing two cores). 3 s, well inside the
        // eight seconds it pushes for, tells the two apart on either.
        #expect(keptGap <= 3, "the kept-alive phone went \(keptGap) s without a push answered")
        #expect(freshGap <= 3, "the new-connection phone went \(freshGap) s without a push answered")
        #expect(server.counter("http.evicted") > 0)
    }

    /// A request with a wrong secret is refused on its head: its announced megabyte of body is never waited for.
    /// The same head with the right secret waits for its body (and gets no answer until the request's deadline).
    @Test func theSecretIsCheckedBeforeTheBodyIsRead() throws {
        let pushes = Pushes()
        let server = try Self.pushServer(pushes)
        defer { server.close() }
        let head = "POST /push?token=%@ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
        let stranger = try #require(RawClient(from: "127.0.0.30", to: server.port))
        let started = SystemClock.monotonicSeconds()
        stranger.send(String(format: head, "wrong"))
        let answer = stranger.answer(within: 5)
        #expect(answer.hasPrefix("HTTP/1.1 403"), "answered: \(answer.prefix(40))")
        #expect(SystemClock.monotonicSeconds() - started < 2)
        let rightful = try #require(RawClient(from: "127.0.0.31", to: server.port))
        rightful.send(String(format: head, Self.token))
        #expect(rightful.answer(within: 0.5).isEmpty, "a request is answered only once its body is in")
        #expect(server.counter("http.refusedBeforeBody") == 1)
        #expect(pushes.times.withLock { $0.isEmpty })
    }

    /// Malformed and oversized requests, each answered and counted, and the server still serves the next.
    @Test func malformedAndOversizedRequestsAreRefusedAndCounted() throws {
        let pushes = Pushes()
        var limits = HTTPServer.Limits()
        limits.maximumBodyBytes = 1000
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, limits: limits,
            handler: { request in
                pushes.times.withLock { $0["ok", default: []].append(0) }
                return .text(200, "ok")
            })
        defer { server.close() }
        func exchange(_ bytes: [UInt8]) -> String {
            guard let client = RawClient(from: "127.0.0.40", to: server.port) else { return "no connection" }
            client.send(bytes)
            return client.answer(within: 5)
        }
        var random = SeededGenerator(seed: 7)
        let garbage = (0..<600).map { _ in UInt8.random(in: 0...255, using: &random) } + Array("\r\n\r\n".utf8)
        let cases: [(String, [UInt8], String)] = [
            ("random bytes", garbage, "400"),
            (
                "chunked body",
                Array(
                    "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex\r\n0\r\n\r\n".utf8),
                "400"
            ),
            (
                "a head beyond its limit",
                Array(("GET /p HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000)).utf8), "413"
            ),
            (
                "a body beyond its limit", Array("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n".utf8),
                "413"
            ),
            ("a negative length", Array("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: -4\r\n\r\n".utf8), "400"),
            ("not HTTP/1", Array("GET /p SPDY/3\r\n\r\n".utf8), "400"),
        ]
        for (name, bytes, status) in cases {
            let answer = exchange(bytes)
            #expect(answer.hasPrefix("HTTP/1.1 \(status)"), "\(name): answered \(answer.prefix(30))")
        }
        #expect(exchange(Array("GET /p HTTP/1.1\r\nHost: x\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 200"))
        #expect(server.counter("http.malformed") == 4)
        #expect(server.counter("http.tooLarge") == 2)
    }

    /// The slots' rule, with its clock in hand: a peer makes room from its own; a full server gives a newcomer a slot
    /// of the peer holding the most strangers' connections, else of the stranger quiet longest (once quiet long
    /// enough, and read at all); a proven client keeps its slot.
    @Test func aFullServerMakesRoomFromStrangersAndNeverFromAProvenClient() throws {
        let slots = ConnectionSlots(capacity: 4, perPeer: 2, quietNanoseconds: 250_000_000)
        // Socket pairs: the far end of a connection closed to make room sees the end of its stream.
        func pair() -> (near: Int32, far: Int32) {
            var ends: [Int32] = [-1, -1]
            _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends)
            return (ends[0], ends[1])
        }
        func shutDown(_ far: Int32) -> Bool {
            var byte: UInt8 = 0
            var descriptor = pollfd(fd: far, events: Int16(POLLIN), revents: 0)
            return poll(&descriptor, 1, 0) == 1 && recv(far, &byte, 1, Int32(MSG_DONTWAIT)) == 0
        }
        @discardableResult
        func take(
            _ end: (near: Int32, far: Int32), _ peer: String, at milliseconds: Int64, begin: Bool = true
        )
            -> (slot: ConnectionSlots.Slot?, evicted: Bool)
        {
            let taken = slots.take(end.near, peer: peer, now: milliseconds * 1_000_000)
            if begin, let slot = taken.slot { slots.began(slot, now: milliseconds * 1_000_000) }
            return taken
        }
        let a1 = pair(), a2 = pair(), a3 = pair()
        let first = try #require(take(a1, "10.0.0.1", at: 0).slot)
        take(a2, "10.0.0.1", at: 10)
        slots.heard(first, now: 20_000_000)
        // The peer's third: its own quietest (the second, heard at 10 ms) makes room.
        #expect(take(a3, "10.0.0.1", at: 30).evicted)
        #expect(shutDown(a2.far) && !shutDown(a1.far) && slots.count == 2)
        // Two more peers fill the server; one of them proves itself.
        let b = pair(), c = pair()
        take(b, "10.0.0.2", at: 40)
        let proven = try #require(take(c, "10.0.0.3", at: 50).slot)
        slots.proved(proven, now: 60_000_000)
        #expect(slots.count == 4)
        // Full: a newcomer takes a slot of the peer holding two (its quietest, the first), quiet or not.
        let d = pair(), e = pair(), f = pair(), g = pair(), h = pair()
        #expect(take(d, "10.0.0.4", at: 100).evicted)
        #expect(shutDown(a1.far) && !shutDown(a3.far))
        // Every peer holds one now: only a stranger quiet for 250 ms makes room, and none is yet.
        #expect(take(e, "10.0.0.5", at: 150).slot == nil)
        // Later the quietest stranger (the third, heard at 30 ms) gives way; this newcomer's thread does not begin.
        #expect(take(e, "10.0.0.5", at: 400, begin: false).evicted)
        #expect(shutDown(a3.far))
        // A connection whose thread has not begun to read it is not judged quiet, however long it has waited.
        #expect(take(f, "10.0.0.6", at: 1000).evicted)
        #expect(shutDown(b.far) && !shutDown(e.far))
        #expect(take(g, "10.0.0.7", at: 1000).evicted)
        #expect(shutDown(d.far) && !shutDown(e.far))
        #expect(take(h, "10.0.0.8", at: 1100).slot == nil)
        #expect(!shutDown(c.far) && !shutDown(e.far) && slots.count == 4)
        for end in [a1, a2, a3, b, c, d, e, f, g, h] {
            close(end.near)
            close(end.far)
        }
    }
}
