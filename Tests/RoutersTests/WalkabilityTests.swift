import MapFiles
import Foundation
import NavCore
import Parsers
import Testing
import MapLogic

/// One small map per walkability rule (the pedestrian engines' foot rules; see OSMLoader): whether a way is walked,
/// and whether a node can be passed.
@Suite struct WalkabilityTests {
    /// Loads a map of one way A–B–C (about 160 m east) with `wayTags`, B tagged `nodeTags`.
    private func load(way wayTags: [String: String], node nodeTags: [String: String] = [:]) throws -> WalkingGraph {
        func tags(_ tags: [String: String]) -> String {
            tags.sorted { $0.key < $1.key }.map { "<tag k=\"\($0.key)\" v=\"\($0.value)\"/>" }.joined()
        }
        let osm = """
            <?xml version="1.0"?>
            <osm version="0.6">
              <node id="1" lat="43.7300" lon="7.4200"/>
              <node id="2" lat="43.7300" lon="7.4210">\(tags(nodeTags))</node>
              <node id="3" lat="43.7300" lon="7.4220"/>
              <way id="1"><nd ref="1"/><nd ref="2"/><nd ref="3"/>\(tags(wayTags))</way>
            </osm>
            """
        return try loadOSM(osm, name: "rule")
    }

    private func walked(_ tags: [String: String]) throws -> Bool {
        try self.load(way: tags).edgeCount > 0
    }

    private func passes(_ nodeTags: [String: String]) throws -> Bool {
        let graph = try self.load(way: ["highway": "footway"], node: nodeTags)
        let plan = try? graph.shortestRoute(
            from: Coordinate(latitude: 43.7300, longitude: 7.4200),
            to: Coordinate(latitude: 43.7300, longitude: 7.4220),
            connectMeters: 0)
        return plan.map { Polyline($0.points).lengthMeters > 150 } ?? false
    }

    @Test(arguments: [
        // (tags, walked): highways pedestrians use, and those they do not.
        (["highway": "footway"], true), (["highway": "residential"], true), (["highway": "steps"], true),
        (["highway": "pedestrian", "area": "yes"], true), (["highway": "cycleway"], true),
        (["highway": "primary"], true), (["highway": "motorway"], false),
        (["highway": "motorway", "foot": "yes"], true),
        (["highway": "trunk"], false), (["highway": "trunk", "sidewalk": "both"], true),
        (["highway": "trunk", "foot": "designated"], true), (["railway": "platform"], true),
        (["man_made": "pier"], true), (["building": "yes"], false),
    ])
    func highwaysAreWalkedAsPedestrianEnginesWalkThem(_ tags: [String: String], _ expected: Bool) throws {
        #expect(try self.walked(tags) == expected, "\(tags)")
    }

    @Test(arguments: [
        (["highway": "construction"], false), (["highway": "proposed"], false),
        (["highway": "footway", "construction": "yes"], false),
        (["highway": "residential", "proposed": "footway"], false),
        (["highway": "residential", "motorroad": "yes"], false), (["highway": "path", "impassable": "yes"], false),
        (["highway": "footway", "construction": "yes", "foot": "yes"], false),
    ])
    func waysBeingBuiltOrClosedForGoodAreNeverWalked(_ tags: [String: String], _ expected: Bool) throws {
        #expect(try self.walked(tags) == expected, "\(tags)")
    }

    @Test(arguments: [
        (["highway": "residential", "access": "private"], false),
        (["highway": "track", "access": "agricultural"], false),
        (["highway": "track", "access": "forestry"], false), (["highway": "service", "access": "delivery"], false),
        (["highway": "primary", "foot": "use_sidepath"], false), (["highway": "footway", "foot": "no"], false),
        (["highway": "service", "access": "private", "foot": "yes"], true),
        (["highway": "service", "access": "destination"], true),
        (["highway": "service", "access": "no", "foot": "permissive"], true),
        (["highway": "footway", "foot": "private", "access": "yes"], false),
    ])
    func footThenAccessOpenOrCloseAWay(_ tags: [String: String], _ expected: Bool) throws {
        #expect(try self.walked(tags) == expected, "\(tags)")
    }

    @Test(arguments: [
        (["highway": "primary", "sidewalk": "separate"], false),
        (["highway": "residential", "sidewalk:both": "separate"], false),
        (["highway": "residential", "sidewalk:left": "separate", "sidewalk:right": "no"], false),
        (["highway": "residential", "sidewalk": "separate", "foot": "yes"], true),
        (["highway": "residential", "sidewalk": "both"], true),
    ])
    func aRoadWhoseSidewalksAreMappedApartIsWalkedOnThem(_ tags: [String: String], _ expected: Bool) throws {
        #expect(try self.walked(tags) == expected, "\(tags)")
    }

    @Test(arguments: [
        ([:], true), (["barrier": "gate"], true), (["barrier": "bollard"], true), (["barrier": "kerb"], true),
        (["barrier": "fence"], false), (["barrier": "wall"], false), (["barrier": "yes"], false),
        (["barrier": "gate", "access": "private"], false),
        (["barrier": "gate", "access": "private", "foot": "yes"], true),
        (["barrier": "fence", "foot": "yes"], true), (["highway": "crossing"], true),
    ])
    func barriersThatStopAWalkerCannotBePassed(_ tags: [String: String], _ expected: Bool) throws {
        #expect(try self.passes(tags) == expected, "\(tags)")
    }
}
