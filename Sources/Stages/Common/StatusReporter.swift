package import NavCore

/// What every stage says of itself, said one way: a status stamped by the stage's wall clock, the stage's own
/// counters followed by its input's (the time checks', then the transport's), what the time checks dropped appended
/// to the message, and when the next periodic report is due.
package struct StatusReporter<Output: MessagePublisher>: Sendable {
    private let stage: String
    private let output: Output
    private let time: StageTime
    /// Time between periodic reports [seconds of the clock `due(at:)` is given].
    package let intervalSeconds: Double
    /// The transport's counters for the stage's input (bad frames, gaps).
    private let inputCounters: @Sendable () -> [StatusCounter]
    /// When the last report went out, by the clock `due(at:)` is given.
    private var last: Double

    package init(
        stage: String, output: Output, time: StageTime, intervalSeconds: Double,
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }, firstDueAfterInterval: Bool = false
    ) {
        self.stage = stage
        self.output = output
        self.time = time
        self.intervalSeconds = intervalSeconds
        self.inputCounters = inputCounters
        self.last = firstDueAfterInterval ? time.monotonicSeconds() : -Double.infinity
    }

    /// True once per interval of `now` (the stage's monotonic clock, or its messages' time): a periodic report is
    /// due, and counts as sent.
    package mutating func due(at now: Double) -> Bool {
        guard now - self.last >= self.intervalSeconds else { return false }
        self.last = now
        return true
    }

    /// When the next periodic report is due, by the clock `due(at:)` is given.
    package var nextDue: Double { self.last + self.intervalSeconds }

    /// Marks a report as sent at `now` (one that went out on its own, for a change): the next periodic one waits.
    package mutating func sent(at now: Double) {
        self.last = now
    }

    /// The status with the stage's counters, then the time checks' and the input's; the checks' drops follow the
    /// message.
    package func message(
        _ health: StageHealth, _ message: String, counters: [StatusCounter], timeCheck: InputTimeCheck? = nil
    ) -> BusMessage {
        let drops = timeCheck?.dropSummary ?? ""
        return .status(
            StageStatus(
                timeSeconds: self.time.wallSeconds(), stage: self.stage, health: health,
                message: drops.isEmpty ? message : "\(message); \(drops)",
                counters: counters + (timeCheck?.statusCounters ?? []) + self.inputCounters()))
    }

    /// Publishes ``message(_:_:counters:timeCheck:)``.
    package func publish(
        _ health: StageHealth, _ message: String, counters: [StatusCounter], timeCheck: InputTimeCheck? = nil
    ) async throws {
        try await self.output.publish(self.message(health, message, counters: counters, timeCheck: timeCheck))
    }
}
