/// A message as a stage receives it: the message, who sent it, and when it was sent and received.
public struct Arrival<Value: Sendable>: Sendable {
    /// The message.
    public var value: Value
    /// The sending stage's name ("" when unknown).
    public var sender: String
    /// When it arrived [seconds, the receiver's monotonic clock].
    public var receivedSeconds: Double
    /// When the sender handed it to the bus [seconds since 1970-01-01T00:00:00Z, the sender's wall clock],
    /// or nil when unknown (an in-process input).
    public var sentSeconds: Double?

    /// Creates an arrival.
    public init(_ value: Value, sender: String = "", receivedSeconds: Double, sentSeconds: Double? = nil) {
        self.value = value
        self.sender = sender
        self.receivedSeconds = receivedSeconds
        self.sentSeconds = sentSeconds
    }

    /// The same arrival (sender, times) of another value.
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> Arrival<Other> {
        Arrival<Other>(
            transform(self.value), sender: self.sender, receivedSeconds: self.receivedSeconds,
            sentSeconds: self.sentSeconds)
    }
}

/// Why a stage dropped a message for its time.
public enum TimeDrop: String, CaseIterable, Sendable, Codable {
    /// Its measurement time is not a finite number.
    case nonFinite
    /// Its measurement time is further ahead of the stream than the stream's own pace allows.
    case ahead
    /// Its measurement time is earlier than the stream's last.
    case backwards
    /// It arrived later than the stream's usual transit by more than the limit (a backlog after a cut or a pause).
    case late
}

/// Time sanity for the messages a stage reads, one stream per sender and topic.
///
/// Two checks, both on times carried by the messages and the receiver's monotonic receive time, never on the
/// receiver's wall clock (so a replay at any pace passes, and the hosts' clocks need not agree):
/// - Measurement time. A message dated further ahead of its stream's last than the stream's pace allows (an
///   hour-ahead fix from a receiver's clock glitch), or dated before it, is dropped. A jump that the next message
///   confirms (a replay that starts again, a receiver whose clock was corrected) re-bases the stream: at most one
///   message is lost, and the stage is told to reset what it built on the old time line.
/// - Transit. The sender's send time against the receive time: their difference, less its lowest recent value
///   (the clock offset between the hosts plus the fastest transit), is how late a message is. One later than the
///   limit is dropped: a backlog delivered after a network cut or a paused sender is old news.
public struct InputTimeGuard: Sendable {
    /// The limits.
    public struct Options: Sendable, Equatable {
        /// How far beyond the stream's pace a measurement time may jump ahead [seconds, > 0].
        public var aheadLimitSeconds: Double = 2
        /// How late a message may arrive [seconds, > 0]; nil keeps late messages.
        public var latenessLimitSeconds: Double? = 2
        /// How fast the transit baseline may rise on its own, to follow clock drift [seconds per second].
        public var baselineDriftPerSecond: Double = 0.001
        /// Late messages in a row, over at least `rebaseAfterSeconds`, that agree on their lateness and so
        /// re-base the transit (the sender's wall clock was set back) [count]. A steady added delay (a link that
        /// stays seconds slower) agrees the same way and is taken as current once re-based, so the count is kept at
        /// five: a stream of a fix a second holds four seconds before it accepts either, where a faster stream holds
        /// the second. The price: a clock set back on Group 1's host silences its fixes at each checking hop in turn.
        public var rebaseAfterMessages = 5
        /// See `rebaseAfterMessages` [seconds].
        public var rebaseAfterSeconds: Double = 1
        /// How closely those late messages must agree [seconds].
        public var rebaseToleranceSeconds: Double = 0.25

        /// The defaults: 2 s ahead, 2 s late.
        public init(aheadLimitSeconds: Double = 2, latenessLimitSeconds: Double? = 2) {
            self.aheadLimitSeconds = aheadLimitSeconds
            self.latenessLimitSeconds = latenessLimitSeconds
        }
    }

    /// What to do with a message.
    public enum Verdict: Equatable, Sendable {
        /// Use it; it arrived `latenessSeconds` later than the stream's usual transit [seconds, ≥ 0].
        case accept(latenessSeconds: Double)
        /// Use it, but the stream's time line started again here: reset what was built on the old one.
        case rebase(latenessSeconds: Double)
        /// Drop it.
        case drop(TimeDrop)
    }

    private struct Point: Sendable {
        var measurement: Double
        var received: Double
    }

