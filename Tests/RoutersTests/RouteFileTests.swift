import Foundation
import NavCore
import Parsers
@testable import Routers
import Testing
import TestSupport

private let repository = repositoryRoot

/// The first reference route's engine answers, as the engines wrote them.
nonisolated(unsafe) private let reference: [String: Any] = {
    let data = try! Data(contentsOf: repository.appendingPathComponent("data/routing/monaco-pedestrian-routes.json"))
    let root = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    return (root["routes"] as! [[String: Any]])[1]
}()

private func write(_ name: String, _ contents: String) throws -> String {
    let path = try scratchPath(name)
    try contents.store(toFile: path)
    return path
}

private func json(_ object: Any) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
}

@Suite struct RouteFileTests {
    private var valhalla: [String: Any] { reference["valhalla"] as! [String: Any] }
    private var osrm: [String: Any] { reference["osrm"] as! [String: Any] }

    @Test func aSavedValhallaResponseKeepsItsShapeAndStreetNames() throws {
        let response: [String: Any] = [
            "trip": [
                "legs": [["shape": valhalla["shape_polyline6"]!, "maneuvers": valhalla["maneuvers"]!]],
                "summary": ["length": (valhalla["length_m"] as! Double) / 1000],
            ]
        ]
        let plan = try RouteFile.load(file: try write("valhalla.json", json(response)))
        #expect(abs(Polyline(plan.points).lengthMeters - (valhalla["length_m"] as! Double)) < 7)
        #expect(plan.segmentNames.contains { $0 != nil })
    }

    @Test func aSavedOSRMResponseIsDecodedAtThePrecisionThatMatchesItsDistance() throws {
        // OSRM's polyline is precision 5 by default; Mapbox may send 6. The distance tells which.
        let response: [String: Any] = [
            "code": "Ok", "routes": [["geometry": osrm["geometry_polyline6"]!, "distance": osrm["distance_m"]!]],
        ]
        let plan = try RouteFile.load(file: try write("osrm.json", json(response)))
        #expect(
            abs(Polyline(plan.points).lengthMeters - (osrm["distance_m"] as! Double)) / (osrm["distance_m"] as! Double)
                < 0.01)
    }

    @Test func geoJSONGPXAndABarePolylineGiveTheSameRoute() throws {
        let points = try EncodedPolyline.decode(valhalla["shape_polyline6"] as! String, precision: 6)
        let geojson = json([
            "type": "Feature",
            "geometry": ["type": "LineString", "coordinates": points.map { [$0.longitude, $0.latitude] }],
        ])
        var gpx = "<gpx version=\"1.1\"><rte>"
        for p in points { gpx += "<rtept lat=\"\(p.latitude)\" lon=\"\(p.longitude)\"/>" }
        gpx += "</rte></gpx>"
        let plans = try [
            RouteFile.load(file: try write("r.geojson", geojson)),
            RouteFile.load(file: try write("r.gpx", gpx)),
            RouteFile.load(file: try write("r.polyline", valhalla["shape_polyline6"] as! String), precision: 6),
        ]
        for plan in plans {
            #expect(plan.points.count == points.count)
            #expect(abs(Polyline(plan.points).lengthMeters - Polyline(points).lengthMeters) < 0.01)
        }
    }

    @Test func aFileThatIsNoRouteIsAClearError() throws {
        #expect(throws: RoutingError.self) { try RouteFile.load(file: try write("x.json", "{\"hello\": 1}")) }
        #expect(throws: RoutingError.self) {
            try RouteFile.load(file: try write("x.geojson", "{\"type\":\"LineString\",\"coordinates\":[[7.4,\"x\"]]}"))
        }
        #expect(throws: RoutingError.self) { try RouteFile.load(file: "/nonexistent/route.geojson") }
    }

    @Test func theFileProviderJoinsAWalkerOffTheRouteToItsNearestPoint() async throws {
        let start = Coordinate(latitude: 43.73, longitude: 7.42)
        let end = Geodesic.wgs84.direct(from: start, azimuthDegrees: 90, distanceMeters: 300).coordinate
        let provider = FileRouteProvider(plan: RoutePlan(points: [start, end]))
        let walker = Geodesic.wgs84.direct(
            from: Geodesic.wgs84.direct(from: start, azimuthDegrees: 90, distanceMeters: 100).coordinate,
            azimuthDegrees: 0, distanceMeters: 40
        ).coordinate
        let plan = try await provider.route(from: walker, to: end)
        #expect(plan.points.first == walker)
        #expect(abs(Polyline(plan.points).lengthMeters - 240) < 0.5, "40 m back to the route, then its last 200 m")
    }
}
