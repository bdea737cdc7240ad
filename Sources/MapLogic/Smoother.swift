public import NavCore
/// Why a fix was not used.
public enum FixRejection: String, Error, CaseIterable, Sendable, Codable {
    /// A NaN or infinite time, latitude, longitude or accuracy.
    case nonFinite
    /// Latitude beyond ±90° or longitude beyond ±180°.
    case outOfRange
    /// A reported accuracy of zero or less: the receiver does not know.
    case accuracyNotPositive
    /// A reported accuracy above the configured limit.
    case accuracyAboveLimit
    /// A time before the previous fix's.
    case timeWentBackwards
}

/// A Kalman filter over location fixes: position and velocity in a local metric frame, a constant-velocity
/// model driven by white acceleration noise, and each fix weighed by its reported horizontal accuracy.
///
/// East and north share one model and one noise level per fix, so they share one 2×2 covariance: the
/// filter runs as two scalar-measurement filters with a common gain. No clock reads: time comes from the
/// fixes, so a replay at any rate gives the same output.
public struct KalmanSmoother: Sendable {
    /// Tuning and limits.
    public struct Options: Sendable, Equatable {
        /// The settings the `kalman` smoother may be given, each with its key, unit, default and range.
        public enum Setting {
            public static let accelerationNoise = SettingSpec(
                "accelerationNoise", unit: "m/s²", default: 0.5, in: 0.01...20,
                "the walker's acceleration, one sigma: larger follows turns faster and smooths less")
            public static let maximumAccuracyMeters = SettingSpec(
                "maximumAccuracyMeters", unit: "m", default: 100.0, in: 1...10_000,
                "fixes reporting a worse horizontal accuracy are rejected")
            public static let maximumGapSeconds = SettingSpec(
                "maximumGapSeconds", unit: "s", default: 10.0, in: 0.5...3600,
                "a gap between fixes longer than this restarts the filter")
            public static let minimumCourseSpeed = SettingSpec(
                "minimumCourseSpeed", unit: "m/s", default: 0.3, in: 0...10, "below this speed no course is reported")
            public static let velocityNoise = SettingSpec(
                "velocityNoise", unit: "m/s", default: 0.0, in: 0...10,
                "the receiver's speed-and-course error per axis, one sigma; above 0 they are measurements too (Doppler velocity is far better than position differences); 0 leaves them out"
            )

            public static let biasSigmaMeters = SettingSpec(
                "biasSigmaMeters", unit: "m", default: 0.0, in: 0...50,
                "the part of a fix's error that drifts slowly (a street canyon's reflections), one sigma per axis, never taken as more than the fix's reported accuracy: above 0 it is a state of the filter, told from the walker's movement by the Doppler velocity (needs velocityNoise); 0 takes every fix's error as independent"
            )
            public static let biasTimeConstantSeconds = SettingSpec(
                "biasTimeConstantSeconds", unit: "s", default: 30.0, in: 1...3600,
                "…and how long it takes to change (first-order Gauss–Markov)")

            /// Every setting, in documentation order.
            public static let all: [SettingDoc] = [
                accelerationNoise.doc, maximumAccuracyMeters.doc, maximumGapSeconds.doc, minimumCourseSpeed.doc,
                velocityNoise.doc, biasSigmaMeters.doc, biasTimeConstantSeconds.doc,
            ]
        }

        /// Standard deviation of the walker's acceleration [m/s², > 0]: larger follows turns faster, smooths less.
        public var accelerationNoise: Double = Setting.accelerationNoise.defaultValue
        /// Fixes reporting a worse horizontal accuracy are rejected [metres].
        public var maximumAccuracyMeters: Double = Setting.maximumAccuracyMeters.defaultValue
        /// A gap between fixes longer than this restarts the filter [seconds].
        public var maximumGapSeconds: Double = Setting.maximumGapSeconds.defaultValue
        /// Below this speed the course is not reported [metres per second].
        public var minimumCourseSpeed: Double = Setting.minimumCourseSpeed.defaultValue
        /// The receiver's velocity error per axis [metres per second, one sigma]; 0: speed and course are not used.
        public var velocityNoise: Double = Setting.velocityNoise.defaultValue
        /// The slowly drifting part of a fix's error [metres per axis, one sigma]; 0: none.
        public var biasSigmaMeters: Double = Setting.biasSigmaMeters.defaultValue
        /// Its correlation time [seconds].
        public var biasTimeConstantSeconds: Double = Setting.biasTimeConstantSeconds.defaultValue
        /// Velocity uncertainty at a (re)start [metres per second, one sigma].
        public var initialVelocitySigma: Double = 1.5
        /// The local frame moves to the walker when they are this far from its origin [metres].
        public var recentreDistanceMeters: Double = 2000

