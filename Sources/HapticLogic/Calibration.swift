public import NavCore
/// The three-step calibration that finds the phone-in-pocket heading offset.
///
/// (a) Find north: with the phone held flat in front of the chest, the walker turns until the heading is
/// inside the north window; outside it, the cue intensity is the smallest angle to north divided by 180.
/// The walker stops where it goes quiet, somewhere in the window (at its edge, mostly): the headings the
/// phone gives while it is still flat in the hand and in the window, in the moments after, say which way they
/// face (a phone going into a pocket leaves the window, or the flat hold).
/// (b) Put the phone away: a countdown. (c) Move: the walker, still facing that way, walks ahead; while
/// they move, raw headings are averaged circularly, and once enough agree the offset is their mean less the
/// way the walker faced (true heading = raw heading − offset). Throughout (c), a phone that sits in the tilt
/// band where the compass heading flips aborts the run. Time comes from the samples: no clock reads.
public struct Calibration: Sendable {
    /// Thresholds, all configurable.
    public struct Options: Sendable, Equatable {
        /// The north window's start [degrees, clockwise].
        public var northWindowStartDegrees = 350.0
        /// The north window's end [degrees, clockwise; the window may wrap through 0].
        public var northWindowEndDegrees = 10.0
        /// How flat the phone must be held to find north: largest |pitch| and |roll| [degrees].
        public var flatToleranceDegrees = 30.0
        /// How long after north is found the phone, while still flat in the hand, tells which way the walker faces
        /// [seconds]; the facing is the mean of the last half second of those headings.
        public var facingSeconds = 2.0
        /// Step (b)'s countdown [seconds].
        public var countdownSeconds = 5.0
        /// Headings that must agree before the offset is taken [count].
        public var requiredSamples = 50
        /// How closely they must agree: largest circular spread [degrees].
        public var maximumSpreadDegrees = 10.0
        /// Walking faster than this counts as moving [metres per second].
        public var movingSpeed = 0.5
        /// A speed report older than this no longer counts [seconds].
        public var speedFreshnessSeconds = 2.0
        /// The tilt band where the compass heading flips: |pitch| at or above this [degrees]…
        public var flipBandMinimumPitchDegrees = 75.0
        /// …for at least this long aborts the run [seconds].
        public var flipBandDwellSeconds = 0.5
        /// Step (c) gives up when the headings have not agreed after this much moving [seconds].
        public var moveTimeoutSeconds = 60.0

        /// The defaults.
        public init() {}
    }

    /// What the calibration reads.
    public enum Input: Sendable {
        /// A raw compass heading.
        case heading(HeadingSample)
        /// The phone's tilt.
        case attitude(Attitude)
        /// The walker's speed over ground [metres per second] at a time [seconds since epoch].
        case speed(timeSeconds: Double, metersPerSecond: Double)
    }

    /// The options in use.
    public let options: Options
    /// The step the run is in.
    public private(set) var step: CalibrationStep = .findNorth
    /// The result, once the run has ended.
    public private(set) var result: CalibrationResult?

    private var started = false
    private var lastTime = -Double.infinity
    private var attitude: Attitude?
    private var countdownStart: Double?
    private var lastCountdownSecond: Int?
    private var lastSpeed: (time: Double, value: Double)?
    private var moveStart: Double?
    private var movingTime = 0.0
    private var lastMoveTime: Double?
    private var headings: [Double] = []
    private var flipSince: Double?
    private var wasMoving = false
    /// When north was found, and the flat in-hand headings since (while `facingOpen`).
    private var northFoundAt: Double?
    private var facingSamples: [(time: Double, heading: Double)] = []
    private var facingOpen = false

    /// Creates a run.
    public init(options: Options = Options()) {
        self.options = options
    }

    private static let findNorthPrompt = "Hold the phone flat in front of you and turn slowly until it goes quiet."

    /// The first state, to emit when the run starts.
    public mutating func start(at timeSeconds: Double) -> [BusMessage] {
        self.started = true
        self.lastTime = timeSeconds
        return [self.state(timeSeconds, .findNorth, Self.findNorthPrompt, cue: 1, progress: 0)]
    }

