public import MapLogic
public import NavCore

/// Measures a smoother against a known truth: the figures `hapticnav eval smoother` prints.
public enum SmootherEvaluation {
    /// Where the walker truly was, sampled at the times fixes are taken.
    public struct Track: Sendable {
        /// Sample times [seconds].
        public var times: [Double]
        /// True positions at those times.
        public var points: [Coordinate]
        /// True distance walked at those times [metres].
        public var alongMeters: [Double]
        /// The path walked, for measuring lag along it.
        public var path: Polyline

        /// Creates a track.
        public init(times: [Double], points: [Coordinate], alongMeters: [Double], path: Polyline) {
            self.times = times
            self.points = points
            self.alongMeters = alongMeters
            self.path = path
        }
    }

    /// The figures of one run.
    public struct Metrics: Sendable, Equatable {
        /// Fixes evaluated [count].
        public var fixes: Int
        /// Root mean square distance of the raw fixes from the truth [metres].
        public var rawRMSMeters: Double
        /// Root mean square distance of the smoothed fixes from the truth [metres].
        public var smoothedRMSMeters: Double
        /// Mean distance the smoothed position trails the truth along the path [metres, positive = behind].
        public var meanLagMeters: Double

        /// How much smaller the smoothed error is [fraction; 0.3 = 30 % below raw].
        public var improvement: Double { 1 - self.smoothedRMSMeters / self.rawRMSMeters }

        /// Pools runs, weighting each by its number of fixes.
        public static func pooled(_ runs: [Metrics]) -> Metrics {
            let n = runs.reduce(0) { $0 + $1.fixes }
            guard n > 0 else { return Metrics(fixes: 0, rawRMSMeters: 0, smoothedRMSMeters: 0, meanLagMeters: 0) }
            func rms(_ value: (Metrics) -> Double) -> Double {
                (runs.reduce(0) { $0 + Double($1.fixes) * value($1) * value($1) } / Double(n)).squareRoot()
            }
            return Metrics(
                fixes: n, rawRMSMeters: rms(\.rawRMSMeters), smoothedRMSMeters: rms(\.smoothedRMSMeters),
                meanLagMeters: runs.reduce(0) { $0 + Double($1.fixes) * $1.meanLagMeters } / Double(n))
        }
    }

    /// A walk through a street grid: legs of 50–150 m joined by right-angle turns, left or right at
    /// random, at `speed` with a sample every `interval` seconds.
    public static func simulatedWalk(
        seed: UInt64, legs: Int = 8, speed: Double = 1.4, interval: Double = 1,
        start: Coordinate = Coordinate(latitude: 43.7319, longitude: 7.4216)
    ) -> Track {
        var random = SeededGenerator(seed: seed)
        var corners = [start]
        var bearing = Double.random(in: 0..<360, using: &random)
        for _ in 0..<legs {
            let length = Double.random(in: 50...150, using: &random)
            corners.append(
                Geodesic.wgs84.direct(from: corners.last!, azimuthDegrees: bearing, distanceMeters: length).coordinate)
            bearing = Angle.normalized(bearing + (Bool.random(using: &random) ? 90 : -90))
        }
        let path = Polyline(corners)
        var times: [Double] = [], points: [Coordinate] = [], along: [Double] = []
        var t = 0.0
        while t * speed <= path.lengthMeters {
            times.append(t)
            points.append(path.point(atDistance: t * speed)!.coordinate)
            along.append(t * speed)
            t += interval
        }
        return Track(times: times, points: points, alongMeters: along, path: path)
    }

    /// A recorded walk used as the truth: its positions and times, interpolated to one sample every `interval`.
    public static func recordedWalk(times: [Double], points: [Coordinate], interval: Double = 1) -> Track? {
        guard times.count >= 2, times.count == points.count else { return nil }
        let path = Polyline(points)
        var sampleTimes: [Double] = [], samples: [Coordinate] = [], along: [Double] = []
        var index = 0
        var t = times[0]
        while t <= times[times.count - 1] {
            while index < times.count - 2 && times[index + 1] < t { index += 1 }
            let span = times[index + 1] - times[index]
            let fraction = span > 0 ? (t - times[index]) / span : 0
            let distance =
                path.cumulativeMeters[index]
                + fraction * (path.cumulativeMeters[index + 1] - path.cumulativeMeters[index])
            sampleTimes.append(t)
            samples.append(path.point(atDistance: distance)!.coordinate)
            along.append(distance)
            t += interval
        }
        return Track(times: sampleTimes, points: samples, alongMeters: along, path: path)
    }

    /// Fixes with Gaussian noise of `sigma` metres per axis around the truth, reporting `sigma` as their accuracy.
    public static func noisyFixes(
        _ track: Track, sigma: Double, seed: UInt64, epoch: Double = 1_767_225_600
    ) -> [LocationFix] {
        var random = SeededGenerator(seed: seed)
        return zip(track.times, track.points).map { time, truth in
            let noisy = FlatProjection(origin: truth).unproject(
                ENU(east: random.gaussian(standardDeviation: sigma), north: random.gaussian(standardDeviation: sigma)))
            return LocationFix(
                timeSeconds: epoch + time, latitude: noisy.latitude, longitude: noisy.longitude,
                horizontalAccuracyMeters: sigma)
        }
    }

    /// Runs `options`' smoother over noisy fixes of a track and measures it.
    public static func evaluate(
        _ track: Track, sigma: Double, seed: UInt64,
        options: KalmanSmoother.Options = KalmanSmoother.Options()
    ) -> Metrics {
        let fixes = self.noisyFixes(track, sigma: sigma, seed: seed)
        var smoother = KalmanSmoother(options: options)
        var rawSquares = 0.0, smoothSquares = 0.0, lagSum = 0.0, count = 0
        for (index, fix) in fixes.enumerated() {
            guard case let .success(estimate) = smoother.update(with: fix) else { continue }
            let truth = track.points[index]
            let estimated = Coordinate(latitude: estimate.latitude, longitude: estimate.longitude)
            let raw = FlatProjection.distance(truth, Coordinate(latitude: fix.latitude, longitude: fix.longitude))
            let error = FlatProjection.distance(truth, estimated)
            rawSquares += raw * raw
            smoothSquares += error * error
            if let projection = track.path.project(estimated) {
                lagSum += track.alongMeters[index] - projection.distanceAlongMeters
            }
            count += 1
        }
        let n = Double(max(count, 1))
        return Metrics(
            fixes: count, rawRMSMeters: (rawSquares / n).squareRoot(),
            smoothedRMSMeters: (smoothSquares / n).squareRoot(), meanLagMeters: lagSum / n)
    }
}