        /// The defaults.
        public init() {}
    }

    /// What the filter has done, for stage status.
    public struct Counters: Sendable, Equatable {
        /// Fixes used [count].
        public var accepted = 0
        /// Fixes rejected, by reason [count].
        public var rejected: [FixRejection: Int] = [:]
        /// Restarts after a long gap [count].
        public var resets = 0
    }

    /// The options in use.
    public let options: Options
    /// What the filter has done so far.
    public private(set) var counters = Counters()

    private var frame: FlatProjection?
    private var east = (position: 0.0, velocity: 0.0)
    private var north = (position: 0.0, velocity: 0.0)
    // Shared covariance of (position, velocity) per axis.
    private var pPP = 0.0, pPV = 0.0, pVV = 0.0
    /// With a bias state: each axis's bias, and the bias's covariances with position, velocity and itself.
    private var eastBias = 0.0, northBias = 0.0
    private var pPB = 0.0, pVB = 0.0, pBB = 0.0
    private var hasBias: Bool { self.options.biasSigmaMeters > 0 && self.options.velocityNoise > 0 }
    private var lastTime: Double?

    /// Creates a filter.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// Takes one fix; returns the new estimate, or why the fix was rejected (the state is then unchanged).
    public mutating func update(with fix: LocationFix) -> Result<SmoothedFix, FixRejection> {
        guard fix.timeSeconds.isFinite, fix.latitude.isFinite, fix.longitude.isFinite,
            fix.horizontalAccuracyMeters.isFinite
        else {
            return self.reject(.nonFinite)
        }
        guard abs(fix.latitude) <= 90, abs(fix.longitude) <= 180 else { return self.reject(.outOfRange) }
        guard fix.horizontalAccuracyMeters > 0 else { return self.reject(.accuracyNotPositive) }
        guard fix.horizontalAccuracyMeters <= self.options.maximumAccuracyMeters else {
            return self.reject(.accuracyAboveLimit)
        }
        let measurementVariance = fix.horizontalAccuracyMeters * fix.horizontalAccuracyMeters
        let position = Coordinate(latitude: fix.latitude, longitude: fix.longitude)

        guard let lastTime = self.lastTime, let frame = self.frame,
            fix.timeSeconds - lastTime <= self.options.maximumGapSeconds
        else {
            if self.lastTime != nil { self.counters.resets += 1 }
            return .success(self.start(at: position, fix: fix, variance: measurementVariance))
        }
        let dt = fix.timeSeconds - lastTime
        guard dt >= 0 else { return self.reject(.timeWentBackwards) }

        // Predict (nothing to do for two fixes with the same time).
        if dt > 0 {
            self.east.position += dt * self.east.velocity
            self.north.position += dt * self.north.velocity
            let q = self.options.accelerationNoise * self.options.accelerationNoise
            let dt2 = dt * dt
            let newPP = self.pPP + 2 * dt * self.pPV + dt2 * self.pVV + q * dt2 * dt2 / 4
            let newPV = self.pPV + dt * self.pVV + q * dt2 * dt / 2
            let newVV = self.pVV + q * dt2
            (self.pPP, self.pPV, self.pVV) = (newPP, newPV, newVV)
            if self.hasBias {
                // The bias decays toward zero and is renewed (first-order Gauss–Markov); position gains dt × v.
                let a = _exp(-dt / self.options.biasTimeConstantSeconds)
                // The drifting part of the error is never more than the receiver reports the whole to be.
                let sigma2 = min(
                    self.options.biasSigmaMeters * self.options.biasSigmaMeters, measurementVariance * 24 / 25)
                self.eastBias *= a
                self.northBias *= a
                let newPB = a * (self.pPB + dt * self.pVB)
                let newVB = a * self.pVB
                let newBB = a * a * self.pBB + sigma2 * (1 - a * a)
                (self.pPB, self.pVB, self.pBB) = (newPB, newVB, newBB)
            }
        }

        let measured = frame.project(position)
        if self.hasBias {
            self.updateWithBias(measured: measured, variance: measurementVariance)
            self.updateVelocity(with: fix)
            return .success(self.finish(fix))
        }
        // Update with the measured position; the innovation variance is never below R > 0.
        let s = self.pPP + measurementVariance
        let gainP = self.pPP / s, gainV = self.pPV / s
        let innovationEast = measured.east - self.east.position
        let innovationNorth = measured.north - self.north.position
        self.east.position += gainP * innovationEast
        self.east.velocity += gainV * innovationEast
        self.north.position += gainP * innovationNorth
        self.north.velocity += gainV * innovationNorth
        let newPP = (1 - gainP) * self.pPP
        let newPV = (1 - gainP) * self.pPV
        let newVV = self.pVV - gainV * self.pPV
        (self.pPP, self.pPV, self.pVV) = (newPP, newPV, max(newVV, 0))
        self.updateVelocity(with: fix)
        return .success(self.finish(fix))
    }

