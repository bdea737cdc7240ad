public import NavCore

/// A phone's raw accelerometer and magnetometer streams turned into heading and attitude as they arrive: the samples
/// of each `interval` are averaged, and once both streams have moved past an interval its tilt-compensated heading
/// (``TiltCompensation``, magnetic north) and attitude go out. With a position (from the phone's fixes) every interval's
/// field is held against the World Magnetic Model (``CompassCheck``): a disturbed compass makes the heading's accuracy
/// say so. Live sources (phyphox, Sensor Logger) and the recorded phyphox folders share it.
public struct PhoneMotion: Sendable {
    /// One sensor sample in device axes [seconds since 1970 UTC, or a recording's own clock; m/s² or µT].
    public struct Sample: Sendable, Equatable {
        public var timeSeconds: Double
        public var x: Double
        public var y: Double
        public var z: Double

        /// Creates a sample.
        public init(timeSeconds: Double, x: Double, y: Double, z: Double) {
            self.timeSeconds = timeSeconds
            self.x = x
            self.y = y
            self.z = z
        }

        var isFinite: Bool { self.timeSeconds.isFinite && self.x.isFinite && self.y.isFinite && self.z.isFinite }
    }

    /// The averaging interval [seconds]; one heading per interval.
    public let interval: Double
    private var accelerometer: [Int: (x: Double, y: Double, z: Double, n: Double)] = [:]
    private var magnetometer: [Int: (x: Double, y: Double, z: Double, n: Double)] = [:]
    private var latestAccelerometerBin = Int.min
    private var latestMagnetometerBin = Int.min
    /// Intervals up to this one have been sent or given up.
    private var doneThrough = Int.min
    private var trueNorth = TrueNorth()
    /// Steps from the accelerometer's magnitude, and those told but not yet drained.
    private var stepCounter = StepCounter()
    private var steps: [StepCount] = []
    /// The compass check against the model (once a position is known).
    public private(set) var compass = CompassCheck()
    /// Samples not taken: not finite, or older than an interval already sent [count].
    public private(set) var droppedSamples: UInt64 = 0
    /// Intervals with no heading: gravity and field parallel, or one stream missing [count].
    public private(set) var intervalsWithoutHeading: UInt64 = 0

    /// Creates the estimator with one heading every `interval` seconds (0.1: ten a second).
    public init(interval: Double = 0.1, compass: CompassCheck.Options = .init()) {
        self.interval = max(0.01, interval)
        self.compass = CompassCheck(options: compass)
    }

    private func bin(_ time: Double) -> Int { Int((time / self.interval).rounded(.down)) }

    /// Takes an accelerometer sample (gravity's reaction included: what the phone reads at rest points up).
    public mutating func accelerometer(_ sample: Sample) {
        // Steps have their own window: a sample too late for its heading's interval still counts for them.
        if sample.isFinite {
            self.steps += self.stepCounter.add(
                timeSeconds: sample.timeSeconds,
                magnitude: (sample.x * sample.x + sample.y * sample.y + sample.z * sample.z).squareRoot())
        }
        guard let bin = self.admit(sample) else { return }
        let s = self.accelerometer[bin] ?? (0, 0, 0, 0)
        self.accelerometer[bin] = (s.x + sample.x, s.y + sample.y, s.z + sample.z, s.n + 1)
        self.latestAccelerometerBin = max(self.latestAccelerometerBin, bin)
    }

    /// Takes a magnetometer sample [µT].
    public mutating func magnetometer(_ sample: Sample) {
        guard let bin = self.admit(sample) else { return }
        let s = self.magnetometer[bin] ?? (0, 0, 0, 0)
        self.magnetometer[bin] = (s.x + sample.x, s.y + sample.y, s.z + sample.z, s.n + 1)
        self.latestMagnetometerBin = max(self.latestMagnetometerBin, bin)
    }

    private mutating func admit(_ sample: Sample) -> Int? {
        guard sample.isFinite, abs(sample.timeSeconds) < 1e11 else {
            self.droppedSamples &+= 1
            return nil
        }
        let bin = self.bin(sample.timeSeconds)
        guard bin > self.doneThrough else {
            self.droppedSamples &+= 1
            return nil
        }
        return bin
    }

    /// Learns where the phone is, for the compass check.
    public mutating func observe(_ fix: LocationFix) {
        self.trueNorth.observe(.fix(fix))
    }

    /// The heading and attitude of every interval both streams have moved past, oldest first; then the steps
    /// counted since the last drain.
    public mutating func drain() -> [BusMessage] {
        defer { self.steps.removeAll() }
        return self.headings() + self.steps.map { .step($0) }
    }

    private mutating func headings() -> [BusMessage] {
        // Int.min: a stream that has sent nothing yet (subtracting from it saturates, never wraps).
        let through = min(self.latestAccelerometerBin, self.latestMagnetometerBin).subtractingSaturated(1)
        // A stream that stopped: what the other holds is given up after two seconds, so nothing grows without bound.
        let giveUpThrough = max(self.latestAccelerometerBin, self.latestMagnetometerBin).subtractingSaturated(
            Int(2 / self.interval))
        let last = max(through, giveUpThrough)
        guard last > self.doneThrough else { return [] }
        var out: [BusMessage] = []
        let bins = Set(self.accelerometer.keys).union(self.magnetometer.keys).filter { $0 <= last }.sorted()
        for bin in bins {
            let a = self.accelerometer.removeValue(forKey: bin), m = self.magnetometer.removeValue(forKey: bin)
            guard bin <= through, let a, let m else {
                self.intervalsWithoutHeading &+= 1
                continue
            }
            if let message = self.heading(
                bin: bin, a: (a.x / a.n, a.y / a.n, a.z / a.n), m: (m.x / m.n, m.y / m.n, m.z / m.n))
            {
                out += message
            } else {
                self.intervalsWithoutHeading &+= 1
            }
        }
        self.doneThrough = last
        return out
    }

    private mutating func heading(
        bin: Int, a: (x: Double, y: Double, z: Double), m: (x: Double, y: Double, z: Double)
    ) -> [BusMessage]? {
        guard let o = TiltCompensation.orientation(accelerometer: a, magnetometer: m) else { return nil }
        let time = (Double(bin) + 0.5) * self.interval
        var accuracy: Double?
        if let model = self.trueNorth.field(atTimeSeconds: time) {
            accuracy = self.compass.check(magnetometerMicroTesla: m, gravity: a, model: model, timeSeconds: time)
        }
        return [
            .heading(
                HeadingSample(
                    timeSeconds: time, headingDegrees: o.headingDegrees, reference: .magneticNorth,
                    accuracyDegrees: accuracy)),
            .attitude(Attitude(timeSeconds: time, pitchDegrees: o.pitchDegrees, rollDegrees: o.rollDegrees)),
        ]
    }

    /// Counters for a status.
    public var statusCounters: [StatusCounter] {
        [
            StatusCounter(name: "motion.droppedSamples", value: self.droppedSamples),
            StatusCounter(name: "motion.intervalsWithoutHeading", value: self.intervalsWithoutHeading),
            StatusCounter(name: "motion.steps", value: UInt64(self.stepCounter.count)),
        ] + self.compass.statusCounters
    }
}

extension Int {
    fileprivate func subtractingSaturated(_ other: Int) -> Int {
        let (result, overflow) = self.subtractingReportingOverflow(other)
        return overflow ? Int.min : result
    }
}
