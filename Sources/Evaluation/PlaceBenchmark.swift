#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
public import Routers
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

/// `hapticnav bench place`: what the network place costs per fix and what it buys, by particle count, beside the
/// smoother's own cost measured in the same run (the baseline): walkers along the routes of a map at 1.3 m/s with GPS
/// error (σ per axis, correlated over 30 s), Doppler velocity ±0.3 m/s, through the smoother, then the place.
public enum PlaceBenchmark {
    /// One particle count's figures.
    public struct Row: Sendable {
        public var particles: Int
        public var medianMicroseconds: Double
        public var p99Microseconds: Double
        /// The median cost at one fix a second as a share of one core [percent].
        public var corePercentAt1Hz: Double
        /// The place's error along the walker's path, RMS [metres] (the smoothed fix's in the baseline row).
        public var alongRMSMeters: Double
    }

    /// Walks each route once per particle count (the same error for each) and times every update.
    public static func run(
        provider: OSMRouteProvider, pairs: [(origin: Coordinate, destination: Coordinate)], particleCounts: [Int],
        sigmaMeters: Double, correlated: Bool
    ) async throws -> [Row] {
        var paths: [Polyline] = []
        for pair in pairs {
            guard let plan = try? await provider.route(from: pair.origin, to: pair.destination) else { continue }
            paths.append(Polyline(plan.points))
        }
        var rows: [Row] = []
        for count in [0] + particleCounts {
            var times: [Double] = []
            var squared: [Double] = []
            for (index, path) in paths.enumerated() {
                var options = NetworkPlace.Options()
                options.particles = max(16, count)
                let walk = Self.walk(
                    path, graph: provider.graph, options: options, seed: UInt64(index + 1), sigma: sigmaMeters,
                    correlated: correlated, placed: count > 0)
                times += walk.microseconds
                squared += walk.alongErrors.map { $0 * $0 }
            }
            times.sort()
            let median = times.isEmpty ? .nan : times[times.count / 2]
            rows.append(
                Row(
                    particles: count, medianMicroseconds: median,
                    p99Microseconds: times.isEmpty
                        ? .nan : times[min(times.count - 1, Int(Double(times.count) * 0.99))],
                    corePercentAt1Hz: median / 1e6 * 100,
                    alongRMSMeters: (squared.reduce(0, +) / Double(max(1, squared.count))).squareRoot()))
        }
        return rows
    }

    /// One walk along `path`: each fix's update time [µs] (the smoother's alone when `placed` is false, else the
    /// place's alone) and the error along the path of what was timed.
    static func walk(
        _ path: Polyline, graph: WalkingGraph, options: NetworkPlace.Options, seed: UInt64, sigma: Double,
        correlated: Bool, placed: Bool
    ) -> (microseconds: [Double], alongErrors: [Double]) {
        var random = SeededGenerator(seed: seed)
        var smootherOptions = KalmanSmoother.Options()
        smootherOptions.velocityNoise = 0.2
        var smoother = KalmanSmoother(options: smootherOptions)
        var place = NetworkPlace(graph: graph, options: options, seed: seed)
        var error = GPSError(sigmaMeters: sigma, timeConstantSeconds: correlated ? 30 : nil)
        var microseconds: [Double] = []
        var alongErrors: [Double] = []
        var along = 0.0
        var second = 0.0
        while along < path.lengthMeters {
            guard let here = path.point(atDistance: along) else { break }
            let fix = error.fix(
                time: 1_000 + second, position: here.coordinate, speed: 1.3, headingDegrees: here.bearingDegrees,
                velocityNoise: 0.3, random: &random)
            let started = SystemClock.monotonicSeconds()
            let result = smoother.update(with: fix)
            var timed = SystemClock.monotonicSeconds() - started
            if case let .success(smoothed) = result {
                var point = Coordinate(latitude: smoothed.latitude, longitude: smoothed.longitude)
                if placed {
                    let start = SystemClock.monotonicSeconds()
                    let estimate = place.update(
                        timeSeconds: smoothed.timeSeconds, position: point,
                        accuracyMeters: smoothed.horizontalAccuracyMeters,
                        speedMetersPerSecond: smoothed.speedMetersPerSecond, courseDegrees: smoothed.courseDegrees,
                        restart: smoothed.reset)
                    timed = SystemClock.monotonicSeconds() - start
                    if let estimate, estimate.sure { point = estimate.point }
                }
                microseconds.append(timed * 1e6)
                if let projection = path.project(point, alongRange: (along - 40)...(along + 40)) {
                    alongErrors.append(projection.distanceAlongMeters - along)
                }
            }
            along += 1.3
            second += 1
        }
        return (microseconds, alongErrors)
    }

    /// The table the command prints.
    public static func table(_ rows: [Row], routes: Int, sigmaMeters: Double, correlated: Bool) -> String {
        var lines = [
            "\(routes) routes, σ \(fixedDecimal(sigmaMeters, digits: 0)) m\(correlated ? " correlated over 30 s" : " white"), a fix a second; the smoother's cost in the same run as the baseline",
            "particles   per fix p50 / p99        core at 1 Hz   along the path RMS",
        ]
        for row in rows {
            lines.append(
                (row.particles == 0 ? "smoother" : "\(row.particles)").padded(to: 10)
                    + String(
                        cFormat: "  %8.1f / %8.1f µs  %10.3f %%  %10.2f m", row.medianMicroseconds,
                        row.p99Microseconds, row.corePercentAt1Hz, row.alongRMSMeters))
        }
        return lines.joined(separator: "\n")
    }
}