    /// The position measured as position + bias: the white part of the fix's error is what its accuracy leaves
    /// beyond the bias (at least a fifth of it).
    private mutating func updateWithBias(measured: ENU, variance: Double) {
        let sigma2 = min(self.options.biasSigmaMeters * self.options.biasSigmaMeters, variance * 24 / 25)
        let white = variance - sigma2
        // H = [1 0 1]: HP = (pPP + pPB, pPV + pVB, pPB + pBB).
        let hp = (self.pPP + self.pPB, self.pPV + self.pVB, self.pPB + self.pBB)
        let s = hp.0 + hp.2 + white
        let k = (hp.0 / s, hp.1 / s, hp.2 / s)
        let innovationEast = measured.east - self.east.position - self.eastBias
        let innovationNorth = measured.north - self.north.position - self.northBias
        self.east.position += k.0 * innovationEast
        self.east.velocity += k.1 * innovationEast
        self.eastBias += k.2 * innovationEast
        self.north.position += k.0 * innovationNorth
        self.north.velocity += k.1 * innovationNorth
        self.northBias += k.2 * innovationNorth
        // P −= K (HP).
        self.pPP = max(self.pPP - k.0 * hp.0, 0)
        self.pPV -= k.0 * hp.1
        self.pPB -= k.0 * hp.2
        self.pVV = max(self.pVV - k.1 * hp.1, 0)
        self.pVB -= k.1 * hp.2
        self.pBB = max(self.pBB - k.2 * hp.2, 0)
    }

    /// Counts the fix and outputs the estimate, moving the local frame to the walker when they are far from it.
    private mutating func finish(_ fix: LocationFix) -> SmoothedFix {
        self.lastTime = fix.timeSeconds
        self.counters.accepted += 1

        var estimate = self.output(time: fix.timeSeconds, reset: false)
        // Keep the frame near the walker, so that the flat approximation stays within 0.1 %.
        let offset = (self.east.position * self.east.position + self.north.position * self.north.position).squareRoot()
        if offset > self.options.recentreDistanceMeters {
            let centre = Coordinate(latitude: estimate.latitude, longitude: estimate.longitude)
            self.frame = FlatProjection(origin: centre)
            self.east.position = 0
            self.north.position = 0
            estimate = self.output(time: fix.timeSeconds, reset: false)
        }
        return estimate
    }

