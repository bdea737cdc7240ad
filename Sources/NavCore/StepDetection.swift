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

/// Steps as the accelerometer's samples arrive: the same detector as ``StepDetection`` run over the last few seconds,
/// each step told once, `settleSeconds` after it (when the second around it is known). A gap in the samples (the
/// phone's stream paused) starts the window again; the count goes on.
public struct StepCounter: Sendable {
    public let detection: StepDetection
    /// A step is told once this long has passed after it [seconds] (the detector's local mean looks half a second
    /// ahead).
    public let settleSeconds = 0.6
    /// Samples are looked at this far back [seconds].
    private let windowSeconds = 3.0
    /// The detector runs at most this often [seconds of sample time].
    private let everySeconds = 0.1
    private var samples: [(timeSeconds: Double, magnitude: Double)] = []
    private var lastStep = -Double.infinity
    /// Steps up to this time have been told [seconds].
    private var toldThrough = -Double.infinity
    private var lastRun = -Double.infinity
    private var recent: [Double] = []
    /// Steps since the counter started [count].
    public private(set) var count: UInt32 = 0
    /// Samples out of time order, or not finite, dropped [count].
    public private(set) var dropped = 0

    public init(detection: StepDetection = StepDetection()) {
        self.detection = detection
    }

    /// Takes one sample (the acceleration's magnitude, gravity's reaction included [m/s²]); the steps now told.
    public mutating func add(timeSeconds: Double, magnitude: Double) -> [StepCount] {
        guard timeSeconds.isFinite, magnitude.isFinite else {
            self.dropped += 1
            return []
        }
        if let last = self.samples.last {
            guard timeSeconds > last.timeSeconds else {
                self.dropped += 1
                return []
            }
            if timeSeconds - last.timeSeconds > 1 {
                // A gap: what lies before it is no part of the next second's mean.
                self.samples.removeAll()
                self.toldThrough = last.timeSeconds
            }
        }
        self.samples.append((timeSeconds, magnitude))
        let first = self.samples.firstIndex { $0.timeSeconds >= timeSeconds - self.windowSeconds } ?? 0
        if first > 0 { self.samples.removeFirst(first) }
        guard timeSeconds - self.lastRun >= self.everySeconds else { return [] }
        self.lastRun = timeSeconds
        let through = timeSeconds - self.settleSeconds
        // Not before the window's first second is known either (its mean would look back beyond the window).
        let from = max(self.toldThrough, self.samples[0].timeSeconds + self.settleSeconds)
        guard through > from else { return [] }
        var told: [StepCount] = []
        for step in self.detection.steps(self.samples) where step > from && step <= through {
            guard step - self.lastStep >= self.detection.options.minimumStepSeconds else { continue }
            self.lastStep = step
            self.count &+= 1
            self.recent.append(step)
            self.recent.removeAll { $0 <= step - self.detection.options.cadenceWindowSeconds }
            told.append(
                StepCount(
                    timeSeconds: step, count: self.count,
                    cadenceHz: Double(self.recent.count) / self.detection.options.cadenceWindowSeconds))
        }
        self.toldThrough = through
        return told
    }
}
