/// Tells a compass that can be trusted from one that lies: the measured field's strength and dip against the model's.
///
/// Near cars, steel and rebar the field a phone measures is the Earth's plus a local one. The heading error that
/// adds is at most asin(|ΔB| / H) (H: the Earth's horizontal field), and |ΔB| is at least the difference of the
/// strengths and at least F times the difference of the dips. A sample is out of limits when the strength differs by
/// more than `strengthLimit` (a fraction of the model's) or the dip by more than `dipLimitDegrees`; the compass is
/// `disturbed` from the first sample out of limits until it has stayed within them for `clearSeconds`. While
/// disturbed, the heading's accuracy is widened to that bound (at least `disturbedAccuracyDegrees`).
public struct CompassCheck: Sendable {
    /// The limits.
    public struct Options: Sendable, Equatable {
        /// How far the measured strength may differ from the model's [fraction, > 0].
        public var strengthLimit = 0.25
        /// How far the measured dip may differ from the model's [degrees, > 0].
        public var dipLimitDegrees = 10.0
        /// How long the field must stay within the limits to end a disturbance [seconds, ≥ 0].
        public var clearSeconds = 2.0
        /// The least accuracy a disturbed heading is given [degrees].
        public var disturbedAccuracyDegrees = 45.0

        /// The defaults.
        public init() {}
    }

    /// One comparison.
    public struct Reading: Sendable, Equatable {
        /// Measured total intensity [nT].
        public var strengthNanoTesla: Double
        /// Measured dip below the horizontal [degrees, down positive].
        public var dipDegrees: Double
        /// The model's total intensity and dip at the place and date [nT, degrees].
        public var modelStrengthNanoTesla: Double
        public var modelDipDegrees: Double
        /// The bound on the heading error a field this far from the model's can cause [degrees, 0...90].
        public var headingErrorBoundDegrees: Double
        /// True when this sample is outside the limits.
        public var outOfLimits: Bool
    }

    /// The limits in use.
    public let options: Options
    /// True while the compass is disturbed.
    public private(set) var isDisturbed = false
    /// The latest comparison.
    public private(set) var latest: Reading?
    private var withinSince: Double?
    /// Samples compared, and samples out of limits [count].
    public private(set) var checkedCount: UInt64 = 0
    public private(set) var outOfLimitsCount: UInt64 = 0
    /// Times the compass became disturbed [count].
    public private(set) var disturbanceCount: UInt64 = 0

    /// Creates a check.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// Compares one magnetometer sample [µT, device axes] with gravity's reaction (what the accelerometer reads at
    /// rest, pointing up) [any unit] and the model's field at the place and date. Returns the accuracy the heading from
    /// this sample deserves [degrees], nil when it is within the limits and the compass is not disturbed; nil too (and
    /// nothing learnt) when the vectors are degenerate.
    public mutating func check(
        magnetometerMicroTesla m: (x: Double, y: Double, z: Double), gravity a: (x: Double, y: Double, z: Double),
        model: MagneticModel.Field, timeSeconds: Double
    ) -> Double? {
        let mNorm = (m.x * m.x + m.y * m.y + m.z * m.z).squareRoot()
        let aNorm = (a.x * a.x + a.y * a.y + a.z * a.z).squareRoot()
        let modelF = model.totalNanoTesla, modelH = model.horizontalNanoTesla
        guard mNorm.isFinite, aNorm.isFinite, mNorm > 0, aNorm > 0, modelF > 0, timeSeconds.isFinite else {
            return self.isDisturbed ? self.options.disturbedAccuracyDegrees : nil
        }
        self.checkedCount &+= 1
        let strength = mNorm * 1000
        // The field points down in the north: its component along "up" is negative there.
        let up = (m.x * a.x + m.y * a.y + m.z * a.z) / (mNorm * aNorm)
        let dip = _asin(max(-1, min(1, -up))) * 180 / .pi
        let strengthDifference = abs(strength - modelF)
        let dipDifference = abs(dip - model.inclinationDegrees)
        let disturbance = max(strengthDifference, modelF * dipDifference * .pi / 180)
        let bound = modelH > 0 ? _asin(min(1, disturbance / modelH)) * 180 / .pi : 90
        let out =
            strengthDifference > self.options.strengthLimit * modelF || dipDifference > self.options.dipLimitDegrees
        self.latest = Reading(
            strengthNanoTesla: strength, dipDegrees: dip, modelStrengthNanoTesla: modelF,
            modelDipDegrees: model.inclinationDegrees, headingErrorBoundDegrees: bound, outOfLimits: out)
        if out {
            self.outOfLimitsCount &+= 1
            self.withinSince = nil
            if !self.isDisturbed {
                self.isDisturbed = true
                self.disturbanceCount &+= 1
            }
        } else if self.isDisturbed {
            let since = self.withinSince ?? timeSeconds
            self.withinSince = since
            if timeSeconds - since >= self.options.clearSeconds {
                self.isDisturbed = false
                self.withinSince = nil
            }
        }
        return self.isDisturbed ? max(self.options.disturbedAccuracyDegrees, bound) : nil
    }

    /// A one-line description for a status: "compass disturbed: field 71 µT (model 47), dip 48° (model 60°)".
    public var statusText: String? {
        guard self.isDisturbed, let r = self.latest else { return nil }
        return "compass disturbed: field \(fixedDecimal(r.strengthNanoTesla / 1000, digits: 0)) µT (model "
            + "\(fixedDecimal(r.modelStrengthNanoTesla / 1000, digits: 0))), dip \(fixedDecimal(r.dipDegrees, digits: 0))° "
            + "(model \(fixedDecimal(r.modelDipDegrees, digits: 0))°)"
    }

    /// Counters for a stage's status.
    public var statusCounters: [StatusCounter] {
        [
            StatusCounter(name: "compass.checked", value: self.checkedCount),
            StatusCounter(name: "compass.outOfLimits", value: self.outOfLimitsCount),
            StatusCounter(name: "compass.disturbances", value: self.disturbanceCount),
        ]
    }
}
