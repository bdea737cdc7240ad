import NavCore
import Testing
import MapLogic

/// A street running east with a side street at each of its junctions every 30 m; the route walks east through two
/// junctions and turns left (north) at the third, onto "Rue du Nord".
struct TurnAnnouncerTests {
    let origin = Coordinate(latitude: 43.73, longitude: 7.42)

    func at(_ east: Double, _ north: Double) -> Coordinate {
        FlatProjection(origin: self.origin).unproject(ENU(east: east, north: north))
    }

    /// Nodes: 0 start, 1–3 junctions at 30, 60, 90 m east, 4 the street's end, 5–7 north of each junction, 8 south of
    /// the second (a crossing there).
    var graph: WalkingGraph {
        let nodes = [
            self.at(0, 0), self.at(30, 0), self.at(60, 0), self.at(90, 0), self.at(120, 0), self.at(30, 30),
            self.at(60, 30), self.at(90, 40), self.at(60, -30),
        ]
        let edges: [(a: Int32, b: Int32, name: Int32)] = [
            (0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 4, 0), (1, 5, -1), (2, 6, -1), (3, 7, 1), (2, 8, -1),
        ]
        return WalkingGraph(
            nodes: nodes, edges: edges, names: ["Rue de l'Est", "Rue du Nord"], warnings: [],
            roads: [true, true, true, true, false, false, true, false])
    }

    var routePoints: [Coordinate] { [self.at(0, 0), self.at(30, 0), self.at(60, 0), self.at(90, 0), self.at(90, 40)] }

    func announcer(_ options: TurnAnnouncer.Options = .init()) -> TurnAnnouncer {
        let points = self.routePoints
        return TurnAnnouncer(
            routeID: 7, line: Polyline(points), junctions: self.graph.routeJunctions(along: points), options: options)
    }

    @Test func theRoutesTurnIsItsOneManoeuvreWithItsSideAngleAndStreet() throws {
        let announcer = self.announcer()
        #expect(announcer.junctions.count == 3)
        #expect(announcer.manoeuvres == [2])
        let turn = announcer.junctions[2]
        #expect(abs(turn.turnDegrees + 90) < 1, "a left turn of 90°: \(turn.turnDegrees)")
        #expect(abs(Angle.signedDifference(from: 0, to: turn.outgoingBearingDegrees)) < 1, "the way north")
        #expect(turn.street == "Rue du Nord")
        #expect(!announcer.junctions[0].misleading && !announcer.junctions[1].misleading)
    }

    @Test func anAnnouncementCountsTheJunctionsBeforeAndIsMadeOnlyWhereTheCountIsSure() throws {
        var announcer = self.announcer()
        // 10 m along, the first junction 20 m ahead: third left.
        let first = announcer.update(along: 10, accuracyMeters: 1, time: 1)
        #expect(first.count == 1)
        #expect(first.first?.phase == .announce)
        #expect(first.first?.junctionsBefore == 2)
        #expect(abs((first.first?.distanceMeters ?? 0) - 80) < 0.5)
        #expect(first.first.map(TurnWords.text) == "Third left onto Rue du Nord, in 80 metres")
        // The same count again: nothing new.
        #expect(announcer.update(along: 15, accuracyMeters: 1, time: 2).isEmpty)
        // Within the margin of the first junction (8 m): the walker may be either side of it; no count is said.
        #expect(announcer.update(along: 27, accuracyMeters: 1, time: 3).isEmpty)
        #expect(announcer.update(along: 33, accuracyMeters: 1, time: 4).isEmpty)
        // Surely past it: second left.
        let second = announcer.update(along: 40, accuracyMeters: 1, time: 5)
        #expect(second.map(\.junctionsBefore) == [1])
        // With a poor estimate (accuracy 10 m: a 20 m margin), no count is sure between junctions 30 m apart (the walker
        // may be at the turn, so now is said).
        #expect(announcer.update(along: 75, accuracyMeters: 10, time: 6).map(\.phase) == [.now])
        // Surely between the second and third: next left.
        let next = announcer.update(along: 75, accuracyMeters: 2, time: 7)
        #expect(next.map(\.junctionsBefore) == [0])
        #expect(next.first.map(TurnWords.text) == "Next left onto Rue du Nord, in 15 metres")
    }

