import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NavCore
import ServiceLifecycle
import Stages
import Synchronization

/// What a stage's input waits for: the publishers behind its endpoints that have not been heard (never, or not
/// for the liveness timeout), with the endpoint and for how long. A stage whose input has no publisher would
/// otherwise wait silently.
final class InputWatch: Sendable {
    let subscriber: BusSubscriber
    /// A publisher silent for less than this is not reported (stages start in any order) [seconds].
    let graceSeconds: Double
    /// When the stage last published a status of its own [seconds, monotonic].
    private let lastStageStatus = Mutex(-Double.infinity)

    init(subscriber: BusSubscriber, graceSeconds: Double = 2) {
        self.subscriber = subscriber
        self.graceSeconds = graceSeconds
    }

    /// The publishers waited for, longer than the grace: (stage, endpoint, seconds waited, ever heard).
    func waitedFor(
        at now: Double = StageTime.system.monotonicSeconds()
    ) -> [(stage: String, endpoint: String, seconds: Double, everHeard: Bool)] {
        self.subscriber.presence.compactMap { presence in
            guard !presence.alive else { return nil }
            let seconds = now - Double(presence.sinceNanoseconds) / 1e9
            guard seconds >= self.graceSeconds else { return nil }
            return (presence.stage, presence.endpoint, seconds, presence.everHeard)
        }
    }

    /// "waiting for publisher 'smoother' at ipc://…/smoother.sock for 12 s" (several joined by "; "), or nil.
    func description(at now: Double = StageTime.system.monotonicSeconds()) -> String? {
        Self.describe(self.waitedFor(at: now))
    }

    static func describe(_ waits: [(stage: String, endpoint: String, seconds: Double, everHeard: Bool)]) -> String? {
        guard !waits.isEmpty else { return nil }
        return waits.map { wait in
            let who = wait.stage.isEmpty ? "a publisher" : "publisher '\(wait.stage)'"
            let seconds = fixedDecimal(wait.seconds, digits: 0)
            return wait.everHeard
                ? "\(who) at \(wait.endpoint) silent for \(seconds) s"
                : "waiting for \(who) at \(wait.endpoint) for \(seconds) s"
        }.joined(separator: "; ")
    }

    func stagePublishedStatus() {
        self.lastStageStatus.withLock { $0 = StageTime.system.monotonicSeconds() }
    }

    var secondsSinceStageStatus: Double {
        StageTime.system.monotonicSeconds() - self.lastStageStatus.withLock { $0 }
    }
}

/// The stage's publisher, with what its input waits for appended to every status the stage publishes.
struct WatchedPublisher: MessagePublisher {
    let base: BusPublisher
    let watch: InputWatch?

    func publish(_ message: BusMessage) async throws {
        guard let watch, case var .status(status) = message else {
            return try await self.base.publish(message)
        }
        watch.stagePublishedStatus()
        if let note = watch.description() { status.message += "; \(note)" }
        try await self.base.publish(.status(status))
    }
}

/// Says what a stage's input waits for while the stage itself says nothing: a status every second (when the stage
/// published none in the last two), a warning in the log once a wait passes ten seconds, and a line when the
/// publisher is heard again.
struct InputWatchReporter: Service {
    let stage: String
    let watch: InputWatch
    let publisher: BusPublisher?
    let counters: @Sendable () -> [StatusCounter]
    let logger: Logger

    func run() async throws {
        var warned: Set<String> = []
        var reported: Set<String> = []
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            guard !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
            let waits = self.watch.waitedFor()
            for wait in waits where wait.seconds >= 10 && !warned.contains(wait.endpoint) {
                warned.insert(wait.endpoint)
                self.logger.warning("\(InputWatch.describe([wait]) ?? "")")
            }
            let waiting = Set(waits.map(\.endpoint))
            for endpoint in warned.subtracting(waiting) {
                warned.remove(endpoint)
                self.logger.info("the publisher at \(endpoint) is heard again")
            }
            guard let publisher else { continue }
            // A wait the status told of has ended: say so once, so that a monitor's last word is not the wait.
            let ended = reported.subtracting(waiting)
            if !ended.isEmpty {
                reported.subtract(ended)
                try? await publisher.publish(
                    .status(
                        StageStatus(
                            timeSeconds: StageTime.system.wallSeconds(), stage: self.stage, health: .running,
                            message: "input: the publisher at \(ended.sorted().joined(separator: ", ")) is heard again",
                            counters: self.counters())))
            }
            guard let note = InputWatch.describe(waits), self.watch.secondsSinceStageStatus >= 2 else { continue }
            reported.formUnion(waiting)
            try? await publisher.publish(
                .status(
                    StageStatus(
                        timeSeconds: StageTime.system.wallSeconds(), stage: self.stage, health: .degraded,
                        message: note,
                        counters: self.counters())))
        }
    }
}
