import MapFiles
import Foundation
import Evaluation
import NavCore
import Parsers
@testable import Routers
import Testing
import TestSupport
import MapLogic

private let repository = repositoryRoot
private let monaco = repository.appendingPathComponent("data/maps/monaco-highways.osm").path

struct ReferenceRoute: Sendable, CustomStringConvertible {
    let index: Int
    let origin: Coordinate
    let destination: Coordinate
    let valhallaMeters: Double
    let osrmMeters: Double
    var description: String { "pair \(self.index)" }

    static let all: [ReferenceRoute] = {
        let url = repository.appendingPathComponent("data/routing/monaco-pedestrian-routes.json")
        guard let data = try? Data(contentsOf: url),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let routes = root["routes"] as? [[String: Any]]
        else { return [] }
        return routes.enumerated().compactMap { index, route in
            guard let o = route["origin"] as? [String: Double], let d = route["destination"] as? [String: Double],
                let valhalla = (route["valhalla"] as? [String: Any])?["length_m"] as? Double,
                let osrm = (route["osrm"] as? [String: Any])?["distance_m"] as? Double
            else { return nil }
            return ReferenceRoute(
                index: index, origin: Coordinate(latitude: o["lat"]!, longitude: o["lon"]!),
                destination: Coordinate(latitude: d["lat"]!, longitude: d["lon"]!),
                valhallaMeters: valhalla, osrmMeters: osrm)
        }
    }()
}

/// Loaded once for the suites, on a thread of its own (seconds of a core in a debug build).
private let monacoGraph = SharedOffThePool { try OSMLoader.load(file: monaco) }

/// The length of the shortest walk between each pair's ends.
private func lengths(_ graph: WalkingGraph, _ pairs: [ReferenceRoute]) throws -> [Double] {
    try pairs.map { Polyline(try graph.shortestRoute(from: $0.origin, to: $0.destination).points).lengthMeters }
}

@Suite struct OSMRouterTests {
    @Test func monacoLoadsWithItsWarnings() async throws {
        let graph = try await monacoGraph.value
        #expect(graph.nodes.count > 20_000)
        #expect(graph.edgeCount > 20_000)
    }

