public import MapLogic
public import Logging
public import NavCore
public import ServiceLifecycle
public import Stages

/// Smooths raw ``LocationFix`` messages and republishes them as ``SmoothedFix``.
///
/// A fix whose time is not sane (``InputTimeGuard``: dated ahead of its stream, or before it) or that arrives later
/// than the lateness limit (a backlog) is counted and dropped; a time line that really moved resets the filter, so
/// smoothing resumes with the next fix. A fix the filter rejects (NaN, a bad accuracy) is counted and dropped; the
/// stream goes on. Status reports carry both sets of counters, every `statusIntervalSeconds` of fix time, and at once
/// when a fix is dropped for its time.
public actor SmootherStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == Arrival<LocationFix> {
    private let name: String
    private let input: Input
    private let output: Output
    private var filter: any SmoothingFilter
    private let logger: Logger
    private var loggedRejections: Set<FixRejection> = []
    private var timeCheck: InputTimeCheck
    /// Its status, every `statusIntervalSeconds` of fix time.
    private var reporter: StatusReporter<Output>

    /// Creates the stage.
    public init(
        name: String, input: Input, output: Output, filter: any SmoothingFilter, logger: Logger,
        statusIntervalSeconds: Double = 5,
        timeOptions: InputTimeGuard.Options = .init(
            latenessLimitSeconds: InputTimeGuard.Setting.latenessLimitSeconds.defaultValue),
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }, time: StageTime = .system
    ) {
        self.reporter = StatusReporter(
            stage: name, output: output, time: time, intervalSeconds: statusIntervalSeconds,
            inputCounters: inputCounters)
        self.timeCheck = InputTimeCheck(owner: "smoother '\(name)'", options: timeOptions, logger: logger)
        self.name = name
        self.input = input
        self.output = output
        self.filter = filter
        self.logger = logger
    }

    public func run() async throws {
        try await self.reporter.publish(.running, "smoothing", counters: [])
        do {
            // (Not `cancelOnGracefulShutdown()`, whose task of its own leaves the preferred thread per message.)
            try await cancelWhenGracefulShutdown {
                for try await arrival in self.input { try await self.handle(arrival) }
            }
        } catch is CancellationError {}
        try? await self.status(.stopping, "stopped")
    }

    private func status(_ health: StageHealth, _ message: String) async throws {
        try await self.reporter.publish(
            health, message, counters: self.filter.statusCounters, timeCheck: self.timeCheck)
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
                try await self.status(.degraded, "smoothing")
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
        if fix.timeSeconds.isFinite, self.reporter.due(at: fix.timeSeconds) {
            try await self.status(.running, "smoothing")
        }
    }
}

/// Reads a smoother stage's `options` (its filter's are its plugin's `settings`). Beside the stage it configures; the
/// runtime's factory calls it.
public enum SmootherStageOptions {
    /// Every setting of a smoother stage's `options`.
    public static var settings: [SettingDoc] { [InputTimeGuard.Setting.latenessLimitSeconds.doc] }

    /// The stage's time limits; with `losslessInputs` (a replay at its full rate) late fixes are kept unless the
    /// options give a limit.
    public static func parse(_ settings: Settings, losslessInputs: Bool) throws -> InputTimeGuard.Options {
        var settings = settings
        let limit = try InputTimeGuard.latenessLimit(&settings, losslessInputs: losslessInputs)
        try settings.finish()
        return .init(latenessLimitSeconds: limit)
    }
}
