#if canImport(Glibc)
import Glibc
#endif
import NavCore
import Testing
import MapLogic

/// The lever `hapticnav eval walkers` kept: the receiver's velocity as a measurement. (A GPS bias learned against
/// the route while on it was tried and dropped: it absorbed the walkers' real drift, and fewer arrived.)
@Suite struct GuidanceUnderNoiseTests {
    /// A walk due east at 1.3 m/s with σ10 m white position error and σ0.2 m/s velocity error; the smoothed
    /// position's RMS error over the last 200 s.
    private func smoothedRMS(velocityNoise: Double) -> Double {
        var options = KalmanSmoother.Options()
        options.velocityNoise = velocityNoise
        var filter = KalmanSmoother(options: options)
        var random = SeededGenerator(seed: 42)
        let start = Coordinate(latitude: 43.73, longitude: 7.42)
        var squared: [Double] = []
        for second in 0..<300 {
            let truth = FlatProjection(origin: start).unproject(ENU(east: 1.3 * Double(second), north: 0))
            let noisy = FlatProjection(origin: truth).unproject(
                ENU(east: random.gaussian(standardDeviation: 10), north: random.gaussian(standardDeviation: 10)))
            let ve = 1.3 + random.gaussian(standardDeviation: 0.2), vn = random.gaussian(standardDeviation: 0.2)
            let fix = LocationFix(
                timeSeconds: Double(second), latitude: noisy.latitude, longitude: noisy.longitude,
                horizontalAccuracyMeters: 10, speedMetersPerSecond: (ve * ve + vn * vn).squareRoot(),
                courseDegrees: Angle.normalized(atan2(ve, vn) * 180 / .pi))
            guard case let .success(smoothed) = filter.update(with: fix), second >= 100 else { continue }
            let error = FlatProjection.distance(
                truth, Coordinate(latitude: smoothed.latitude, longitude: smoothed.longitude))
            squared.append(error * error)
        }
        return (squared.reduce(0, +) / Double(squared.count)).squareRoot()
    }

    @Test func theReceiversVelocityAsAMeasurementHalvesThePositionError() {
        let without = self.smoothedRMS(velocityNoise: 0)
        let with = self.smoothedRMS(velocityNoise: 0.2)
        print(
            "σ10 m fixes: smoothed RMS \(fixedDecimal(without, digits: 2)) m without velocity, \(fixedDecimal(with, digits: 2)) m with"
        )
        #expect(with < without / 2, "\(with) m with, \(without) m without")
    }
}
