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

/// Loaded once for the suite.
private let graph: WalkingGraph? = try? OSMLoader.load(file: monaco)

@Suite struct OSMRouterTests {
    @Test func monacoLoadsWithItsWarnings() throws {
        let graph = try #require(graph)
        #expect(graph.nodes.count > 20_000)
        #expect(graph.edgeCount > 20_000)
    }

    @Test func lengthsAgreeWithValhallaAndOSRMOnThe25MonacoPairs() throws {
        let graph = try #require(graph)
        #expect(ReferenceRoute.all.count == 25)
        var valhallaDifferences: [Double] = [], osrmDifferences: [Double] = []
        for pair in ReferenceRoute.all {
            let plan = try graph.shortestRoute(from: pair.origin, to: pair.destination)
            let length = Polyline(plan.points).lengthMeters
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

    @Test func thePBFExtractRoutesTheSameAsItsXMLTwin() throws {
        // monaco-highways.osm is the highway ways of monaco.osm.pbf (osmium tags-filter w/highway).
        let xml = try #require(graph)
        let pbf = try OSMLoader.load(file: repository.appendingPathComponent("data/maps/monaco.osm.pbf").path)
        // The PBF has what the filter dropped: platforms and piers, walkable too.
        #expect(pbf.edgeCount >= xml.edgeCount)
        var largest = 0.0
        for pair in ReferenceRoute.all {
            let a = Polyline(try xml.shortestRoute(from: pair.origin, to: pair.destination).points).lengthMeters
            let b = Polyline(try pbf.shortestRoute(from: pair.origin, to: pair.destination).points).lengthMeters
            largest = max(largest, abs(a - b) / a)
        }
        print("PBF vs XML twin: largest route length difference over the 25 pairs \(largest * 100) %")
        #expect(largest < 0.005)
    }

    @Test func aBrokenPBFIsAClearErrorNamingTheFileAndBlock() throws {
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
            do {
                _ = try OSMLoader.load(file: file)
                Issue.record("\(name): loaded a broken PBF")
            } catch {
                #expect("\(error)".contains(file) && "\(error)".contains("block"), "\(name): \(error)")
            }
        }
    }

    @Test func avoidingStepsGivesALongerRouteThatUsesNone() throws {
        // Pair 11 takes stairs (Valhalla: "Take the stairs").
        let pair = ReferenceRoute.all[11]
        let withSteps = try #require(graph).shortestRoute(from: pair.origin, to: pair.destination)
        var options = OSMLoader.Options()
        options.avoidSteps = true
        let noSteps = try OSMLoader.load(file: monaco, options: options).shortestRoute(
            from: pair.origin, to: pair.destination)
        #expect(Polyline(noSteps.points).lengthMeters > Polyline(withSteps.points).lengthMeters)
    }

    @Test func aPointFarFromAnyWayIsAClearError() throws {
        let sea = Coordinate(latitude: 43.70, longitude: 7.50)
        #expect(throws: RoutingError.noWayNear(point: sea, withinMeters: 250, which: "start")) {
            try #require(graph).shortestRoute(from: sea, to: ReferenceRoute.all[0].destination)
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
    @Test func walkersAimingAheadOnTheRouteStayOnItWhereWalkersAimingAtWaypointsCutCorners() throws {
        let graph = try #require(graph)
        var within: [RouteTracker.TargetMode: Int] = [:]
        for pair in ReferenceRoute.all.prefix(6) {
            let route = RouteBuilder.route(
                from: try graph.shortestRoute(from: pair.origin, to: pair.destination), routeID: 1,
                timeSeconds: 0, provider: "osm")
            for mode in RouteTracker.TargetMode.allCases {
                let walk = TargetModeSimulation.walk(route: route, mode: mode, seed: 3)
                #expect(walk.arrived, "\(pair) \(mode)")
                if walk.maximumOffRouteMeters <= 10 { within[mode, default: 0] += 1 }
            }
        }
        #expect(within[.lookAhead, default: 0] >= 5, "\(within)")
        #expect(within[.lookAhead, default: 0] > within[.waypoint, default: 0] + 2, "\(within)")
    }
}
