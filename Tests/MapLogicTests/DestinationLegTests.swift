import MapLogic
import NavCore
import Testing

@Suite struct DestinationLegTests {
    private let start = Coordinate(latitude: 43.7300, longitude: 7.4200)

    private func east(_ meters: Double, of point: Coordinate? = nil) -> Coordinate {
        Geodesic.wgs84.direct(from: point ?? self.start, azimuthDegrees: 90, distanceMeters: meters).coordinate
    }

    private func reaching(
        _ destination: Coordinate, routesToTheDestination: Bool = true
    ) throws(RoutingError) -> DestinationLeg.Reached {
        try DestinationLeg.reaching(
            destination, by: RoutePlan(points: [self.start, self.east(100)]),
            routesToTheDestination: routesToTheDestination, arrivalRadiusMeters: 2, legMeters: 30, provider: "osm")
    }

    @Test func aRouteThatEndsAtTheDestinationIsFollowedAsItIs() throws {
        let reached = try self.reaching(self.east(101))
        #expect(reached.plan.points.count == 2)
        #expect(reached.lastLeg == nil)
    }

    @Test func aRouteThatEndsShortOfTheDestinationGetsAStraightLegToIt() throws {
        let door = Geodesic.wgs84.direct(from: self.east(100), azimuthDegrees: 0, distanceMeters: 15).coordinate
        let reached = try self.reaching(door)
        #expect(reached.plan.points.last == door)
        #expect(reached.plan.segmentNames.count == reached.plan.points.count - 1)
        let leg = try #require(reached.lastLeg)
        #expect(abs(leg.fromMeters - 100) < 0.5)
        #expect(abs(leg.lengthMeters - 15) < 0.1)
    }

    @Test func aRouteThatEndsFartherIsRefusedSayingHowFar() {
        let harbour = Geodesic.wgs84.direct(from: self.east(100), azimuthDegrees: 0, distanceMeters: 110).coordinate
        let refusal = #expect(throws: RoutingError.self) { try self.reaching(harbour) }
        #expect(
            "\(refusal.map { "\($0)" } ?? "")".contains(
                "the route ends 110 m from the destination, farther than destinationLegMeters (30 m)"))
        let nowhere = Coordinate(latitude: .nan, longitude: 7.42)
        #expect(throws: RoutingError.self) { try self.reaching(nowhere) }
    }

    @Test func aSavedRouteEndsWhereItEnds() throws {
        let reached = try self.reaching(self.east(400), routesToTheDestination: false)
        #expect(reached.plan.points.count == 2)
        #expect(reached.lastLeg == nil)
    }
}
