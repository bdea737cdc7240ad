package import Logging
package import NavCore

/// A stage's time check on what it reads: the ``InputTimeGuard``, one log line for each new time line and for the
/// first drop of each cause, and at most one immediate status report a second about drops, so that a backlog of
/// hundreds of late messages never turns into hundreds of status messages.
package struct InputTimeCheck: Sendable {
    private var timeGuard: InputTimeGuard
    /// Who checks, for log lines: "smoother 'smoother'".
    private let owner: String
    private let logger: Logger
    private var logged: Set<TimeDrop> = []
    private var lastReport = -Double.infinity

    package init(owner: String, options: InputTimeGuard.Options, logger: Logger) {
        self.timeGuard = InputTimeGuard(options: options)
        self.owner = owner
        self.logger = logger
    }

    /// The guard's counters, for a status.
    package var statusCounters: [StatusCounter] { self.timeGuard.statusCounters }

    /// What was dropped, in one line ("" when nothing was).
    package var dropSummary: String { self.timeGuard.dropSummary }

    /// Judges one arrival of `topic` measured at `measurementSeconds` (the stream is its sender and topic).
    package mutating func admit<Value>(
        _ arrival: Arrival<Value>, topic: String, measurementSeconds: Double, latenessLimitSeconds: Double?? = nil
    ) -> InputTimeGuard.Verdict {
        let verdict = self.timeGuard.admit(
            stream: "\(arrival.sender)/\(topic)", measurementSeconds: measurementSeconds,
            receivedSeconds: arrival.receivedSeconds, sentSeconds: arrival.sentSeconds,
            latenessLimitSeconds: latenessLimitSeconds)
        switch verdict {
        case .accept:
            break
        case .rebase:
            self.logger.warning(
                "\(self.owner): the \(topic) stream from '\(arrival.sender)' started a new time line at \(measurementSeconds)"
            )
        case let .drop(cause):
            if self.logged.insert(cause).inserted {
                self.logger.warning(
                    "\(self.owner): dropped a \(topic) from '\(arrival.sender)' (\(cause.rawValue), time \(measurementSeconds)); further ones are counted"
                )
            }
        }
        return verdict
    }

    /// True when a drop received at `receivedSeconds` should be reported in a status now: the first at once, then
    /// at most once a second (periodic reports carry the counters meanwhile).
    package mutating func dropReportDue(at receivedSeconds: Double) -> Bool {
        guard receivedSeconds - self.lastReport >= 1 else { return false }
        self.lastReport = receivedSeconds
        return true
    }

    /// Forgets the time lines of `sender`'s streams (a lost publisher: when it comes back its first messages count).
    package mutating func forgetTimeLines(of sender: String) {
        self.timeGuard.forgetTimeLines(withPrefix: "\(sender)/")
    }
}
