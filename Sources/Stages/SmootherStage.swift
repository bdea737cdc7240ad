public import Logging
public import NavCore
public import ServiceLifecycle

/// Smooths raw ``LocationFix`` messages and republishes them as ``SmoothedFix``.
///
/// A fix whose time is not sane (``InputTimeGuard``: dated ahead of its stream, or before it) is counted and
/// dropped; a time line that really moved resets the filter, so smoothing resumes with the next fix. A fix the
/// filter rejects (NaN, a bad accuracy) is counted and dropped; the stream goes on. Status reports carry both sets
/// of counters, every `statusIntervalSeconds` of fix time, and at once when a fix is dropped for its time.
public actor SmootherStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == Arrival<LocationFix> {
    private let name: String
    private let input: Input
    private let output: Output
    private var filter: any SmoothingFilter
    private let logger: Logger
    private let statusIntervalSeconds: Double
    private var lastStatusTime = -Double.infinity
    private var loggedRejections: Set<FixRejection> = []
    private var timeCheck: InputTimeCheck
    /// The transport's counters for this stage's input (bad frames, gaps), for status.
    private let inputCounters: @Sendable () -> [StatusCounter]
    /// The clocks its status is dated by.
    private let time: StageTime

    /// Creates the stage.
    public init(
        name: String, input: Input, output: Output, filter: any SmoothingFilter, logger: Logger,
        statusIntervalSeconds: Double = 5, timeOptions: InputTimeGuard.Options = .init(latenessLimitSeconds: nil),
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }, time: StageTime = .system
    ) {
        self.time = time
        self.inputCounters = inputCounters
        self.timeCheck = InputTimeCheck(owner: "smoother '\(name)'", options: timeOptions, logger: logger)
        self.name = name
        self.input = input
        self.output = output
        self.filter = filter
        self.logger = logger
        self.statusIntervalSeconds = statusIntervalSeconds
    }

    public func run() async throws {
        try await self.output.publish(
            .status(
                StageStatus(
                    timeSeconds: self.time.wallSeconds(), stage: self.name,
                    health: .running, message: "smoothing")))
        do {
            // (Not `cancelOnGracefulShutdown()`, whose task of its own leaves the preferred thread per message.)
            try await cancelWhenGracefulShutdown {
                for try await arrival in self.input { try await self.handle(arrival) }
            }
        } catch is CancellationError {}
        try? await self.output.publish(
            .status(
                StageStatus(
                    timeSeconds: self.time.wallSeconds(), stage: self.name,
                    health: .stopping, message: self.message("stopped"),
                    counters: self.counters)))
    }

    private var counters: [StatusCounter] {
        self.filter.statusCounters + self.timeCheck.statusCounters + self.inputCounters()
    }

    private func message(_ base: String) -> String {
        let drops = self.timeCheck.dropSummary
        return drops.isEmpty ? base : "\(base); \(drops)"
    }

    /// Smooths one fix (exposed for in-process composition and tests).
    public func handle(_ arrival: Arrival<LocationFix>) async throws {
        let fix = arrival.value
        switch self.timeCheck.admit(arrival, topic: "fix", measurementSeconds: fix.timeSeconds) {
        case .accept:
            break
        case .rebase:
            self.filter.reset()
        case .drop:
            if self.timeCheck.dropReportDue(at: arrival.receivedSeconds) {
                try await self.output.publish(
                    .status(
                        StageStatus(
                            timeSeconds: self.time.wallSeconds(), stage: self.name,
                            health: .degraded, message: self.message("smoothing"),
                            counters: self.counters)))
            }
            return
        }
        switch self.filter.update(with: fix) {
        case let .success(smoothed):
            try await self.output.publish(.smoothed(smoothed))
        case let .failure(reason):
            if self.loggedRejections.insert(reason).inserted {
                self.logger.warning(
                    "smoother '\(self.name)': dropped a fix (\(reason.rawValue)) at time \(fix.timeSeconds); further ones are counted"
                )
            }
        }
        if fix.timeSeconds.isFinite, fix.timeSeconds - self.lastStatusTime >= self.statusIntervalSeconds {
            self.lastStatusTime = fix.timeSeconds
            try await self.output.publish(
                .status(
                    StageStatus(
                        timeSeconds: self.time.wallSeconds(), stage: self.name,
                        health: .running, message: "smoothing",
                        counters: self.counters)))
        }
    }
}