    /// Takes one sample; returns the states (and at the end the result) it causes, in order.
    public mutating func update(_ input: Input) -> [BusMessage] {
        guard self.result == nil else { return [] }
        let time: Double
        switch input {
        case let .heading(sample): time = sample.timeSeconds
        case let .attitude(attitude): time = attitude.timeSeconds
        case let .speed(t, _): time = t
        }
        guard time.isFinite, time >= self.lastTime else { return [] }  // stale or bad samples change nothing
        var out: [BusMessage] = []
        if !self.started { out += self.start(at: time) }
        self.lastTime = time

        switch input {
        case let .attitude(attitude):
            guard attitude.pitchDegrees.isFinite, attitude.rollDegrees.isFinite else { return out }
            self.attitude = attitude
            if self.step == .move, let abort = self.checkTilt(attitude) { out.append(contentsOf: abort) }
        case let .speed(t, value):
            if value.isFinite && value >= 0 { self.lastSpeed = (t, value) }
        case let .heading(sample):
            guard sample.headingDegrees.isFinite else { return out }
            out += self.onHeading(Angle.normalized(sample.headingDegrees), at: time)
        }
        if self.step == .putAway, let start = self.countdownStart {
            out += self.tickCountdown(from: start, at: time)
        }
        return out
    }

    private mutating func onHeading(_ heading: Double, at time: Double) -> [BusMessage] {
        switch self.step {
        case .findNorth:
            if let attitude = self.attitude,
                abs(attitude.pitchDegrees) > self.options.flatToleranceDegrees
                    || abs(attitude.rollDegrees) > self.options.flatToleranceDegrees
            {
                return [self.state(time, .findNorth, "Hold the phone flat, screen up.", cue: 0, progress: 0)]
            }
            if Angle.isInWindow(
                heading, from: self.options.northWindowStartDegrees, to: self.options.northWindowEndDegrees)
            {
                self.northFoundAt = time
                self.facingSamples = [(time, heading)]
                self.facingOpen = true
                self.step = .putAway
                self.countdownStart = time
                self.lastCountdownSecond = nil
                return [
                    self.state(
                        time, .putAway,
                        "North found. Keep facing this way and put the phone in your pocket.", cue: 0,
                        progress: 0)
                ]
            }
            let cue = Angle.separation(heading, 0) / 180
            return [self.state(time, .findNorth, Self.findNorthPrompt, cue: cue, progress: 0)]
        case .putAway:
            self.noteFacing(heading, at: time)
            return []
        case .move:
            return self.collect(heading, at: time)
        default:
            return []
        }
    }

    private var isFlat: Bool {
        guard let attitude = self.attitude else { return true }
        return abs(attitude.pitchDegrees) <= self.options.flatToleranceDegrees
            && abs(attitude.rollDegrees) <= self.options.flatToleranceDegrees
    }

    /// How far past the north window a heading still counts as the hand's, after north was found [degrees]: the walker
    /// who stops a moment after it goes quiet.
    static let facingMarginDegrees = 5.0

    /// Keeps the in-hand headings after north was found until the phone leaves the flat hold or the north window
    /// (widened by ``facingMarginDegrees``), or `facingSeconds` pass (half a second when no tilt comes with the
    /// headings).
    private mutating func noteFacing(_ heading: Double, at time: Double) {
        guard self.facingOpen, let found = self.northFoundAt else { return }
        // Without the phone's tilt there is no telling when it leaves the hand: only the first half second counts.
        // A phone going into a pocket turns it out of the window (a pocket that holds it flat is not told by tilt).
        let window = self.attitude == nil ? min(0.5, self.options.facingSeconds) : self.options.facingSeconds
        let margin = Self.facingMarginDegrees
        guard self.isFlat, time - found <= window,
            Angle.isInWindow(
                heading, from: self.options.northWindowStartDegrees - margin,
                to: self.options.northWindowEndDegrees + margin)
        else {
            self.facingOpen = false
            return
        }
        self.facingSamples.append((time, heading))
    }

    /// Which way the walker faced when north was found: the circular mean of the last half second of flat in-hand
    /// headings (0 when there were none).
    var facingDegrees: Double {
        guard let last = self.facingSamples.last else { return 0 }
        let recent = self.facingSamples.filter { last.time - $0.time <= 0.5 }.map(\.heading)
        return Angle.circularStatistics(recent).meanDegrees ?? last.heading
    }

