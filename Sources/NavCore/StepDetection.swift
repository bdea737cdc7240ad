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
        let count = samples.count
        guard count >= 3 else { return [] }
        // Prefix sums for window means over ±0.05 s and ±0.5 s.
        var prefix = [Double](repeating: 0, count: count + 1)
        for index in 0..<count {
            let value = samples[index].magnitude.isFinite ? samples[index].magnitude : 0
            prefix[index + 1] = prefix[index] + value
        }
        func mean(around index: Int, halfWidthSeconds: Double, lower: inout Int, upper: inout Int) -> Double {
            let time = samples[index].timeSeconds
            while lower < index && samples[lower].timeSeconds < time - halfWidthSeconds { lower += 1 }
            while upper + 1 < count && samples[upper + 1].timeSeconds <= time + halfWidthSeconds { upper += 1 }
            return (prefix[upper + 1] - prefix[lower]) / Double(upper - lower + 1)
        }
        var smooth = [Double](repeating: 0, count: count)
        var lower = 0, upper = 0
        for index in 0..<count {
            smooth[index] = mean(around: index, halfWidthSeconds: 0.05, lower: &lower, upper: &upper)
        }
        var smoothPrefix = [Double](repeating: 0, count: count + 1)
        for index in 0..<count { smoothPrefix[index + 1] = smoothPrefix[index] + smooth[index] }
        var steps: [Double] = []
        var low = 0, high = 0
        for index in 1..<(count - 1) {
            let time = samples[index].timeSeconds
            while low < index && samples[low].timeSeconds < time - 0.5 { low += 1 }
            while high + 1 < count && samples[high + 1].timeSeconds <= time + 0.5 { high += 1 }
            let local = (smoothPrefix[high + 1] - smoothPrefix[low]) / Double(high - low + 1)
            guard smooth[index] > smooth[index - 1], smooth[index] >= smooth[index + 1],
                smooth[index] > local + self.options.thresholdMetersPerSecondSquared
            else { continue }
            if let last = steps.last, time - last < self.options.minimumStepSeconds { continue }
            steps.append(time)
        }
        return steps
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