    @Test func nowIsSaidOnceWhereTheWalkerMayBeAtTheJunction() throws {
        var announcer = self.announcer()
        _ = announcer.update(along: 70, accuracyMeters: 1, time: 1)
        #expect(announcer.update(along: 80, accuracyMeters: 1, time: 2).isEmpty, "10 m before: not yet")
        let now = announcer.update(along: 84, accuracyMeters: 1, time: 3)
        #expect(now.map(\.phase) == [.now])
        #expect(now.first.map(TurnWords.text) == "Turn left now onto Rue du Nord")
        #expect(announcer.update(along: 88, accuracyMeters: 1, time: 4).isEmpty, "once")
        // At the junction the bearing to steer is the way north's own direction, wherever the estimate puts the walker
        // within the zone.
        let junction = try #require(announcer.junction(near: 92, accuracyMeters: 1))
        #expect(abs(Angle.signedDifference(from: 0, to: junction.outgoingBearingDegrees)) < 1)
        #expect(announcer.junction(near: 80, accuracyMeters: 1) == nil, "4 m zone")
    }

    @Test func aJunctionWhereAnotherWayCarriesOnNearlyStraightIsAStraightOn() throws {
        // The side street at the first junction bends to run 30° off the street: a walker could take it for straight on.
        var nodes = self.graph.nodes
        nodes[5] = self.at(30 + 30 * 0.866, 15)
        let base = self.graph
        let graph = WalkingGraph(nodes: nodes, edges: base.segments, names: base.names, warnings: [])
        let points = self.routePoints
        var announcer = TurnAnnouncer(
            routeID: 7, line: Polyline(points), junctions: graph.routeJunctions(along: points))
        #expect(announcer.junctions[0].misleading)
        #expect(announcer.manoeuvres == [2])
        let events = announcer.update(along: 10, accuracyMeters: 1, time: 1)
        #expect(events.map(\.phase) == [.straightOn, .announce])
        #expect(events.first?.junctionsBefore == 0)
        #expect(events.first?.manoeuvre == 0, "a straight on carries the number of the manoeuvre after it")
        #expect(events.first.map(TurnWords.text) == "Straight on along Rue de l'Est")
    }

    @Test func withoutTheMapsJunctionsThereAreNoEvents() throws {
        var announcer = TurnAnnouncer(routeID: 1, line: Polyline(self.routePoints), junctions: [])
        #expect(announcer.update(along: 10, accuracyMeters: 1, time: 1).isEmpty)
        #expect(announcer.junction(near: 90, accuracyMeters: 1) == nil)
    }

    /// A route along `points` with its start (leaving east) and its arrival (arriving toward `arrivalBearing`).
    func route(_ routeID: UInt32, _ points: [Coordinate], arrivalBearing: Double) -> Route {
        let line = Polyline(points)
        return Route(
            routeID: routeID, timeSeconds: 0, provider: "test", lengthMeters: line.lengthMeters, points: points,
            waypoints: [
                Waypoint(
                    coordinate: points[0], distanceAlongMeters: 0, outgoingBearingDegrees: 90, turnDegrees: 0,
                    kind: .start, instruction: ""),
                Waypoint(
                    coordinate: points[points.count - 1], distanceAlongMeters: line.lengthMeters,
                    outgoingBearingDegrees: arrivalBearing, turnDegrees: 0, kind: .arrival, instruction: ""),
            ])
    }

