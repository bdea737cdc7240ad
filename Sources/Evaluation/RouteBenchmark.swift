#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
public import NavCore
public import Routers

/// `hapticnav bench routes`: the `osm` router against the reference routes, and query times of `osm` and
/// (when given one) a live Valhalla, measured in the same run.
public enum RouteBenchmark {
    /// One reference pair.
    public struct Pair: Sendable {
        public var origin: Coordinate
        public var destination: Coordinate
        public var valhallaMeters: Double
        public var osrmMeters: Double
    }

    /// Reads the reference set (`data/routing/monaco-pedestrian-routes.json`).
    public static func pairs(file: String) throws -> [Pair] {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        guard let routes = try JSONDecoder().decode(JSONValue.self, from: data)["routes"]?.arrayValue else {
            throw RoutingError.providerFailed(reason: "\(file): no routes in it")
        }
        return routes.compactMap { route in
            guard let lat1 = route["origin"]?["lat"]?.doubleValue, let lon1 = route["origin"]?["lon"]?.doubleValue,
                let lat2 = route["destination"]?["lat"]?.doubleValue,
                let lon2 = route["destination"]?["lon"]?.doubleValue,
                let valhalla = route["valhalla"]?["length_m"]?.doubleValue,
                let osrm = route["osrm"]?["distance_m"]?.doubleValue
            else { return nil }
            return Pair(
                origin: Coordinate(latitude: lat1, longitude: lon1),
                destination: Coordinate(latitude: lat2, longitude: lon2),
                valhallaMeters: valhalla, osrmMeters: osrm)
        }
    }

    /// Runs the benchmark and returns its report as text.
    public static func run(
        pairs: [Pair], osm: OSMRouteProvider, valhalla: ValhallaRouteProvider?, repeats: Int
    ) async throws -> String {
        var lines: [String] = []
        var differences: [Double] = []
        var osmTimes: [Double] = [], valhallaTimes: [Double] = []
        let clock = ContinuousClock()
        func milliseconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        }
        lines.append(
            "pair   osm m   Valhalla m   diff    OSRM m   diff" + (valhalla != nil ? "   live Valhalla m" : ""))
        for (index, pair) in pairs.enumerated() {
            var osmPlan: RoutePlan?
            var livePlan: RoutePlan?
            // Alternate the two engines, round by round, so that both see the same machine.
            for _ in 0..<max(1, repeats) {
                let start = clock.now
                osmPlan = try await osm.route(from: pair.origin, to: pair.destination)
                osmTimes.append(milliseconds(clock.now - start))
                if let valhalla {
                    let start = clock.now
                    livePlan = try await valhalla.route(from: pair.origin, to: pair.destination)
                    valhallaTimes.append(milliseconds(clock.now - start))
                }
            }
            let length = Polyline(osmPlan!.points).lengthMeters
            let versusValhalla = (length - pair.valhallaMeters) / pair.valhallaMeters
            let versusOSRM = (length - pair.osrmMeters) / pair.osrmMeters
            differences.append(versusValhalla)
            var line = String(
                cFormat: "%4d %7.0f %12.0f %+6.1f%% %8.0f %+6.1f%%", index, length, pair.valhallaMeters,
                versusValhalla * 100, pair.osrmMeters, versusOSRM * 100)
            if let livePlan { line += String(cFormat: " %17.0f", Polyline(livePlan.points).lengthMeters) }
            if abs(versusValhalla) > 0.15 {
                line += abs(versusOSRM) <= 0.01 ? "   (OSRM finds our path: the engines disagree)" : "   (!)"
            }
            lines.append(line)
        }
        let absolute = differences.map(abs).sorted()
        lines.append(
            String(
                cFormat:
                    "length vs Valhalla: median |diff| %.2f %%, largest %.1f %%, beyond 15 %%: %d of %d (target: median ≤ 2 %%)",
                absolute[absolute.count / 2] * 100, (absolute.last ?? 0) * 100,
                absolute.filter { $0 > 0.15 }.count, absolute.count))
        func summary(_ name: String, _ times: [Double]) -> String {
            let sorted = times.sorted()
            let p50 = sorted[sorted.count / 2],
                p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * 0.99))]
            return name.padded(to: 24)
                + String(cFormat: "%6d queries   p50 %8.2f ms   p99 %8.2f ms", sorted.count, p50, p99)
        }
        lines.append("query times (same run, engines alternating):")
        lines.append(summary("osm (this process)", osmTimes))
        if !valhallaTimes.isEmpty {
            lines.append(summary("Valhalla (HTTP, local)", valhallaTimes))
            let ratio = osmTimes.sorted()[osmTimes.count / 2] / valhallaTimes.sorted()[valhallaTimes.count / 2]
            lines.append(String(cFormat: "osm p50 / Valhalla p50: %.2f (target ≤ 1.00)", ratio))
        } else {
            lines.append("(no --valhalla-url: start one with scripts/valhalla-serve, or run scripts/bench-routes)")
        }
        return lines.joined(separator: "\n")
    }
}