    private struct Stream: Sendable {
        var last: Point?
        /// Measurement seconds per received second, over the recent messages (≥ 1: a replay may run faster).
        var pace = 1.0
        var paceAnchor: Point?
        /// The usual step between measurement times [seconds], so that a sparse log played fast is not "ahead".
        var typicalStep = 0.0
        /// When the first copy of the last measurement was current [seconds, receiver's clock]: a repeat of it (the
        /// same measurement time sent again) is no newer, and its age counts from there.
        var lastCurrentAt = 0.0
        var candidate: Point?
        var transitBaseline: Double?
        var baselineUpdated = 0.0
        var lateRun: [(received: Double, transit: Double)] = []
    }

    /// The limits in use.
    public let options: Options
    private var streams: [String: Stream] = [:]
    /// Messages dropped, by cause [count].
    public private(set) var dropped: [TimeDrop: UInt64] = [:]
    /// Times a stream's measurement time line or transit baseline started again [count].
    public private(set) var rebases: UInt64 = 0

    /// Creates a guard.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// The counters as named pairs, for a ``StageStatus``: `time.dropped.ahead`, … and `time.rebases`.
    public var statusCounters: [StatusCounter] {
        TimeDrop.allCases.map {
            StatusCounter(name: "time.dropped.\($0.rawValue)", value: self.dropped[$0, default: 0])
        }
            + [StatusCounter(name: "time.rebases", value: self.rebases)]
    }

    /// A one-line account of what was dropped, for a status message ("" when nothing was).
    public var dropSummary: String {
        let parts = TimeDrop.allCases.compactMap { cause -> String? in
            guard let count = self.dropped[cause], count > 0 else { return nil }
            switch cause {
            case .nonFinite: return "\(count) with a time that is not a number"
            case .ahead: return "\(count) dated ahead of the stream"
            case .backwards: return "\(count) dated before the stream"
            case .late: return "\(count) arrived late"
            }
        }
        return parts.isEmpty ? "" : "dropped " + parts.joined(separator: ", ")
    }

    /// Judges one message of the stream `stream` (sender and topic) measured at `measurementSeconds`;
    /// `latenessLimitSeconds` overrides the options' limit for this stream.
    public mutating func admit(
        stream key: String, measurementSeconds: Double, receivedSeconds: Double,
        sentSeconds: Double?, latenessLimitSeconds: Double?? = nil
    ) -> Verdict {
        var stream = self.streams[key] ?? Stream()
        defer { self.streams[key] = stream }
        guard measurementSeconds.isFinite, receivedSeconds.isFinite else { return self.drop(.nonFinite) }

        // Transit first: a backlog is dropped whatever its measurement times say.
        var lateness = 0.0
        if let sent = sentSeconds, sent.isFinite, let limit = latenessLimitSeconds ?? self.options.latenessLimitSeconds
        {
            let transit = receivedSeconds - sent
            if let baseline = stream.transitBaseline {
                // Let the baseline rise slowly with clock drift; a lower transit lowers it at once.
                let risen =
                    baseline + self.options.baselineDriftPerSecond * max(0, receivedSeconds - stream.baselineUpdated)
                stream.transitBaseline = min(risen, transit)
                stream.baselineUpdated = receivedSeconds
                lateness = max(0, transit - stream.transitBaseline!)
                if lateness > limit {
                    if self.lateRunRebases(&stream, received: receivedSeconds, transit: transit) {
                        stream.transitBaseline = transit
                        lateness = 0
                        self.rebases = self.rebases.addingClamped(1)
                    } else {
                        return self.drop(.late)
                    }
                } else {
                    stream.lateRun.removeAll()
                }
            } else {
                stream.transitBaseline = transit
                stream.baselineUpdated = receivedSeconds
            }
        }

        let point = Point(measurement: measurementSeconds, received: receivedSeconds)
        guard let last = stream.last else {
            stream.last = point
            stream.paceAnchor = point
            stream.lastCurrentAt = receivedSeconds - lateness
            return .accept(latenessSeconds: lateness)
        }
        if self.follows(point, after: last, stream: stream) {
            stream.candidate = nil
            self.advance(&stream, to: point)
            if measurementSeconds == last.measurement {
                // A repeat: as old as its first copy, whatever its own transit.
                return .accept(latenessSeconds: max(0, receivedSeconds - stream.lastCurrentAt))
            }
            stream.lastCurrentAt = receivedSeconds - lateness
            return .accept(latenessSeconds: lateness)
        }
        // Not in line with the stream: in line with the message dropped just before it? Then the time line
        // really moved, and this message confirms it.
        if let candidate = stream.candidate, point.measurement >= candidate.measurement,
            point.measurement - candidate.measurement < abs(point.measurement - last.measurement)
        {
            stream.candidate = nil
            stream.last = point
            stream.paceAnchor = point
            stream.pace = 1
            stream.typicalStep = point.measurement - candidate.measurement
            stream.lastCurrentAt = receivedSeconds - lateness
            self.rebases = self.rebases.addingClamped(1)
            return .rebase(latenessSeconds: lateness)
        }
        stream.candidate = point
        return self.drop(measurementSeconds < last.measurement ? .backwards : .ahead)
    }

