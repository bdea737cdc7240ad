import Foundation
import NavCore
import Parsers
import Testing
import MapLogic

/// Small maps built for one rule each: a piece of network cut off from the rest next to the start.
@Suite struct SnappingTests {
    /// An L of residential streets (1–2–3) and a footway (10–11) that touches nothing, at the given latitudes.
    private func map(fragmentLatitude: Double) throws -> WalkingGraph {
        let osm = """
            <?xml version="1.0"?>
            <osm version="0.6">
              <node id="1" lat="43.7300" lon="7.4200"/>
              <node id="2" lat="43.7300" lon="7.4220"/>
              <node id="3" lat="43.7310" lon="7.4220"/>
              <node id="10" lat="\(fragmentLatitude)" lon="7.4200"/>
              <node id="11" lat="\(fragmentLatitude)" lon="7.4210"/>
              <way id="1"><nd ref="1"/><nd ref="2"/><nd ref="3"/><tag k="highway" v="residential"/><tag k="name" v="Rue A"/></way>
              <way id="2"><nd ref="10"/><nd ref="11"/><tag k="highway" v="footway"/></way>
            </osm>
            """
        return try loadOSM(osm, name: "fragment")
    }

    @Test func aStartNextToADisconnectedFragmentAttachesToTheNearestConnectedWay() throws {
        // The fragment is 5.6 m north of the start, the street 16.7 m south.
        let graph = try self.map(fragmentLatitude: 43.73020)
        let start = Coordinate(latitude: 43.73015, longitude: 7.4205)
        let destination = Coordinate(latitude: 43.7310, longitude: 7.4221)
        #expect(graph.snap(start, maximumMeters: 250).map { $0.distance < 6 } == true, "the fragment is nearest")
        let plan = try graph.shortestRoute(from: start, to: destination)
        #expect(abs(plan.points[0].latitude - 43.7300) < 1e-6, "attached to the street, not the fragment")
        let length = Polyline(plan.points).lengthMeters
        // Along the street: 120 m east to the corner (from 7.4205), then 111 m north.
        #expect(abs(length - 232) < 5, "\(length)")
        #expect(plan.segmentNames.allSatisfy { $0 == "Rue A" })
        // The same for a destination next to the fragment.
        let back = try graph.shortestRoute(from: destination, to: start)
        #expect(abs(back.points[back.points.count - 1].latitude - 43.7300) < 1e-6)
        // The same with no radius to look farther: the walker is stranded, and the error says how far the way is.
        #expect(throws: RoutingError.self) { try graph.shortestRoute(from: start, to: destination, connectMeters: 0) }
    }

    @Test func whenNoConnectedWayIsWithinReachTheErrorSaysHowFarTheNearestIs() throws {
        // The fragment is 5.6 m north of the start; the street 100 m south, farther than 5.6 + 50 m.
        let graph = try self.map(fragmentLatitude: 43.73095)
        let start = Coordinate(latitude: 43.7309, longitude: 7.4205)
        let destination = Coordinate(latitude: 43.7305, longitude: 7.4221)
        do {
            _ = try graph.shortestRoute(from: start, to: destination)
            Issue.record("routed from a fragment")
        } catch {
            guard case let .notConnected(within, nearest, startWay) = error else {
                Issue.record("wrong error: \(error)")
                return
            }
            #expect(within == 50)
            #expect(nearest.map { abs($0 - 100) < 2 } == true, "\(String(describing: nearest))")
            #expect(startWay < 6)
            #expect("\(error)".contains("the nearest way connected to the destination's is 100 m from the start"))
        }
        // A larger radius reaches it.
        let plan = try graph.shortestRoute(from: start, to: destination, connectMeters: 120)
        #expect(abs(plan.points[0].latitude - 43.7300) < 1e-6)
    }
}
