import Foundation
import NavCore
import Testing
import MapLogic

@Suite struct WaysMatcherTests {
    /// Two parallel streets 12 m apart, joined only at their ends 300 m apart, and a walker on the southern one whose
    /// positions stray up to 8 m north (nearer the northern street at times): the nearest way jumps between them, the
    /// matcher stays on the street the walker is on, since reaching the other takes a walk around the block.
    @Test func aWalkerBesideAParallelStreetStaysMatchedToTheirOwn() throws {
        let origin = Coordinate(latitude: 43.73, longitude: 7.42)
        let plane = FlatProjection(origin: origin)
        func at(_ east: Double, _ north: Double) -> Coordinate { plane.unproject(ENU(east: east, north: north)) }
        var nodes: [Coordinate] = []
        var edges: [(a: Int32, b: Int32, name: Int32)] = []
        for street in 0..<2 {
            for step in 0...30 { nodes.append(at(Double(step) * 10, Double(street) * 12)) }
            let first = Int32(street * 31)
            for step in 0..<30 { edges.append((first + Int32(step), first + Int32(step) + 1, Int32(street))) }
        }
        edges.append((0, 31, 2))
        edges.append((30, 61, 2))
        let graph = WalkingGraph(nodes: nodes, edges: edges, names: ["south", "north", "link"], warnings: [])
        var matcher = WaysMatcher(graph: graph)
        var nearestWrong = 0, matchedWrong = 0
        for second in 0..<200 {
            let east = 20 + Double(second) * 1.3
            guard east < 280 else { break }
            let north = 8 * sin(Double(second) / 5)  // strays up to 8 m north and south
            let position = at(east, north)
            let nearest = try #require(graph.snap(position, maximumMeters: 30))
            if graph.segments[nearest.segment].name != 0 { nearestWrong += 1 }
            let matched = matcher.match(position, accuracyMeters: 5)
            let match = try #require(matched)
            if graph.segments[match.segment].name != 0 { matchedWrong += 1 }
            #expect(abs(plane.project(match.point).north) < 0.01 || graph.segments[match.segment].name != 0)
        }
        #expect(nearestWrong > 20, "the nearest way is the other street at times (\(nearestWrong))")
        #expect(matchedWrong == 0, "matched to the other street \(matchedWrong) times")
        // Nothing within reach: no match, and the next position starts afresh.
        #expect(matcher.match(at(150, 500), accuracyMeters: 5) == nil)
        #expect(matcher.match(at(150, 11), accuracyMeters: 5).map { graph.segments[$0.segment].name } == 1)
    }

    @Test func aRoutesJunctionsAreItsPointsWhereThreeOrMoreWaysMeetWithTheWaysThatLeaveThem() throws {
        let origin = Coordinate(latitude: 43.73, longitude: 7.42)
        let plane = FlatProjection(origin: origin)
        func at(_ east: Double, _ north: Double) -> Coordinate { plane.unproject(ENU(east: east, north: north)) }
        // A street east 0 – 1 – 2 – 3 with a side street north from 1 (1 – 4) and a bend in it at 2 (two ways).
        let graph = WalkingGraph(
            nodes: [at(0, 0), at(50, 0), at(80, 5), at(130, 5), at(50, 60)],
            edges: [(0, 1, 0), (1, 2, 0), (2, 3, 0), (1, 4, 1)], names: ["street", "side"], warnings: [])
        // A route along the street, its geometry's points on the nodes (within 0.2 m) and one between them.
        let route = [at(0.1, 0), at(50, 0.2), at(65, 2.5), at(80, 5), at(130, 5)]
        #expect(graph.junctions(among: route) == [1])
        // Up the side street: its start is no junction, nor its end.
        #expect(graph.junctions(among: [at(50, 60), at(50, 0), at(0, 0)]) == [1])
        // A point farther than the tolerance from the junction node is not it.
        #expect(graph.junctions(among: [at(51, 0)]).isEmpty)
        // The ways that leave it, each judged 40 m along (through the bend at 2, where two ways meet), the way the
        // route arrives by and the way it leaves by.
        let junction = try #require(graph.routeJunctions(along: route, branchMeters: 40).first)
        #expect(junction.index == 1)
        let expected: [(Int32, Double)] = [
            (0, 270), (2, FlatProjection.bearing(from: at(50, 0), to: at(89.586, 5))), (4, 0),
        ]
        let ways = graph.neighbours(of: 1).map(\.node)
        for (node, bearing) in expected {
            let way = try #require(ways.firstIndex(of: node))
            #expect(abs(Angle.signedDifference(from: bearing, to: junction.branchBearingsDegrees[way])) < 0.5)
        }
        #expect(junction.arrivingBranch == ways.firstIndex(of: 0))
        #expect(junction.routeBranch == ways.firstIndex(of: 2))
        // A route that ends at it leaves by none.
        #expect(graph.routeJunctions(along: [at(50, 60), at(50, 0)]).first?.routeBranch == nil)
    }

    @Test func walkingDistancesGoRoundTheBlock() throws {
        let origin = Coordinate(latitude: 43.73, longitude: 7.42)
        let plane = FlatProjection(origin: origin)
        func at(_ east: Double, _ north: Double) -> Coordinate { plane.unproject(ENU(east: east, north: north)) }
        // A square block of 100 m: 0 (0,0) – 1 (100,0) – 2 (100,100) – 3 (0,100) – 0.
        let graph = WalkingGraph(
            nodes: [at(0, 0), at(100, 0), at(100, 100), at(0, 100)],
            edges: [(0, 1, -1), (1, 2, -1), (2, 3, -1), (3, 0, -1)], names: [], warnings: [])
        let start = try #require(graph.snap(at(50, 0), maximumMeters: 5))
        let across = try #require(graph.snap(at(50, 100), maximumMeters: 5))
        let along = try #require(graph.snap(at(80, 0), maximumMeters: 5))
        let distances = graph.walkingDistances(from: start, to: [across, along], boundMeters: 1000)
        #expect(abs(distances[0] - 200) < 0.5 && abs(distances[1] - 30) < 0.5, "\(distances)")
        #expect(graph.walkingDistances(from: start, to: [across], boundMeters: 150)[0] == .infinity)
    }
}
