import Foundation
import NavCore
import Testing

private struct PolylineVector: Sendable, CustomStringConvertible {
    let precision: Int
    let encoded: String
    let points: [Coordinate]
    let tolerance: Double
    let name: String
    var description: String { self.name }

    static let all: [PolylineVector] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Fixtures/polyline-vectors.json")
        guard let data = try? Data(contentsOf: url),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [] }
        var vectors: [PolylineVector] = []
        for (index, entry) in (root["published"] as? [[String: Any]] ?? []).enumerated() {
            let points = (entry["points"] as? [[Double]] ?? []).map { Coordinate(latitude: $0[0], longitude: $0[1]) }
            let precision = entry["precision"] as? Int ?? 5
            // Some published points carry more digits than the encoding: decoding is exact to half a unit of the last digit.
            var unit = 1.0
            for _ in 0..<precision { unit /= 10 }
            vectors.append(
                PolylineVector(
                    precision: precision, encoded: entry["encoded"] as? String ?? "",
                    points: points, tolerance: unit / 2 * 1.000_001, name: "published \(index)"))
        }
        for (index, entry) in (root["osrm"] as? [[String: Any]] ?? []).enumerated() {
            let points = (entry["points_lonlat"] as? [[Double]] ?? []).map {
                Coordinate(latitude: $0[1], longitude: $0[0])
            }
            vectors.append(
                PolylineVector(
                    precision: 6, encoded: entry["polyline6"] as? String ?? "", points: points,
                    tolerance: 1e-9, name: "osrm \(index) polyline6"))
            vectors.append(
                PolylineVector(
                    precision: 5, encoded: entry["polyline"] as? String ?? "", points: points,
                    tolerance: 5.0001e-6, name: "osrm \(index) polyline5"))
        }
        return vectors
    }()
}

@Suite struct EncodedPolylineTests {
    @Test func allVectorsAreLoaded() {
        #expect(PolylineVector.all.count == 11 + 8)
    }

    @Test(arguments: PolylineVector.all)
    fileprivate func decodesTheReferenceVectors(_ vector: PolylineVector) throws {
        let decoded = try EncodedPolyline.decode(vector.encoded, precision: vector.precision)
        #expect(decoded.count == vector.points.count)
        for (a, b) in zip(decoded, vector.points) {
            #expect(
                abs(a.latitude - b.latitude) <= vector.tolerance && abs(a.longitude - b.longitude) <= vector.tolerance)
        }
    }

    @Test(arguments: PolylineVector.all.filter { !$0.name.hasSuffix("polyline5") })
    fileprivate func encodesToTheReferenceString(_ vector: PolylineVector) {
        #expect(EncodedPolyline.encode(vector.points, precision: vector.precision) == vector.encoded)
    }

    @Test func malformedStringsAreErrorsNotCrashes() {
        #expect(throws: EncodedPolyline.DecodingError.truncated) { try EncodedPolyline.decode("_p~iF") }
        #expect(throws: EncodedPolyline.DecodingError.invalidCharacter(offset: 0)) {
            try EncodedPolyline.decode(" p~iF~ps|U")
        }
        #expect(throws: EncodedPolyline.DecodingError.self) {
            try EncodedPolyline.decode("~~~~~~~~~~~~~~~~~~~~~~~~~~~~?")
        }
    }
}

@Suite struct LocalFrameTests {
    @Test func aPointDueNorthIsNorth() {
        let origin = Coordinate(latitude: 43.7319, longitude: 7.4216)
        let north = Geodesic.wgs84.direct(from: origin, azimuthDegrees: 0, distanceMeters: 100).coordinate
        let local = LocalFrame(origin: origin).enu(of: north)
        #expect(abs(local.north - 100) < 0.001)
        #expect(abs(local.east) < 1e-6)
        // The Earth curves away: 100 m off, the point is 0.8 mm below the tangent plane.
        #expect(local.up < 0 && local.up > -0.002)
    }

    @Test(arguments: [(43.73, 7.42), (-33.9, 151.2), (78.2, 15.6), (0, -179.999), (-89.5, 45)])
    func enuRoundTripsToTheMillimetre(_ lat: Double, _ lon: Double) {
        let frame = LocalFrame(origin: Coordinate(latitude: lat, longitude: lon), height: 50)
        for local in [
            ENU(east: 12.5, north: -40, up: 3), ENU(east: -1500, north: 2200, up: -20), ENU(east: 0, north: 0, up: 0),
        ] {
            let (point, height) = frame.coordinate(of: local)
            let back = frame.enu(of: point, height: height)
            #expect(
                abs(back.east - local.east) < 0.001 && abs(back.north - local.north) < 0.001
                    && abs(back.up - local.up) < 0.001)
        }
    }

    @Test func enuDistanceAndBearingAgreeWithTheGeodesic() {
        let origin = Coordinate(latitude: 43.7384, longitude: 7.4246)
        for azimuth in stride(from: 0.0, to: 360, by: 30) {
            let target = Geodesic.wgs84.direct(from: origin, azimuthDegrees: azimuth, distanceMeters: 250).coordinate
            let local = LocalFrame(origin: origin).enu(of: target)
            #expect(abs(local.horizontalDistance - 250) < 0.01)
            #expect(Angle.separation(local.bearingDegrees, azimuth) < 1e-4)
        }
    }

    @Test func theFlatApproximationIsWithinATenthOfAPercentBelow20Kilometres() {
        var random = SeededGenerator(seed: 42)
        var worst = 0.0
        for _ in 0..<2000 {
            let a = Coordinate(
                latitude: Double.random(in: -80...80, using: &random),
                longitude: Double.random(in: -180..<180, using: &random))
            let distance = Double.random(in: 1...20_000, using: &random)
            let b = Geodesic.wgs84.direct(
                from: a, azimuthDegrees: Double.random(in: 0..<360, using: &random),
                distanceMeters: distance
            ).coordinate
            let truth = Geodesic.wgs84.inverse(a, b).distanceMeters
            worst = max(worst, abs(FlatProjection.distance(a, b) - truth) / truth)
            let plane = FlatProjection(origin: a)
            worst = max(worst, abs(plane.project(b).horizontalDistance - truth) / truth)
        }
        #expect(worst < 0.001, "worst relative error \(worst)")
    }
}