    @Test func theTrackerPublishesEventsOnlyWhenGuidingByEvents() throws {
        let points = self.routePoints
        let route = self.route(3, points, arrivalBearing: 0)
        let junctions = self.graph.routeJunctions(along: points)
        for mode in RouteTracker.GuidanceMode.allCases {
            var options = RouteTracker.Options()
            options.guidance = mode
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route, junctions: junctions)
            let here = self.at(10, 0)
            let fix = SmoothedFix(
                timeSeconds: 1, latitude: here.latitude, longitude: here.longitude, horizontalAccuracyMeters: 1,
                speedMetersPerSecond: 1.3, courseDegrees: 90, reset: false)
            let result = tracker.update(with: fix)
            let update = try #require(result)
            #expect(update.turnEvents.count == (mode == .events ? 1 : 0), "\(mode)")
        }
    }

    @Test func atASharpTurnAWalkerStillComingIsCuedAStrongTurnNeverATurnAround() throws {
        // East along a way to a junction at 60 m, where the route turns back 135° left onto a way north-west.
        let points = [self.at(0, 0), self.at(60, 0), self.at(32, 28)]
        let graph = WalkingGraph(
            nodes: points + [self.at(120, 0)], edges: [(0, 1, -1), (1, 2, -1), (1, 3, -1)], names: [], warnings: [])
        let route = self.route(4, points, arrivalBearing: 315)
        var options = RouteTracker.Options()
        options.guidance = .events
        // The estimate a metre past the corner while the walker, still walking east, has not reached it.
        func bearing(speed: Double, at here: Coordinate? = nil) throws -> Double {
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route, junctions: graph.routeJunctions(along: points))
            let here = here ?? self.at(61, 0)
            let fix = SmoothedFix(
                timeSeconds: 1, latitude: here.latitude, longitude: here.longitude, horizontalAccuracyMeters: 1,
                speedMetersPerSecond: speed, courseDegrees: speed > 0 ? 90 : nil, reset: false)
            let update = tracker.update(with: fix)
            return try #require(update).target.bearingDegrees
        }
        let walking = try bearing(speed: 1.3)
        #expect(Angle.signedDifference(from: 90, to: walking) < -100, "a strong left turn")
        #expect(abs(Angle.signedDifference(from: 90, to: walking)) <= 105.5, "never beyond 105° of the course")
        // The estimate 3 m along the way out, the walker's course still east: held too.
        let along = try bearing(speed: 1.3, at: self.at(58, 2.5))
        #expect(abs(Angle.signedDifference(from: 90, to: along)) <= 105.5, "\(along)")
        // Standing (at the junction, choosing): the branch's own direction.
        #expect(abs(Angle.signedDifference(from: 315, to: try bearing(speed: 0))) < 1)
        // Gone on straight 6 m past the corner (beyond its 4 m zone), still walking east: the branch's own direction,
        // a turn-around.
        #expect(abs(Angle.signedDifference(from: 315, to: try bearing(speed: 1.3, at: self.at(66, 0)))) < 1)
    }

    @Test func junctionKindsAndStreetNamesComeFromTheGraph() {
        let graph = self.graph
        #expect(graph.isRoad(from: 3, to: 7))
        #expect(!graph.isRoad(from: 1, to: 5))
        #expect(graph.streetName(from: 3, to: 7) == "Rue du Nord")
        #expect(graph.streetName(from: 1, to: 5) == nil)
        #expect(graph.streetName(from: 0, to: 7) == nil, "not joined")
    }

    @Test(arguments: [
        (TurnPhase.announce, -90.0, UInt32(1), 30.0, "", "Second left, in 30 metres"),
        (.announce, 35, 0, 12, "", "Next junction, bear right, in 10 metres"),
        (.announce, -150, 2, 3, "", "Third junction, sharp left, in 5 metres"),
        (.now, -90, 0, 0, "", "Turn left now"),
        (.now, 30, 0, 0, "Rue Grimaldi", "Bear right now onto Rue Grimaldi"),
        (.now, 175, 0, 0, "", "Turn back right now"),
        (.announce, -172, 1, 40, "", "Second junction, turn back left, in 40 metres"),
        (.straightOn, 4, 0, 0, "", "Straight on"),
    ])
    func turnEventsInWords(
        _ phase: TurnPhase, _ turn: Double, _ before: UInt32, _ meters: Double, _ street: String, _ words: String
    ) {
        let event = TurnEvent(
            timeSeconds: 0, routeID: 1, manoeuvre: 0, phase: phase, turnDegrees: turn, junctionsBefore: before,
            distanceMeters: meters, outgoingBearingDegrees: 0, street: street)
        #expect(TurnWords.text(event) == words)
    }
}
