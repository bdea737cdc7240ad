/// Steps from a phone's accelerometer: each step is a peak of the acceleration's magnitude, smoothed over 0.1 s,
/// that rises more than `thresholdMetersPerSecondSquared` above its mean over the surrounding second, at least
/// `minimumStepSeconds` after the last. Walking speed follows from the cadence and a step length: for logs that
/// carry no speed (a phone indoors, without GNSS), whether and how fast the person walks.
public struct StepDetection: Sendable {
    /// Settings.
    public struct Options: Sendable, Equatable {
        /// How far a peak must rise above the local mean [m/s²].
        public var thresholdMetersPerSecondSquared = 1.0
        /// The shortest time between two steps [seconds] (3.3 steps a second at most).
        public var minimumStepSeconds = 0.3
        /// The length of one step [metres].
        public var stepLengthMeters = 0.7
        /// Cadence is counted over this window [seconds].
        public var cadenceWindowSeconds = 2.0

        /// The defaults.
        public init() {}
    }

    /// Settings in use.
    public let options: Options

    /// Creates a detector.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// The times of the steps in samples of (time [seconds], acceleration magnitude [m/s²]) in time order.
    public func steps(_ samples: [(timeSeconds: Double, magnitude: Double)]) -> [Double] {
        guard samples.count >= 3 else { return [] }
        let times = samples.map(\.timeSeconds)
        let smooth = Self.centredMeans(times, samples.map { $0.magnitude.isFinite ? $0.magnitude : 0 }, halfWidth: 0.05)
        let local = Self.centredMeans(times, smooth, halfWidth: 0.5)
        var steps: [Double] = []
        for index in 1..<(samples.count - 1) {
            guard smooth[index] > smooth[index - 1], smooth[index] >= smooth[index + 1],
                smooth[index] > local[index] + self.options.thresholdMetersPerSecondSquared
            else { continue }
            if let last = steps.last, times[index] - last < self.options.minimumStepSeconds { continue }
            steps.append(times[index])
        }
        return steps
    }

    /// The mean of `values` over the samples within ±`halfWidth` seconds of each one (`times` in order).
    static func centredMeans(_ times: [Double], _ values: [Double], halfWidth: Double) -> [Double] {
        var prefix = [Double](repeating: 0, count: values.count + 1)
        for index in values.indices { prefix[index + 1] = prefix[index] + values[index] }
        var lower = 0, upper = 0
        return times.indices.map { index in
            while lower < index && times[lower] < times[index] - halfWidth { lower += 1 }
            while upper + 1 < times.count && times[upper + 1] <= times[index] + halfWidth { upper += 1 }
            return (prefix[upper + 1] - prefix[lower]) / Double(upper - lower + 1)
        }
    }

    /// Walking speed [m/s] at each of `times`: the steps in the cadence window before it, times the step length,
    /// over the window.
    public func speeds(steps: [Double], at times: [Double]) -> [Double] {
        var speeds: [Double] = []
        var first = 0, end = 0
        for time in times {
            while end < steps.count && steps[end] <= time { end += 1 }
            while first < end && steps[first] <= time - self.options.cadenceWindowSeconds { first += 1 }
            speeds.append(Double(end - first) * self.options.stepLengthMeters / self.options.cadenceWindowSeconds)
        }
        return speeds
    }
}
