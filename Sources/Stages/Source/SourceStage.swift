public import Logging
public import NavCore
public import ServiceLifecycle
public import Stages

/// The location source stage: runs a ``MessageSource`` plugin and publishes what it emits.
///
/// Reports its health as ``StageStatus``: running at start, periodically with its counters, and
/// end-of-stream when a finite input (a log, a simulated walk) is exhausted. Its timing (status interval, silence)
/// runs on an injected clock, so that a test drives it by hand.
public actor SourceStage<Output: MessagePublisher>: Service {
    private let name: String
    private let source: any MessageSource
    private let output: Output
    private let logger: Logger
    /// Its status: on every change, and every `statusIntervalSeconds` between.
    private var reporter: StatusReporter<Output>
    private var published: [BusMessage.Kind: UInt64] = [:]
    private let time: StageTime
    /// When the source last emitted [seconds, the stage's monotonic time].
    private var lastEmission: Double
    private let staleAfterSeconds: Double
    /// Magnetic headings are turned true here (``TrueNorthIntake``), and nowhere after.
    private var trueNorth: TrueNorthIntake

    /// Creates the stage on `time` (the system's clocks by default); magnetic headings before the first fix are turned
    /// true at `place` (the config's) when given.
    public init(
        name: String, source: any MessageSource, output: Output, logger: Logger,
        statusIntervalSeconds: Double = 2, staleAfterSeconds: Double = 2, place: Coordinate? = nil,
        time: StageTime = .system
    ) {
        self.trueNorth = TrueNorthIntake(place: place)
        self.time = time
        self.lastEmission = time.monotonicSeconds()
        self.staleAfterSeconds = staleAfterSeconds
        self.name = name
        self.source = source
        self.output = output
        self.logger = logger
        self.reporter = StatusReporter(
            stage: name, output: output, time: time, intervalSeconds: statusIntervalSeconds,
            firstDueAfterInterval: true)
    }

    private func count(_ kind: BusMessage.Kind) {
        self.published[kind, default: 0] += 1
        self.lastEmission = self.time.monotonicSeconds()
    }

    private func status(_ health: StageHealth, _ message: String) async throws {
        let counters =
            BusMessage.Kind.allCases.compactMap { kind in
                self.published[kind].map { StatusCounter(name: "published.\(kind.topic)", value: $0) }
            } + self.trueNorth.statusCounters + (await self.source.statusCounters())
        try await self.reporter.publish(health, message, counters: counters)
    }

    private func referToTrueNorth(_ message: BusMessage) -> BusMessage {
        self.trueNorth.take(message)
    }
    /// "; headings to true north (declination +3.3°)" once a magnetic heading has been corrected.
    private var declinationText: String {
        guard let declination = self.trueNorth.declinationDegrees else { return "" }
        return
            "; headings to true north (declination \(declination >= 0 ? "+" : "")\(fixedDecimal(declination, digits: 1))°)"
    }

    private var silenceSeconds: Double { self.time.monotonicSeconds() - self.lastEmission }

    /// True once per status interval: a periodic report is due, and is now counted as sent.
    private func takeStatusDue() -> Bool {
        let now = self.time.monotonicSeconds()
        return self.reporter.due(at: now)
    }

    public func run() async throws {
        let sourceID = type(of: self.source).id
        try await self.status(.running, "\(sourceID) started")
        self.logger.info("source '\(self.name)' running plugin '\(sourceID)'")
        let finished: Bool = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await cancelWhenGracefulShutdown {
                    try await self.source.run { message in
                        let message = await self.referToTrueNorth(message)
                        try await self.output.publish(message)
                        await self.count(message.kind)
                    }
                }
                return true
            }
            group.addTask {
                var wasStale = false
                var lastCondition: SourceCondition?
                while !Task.isCancelled {
                    // A live source that goes quiet says so at once, not at the next periodic report.
                    try await self.time.sleep(.seconds(min(self.reporter.intervalSeconds, self.staleAfterSeconds / 4)))
                    let silence = await self.silenceSeconds
                    let stale = self.source.isLive && silence >= self.staleAfterSeconds
                    let due = await self.takeStatusDue()
                    let condition = await self.source.condition()
                    if stale != wasStale || due || condition != lastCondition {
                        wasStale = stale
                        lastCondition = condition
                        let declination = await self.declinationText
                        if stale {
                            let why = condition.map { ": \($0.message)" } ?? ""
                            try await self.status(
                                .stale, "\(sourceID): no data for \(Int(silence)) s\(why)")
                        } else if let condition {
                            try await self.status(
                                condition.health, "\(sourceID): \(condition.message)\(declination)")
                        } else {
                            try await self.status(
                                .running, "\(sourceID) running\(declination)")
                        }
                    }
                }
                return false
            }
            defer { group.cancelAll() }
            do {
                return try await group.next() ?? false
            } catch is CancellationError {
                return false
            }
        }
        if finished {
            self.logger.info("source '\(self.name)': end of stream")
            try await self.status(.endOfStream, "\(sourceID): end of stream")
        } else {
            try? await self.status(.stopping, "\(sourceID) stopped")
        }
    }
}