    /// The receiver's velocity as a second measurement, when configured: speed with course as a vector; a speed too
    /// low for a course as "about standing", with the speed itself added to the uncertainty.
    private mutating func updateVelocity(with fix: LocationFix) {
        guard self.options.velocityNoise > 0, let speed = fix.speedMetersPerSecond, speed.isFinite, speed >= 0,
            speed < 20
        else { return }
        var measuredEast = 0.0, measuredNorth = 0.0
        var variance = self.options.velocityNoise * self.options.velocityNoise
        if let course = fix.courseDegrees, course.isFinite {
            let radians = course * .pi / 180
            measuredEast = speed * _sin(radians)
            measuredNorth = speed * _cos(radians)
        } else {
            variance += speed * speed
        }
        let s = self.pVV + variance
        let gainP = self.pPV / s, gainV = self.pVV / s, gainB = self.pVB / s
        let innovationEast = measuredEast - self.east.velocity
        let innovationNorth = measuredNorth - self.north.velocity
        self.east.position += gainP * innovationEast
        self.east.velocity += gainV * innovationEast
        self.north.position += gainP * innovationNorth
        self.north.velocity += gainV * innovationNorth
        if self.hasBias {
            self.eastBias += gainB * innovationEast
            self.northBias += gainB * innovationNorth
            // P −= K (HP), HP = (pPV, pVV, pVB).
            let newPB = self.pPB - gainP * self.pVB
            let newBB = self.pBB - gainB * self.pVB
            let newVB = self.pVB - gainV * self.pVB
            (self.pPB, self.pBB, self.pVB) = (newPB, max(newBB, 0), newVB)
        }
        let newPP = self.pPP - gainP * self.pPV
        let newPV = self.pPV - gainP * self.pVV
        let newVV = self.pVV - gainV * self.pVV
        (self.pPP, self.pPV, self.pVV) = (max(newPP, 0), newPV, max(newVV, 0))
    }

    /// Forgets everything; the next fix starts afresh.
    public mutating func reset() {
        self.frame = nil
        self.lastTime = nil
    }

    private mutating func reject(_ reason: FixRejection) -> Result<SmoothedFix, FixRejection> {
        self.counters.rejected[reason, default: 0] += 1
        return .failure(reason)
    }

    private mutating func start(at position: Coordinate, fix: LocationFix, variance: Double) -> SmoothedFix {
        self.frame = FlatProjection(origin: position)
        self.east = (0, 0)
        self.north = (0, 0)
        // A reported speed and course, when the receiver has them, are a better start than standing still.
        if let speed = fix.speedMetersPerSecond, let course = fix.courseDegrees, speed.isFinite, course.isFinite,
            speed >= 0, speed < 20
        {
            let radians = course * .pi / 180
            self.east.velocity = speed * _sin(radians)
            self.north.velocity = speed * _cos(radians)
        }
        self.pPP = variance
        self.pPV = 0
        self.pVV = self.options.initialVelocitySigma * self.options.initialVelocitySigma
        // With a bias state, the first fix is position + bias: the bias's share of its error is the bias's.
        let sigma2 = min(self.options.biasSigmaMeters * self.options.biasSigmaMeters, variance * 24 / 25)
        self.eastBias = 0
        self.northBias = 0
        (self.pPB, self.pVB, self.pBB) = self.hasBias ? (-sigma2, 0, sigma2) : (0, 0, 0)
        self.lastTime = fix.timeSeconds
        self.counters.accepted += 1
        return self.output(time: fix.timeSeconds, reset: true)
    }

    private func output(time: Double, reset: Bool) -> SmoothedFix {
        let frame = self.frame!
        let coordinate = frame.unproject(ENU(east: self.east.position, north: self.north.position))
        let speed = (self.east.velocity * self.east.velocity + self.north.velocity * self.north.velocity).squareRoot()
        let course =
            speed >= self.options.minimumCourseSpeed
            ? Angle.normalized(_atan2(self.east.velocity, self.north.velocity) * 180 / .pi) : nil
        return SmoothedFix(
            timeSeconds: time, latitude: coordinate.latitude, longitude: coordinate.longitude,
            horizontalAccuracyMeters: self.pPP.squareRoot(), speedMetersPerSecond: speed,
            courseDegrees: course, reset: reset)
    }
}