    private mutating func tickCountdown(from start: Double, at time: Double) -> [BusMessage] {
        let elapsed = time - start
        if elapsed >= self.options.countdownSeconds {
            self.step = .move
            self.moveStart = time
            return [self.state(time, .move, "Now walk straight ahead, facing the same way.", cue: 0, progress: 0)]
        }
        let remaining = Int((self.options.countdownSeconds - elapsed).rounded(.up))
        guard remaining != self.lastCountdownSecond else { return [] }
        self.lastCountdownSecond = remaining
        return [self.state(time, .putAway, "\(remaining)", cue: 0, progress: elapsed / self.options.countdownSeconds)]
    }

    private var isMoving: Bool {
        guard let speed = self.lastSpeed else { return false }
        return speed.value >= self.options.movingSpeed
            && self.lastTime - speed.time <= self.options.speedFreshnessSeconds
    }

    private mutating func collect(_ heading: Double, at time: Double) -> [BusMessage] {
        guard self.isMoving else {
            // Say it once per stop, not on every sample.
            self.lastMoveTime = nil
            guard self.wasMoving else { return [] }
            self.wasMoving = false
            return [
                self.state(
                    time, .move, "Keep walking straight ahead, facing the same way.", cue: 0,
                    progress: self.progress)
            ]
        }
        if let last = self.lastMoveTime { self.movingTime += time - last }
        self.lastMoveTime = time
        self.wasMoving = true
        self.headings.append(heading)
        if self.headings.count > self.options.requiredSamples {
            self.headings.removeFirst(self.headings.count - self.options.requiredSamples)
        }
        guard self.headings.count >= self.options.requiredSamples else {
            return self.headings.count % 10 == 0
                ? [self.state(time, .move, "Keep walking.", cue: 0, progress: self.progress)] : []
        }
        let stats = Angle.circularStatistics(self.headings)
        if let mean = stats.meanDegrees, stats.spreadDegrees <= self.options.maximumSpreadDegrees {
            self.step = .done
            let result = CalibrationResult(
                timeSeconds: time, succeeded: true, offsetDegrees: Angle.normalized(mean - self.facingDegrees),
                spreadDegrees: stats.spreadDegrees,
                sampleCount: UInt32(self.headings.count), reason: "")
            self.result = result
            return [
                self.state(time, .done, "Calibrated. You can start.", cue: 0, progress: 1),
                .calibrationResult(result),
            ]
        }
        if self.movingTime >= self.options.moveTimeoutSeconds {
            let spread =
                stats.spreadDegrees.isFinite ? fixedDecimal(stats.spreadDegrees, digits: 0) + "°" : "everywhere"
            return self.abort(
                at: time, spread: stats.spreadDegrees,
                reason:
                    "The compass readings did not settle (spread \(spread), need \(fixedDecimal(self.options.maximumSpreadDegrees, digits: 0))° or less). Walk straight and steady, away from metal, and try again."
            )
        }
        return []
    }

    private var progress: Double {
        min(1, Double(self.headings.count) / Double(max(1, self.options.requiredSamples)))
    }

    private mutating func checkTilt(_ attitude: Attitude) -> [BusMessage]? {
        guard abs(attitude.pitchDegrees) >= self.options.flipBandMinimumPitchDegrees else {
            self.flipSince = nil
            return nil
        }
        let since = self.flipSince ?? attitude.timeSeconds
        self.flipSince = since
        guard attitude.timeSeconds - since >= self.options.flipBandDwellSeconds else { return nil }
        let stats = Angle.circularStatistics(self.headings)
        return self.abort(
            at: attitude.timeSeconds, spread: stats.spreadDegrees.isFinite ? stats.spreadDegrees : 0,
            reason:
                "The phone is nearly upright (pitch \(fixedDecimal(attitude.pitchDegrees, digits: 0))°), where the compass flips. Put it in the pocket lying flatter, and try again."
        )
    }

    private mutating func abort(at time: Double, spread: Double, reason: String) -> [BusMessage] {
        self.step = .aborted
        let result = CalibrationResult(
            timeSeconds: time, succeeded: false, offsetDegrees: 0,
            spreadDegrees: spread.isFinite ? spread : 0,
            sampleCount: UInt32(self.headings.count), reason: reason)
        self.result = result
        return [
            self.state(time, .aborted, "Calibration stopped. " + reason, cue: 0, progress: self.progress),
            .calibrationResult(result),
        ]
    }

    private func state(
        _ time: Double, _ step: CalibrationStep, _ prompt: String, cue: Double, progress: Double
    ) -> BusMessage {
        .calibrationState(
            CalibrationState(
                timeSeconds: time, step: step, prompt: prompt, cueIntensity: cue,
                progress: progress))
    }
}
