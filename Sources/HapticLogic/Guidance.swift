public import NavCore
/// Turns the true heading and the guidance target into haptic cues.
///
/// True heading = raw heading − offset. Silent while |deviation| ≤ tolerance. Outside it, a cue whose
/// intensity rises linearly from the tolerance to 180°, never below a minimum a motor can render, with the
/// side to turn; beyond the turn-around angle a distinct turn-around cue; at arrival an arrival cue.
/// Against compass noise at the edge: a cue starts only after the deviation has stayed outside the
/// tolerance for the debounce time, and ends only when it is back within tolerance − release band; at
/// most a set number of changes a second; a cue is re-sent only when its state changes or the repeat
/// period passes. Time comes from the samples: no clock reads.
public struct Guidance: Sendable {
    /// Thresholds, all configurable.
    public struct Options: Sendable, Equatable {
        /// The settings a haptic stage's `options` may give, each with its key, unit, default and range.
        public enum Setting {
            public static let toleranceDegrees = SettingSpec(
                "toleranceDegrees", unit: "°", default: 15.0, in: 5...45, "deviation allowed in silence")
            public static let minimumIntensity = SettingSpec(
                "minimumIntensity", default: 0.2, in: 0...1, "the weakest intensity a cue plays at")
            public static let turnAroundDegrees = SettingSpec(
                "turnAroundDegrees", unit: "°", default: 120.0, in: 45...180,
                "beyond this deviation the cue is turn around")
            public static let turnAroundReleaseDegrees = SettingSpec(
                "turnAroundReleaseDegrees", unit: "°", default: 15.0, in: 0...90,
                "a turn-around cue lasts until the deviation is this far back inside turnAroundDegrees (a heading that jitters about the threshold, a walker turning in place, would otherwise switch between turn around and a side)"
            )
            public static let debounceSeconds = SettingSpec(
                "debounceSeconds", unit: "s", default: 0.3, in: 0...5,
                "a cue starts only after the deviation has been outside the tolerance this long")
            public static let releaseBandDegrees = SettingSpec(
                "releaseBandDegrees", unit: "°", default: 5.0, in: 0...40,
                "a cue ends only when the deviation is this far back inside the tolerance")
            public static let repeatPeriodSeconds = SettingSpec(
                "repeatPeriodSeconds", unit: "s", default: 2.0, in: 0.1...60,
                "an unchanged cue is sent again after this long")

            /// Every setting, in documentation order.
            public static let all: [SettingDoc] = [
                toleranceDegrees.doc, minimumIntensity.doc, turnAroundDegrees.doc, turnAroundReleaseDegrees.doc,
                debounceSeconds.doc,
                releaseBandDegrees.doc, repeatPeriodSeconds.doc,
            ]
        }

        /// Phone-in-pocket offset [degrees]: true heading = raw heading − offset.
        public var offsetDegrees = 0.0
        /// Deviation allowed in silence [degrees, 5...45].
        public var toleranceDegrees = Setting.toleranceDegrees.defaultValue
        /// The smallest intensity a motor can render [0...1].
        public var minimumIntensity = Setting.minimumIntensity.defaultValue
        /// Beyond this deviation the cue is turn-around [degrees].
        public var turnAroundDegrees = Setting.turnAroundDegrees.defaultValue
        /// A turn-around lasts until the deviation is this far back inside `turnAroundDegrees` [degrees].
        public var turnAroundReleaseDegrees = Setting.turnAroundReleaseDegrees.defaultValue
        /// A cue starts only after the deviation has been outside the tolerance this long [seconds].
        public var debounceSeconds = Setting.debounceSeconds.defaultValue
        /// A cue ends only when the deviation is this far back inside the tolerance [degrees].
        public var releaseBandDegrees = Setting.releaseBandDegrees.defaultValue
        /// At most this many cue changes a second.
        public var maximumChangesPerSecond = 10.0
        /// An unchanged cue is sent again after this long, so a late listener picks it up [seconds].
        public var repeatPeriodSeconds = Setting.repeatPeriodSeconds.defaultValue
        /// Intensity steps that count as a change of state [0...1].
        public var intensityStep = 0.1

        /// The defaults.
        public init() {}

        /// The options with the tolerance clamped to 5...45° and the other values to their domains.
        public var clamped: Options {
            var copy = self
            copy.toleranceDegrees = min(45, max(5, self.toleranceDegrees))
            copy.minimumIntensity = min(1, max(0, self.minimumIntensity))
            copy.releaseBandDegrees = min(copy.toleranceDegrees, max(0, self.releaseBandDegrees))
            copy.turnAroundDegrees = min(180, max(copy.toleranceDegrees, self.turnAroundDegrees))
            copy.turnAroundReleaseDegrees = min(
                copy.turnAroundDegrees - copy.toleranceDegrees, max(0, self.turnAroundReleaseDegrees))
            return copy
        }
    }

    /// The options in use.
    public let options: Options
    /// The cue being rendered now.
    public private(set) var current: HapticCue?

    private var outsideSince: Double?
    private var lastSent: Double?
    private var lastChangeTime: Double?
    private var arrivedRouteID: UInt32?
    private var lastTime = -Double.infinity

    /// Creates guidance with `options` (clamped to their domains).
    public init(options: Options = Options()) {
        self.options = options.clamped
    }

    /// Forgets the current cue, the debounce state and the last heading's time (after a fail-safe stop, or when the
    /// heading stream started a new time line, as a restarted source does): the next cue is sent afresh.
    public mutating func reset() {
        self.lastTime = -.infinity
        self.current = nil
        self.outsideSince = nil
        self.lastSent = nil
        self.lastChangeTime = nil
    }