@Suite struct PolylineTests {
    // An L: 200 m east, then 150 m north, in Monaco.
    private let corner = Coordinate(latitude: 43.7300, longitude: 7.4200)
    private var path: Polyline {
        let east = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 200).coordinate
        let north = Geodesic.wgs84.direct(from: east, azimuthDegrees: 0, distanceMeters: 150).coordinate
        return Polyline([self.corner, east, north])
    }

    @Test func theLengthIsTheSumOfGeodesics() {
        #expect(abs(self.path.lengthMeters - 350) < 0.001)
    }

    @Test func aPointBesideTheFirstLegProjectsOntoIt() throws {
        let along = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 80).coordinate
        let north = Geodesic.wgs84.direct(from: along, azimuthDegrees: 0, distanceMeters: 12).coordinate
        let projection = try #require(self.path.project(north))
        #expect(abs(projection.distanceMeters - 12) < 0.02)
        #expect(projection.crossTrackMeters < 0, "north of an eastward leg is left of it")
        #expect(abs(projection.distanceAlongMeters - 80) < 0.05)
        #expect(projection.segmentIndex == 0)
        let south = Geodesic.wgs84.direct(from: along, azimuthDegrees: 180, distanceMeters: 12).coordinate
        #expect(try #require(self.path.project(south)).crossTrackMeters > 0)
    }

    @Test func aPointPastTheCornerProjectsOntoTheSecondLeg() throws {
        let end = try #require(self.path.point(atDistance: 275)).coordinate
        let east = Geodesic.wgs84.direct(from: end, azimuthDegrees: 90, distanceMeters: 5).coordinate
        let projection = try #require(self.path.project(east))
        #expect(projection.segmentIndex == 1)
        #expect(abs(projection.distanceAlongMeters - 275) < 0.05)
        #expect(abs(projection.crossTrackMeters - 5) < 0.02, "east of a northward leg is right of it")
    }

    @Test func eachLegGivesItsBearingAlongItAndTheEndsClamp() throws {
        // East along the first leg, north along the second; before the start and past the end, the nearest leg's.
        for (along, expected) in [(-10.0, 90.0), (0, 90), (120, 90), (250, 0), (349.9, 0), (400, 0)] {
            let bearing = try #require(self.path.bearing(atDistance: along))
            #expect(Angle.separation(bearing, expected) < 0.01, "at \(along) m")
            #expect(bearing == self.path.point(atDistance: along)?.bearingDegrees, "as the point's, at \(along) m")
        }
        #expect(Polyline([]).bearing(atDistance: 5) == nil)
        #expect(Polyline([self.corner]).bearing(atDistance: 5) == 0)
    }

    @Test func aLongRouteWithRepeatedVerticesGivesEachVertexAndItsLegsBearing() throws {
        // 2,000 vertices turning 90° every 5 m (east, north, east, …), every tenth one twice (a zero-length leg, as
        // engines' answers have): at each vertex's distance, the vertex and the bearing of the leg that ends there
        // (its first); just past it, the next leg's.
        var points = [self.corner]
        for index in 1..<2000 {
            let next = Geodesic.wgs84.direct(
                from: points.last!, azimuthDegrees: index % 2 == 0 ? 0 : 90, distanceMeters: 5)
            points.append(next.coordinate)
            if index % 10 == 0 { points.append(next.coordinate) }
        }
        let line = Polyline(points)
        for index in stride(from: 1, to: points.count - 1, by: 7) {
            let along = line.cumulativeMeters[index]
            let here = try #require(line.point(atDistance: along))
            #expect(FlatProjection.distance(here.coordinate, points[index]) < 0.01, "vertex \(index)")
            let past = try #require(line.bearing(atDistance: along + 0.5))
            let leaving = points[index + 1] == points[index] ? points[index + 2] : points[index + 1]
            let expected = Geodesic.wgs84.inverse(points[index], leaving).initialAzimuthDegrees
            #expect(Angle.separation(past, expected) < 0.01, "past vertex \(index)")
        }
    }

    @Test func pointsBeyondTheEndsClampToThem() throws {
        let before = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 270, distanceMeters: 30).coordinate
        let projection = try #require(self.path.project(before))
        #expect(projection.distanceAlongMeters == 0)
        #expect(abs(projection.distanceMeters - 30) < 0.05)
    }

    @Test func trackDistancesAreSigned() {
        let end = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 1000).coordinate
        let point = Geodesic.wgs84.direct(
            from: Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 400).coordinate,
            azimuthDegrees: 180, distanceMeters: 25
        ).coordinate
        let (cross, along) = trackDistances(of: point, from: self.corner, to: end)
        #expect(abs(cross - 25) < 0.05)
        #expect(abs(along - 400) < 0.2)
    }
}
