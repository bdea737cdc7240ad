import NavCore
/// The haptic sink's fail-safe decisions, as a value that takes `now` explicitly (seconds on the monotonic clock).
///
/// Guidance is live only while both a heading and a guidance target are fresh. A datum's age counts from when
/// it was current: its receipt time less how late it arrived (see ``InputTimeGuard``), so a message that spent
/// 0.9 s in a queue has 0.1 s left before a 1 s limit. When either goes stale, or a publisher is lost, the sink goes
/// silent: every motor stops and one signal-lost cue plays. That cue plays once per loss, however the loss ends:
/// the next loss can only begin after guidance has been live again for `rearmAfterSeconds`, so input that flickers
/// around the limit, or a backlog that arrives after a pause, never plays it twice.
public struct SinkFailSafe: Sendable {
    /// The limits.
    public struct Options: Sendable, Equatable {
        /// A guidance target older than this is stale [seconds, > 0].
        public var staleAfterSeconds: Double
        /// A heading older than this is stale [seconds, > 0]; headings come faster than targets, so this may be shorter.
        public var headingStaleAfterSeconds: Double
        /// Live guidance for this long ends a loss, so that the next one plays signal lost again [seconds, ≥ 0].
        public var rearmAfterSeconds: Double

        /// Creates options; the heading's limit defaults to the target's, `rearmAfterSeconds` to the longer one.
        public init(
            staleAfterSeconds: Double = 1, headingStaleAfterSeconds: Double? = nil, rearmAfterSeconds: Double? = nil
        ) {
            self.staleAfterSeconds = staleAfterSeconds
            self.headingStaleAfterSeconds = headingStaleAfterSeconds ?? staleAfterSeconds
            self.rearmAfterSeconds =
                rearmAfterSeconds ?? max(staleAfterSeconds, headingStaleAfterSeconds ?? staleAfterSeconds)
        }
    }

    /// What the sink must do now.
    public enum Transition: Equatable, Sendable {
        /// Stop every motor; play the signal-lost cue when `playSignalLost`. `reason` says why, for status.
        case silence(reason: String, playSignalLost: Bool)
        /// Guidance may resume (reset debouncing: the walker may have turned meanwhile).
        case resume
    }

    /// The limits in use.
    public let options: Options
    private var headingCurrentAt: Double?
    private var targetCurrentAt: Double?
    private var lostPublisher: String?
    /// Why the latest headings could not be used, until a usable one comes.
    private var headingProblem: String?
    /// True while the sink is silent for want of fresh input.
    public private(set) var isSilent = true
    /// Why the sink is silent, or "" while it guides.
    public private(set) var silenceReason = "waiting for heading and guidance"
    private var lossOpen = false
    private var liveSince: Double?
    /// Losses that played the signal-lost cue [count].
    public private(set) var signalLostCount = 0

    /// Creates the fail-safe, silent until fresh input arrives.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// A heading that was current at `currentAt` [seconds, monotonic].
    public mutating func heading(currentAt: Double, now: Double) -> Transition? {
        self.headingProblem = nil
        self.headingCurrentAt = max(self.headingCurrentAt ?? -.infinity, currentAt)
        return self.evaluate(now: now)
    }

    /// A heading came that cannot be used (`why`: a disturbed compass, a magnetic heading with no position): it
    /// does not count as fresh, and the silence it leads to says why.
    public mutating func headingUnusable(_ why: String) {
        self.headingProblem = why
    }

    /// A guidance target that was current at `currentAt` [seconds, monotonic].
    public mutating func target(currentAt: Double, now: Double) -> Transition? {
        self.targetCurrentAt = max(self.targetCurrentAt ?? -.infinity, currentAt)
        self.lostPublisher = nil
        return self.evaluate(now: now)
    }

    /// The transport lost a publisher: what it sent is gone until it comes back with fresh messages.
    public mutating func publisherLost(_ stage: String, now: Double) -> Transition? {
        self.lostPublisher = stage
        // Nothing from before the loss counts as fresh afterwards.
        self.headingCurrentAt = nil
        self.targetCurrentAt = nil
        return self.evaluate(now: now)
    }

    /// The age of the older of the heading and the target at `now` [seconds], or nil without both.
    public func inputAge(now: Double) -> Double? {
        guard let heading = self.headingCurrentAt, let target = self.targetCurrentAt else { return nil }
        return now - min(heading, target)
    }

    /// The earliest time at which ``evaluate(now:)`` may act without new input: while guidance is live, when the heading
    /// or the guidance goes stale; while a loss is open, when it re-arms (so that the next loss plays its cue). Nil when
    /// only input can change what it does. On the clock `evaluate` is given.
    public var nextDeadline: Double? {
        var due = Double.infinity
        if !self.isSilent, let heading = self.headingCurrentAt, let target = self.targetCurrentAt {
            due = min(heading + self.options.headingStaleAfterSeconds, target + self.options.staleAfterSeconds)
        }
        if self.lossOpen, let since = self.liveSince { due = min(due, since + self.options.rearmAfterSeconds) }
        return due.isFinite ? due : nil
    }

    /// Re-checks the ages at `now` (call it on a timer as well as on input).
    public mutating func evaluate(now: Double) -> Transition? {
        let limit = self.options.staleAfterSeconds
        let reason: String?
        if let stage = self.lostPublisher, self.headingCurrentAt == nil || self.targetCurrentAt == nil {
            reason = "\(stage) is gone"
        } else if let heading = self.headingCurrentAt, now - heading < self.options.headingStaleAfterSeconds {
            if let target = self.targetCurrentAt, now - target < limit {
                reason = nil
            } else {
                reason = self.targetCurrentAt.map { "no guidance for \(Self.seconds(now - $0)) s" } ?? "no guidance yet"
            }
        } else {
            let missing =
                self.headingProblem == nil ? "no heading" : "no usable heading"
            let since = self.headingCurrentAt.map { "\(missing) for \(Self.seconds(now - $0)) s" } ?? "\(missing) yet"
            reason = self.headingProblem.map { "\(since): \($0)" } ?? since
        }
        if let reason {
            self.liveSince = nil
            guard !self.isSilent else {
                self.silenceReason = reason
                return nil
            }
            self.isSilent = true
            self.silenceReason = reason
            let play = !self.lossOpen
            if play {
                self.lossOpen = true
                self.signalLostCount += 1
            }
            return .silence(reason: reason, playSignalLost: play)
        }
        // Fresh input: a loss ends after guidance has been live for the re-arm time.
        if let since = self.liveSince {
            if now - since >= self.options.rearmAfterSeconds { self.lossOpen = false }
        } else {
            self.liveSince = now
            if self.options.rearmAfterSeconds == 0 { self.lossOpen = false }
        }
        guard self.isSilent else { return nil }
        self.isSilent = false
        self.silenceReason = ""
        return .resume
    }

    private static func seconds(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        return tenths.isFinite ? "\(tenths / 10)" : "?"
    }
}
