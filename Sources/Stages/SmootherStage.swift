public import Logging
public import NavCore
public import ServiceLifecycle

/// Smooths raw ``LocationFix`` messages and republishes them as ``SmoothedFix``.
///
/// A rejected fix (NaN, a bad accuracy, time going backwards) is counted and dropped; the stream goes on.
/// Status reports carry the filter's counters, every `statusIntervalSeconds` of fix time.
public actor SmootherStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == LocationFix {
    private let name: String
    private let input: Input
    private let output: Output
    private var filter: any SmoothingFilter
    private let logger: Logger
    private let statusIntervalSeconds: Double
    private var lastStatusTime = -Double.infinity
    private var loggedRejections: Set<FixRejection> = []

    /// Creates the stage.
    public init(name: String, input: Input, output: Output, filter: any SmoothingFilter, logger: Logger,
                statusIntervalSeconds: Double = 5) {
        self.name = name
        self.input = input
        self.output = output
        self.filter = filter
        self.logger = logger
        self.statusIntervalSeconds = statusIntervalSeconds
    }

    public func run() async throws {
        try await self.output.publish(.status(StageStatus(timeSeconds: WallClock.nowSeconds(), stage: self.name,
                                                          health: .running, message: "smoothing")))
        do {
            for try await fix in self.input.cancelOnGracefulShutdown() {
                try await self.handle(fix)
            }
        } catch is CancellationError {}
        try? await self.output.publish(.status(StageStatus(timeSeconds: WallClock.nowSeconds(), stage: self.name,
                                                           health: .stopping, message: "stopped",
                                                           counters: self.filter.statusCounters)))
    }

    /// Smooths one fix (exposed for in-process composition and tests).
    public func handle(_ fix: LocationFix) async throws {
        switch self.filter.update(with: fix) {
        case let .success(smoothed):
            try await self.output.publish(.smoothed(smoothed))
        case let .failure(reason):
            if self.loggedRejections.insert(reason).inserted {
                self.logger.warning("smoother '\(self.name)': dropped a fix (\(reason.rawValue)) at time \(fix.timeSeconds); further ones are counted")
            }
        }
        if fix.timeSeconds.isFinite, fix.timeSeconds - self.lastStatusTime >= self.statusIntervalSeconds {
            self.lastStatusTime = fix.timeSeconds
            try await self.output.publish(.status(StageStatus(timeSeconds: WallClock.nowSeconds(), stage: self.name,
                                                              health: .running, message: "smoothing",
                                                              counters: self.filter.statusCounters)))
        }
    }
}