    @Test func lengthsAgreeWithValhallaAndOSRMOnThe25MonacoPairs() async throws {
        let graph = try await monacoGraph.value
        #expect(ReferenceRoute.all.count == 25)
        var valhallaDifferences: [Double] = [], osrmDifferences: [Double] = []
        let walked = try await offThePool { try lengths(graph, ReferenceRoute.all) }
        for (pair, length) in zip(ReferenceRoute.all, walked) {
            let valhalla = (length - pair.valhallaMeters) / pair.valhallaMeters
            let osrm = (length - pair.osrmMeters) / pair.osrmMeters
            valhallaDifferences.append(abs(valhalla))
            osrmDifferences.append(abs(osrm))
            // Beyond 15 % of Valhalla only where OSRM's foot profile finds the same path as we do: there the two
            // engines disagree, and Valhalla's pedestrian costing avoids a way that both OSM routers use.
            #expect(
                abs(valhalla) <= 0.15 || abs(osrm) <= 0.01,
                "\(pair): \(Int(length)) m, Valhalla \(Int(pair.valhallaMeters)) m, OSRM \(Int(pair.osrmMeters)) m")
            // Never more than 10 % shorter than both engines: that would be walking where pedestrian engines do not.
            #expect(valhalla >= -0.10 || osrm >= -0.10, "\(pair): shorter than both engines by more than 10 %")
        }
        let medianValhalla = valhallaDifferences.sorted()[valhallaDifferences.count / 2]
        let medianOSRM = osrmDifferences.sorted()[osrmDifferences.count / 2]
        #expect(medianValhalla <= 0.02, "median difference from Valhalla \(medianValhalla)")
        #expect(medianOSRM <= 0.01, "median difference from OSRM \(medianOSRM)")
    }

    @Test func thePBFExtractRoutesTheSameAsItsXMLTwin() async throws {
        // monaco-highways.osm is the highway ways of monaco.osm.pbf (osmium tags-filter w/highway).
        let xml = try await monacoGraph.value
        let (pbfEdges, xmlLengths, pbfLengths) = try await offThePool {
            let pbf = try OSMLoader.load(file: repository.appendingPathComponent("data/maps/monaco.osm.pbf").path)
            return (pbf.edgeCount, try lengths(xml, ReferenceRoute.all), try lengths(pbf, ReferenceRoute.all))
        }
        // The PBF has what the filter dropped: platforms and piers, walkable too.
        #expect(pbfEdges >= xml.edgeCount)
        let largest = zip(xmlLengths, pbfLengths).map { abs($0 - $1) / $0 }.max() ?? .infinity
        print("PBF vs XML twin: largest route length difference over the 25 pairs \(largest * 100) %")
        #expect(largest < 0.005)
    }

    @Test func aBrokenPBFIsAClearErrorNamingTheFileAndBlock() async throws {
        let original = try Data(contentsOf: repository.appendingPathComponent("data/maps/monaco.osm.pbf"))
        let folder = FileManager.default.temporaryDirectory
        for (name, bytes) in [
            ("cut", original.prefix(original.count / 2)),
            (
                "flipped",
                Data(original.enumerated().map { $0.offset > 400 && $0.offset % 97 == 0 ? ~$0.element : $0.element })
            ),
        ] {
            let file = folder.appendingPathComponent("broken-\(name)-\(UUID().uuidString).osm.pbf").path
            try bytes.store(toFile: file)
            defer { try? FileManager.default.removeItem(atPath: file) }
            // The error's text, or nil where the broken file loaded.
            let refusal = try await offThePool { () -> String? in
                do {
                    _ = try OSMLoader.load(file: file)
                    return nil
                } catch {
                    return "\(error)"
                }
            }
            guard let refusal else {
                Issue.record("\(name): loaded a broken PBF")
                continue
            }
            #expect(refusal.contains(file) && refusal.contains("block"), "\(name): \(refusal)")
        }
    }

    @Test func avoidingStepsGivesALongerRouteThatUsesNone() async throws {
        // Pair 11 takes stairs (Valhalla: "Take the stairs").
        let pair = ReferenceRoute.all[11]
        let graph = try await monacoGraph.value
        let (withSteps, noSteps) = try await offThePool {
            var options = OSMLoader.Options()
            options.avoidSteps = true
            return (
                try lengths(graph, [pair])[0], try lengths(OSMLoader.load(file: monaco, options: options), [pair])[0]
            )
        }
        #expect(noSteps > withSteps)
    }

    @Test func aPointFarFromAnyWayIsAClearError() async throws {
        let sea = Coordinate(latitude: 43.70, longitude: 7.50)
        let graph = try await monacoGraph.value
        #expect(throws: RoutingError.noWayNear(point: sea, withinMeters: 250, which: "start")) {
            try graph.shortestRoute(from: sea, to: ReferenceRoute.all[0].destination)
        }
    }

    @Test func aBrokenExtractLoadsWithWarnings() throws {
        let osm = """
            <?xml version="1.0"?>
            <osm version="0.6">
              <node id="1" lat="43.7300" lon="7.4200"/>
              <node id="2" lat="43.7310" lon="7.4200"/>
              <node id="3" lat="NaN" lon="7.4210"/>
              <node id="4" lat="43.7310" lon="7.4210"/>
              <way id="10"><nd ref="1"/><nd ref="2"/><nd ref="99"/><nd ref="4"/><tag k="highway" v="footway"/></way>
              <way id="11"><nd ref="3"/><nd ref="4"/><tag k="highway" v="footway"/></way>
              <way id="12"><nd ref="1"/><nd ref="4"/><tag k="highway" v="residential"/><tag k="access" v="private"/></way>
              <way id="13"><nd ref="1"/><nd ref="4"/><tag k="highway" v="motorway"/></way>
              <way id="14"><nd ref="1"/><nd ref="4"/></way>
            </osm>
            """
        let graph = try loadOSM(osm, name: "broken")
        #expect(graph.warnings.count == 3, "\(graph.warnings)")
        #expect(graph.edgeCount == 2, "only way 10's two usable edges")
        let plan = try graph.shortestRoute(
            from: Coordinate(latitude: 43.7300, longitude: 7.4200),
            to: Coordinate(latitude: 43.7310, longitude: 7.4210))
        #expect(plan.points.count >= 3, "along the footway, not the private road or the motorway")
    }
}

@Suite struct TargetModeTests {
    @Test func walkersAimingAheadOnTheRouteStayOnItWhereWalkersAimingAtWaypointsCutCorners() async throws {
        let graph = try await monacoGraph.value
        // Each pair's walk in each mode: whether it arrived and how far off the route it went at most.
        let walks = try await offThePool {
            try ReferenceRoute.all.prefix(6).flatMap { pair in
                let route = RouteBuilder.route(
                    from: try graph.shortestRoute(from: pair.origin, to: pair.destination), routeID: 1,
                    timeSeconds: 0, provider: "osm")
                return RouteTracker.TargetMode.allCases.map { mode in
                    let walk = TargetModeSimulation.walk(route: route, mode: mode, seed: 3)
                    return (pair: pair.index, mode: mode, arrived: walk.arrived, offMeters: walk.maximumOffRouteMeters)
                }
            }
        }
        var within: [RouteTracker.TargetMode: Int] = [:]
        for walk in walks {
            #expect(walk.arrived, "pair \(walk.pair) \(walk.mode)")
            if walk.offMeters <= 10 { within[walk.mode, default: 0] += 1 }
        }
        #expect(within[.lookAhead, default: 0] >= 5, "\(within)")
        #expect(within[.lookAhead, default: 0] > within[.waypoint, default: 0] + 2, "\(within)")
    }
}
