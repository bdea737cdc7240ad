import Bus
import Dispatch
import Synchronization
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT for a command that finishes cleanly: they no longer kill the process; each runs `action` and sets
/// ``isSet``, which a command working in a loop of its own checks at each step.
final class StopSignals: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private var sources: [any DispatchSourceSignal] = []

    init(_ action: @escaping @Sendable () -> Void = {}) {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        self.sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                self?.flag.store(true, ordering: .relaxed)
                action()
            }
            source.resume()
            return source
        }
    }

    var isSet: Bool { self.flag.load(ordering: .relaxed) }

    func cancel() { self.sources.forEach { $0.cancel() } }
}

/// Closes a command's subscriber on SIGTERM or SIGINT, or after `seconds`, so that its receive loop ends and the
/// command finishes what it was doing (prints its counts, closes its file).
final class SubscriberStop {
    private let signals: StopSignals

    init(_ subscriber: BusSubscriber, seconds: Double?) {
        self.signals = StopSignals { subscriber.close() }
        if let seconds {
            let deadline = ContinuousClock.now + .seconds(seconds)
            SystemThread.start(name: "stop-deadline") {
                while ContinuousClock.now < deadline { SystemThread.sleep(seconds: 0.02) }
                subscriber.close()
            }
        }
    }

    func cancel() { self.signals.cancel() }
}