    /// The true heading for a raw compass heading [degrees, 0..<360].
    public func trueHeading(raw: Double) -> Double {
        Angle.normalized(raw - self.options.offsetDegrees)
    }

    /// Signed deviation: the turn from the true heading to the target bearing [degrees, (−180, 180], positive = right].
    public func deviation(rawHeading: Double, targetBearing: Double) -> Double {
        Angle.signedDifference(from: self.trueHeading(raw: rawHeading), to: targetBearing)
    }

    /// The cue for a deviation, before debouncing: silent inside the tolerance.
    public func immediateCue(deviation: Double, at time: Double) -> HapticCue {
        let magnitude = abs(deviation)
        guard magnitude > self.options.toleranceDegrees else {
            return HapticCue(timeSeconds: time, kind: .silent, intensity: 0, deviationDegrees: deviation)
        }
        let span = 180 - self.options.toleranceDegrees
        let linear = span > 0 ? (magnitude - self.options.toleranceDegrees) / span : 1
        let intensity = min(1, self.options.minimumIntensity + (1 - self.options.minimumIntensity) * linear)
        let kind: CueKind =
            magnitude > self.options.turnAroundDegrees ? .turnAround : (deviation > 0 ? .turnRight : .turnLeft)
        return HapticCue(timeSeconds: time, kind: kind, intensity: intensity, deviationDegrees: deviation)
    }

    /// Takes a heading sample and the latest target; returns a cue to send, or nil when nothing changed.
    public mutating func update(heading: HeadingSample, target: GuidanceTarget?) -> HapticCue? {
        let time = heading.timeSeconds
        guard time.isFinite, heading.headingDegrees.isFinite, time >= self.lastTime else { return nil }
        self.lastTime = time

        guard let target, target.kind != .none, target.bearingDegrees.isFinite else {
            self.outsideSince = nil
            return self.send(HapticCue(timeSeconds: time, kind: .silent, intensity: 0, deviationDegrees: 0), at: time)
        }
        if target.kind == .arrived {
            // One arrival cue per route, then quiet.
            self.outsideSince = nil
            if self.arrivedRouteID != target.routeID {
                self.arrivedRouteID = target.routeID
                return self.send(
                    HapticCue(timeSeconds: time, kind: .arrival, intensity: 1, deviationDegrees: 0),
                    at: time, force: true)
            }
            return self.send(HapticCue(timeSeconds: time, kind: .silent, intensity: 0, deviationDegrees: 0), at: time)
        }

        let deviation = self.deviation(rawHeading: heading.headingDegrees, targetBearing: target.bearingDegrees)
        let wanted = self.immediateCue(deviation: deviation, at: time)
        let cueing =
            self.current.map { $0.kind == .turnLeft || $0.kind == .turnRight || $0.kind == .turnAround } ?? false
        let next: HapticCue
        if cueing {
            // Hysteresis: keep cueing until well back inside the tolerance.
            if abs(deviation) <= self.options.toleranceDegrees - self.options.releaseBandDegrees {
                next = HapticCue(timeSeconds: time, kind: .silent, intensity: 0, deviationDegrees: deviation)
                self.outsideSince = nil
            } else if wanted.kind == .silent {
                // Inside the tolerance but not the release band: the weakest cue on the same side.
                let kind: CueKind = deviation > 0 ? .turnRight : .turnLeft
                next = HapticCue(
                    timeSeconds: time, kind: kind, intensity: self.options.minimumIntensity,
                    deviationDegrees: deviation)
            } else if self.current?.kind == .turnAround, wanted.kind != .turnAround,
                abs(deviation) > self.options.turnAroundDegrees - self.options.turnAroundReleaseDegrees
            {
                // A turn-around holds until the deviation is well back inside its threshold.
                next = HapticCue(
                    timeSeconds: time, kind: .turnAround, intensity: wanted.intensity, deviationDegrees: deviation)
            } else {
                next = wanted
            }
        } else if wanted.kind == .silent {
            self.outsideSince = nil
            next = wanted
        } else {
            let since = self.outsideSince ?? time
            self.outsideSince = since
            guard time - since >= self.options.debounceSeconds else {
                return self.send(
                    HapticCue(timeSeconds: time, kind: .silent, intensity: 0, deviationDegrees: deviation),
                    at: time)
            }
            next = wanted
        }
        return self.send(next, at: time)
    }

    /// Quantized state: what counts as a change.
    private func level(_ cue: HapticCue) -> Int {
        cue.kind == .silent ? 0 : Int((cue.intensity / self.options.intensityStep).rounded())
    }

    private mutating func send(_ cue: HapticCue, at time: Double, force: Bool = false) -> HapticCue? {
        let changed = self.current.map { $0.kind != cue.kind || self.level($0) != self.level(cue) } ?? true
        if changed {
            let minimumGap = 1 / self.options.maximumChangesPerSecond
            if !force, let last = self.lastChangeTime, time - last < minimumGap {
                return nil  // too soon: the next sample carries the change
            }
            self.lastChangeTime = time
        } else {
            guard let sent = self.lastSent, time - sent >= self.options.repeatPeriodSeconds else { return nil }
        }
        // The first silence needs no sending: nothing was playing.
        if self.current == nil && cue.kind == .silent {
            self.current = cue
            self.lastSent = time
            return nil
        }
        self.current = cue
        self.lastSent = time
        return cue
    }
}