    /// Forgets the time lines of the streams whose key starts with `prefix` (a publisher that was lost: when it comes
    /// back, perhaps restarted, its first message starts a new time line at once). Their transit baselines stay:
    /// the hosts' clocks did not change.
    public mutating func forgetTimeLines(withPrefix prefix: String) {
        for key in self.streams.keys where key.hasPrefix(prefix) {
            self.streams[key]?.last = nil
            self.streams[key]?.candidate = nil
            self.streams[key]?.paceAnchor = nil
            self.streams[key]?.pace = 1
            self.streams[key]?.typicalStep = 0
        }
    }

    private func follows(_ point: Point, after last: Point, stream: Stream) -> Bool {
        let step = point.measurement - last.measurement
        guard step >= 0 else { return false }
        let elapsed = max(0, point.received - last.received)
        return step <= self.options.aheadLimitSeconds + max(1.5 * stream.pace * elapsed, 2 * stream.typicalStep)
    }

    private func advance(_ stream: inout Stream, to point: Point) {
        if let last = stream.last, point.measurement > last.measurement {
            let step = min(10, point.measurement - last.measurement)
            stream.typicalStep = stream.typicalStep == 0 ? step : 0.8 * stream.typicalStep + 0.2 * step
        }
        stream.last = point
        // The stream's pace: measurement time over receive time since an anchor at least a second back.
        if let anchor = stream.paceAnchor {
            let received = point.received - anchor.received
            if received >= 1 {
                let measured = point.measurement - anchor.measurement
                stream.pace = max(1, measured / received)
                stream.paceAnchor = point
            }
        } else {
            stream.paceAnchor = point
        }
    }

    private func lateRunRebases(_ stream: inout Stream, received: Double, transit: Double) -> Bool {
        if let first = stream.lateRun.first, abs(transit - first.transit) > self.options.rebaseToleranceSeconds {
            stream.lateRun.removeAll()
        }
        stream.lateRun.append((received, transit))
        guard stream.lateRun.count >= self.options.rebaseAfterMessages,
            let first = stream.lateRun.first, received - first.received >= self.options.rebaseAfterSeconds
        else {
            return false
        }
        stream.lateRun.removeAll()
        return true
    }

    private mutating func drop(_ cause: TimeDrop) -> Verdict {
        self.dropped[cause] = self.dropped[cause, default: 0].addingClamped(1)
        return .drop(cause)
    }
}

extension InputTimeGuard {
    /// The settings a stage's `options` may give for its inputs' times.
    public enum Setting {
        /// How late an input may arrive in Group 1's stages (the smoother, the route stage).
        public static let latenessLimitSeconds = SettingSpec(
            "latenessLimitSeconds", unit: "s", default: 2.0, in: 0.1...3600,
            "an input that arrives later than this behind its sender's usual transit (a backlog after a paused stage or a link that healed) is dropped and counted, so that nothing built from where the walker was seconds ago reaches the haptic stage looking current; with bus.losslessInputs (a replay at --rate max, whose backlog is by design) only a limit given here applies"
        )
    }

    /// A stage's lateness limit from its `options`: the one given, else the default; with lossless inputs, nil
    /// (late inputs kept) unless one is given.
    public static func latenessLimit(_ settings: inout Settings, losslessInputs: Bool) throws(ConfigError) -> Double? {
        let given = settings.keys.contains(Setting.latenessLimitSeconds.key)
        let limit = try settings.value(Setting.latenessLimitSeconds)
        return losslessInputs && !given ? nil : limit
    }
}
