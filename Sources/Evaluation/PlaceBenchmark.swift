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
public import MapLogic

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
        /// The share of fixes placed on the way the walker is on (the smoothed fix: the way nearest it) [percent].
        public var rightWayPercent = Double.nan
        /// After each turn of the route at a junction, the time from the walker's turning to the first fix placed on
        /// the new way: median and 95th percentile [seconds] (30 when not within 30 s).
        public var lockP50Seconds = Double.nan
        public var lockP95Seconds = Double.nan
    }

    /// Walks each route once per particle count (the same error for each) and times every update.
    public static func run(
        provider: OSMRouteProvider, pairs: [(origin: Coordinate, destination: Coordinate)], particleCounts: [Int],
        sigmaMeters: Double, correlated: Bool
    ) async throws -> [Row] {
        var paths: [Polyline] = []
        var junctions: [[Double]] = []
        for pair in pairs {
            guard let plan = try? await provider.route(from: pair.origin, to: pair.destination) else { continue }
            let path = Polyline(plan.points)
            paths.append(path)
            junctions.append(provider.graph.routeJunctions(along: plan.points).map { path.cumulativeMeters[$0.index] })
        }
        var rows: [Row] = []
        for count in [0] + particleCounts {
            var times: [Double] = []
            var squared: [Double] = []
            var right = 0
            var locks: [Double] = []
            for (index, path) in paths.enumerated() {
                var options = NetworkPlace.Options()
                options.particles = max(16, count)
                let walk = Self.walk(
                    path, graph: provider.graph, options: options, seed: UInt64(index + 1), sigma: sigmaMeters,
                    correlated: correlated, placed: count > 0)
                times += walk.microseconds
                squared += walk.alongErrors.map { $0 * $0 }
                let ways = Self.ways(
                    placed: walk.placed, path: path, junctions: junctions[index], graph: provider.graph)
                right += ways.right
                locks += ways.locks
            }
            times.sort()
            locks.sort()
            let median = times.isEmpty ? .nan : times[times.count / 2]
            rows.append(
                Row(
                    particles: count, medianMicroseconds: median,
                    p99Microseconds: times.isEmpty
                        ? .nan : times[min(times.count - 1, Int(Double(times.count) * 0.99))],
                    corePercentAt1Hz: median / 1e6 * 100,
                    alongRMSMeters: (squared.reduce(0, +) / Double(max(1, squared.count))).squareRoot(),
                    rightWayPercent: 100 * Double(right) / Double(max(1, squared.count)),
                    lockP50Seconds: locks.isEmpty ? .nan : locks[locks.count / 2],
                    lockP95Seconds: locks.isEmpty ? .nan : locks[min(locks.count - 1, Int(Double(locks.count) * 0.95))])
            )
        }
        return rows
    }

    /// A walk's fixes (each the walker's distance along `path` and where it was placed) judged by way: how many were placed on the way the walker was on (the route between the
    /// junctions before and after the walker), and after each junction where the route turns (30° or more), the
    /// seconds until the first fix placed on the new way.
    public static func ways(
        placed: [(along: Double, point: Coordinate)], path: Polyline, junctions: [Double], graph: WalkingGraph
    ) -> (right: Int, locks: [Double]) {
        // The stretch of the route (between two junctions) the walker is on at `along`.
        func stretch(_ along: Double) -> ClosedRange<Double> {
            let before = junctions.last { $0 <= along } ?? 0
            let after = junctions.first { $0 > along } ?? path.lengthMeters
            return before...after
        }
        // Whether `point`'s way (the nearest segment of the graph) runs along the route within `range`.
        func onWay(_ point: Coordinate, _ range: ClosedRange<Double>) -> Bool {
            guard let snap = graph.snap(point, maximumMeters: 30) else { return false }
            let segment = graph.segments[snap.segment]
            let a = graph.nodes[Int(segment.a)], b = graph.nodes[Int(segment.b)]
            let middle = Coordinate(latitude: (a.latitude + b.latitude) / 2, longitude: (a.longitude + b.longitude) / 2)
            guard let projection = path.project(middle, alongRange: (range.lowerBound - 1)...(range.upperBound + 1)),
                projection.distanceMeters <= 1
            else { return false }
            return range.contains(projection.distanceAlongMeters)
        }
        var right = 0
        for fix in placed where onWay(fix.point, stretch(fix.along)) { right += 1 }
        var locks: [Double] = []
        for junction in junctions {
            guard let before = path.point(atDistance: max(0, junction - 5)),
                let after = path.point(atDistance: min(path.lengthMeters, junction + 5)),
                Angle.separation(before.bearingDegrees, after.bearingDegrees) >= 30,
                let first = placed.firstIndex(where: { $0.along >= junction })
            else { continue }
            // Each fix against the stretch the walker is on then (the next junction may come within the 30 s).
            let locked = placed[first...].prefix(30).firstIndex { onWay($0.point, stretch($0.along)) }
            locks.append(locked.map { Double($0 - first) } ?? 30)
        }
        return (right, locks)
    }

    /// One walk along `path`: each fix's update time [µs] (the smoother's alone when `placed` is false, else the
    /// place's alone) and the error along the path of what was timed.
    static func walk(
        _ path: Polyline, graph: WalkingGraph, options: NetworkPlace.Options, seed: UInt64, sigma: Double,
        correlated: Bool, placed: Bool
    ) -> (microseconds: [Double], alongErrors: [Double], placed: [(along: Double, point: Coordinate)]) {
        var random = SeededGenerator(seed: seed)
        var smootherOptions = KalmanSmoother.Options()
        smootherOptions.velocityNoise = 0.2
        var smoother = KalmanSmoother(options: smootherOptions)
        var place = NetworkPlace(graph: graph, options: options, seed: seed)
        var error = GPSError(sigmaMeters: sigma, timeConstantSeconds: correlated ? 30 : nil)
        var microseconds: [Double] = []
        var alongErrors: [Double] = []
        var placedPoints: [(along: Double, point: Coordinate)] = []
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
                    placedPoints.append((along, point))
                }
            }
            along += 1.3
            second += 1
        }
        return (microseconds, alongErrors, placedPoints)
    }

    /// The table the command prints.
    public static func table(_ rows: [Row], routes: Int, sigmaMeters: Double, correlated: Bool) -> String {
        var lines = [
            "\(routes) routes, σ \(fixedDecimal(sigmaMeters, digits: 0)) m\(correlated ? " correlated over 30 s" : " white"), a fix a second; the smoother's cost in the same run as the baseline",
            "particles   per fix p50 / p99        core at 1 Hz   along the path RMS   right way   lock after a turn p50 / p95",
        ]
        for row in rows {
            lines.append(
                (row.particles == 0 ? "smoother" : "\(row.particles)").padded(to: 10)
                    + String(
                        cFormat: "  %8.1f / %8.1f µs  %10.3f %%  %16.2f m  %8.1f %%  %13.0f / %.0f s",
                        row.medianMicroseconds,
                        row.p99Microseconds, row.corePercentAt1Hz, row.alongRMSMeters, row.rightWayPercent,
                        row.lockP50Seconds, row.lockP95Seconds))
        }
        return lines.joined(separator: "\n")
    }
}
