import MapFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
public import NavCore
public import Routers
import Parsers
import MapLogic

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

    /// Reads the reference set (`data/routing/monaco-pedestrian-routes.json`): the routes with both engines' answers.
    public static func pairs(file: String) throws -> [Pair] {
        try self.routes(file: file).compactMap { route, endpoints in
            guard let valhalla = route["valhalla"]?["length_m"]?.doubleValue,
                let osrm = route["osrm"]?["distance_m"]?.doubleValue
            else { return nil }
            return Pair(
                origin: endpoints.origin, destination: endpoints.destination, valhallaMeters: valhalla,
                osrmMeters: osrm)
        }
    }

    /// The origin and destination of every route of such a file (`{ "routes": [{ "origin": { "lat", "lon" },
    /// "destination": … }] }`), with or without engines' answers: a user's own pairs.
    public static func endpoints(file: String) throws -> [(origin: Coordinate, destination: Coordinate)] {
        let found = try self.routes(file: file).map(\.1)
        guard !found.isEmpty else {
            throw RoutingError.providerFailed(reason: "\(file): no route with an origin and a destination { lat, lon }")
        }
        return found
    }

    private static func routes(
        file: String
    ) throws -> [(JSONValue, (origin: Coordinate, destination: Coordinate))] {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        guard let routes = try JSONDecoder().decode(JSONValue.self, from: data)["routes"]?.arrayValue else {
            throw RoutingError.providerFailed(reason: "\(file): no routes in it")
        }
        return routes.compactMap { route in
            guard let lat1 = route["origin"]?["lat"]?.doubleValue, let lon1 = route["origin"]?["lon"]?.doubleValue,
                let lat2 = route["destination"]?["lat"]?.doubleValue,
                let lon2 = route["destination"]?["lon"]?.doubleValue
            else { return nil }
            return (
                route,
                (Coordinate(latitude: lat1, longitude: lon1), Coordinate(latitude: lat2, longitude: lon2))
            )
        }
    }

    /// Loading each map (OSM XML, PBF) from the map itself and from its compiled cache: time, and the resident
    /// memory the process grew by, one after the other in this process. The cache is written by the first
    /// uncached load of each map, so the cached figure is a second start's.
    public static func loading(maps: [String]) throws -> String {
        var lines = ["map loading (same run, one after another):"]
        let clock = ContinuousClock()
        func milliseconds(_ duration: Duration) -> Double { duration.inSeconds * 1000 }
        var kept: [WalkingGraph] = []
        for map in maps {
            let name = Paths.lastComponent(of: map)
            var before = Self.residentMegabytes()
            var start = clock.now
            let graph = try OSMLoader.load(file: map)
            let read = milliseconds(clock.now - start)
            let grown = Self.residentMegabytes() - before
            kept.append(graph)
            _ = try WalkingGraphCache.load(map: map)  // writes the cache when it is missing or stale
            before = Self.residentMegabytes()
            start = clock.now
            let (cached, source, _) = try WalkingGraphCache.load(map: map)
            let fromCache = milliseconds(clock.now - start)
            kept.append(cached)
            let figures = String(
                cFormat: "read %8.1f ms   from cache %7.1f ms   resident +%5.1f MB   %d nodes, %d edges", read,
                fromCache, grown, graph.nodes.count, graph.edgeCount)
            lines.append(name.padded(to: 24) + figures + (source == .cache ? "" : "   (no writable place for a cache)"))
        }
        return lines.joined(separator: "\n")
    }

    /// This process's resident memory [MB].
    static func residentMegabytes() -> Double {
        guard let bytes = try? InputFile.contents(of: "/proc/self/status") else { return 0 }
        let status = String(decoding: bytes, as: UTF8.self)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return kilobytes / 1024
    }

    /// Runs the benchmark and returns its report as text: `live` are the engines to time beside `osm` (a live
    /// Valhalla, a live OSRM), each asked every pair in turn so that all see the same machine.
    public static func run(
        pairs: [Pair], osm: OSMRouteProvider, live: [any RouteProvider], repeats: Int
    ) async throws -> String {
        var lines: [String] = []
        var differences: [Double] = []
        var shorterThanBoth = 0
        var osmTimes: [Double] = []
        var liveTimes = Array(repeating: [Double](), count: live.count)
        let clock = ContinuousClock()
        func milliseconds(_ duration: Duration) -> Double { duration.inSeconds * 1000 }
        lines.append(
            "pair   osm m   Valhalla m   diff    OSRM m   diff"
                + live.map { "   live \($0.name) m".padded(to: 18) }.joined())
        for (index, pair) in pairs.enumerated() {
            var osmPlan: RoutePlan?
            var livePlans = [RoutePlan?](repeating: nil, count: live.count)
            // Alternate the engines, round by round, so that all see the same machine.
            for _ in 0..<max(1, repeats) {
                let start = clock.now
                osmPlan = try await osm.route(from: pair.origin, to: pair.destination)
                osmTimes.append(milliseconds(clock.now - start))
                for (engine, provider) in live.enumerated() {
                    let start = clock.now
                    livePlans[engine] = try await provider.route(from: pair.origin, to: pair.destination)
                    liveTimes[engine].append(milliseconds(clock.now - start))
                }
            }
            let length = Polyline(osmPlan!.points).lengthMeters
            let versusValhalla = (length - pair.valhallaMeters) / pair.valhallaMeters
            let versusOSRM = (length - pair.osrmMeters) / pair.osrmMeters
            differences.append(versusValhalla)
            if versusValhalla < -0.10 && versusOSRM < -0.10 { shorterThanBoth += 1 }
            var line = String(
                cFormat: "%4d %7.0f %12.0f %+6.1f%% %8.0f %+6.1f%%", index, length, pair.valhallaMeters,
                versusValhalla * 100, pair.osrmMeters, versusOSRM * 100)
            for plan in livePlans {
                let meters = plan.map { $0.reportedLengthMeters ?? Polyline($0.points).lengthMeters } ?? .nan
                line += String(cFormat: " %17.0f", meters)
            }
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
        lines.append(
            String(
                cFormat: "shorter than both engines by more than 10 %%: %d of %d (target: 0)", shorterThanBoth,
                absolute.count))
        func median(_ times: [Double]) -> Double { times.sorted()[times.count / 2] }
        func summary(_ name: String, _ times: [Double]) -> String {
            let sorted = times.sorted()
            let p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * 0.99))]
            return name.padded(to: 24)
                + String(cFormat: "%6d queries   p50 %8.2f ms   p99 %8.2f ms", sorted.count, median(sorted), p99)
        }
        lines.append("query times per provider (same run, engines alternating):")
        lines.append(summary("osm (this process)", osmTimes))
        for (engine, provider) in live.enumerated() {
            lines.append(summary("\(provider.name) (HTTP, local)", liveTimes[engine]))
        }
        for (engine, provider) in live.enumerated() {
            lines.append(
                "osm p50 / \(provider.name) p50: "
                    + String(cFormat: "%.2f", median(osmTimes) / median(liveTimes[engine]))
                    + (provider.name == "valhalla" ? " (target ≤ 1.00)" : ""))
        }
        if live.isEmpty {
            lines.append(
                "(no --valhalla-url or --osrm-url: start them with scripts/valhalla-serve and scripts/osrm-serve, or run scripts/bench-routes)"
            )
        }
        return lines.joined(separator: "\n")
    }
}
