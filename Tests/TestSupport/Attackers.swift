public import NavCore
import Synchronization
import SystemIO

/// Strangers attacking a server on the lab's network, on threads of their own until stopped; each kind of attack
/// that a hostile-traffic test runs is built from these. Unchecked Sendable: what it is told (its threads, what
/// stopping does) is set before it is shared; afterwards only its atomics change.
public final class Attackers: @unchecked Sendable {
    private let stopping = Atomic<Bool>(false)
    private let ended = Atomic<Int>(0)
    private var threadCount = 0
    private var onStop: () -> Void = {}
    private var isStopped: (() -> Bool)?

    public init() {}

    /// An attack run by `strangers` (which hold connections until told to stop).
    public convenience init(_ strangers: SilentStrangers) {
        self.init()
        self.onStop = { strangers.stop() }
        self.isStopped = { strangers.stopped }
    }

    /// `count` threads running `body(index, stopping)` once each.
    public func threads(_ count: Int, _ body: @escaping @Sendable (Int, () -> Bool) -> Void) {
        self.threadCount = count
        for index in 0..<count {
            SystemThread.start(name: "attack-\(index)") { [self] in
                body(index, { self.stopping.load(ordering: .relaxed) })
                self.ended.add(1, ordering: .relaxed)
            }
        }
    }

    /// `count` threads, each from its own address 127.0.0.`base + index`, opening a connection to `port` and running
    /// `body` on it over and over (at most 10 times a second each: the suites beside a test time what they measure on
    /// the same two cores) until stopped.
    public func loops(
        _ count: Int, base: Int, port: UInt16, _ body: @escaping @Sendable (RawClient, inout SeededGenerator) -> Void
    ) {
        self.threads(count) { index, stopping in
            var random = SeededGenerator(seed: UInt64(base + index))
            while !stopping() {
                if let client = RawClient(from: "127.0.0.\(base + index)", to: port) { body(client, &random) }
                SystemThread.sleep(seconds: 0.1)
            }
        }
    }

    /// Five strangers (from 127.0.0.`base` on) holding twenty connections each, on which they send `request` a byte
    /// every 0.4 s, all at once (a slow sender that never finishes its head).
    public static func slowSenders(_ request: [UInt8], port: UInt16, base: Int) -> Attackers {
        let running = Attackers()
        running.threads(5) { host, stopping in
            let slow = (0..<20).compactMap { _ in RawClient(from: "127.0.0.\(base + host)", to: port) }
            for byte in request where !stopping() {
                for client in slow { client.send([byte]) }
                SystemThread.sleep(seconds: 0.4)
            }
        }
        return running
    }

    /// Five strangers (from 127.0.0.`base` on) sending up to 4 KB of random bytes on each connection.
    public static func randomBytes(port: UInt16, base: Int) -> Attackers {
        let running = Attackers()
        running.loops(5, base: base, port: port) { client, random in
            client.send(
                (0..<Int.random(in: 1...4096, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            _ = client.answer(within: 0.2)
        }
        return running
    }

    /// Five strangers (from 127.0.0.`base` on) sending a random part of `request` and closing the connection; with
    /// `quietEveryThird`, every third goes quiet for 1.1 s first (past a server's one-second read).
    public static func halfSent(_ request: [UInt8], port: UInt16, base: Int, quietEveryThird: Bool = false) -> Attackers
    {
        precondition(request.count > 1, "a request of two bytes or more, to cut short")
        let running = Attackers()
        running.loops(5, base: base, port: port) { client, random in
            client.send(Array(request.prefix(Int.random(in: 1..<request.count, using: &random))))
            if quietEveryThird, Int.random(in: 0..<3, using: &random) == 0 { SystemThread.sleep(seconds: 1.1) }
        }
        return running
    }

    /// Tells every thread to stop (each ends after its current step).
    public func stop() {
        self.stopping.store(true, ordering: .relaxed)
        self.onStop()
    }

    /// Every thread has ended.
    public var stopped: Bool { self.isStopped?() ?? (self.ended.load(ordering: .relaxed) == self.threadCount) }
}
