public import NavCore
import Synchronization
import SystemIO

/// Strangers attacking a server on the lab's network, on threads of their own until stopped; each kind of attack
/// that a hostile-traffic test runs is built from these.
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

    /// Tells every thread to stop (each ends after its current step).
    public func stop() {
        self.stopping.store(true, ordering: .relaxed)
        self.onStop()
    }

    /// Every thread has ended.
    public var stopped: Bool { self.isStopped?() ?? (self.ended.load(ordering: .relaxed) == self.threadCount) }
}
