import NavCore
import Testing
import MapLogic

@Suite struct RouteBuilderTests {
    private let corner = Coordinate(latitude: 43.7300, longitude: 7.4200)

    private func lShape() -> RoutePlan {
        let east = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 200).coordinate
        let north = Geodesic.wgs84.direct(from: east, azimuthDegrees: 0, distanceMeters: 150).coordinate
        // A gently curving footpath along the first leg: many small bends, none a turn.
        var points = [self.corner]
        for step in 1...9 {
            let along = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: Double(step) * 20)
                .coordinate
            points.append(
                Geodesic.wgs84.direct(from: along, azimuthDegrees: 0, distanceMeters: step % 2 == 0 ? 0.8 : 0)
                    .coordinate)
        }
        return RoutePlan(
            points: points + [east, north],
            segmentNames: Array(repeating: "Quai Albert Ier", count: 10) + ["Rue Grimaldi"])
    }

    @Test func waypointsSitWhereTheRouteTurnsOnly() {
        let route = RouteBuilder.route(from: self.lShape(), routeID: 1, timeSeconds: 0, provider: "test")
        #expect(route.waypoints.map(\.kind) == [.start, .turn, .arrival])
        let turn = route.waypoints[1]
        #expect(abs(turn.distanceAlongMeters - 200) < 0.5)
        #expect(abs(turn.turnDegrees - (-90)) < 3, "east then north is a left turn")
        #expect(turn.instruction == "Turn left onto Rue Grimaldi")
        #expect(route.waypoints[0].instruction == "Head east on Quai Albert Ier")
        #expect(abs(route.lengthMeters - 350) < 0.5)
    }

    @Test func theTurnThresholdIsConfigurable() {
        let route = RouteBuilder.route(
            from: self.lShape(), routeID: 1, timeSeconds: 0, provider: "test", turnThresholdDegrees: 100)
        #expect(route.waypoints.map(\.kind) == [.start, .arrival])
    }

    @Test(arguments: [(20.0, "Bear right"), (-90, "Turn left"), (150, "Make a sharp right"), (-178, "Make a U-turn")])
    func turnsAreWordedByTheirAngle(_ turn: Double, _ words: String) {
        #expect(RouteBuilder.turnWords(turn) == words)
    }
}

/// A walk scripted as legs of (bearing, metres), at 1.4 m/s, one smoothed fix a second.
struct ScriptedWalk {
    var start: Coordinate
    var legs: [(bearing: Double, meters: Double)]

    func fixes(accuracy: Double = 4) -> [SmoothedFix] {
        var fixes: [SmoothedFix] = []
        var position = self.start
        var t = 0.0
        for leg in self.legs {
            var walked = 0.0
            while walked < leg.meters {
                let step = min(1.4, leg.meters - walked)
                position =
                    Geodesic.wgs84.direct(from: position, azimuthDegrees: leg.bearing, distanceMeters: step).coordinate
                walked += step
                t += 1
                fixes.append(
                    SmoothedFix(
                        timeSeconds: t, latitude: position.latitude, longitude: position.longitude,
                        horizontalAccuracyMeters: accuracy, speedMetersPerSecond: 1.4,
                        courseDegrees: leg.bearing, reset: false))
            }
        }
        return fixes
    }
}

@Suite struct RouteTrackerTests {
    private let corner = Coordinate(latitude: 43.7300, longitude: 7.4200)
    private var east: Coordinate {
        Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 200).coordinate
    }
    private var end: Coordinate {
        Geodesic.wgs84.direct(from: self.east, azimuthDegrees: 0, distanceMeters: 150).coordinate
    }

    private func route(id: UInt32 = 1, from start: Coordinate? = nil) -> Route {
        RouteBuilder.route(
            from: RoutePlan(points: [start ?? self.corner, self.east, self.end]), routeID: id,
            timeSeconds: 0, provider: "test")
    }

    private struct Log {
        var states: [RouteState] = []
        var completed: [(route: UInt32, index: Int)] = []
        var reroutes: [Coordinate] = []
        var arrivals = 0
        var targets: [GuidanceTarget] = []
    }

    /// Runs a walk; each reroute request is answered with a straight route from there to the corner and on.
    private func run(_ walk: ScriptedWalk, options: RouteTracker.Options = .init(), answerReroutes: Bool = true) -> Log
    {
        var tracker = RouteTracker(options: options)
        tracker.setRoute(self.route())
        var log = Log()
        var nextID: UInt32 = 2
        for fix in walk.fixes() {
            guard let update = tracker.update(with: fix) else { continue }
            log.states.append(update.progress.state)
            log.completed += update.completedWaypoints.map { (update.progress.routeID, $0) }
            log.targets.append(update.target)
            if update.arrived { log.arrivals += 1 }
            if let from = update.rerouteFrom {
                log.reroutes.append(from)
                if answerReroutes {
                    tracker.setRoute(self.route(id: nextID, from: from))
                    nextID += 1
                }
            }
        }
        return log
    }

    @Test func aWalkAlongTheRouteCompletesWaypointsInOrderAndArrivesOnce() {
        let log = self.run(ScriptedWalk(start: self.corner, legs: [(90, 200), (0, 150), (0, 20)]))
        #expect(log.completed.map(\.index) == [1, 2])
        #expect(log.arrivals == 1)
        #expect(log.reroutes.isEmpty)
        #expect(!log.states.contains(.offRoute) && !log.states.contains(.rerouting))
        #expect(log.states.last == .arrived)
    }

    @Test func leavingTheRouteDeclaresOffRouteReroutesOnceAndArrives() {
        // 80 m east, 40 m south (off the route), back north 40 m, then on to the end.
        let walk = ScriptedWalk(
            start: self.corner, legs: [(90, 80), (180, 40), (90, 20), (0, 40), (90, 100), (0, 150)])
        let log = self.run(walk)
        #expect(log.states.contains(.rerouting) || log.states.contains(.offRoute))
        #expect(log.reroutes.count == 1, "one reroute, not a storm: \(log.reroutes.count)")
        #expect(log.arrivals == 1)
        // Per route, waypoints complete in order.
        for id in Set(log.completed.map(\.route)) {
            let indices = log.completed.filter { $0.route == id }.map(\.index)
            #expect(indices == indices.sorted())
        }
    }

    @Test func staysOffRouteWithoutARerouteStorm() {
        // The engine is down: reroutes are never answered, and the walker wanders for two minutes.
        let walk = ScriptedWalk(start: self.corner, legs: [(90, 50), (180, 60), (270, 40), (180, 60)])
        var options = RouteTracker.Options()
        options.rerouteMinimumSeconds = 10
        let log = self.run(walk, options: options, answerReroutes: false)
        #expect(log.reroutes.count == 1, "a request is outstanding; no new ones pile up")
        var tracker = RouteTracker(options: options)
        tracker.setRoute(self.route())
        var requests: [Double] = []
        for fix in walk.fixes() {
            if let update = tracker.update(with: fix), update.rerouteFrom != nil {
                requests.append(fix.timeSeconds)
                tracker.rerouteFailed()
            }
        }
        #expect(requests.count >= 2)
        #expect(
            zip(requests, requests.dropFirst()).allSatisfy { $1 - $0 >= 10 }, "never twice within 10 s: \(requests)")
    }

    @Test func afterTheFixesTimeLineStartsAgainEarlierAWalkerGoingOnOffTheRouteIsReroutedAgain() {
        // Off the route to the south, a reroute asked and not made; then the fixes' times start again 900 s earlier
        // (a replay restarted, a receiver's clock corrected) while the walker goes on. Reroutes are limited by time
        // only here: the 10 s since the last one count across the restart.
        let walk = ScriptedWalk(start: self.corner, legs: [(90, 50), (180, 100)])
        var options = RouteTracker.Options()
        options.rerouteMinimumSeconds = 10
        options.rerouteMinimumMeters = 0
        var tracker = RouteTracker(options: options)
        tracker.setRoute(self.route())
        var requests: [Double] = []
        for fix in walk.fixes() {
            var fix = fix
            if !requests.isEmpty { fix.timeSeconds -= 900 }
            if let update = tracker.update(with: fix), update.rerouteFrom != nil {
                requests.append(fix.timeSeconds)
                tracker.rerouteFailed()
            }
        }
        #expect(requests.count >= 2, "asked again on the new time line: \(requests)")
        // The time between the old time line's last fix and the new one's first is not known: counted as none.
        let after = requests.count < 2 ? nil : requests[1] - (requests[0] - 900)
        #expect(
            after.map { $0 >= 10 && $0 <= 11 } == true, "10 s after, give or take that fix, not sooner: \(requests)")
    }

    @Test func walkingBackAlongTheRouteIsNoticed() {
        let log = self.run(ScriptedWalk(start: self.corner, legs: [(90, 60), (270, 30)]))
        #expect(log.states.suffix(5).contains(.wrongWay))
        #expect(log.reroutes.isEmpty)
    }

    @Test func theLookAheadTargetIsAheadOnTheRouteAndCappedAtTheCorner() {
        var tracker = RouteTracker(options: .lookAhead)
        tracker.setRoute(self.route())
        let along = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 50).coordinate
        let fix = SmoothedFix(
            timeSeconds: 1, latitude: along.latitude, longitude: along.longitude, horizontalAccuracyMeters: 3,
            speedMetersPerSecond: 1.4, courseDegrees: 90, reset: false)
        let update = tracker.update(with: fix)!
        #expect(abs(update.target.distanceMeters - 15) < 0.2)
        #expect(Angle.separation(update.target.bearingDegrees, 90) < 1)
        // 12 m before the 90° corner (outside its 10 m radius) the target is the corner itself, not 15 m round it.
        let near = Geodesic.wgs84.direct(from: self.corner, azimuthDegrees: 90, distanceMeters: 188).coordinate
        let nearFix = SmoothedFix(
            timeSeconds: 2, latitude: near.latitude, longitude: near.longitude, horizontalAccuracyMeters: 3,
            speedMetersPerSecond: 1.4, courseDegrees: 90, reset: false)
        var fresh = RouteTracker(options: .lookAhead)
        fresh.setRoute(self.route())
        let capped = fresh.update(with: nearFix)!
        #expect(abs(capped.target.distanceMeters - 12) < 0.3)
    }

    @Test func aWalkerWhoWentOnPastTheEndIsNotArrivedThereButTurnedBack() throws {
        // The route ends 150 m north of `east`; the walker, placed on the last leg, goes on 15 m past its end.
        var tracker = RouteTracker()
        tracker.setRoute(self.route(from: self.east))
        func fix(north: Double, time: Double) -> SmoothedFix {
            let point = Geodesic.wgs84.direct(from: self.east, azimuthDegrees: 0, distanceMeters: north).coordinate
            return SmoothedFix(
                timeSeconds: time, latitude: point.latitude, longitude: point.longitude, horizontalAccuracyMeters: 2,
                speedMetersPerSecond: 1.3, courseDegrees: 0, reset: false)
        }
        for (index, north) in stride(from: 0.0, through: 140, by: 10).enumerated() {
            let update = tracker.update(with: fix(north: north, time: Double(index)))
            #expect(update?.arrived == false)
        }
        // Placed at the route's end but 15 m from it, farther than the radius and twice the accuracy: not arrived,
        // and told to turn back.
        let answer = tracker.update(with: fix(north: 165, time: 20))
        let beyond = try #require(answer)
        #expect(!beyond.arrived)
        #expect(Angle.separation(beyond.target.bearingDegrees, 180) < 1)
        // Back at it: arrived.
        let back = tracker.update(with: fix(north: 151, time: 30))
        #expect(back?.arrived == true)
    }

    @Test func aFixTooPoorToTellTheDestinationFromTensOfMetresAwayDoesNotSayArrived() throws {
        // The route ends 150 m north of `east`. Near its end the fixes are good; then one comes 20 m past the end and
        // 8 m east of it (22 m away), reporting 17 m: within the radius and two of its σ, and on the route by its
        // accuracy.
        var tracker = RouteTracker()
        tracker.setRoute(self.route(from: self.east))
        func fix(_ point: Coordinate, accuracy: Double, time: Double) -> SmoothedFix {
            SmoothedFix(
                timeSeconds: time, latitude: point.latitude, longitude: point.longitude,
                horizontalAccuracyMeters: accuracy, speedMetersPerSecond: 1.3, courseDegrees: 0, reset: false)
        }
        for (index, north) in stride(from: 0.0, through: 140, by: 10).enumerated() {
            let update = tracker.update(with: fix(self.alongEast(north), accuracy: 3, time: Double(index)))
            #expect(update?.arrived == false)
        }
        let poor = Geodesic.wgs84.direct(from: self.alongEast(170), azimuthDegrees: 90, distanceMeters: 8).coordinate
        let answer = tracker.update(with: fix(poor, accuracy: 17, time: 20))
        let held = try #require(answer)
        #expect(!held.arrived && held.progress.state != .arrived && held.target.kind != .arrived)
        #expect(tracker.arrivalsHeldForAccuracy == 1)
        // A good fix at the destination: arrived.
        #expect(tracker.update(with: fix(self.alongEast(150), accuracy: 3, time: 25))?.arrived == true)
    }

    /// A point `north` metres up the route that starts at `east`.
    func alongEast(_ north: Double) -> Coordinate {
        Geodesic.wgs84.direct(from: self.east, azimuthDegrees: 0, distanceMeters: north).coordinate
    }

    /// A tracker on the route from `east`, its walker placed on the ways 140 m along it, each fix witnessed where it
    /// is with the error σ given.
    func trackerNearTheDestination(witnessSigma: Double) -> RouteTracker {
        var tracker = RouteTracker()
        tracker.setRoute(self.route(from: self.east))
        for (index, north) in stride(from: 0.0, through: 140, by: 10).enumerated() {
            _ = tracker.update(
                with: self.placeFix(north: north, time: Double(index)),
                arrivalWitness: .init(position: self.alongEast(north), errorSigmaMeters: witnessSigma))
        }
        return tracker
    }

    /// A place on the ways `north` metres up the route from `east`.
    func placeFix(north: Double, time: Double) -> SmoothedFix {
        let point = self.alongEast(north)
        return SmoothedFix(
            timeSeconds: time, latitude: point.latitude, longitude: point.longitude, horizontalAccuracyMeters: 2,
            speedMetersPerSecond: 1.3, courseDegrees: 0, reset: false)
    }

    /// A place on the ways at the destination does not arrive while the fix as measured (the witness) is farther from
    /// it than the radius and two σ of its error: a walker off the ways, placed on one near the destination.
    @Test func anEstimatedPlaceArrivesOnlyWithItsWitness() throws {
        var tracker = self.trackerNearTheDestination(witnessSigma: 1)
        let witnessFar = Geodesic.wgs84.direct(from: self.alongEast(150), azimuthDegrees: 90, distanceMeters: 12)
        let farAnswer = tracker.update(
            with: self.placeFix(north: 150, time: 20),
            arrivalWitness: .init(position: witnessFar.coordinate, errorSigmaMeters: 1))
        let far = try #require(farAnswer)
        #expect(!far.arrived)
        let witnessNear = Geodesic.wgs84.direct(from: self.alongEast(150), azimuthDegrees: 90, distanceMeters: 3.5)
        let nearAnswer = tracker.update(
            with: self.placeFix(north: 150, time: 21),
            arrivalWitness: .init(position: witnessNear.coordinate, errorSigmaMeters: 1))
        let near = try #require(nearAnswer)
        #expect(near.arrived)
    }

    /// Under a street canyon's error (the witness's σ as the place on the ways has learnt it, 5 m), a walker standing
    /// at the destination whose fix is held 9 m off arrives; a fix 13 m off does not (two σ and the radius: 12 m).
    @Test func aWitnessWithCorrelatedErrorArrivesWithinTwoOfItsSigmas() throws {
        func arrives(witnessOff: Double) throws -> Bool {
            var tracker = self.trackerNearTheDestination(witnessSigma: 5)
            let witness = Geodesic.wgs84.direct(
                from: self.alongEast(150), azimuthDegrees: 270, distanceMeters: witnessOff)
            let update = tracker.update(
                with: self.placeFix(north: 150, time: 20),
                arrivalWitness: .init(position: witness.coordinate, errorSigmaMeters: 5))
            return try #require(update).arrived
        }
        #expect(try arrives(witnessOff: 9))
        #expect(try !arrives(witnessOff: 13))
    }

    /// A place on the ways errs along them either side of the walker alike, so it arrives when it reaches the
    /// destination, not within the radius short of it: 1.5 m short it does not, at it it does. The fix as measured (no
    /// witness) arrives within the radius, as before.
    @Test func anEstimatedPlaceArrivesWhenItReachesTheDestinationNotARadiusShortOfIt() throws {
        var tracker = self.trackerNearTheDestination(witnessSigma: 1)
        let shortAnswer = tracker.update(
            with: self.placeFix(north: 148.5, time: 20),
            arrivalWitness: .init(position: self.alongEast(148.5), errorSigmaMeters: 1))
        #expect(try !#require(shortAnswer).arrived)
        let atAnswer = tracker.update(
            with: self.placeFix(north: 150, time: 21),
            arrivalWitness: .init(position: self.alongEast(150), errorSigmaMeters: 1))
        #expect(try #require(atAnswer).arrived)

        var measured = RouteTracker()
        measured.setRoute(self.route(from: self.east))
        for (index, north) in stride(from: 0.0, through: 140, by: 10).enumerated() {
            _ = measured.update(with: self.placeFix(north: north, time: Double(index)))
        }
        #expect(measured.update(with: self.placeFix(north: 148.5, time: 20))?.arrived == true)
    }

    /// A place that steps on past a destination at a junction onto another way than the route's (a walker on it is
    /// off the route's way: `offRouteMeters` 2) arrives there, instead of being turned back to it.
    @Test func anEstimatedPlaceAStepPastTheDestinationOnAnotherWayArrives() throws {
        var tracker = self.trackerNearTheDestination(witnessSigma: 1)
        let past = Geodesic.wgs84.direct(from: self.end, azimuthDegrees: 90, distanceMeters: 3).coordinate
        let answer = tracker.update(
            with: SmoothedFix(
                timeSeconds: 20, latitude: past.latitude, longitude: past.longitude, horizontalAccuracyMeters: 2,
                speedMetersPerSecond: 1.3, courseDegrees: 90, reset: false),
            offRouteMeters: 2, arrivalWitness: .init(position: past, errorSigmaMeters: 1))
        #expect(try #require(answer).arrived)
    }

    @Test func waypointModeAimsAtTheNextWaypoint() {
        var options = RouteTracker.Options()
        options.targetMode = .waypoint
        var tracker = RouteTracker(options: options)
        tracker.setRoute(self.route())
        let fix = SmoothedFix(
            timeSeconds: 1, latitude: self.corner.latitude, longitude: self.corner.longitude,
            horizontalAccuracyMeters: 3, speedMetersPerSecond: 1.4, courseDegrees: 90, reset: false)
        let update = tracker.update(with: fix)!
        #expect(update.target.kind == .waypoint)
        #expect(abs(update.target.distanceMeters - 200) < 0.5)
    }
}

/// The route controller's answers to a walker who cannot cut corners: a hairpin bend, a sharp turn announced before
/// its corner, a walker on a way beside the route.
extension RouteTracker.Options {
    /// The defaults with the look-ahead target.
    static var lookAhead: Self {
        var options = Self()
        options.targetMode = .lookAhead
        return options
    }
}

@Suite struct RouteTrackerOnTheWaysTests {
    private let start = Coordinate(latitude: 43.7300, longitude: 7.4200)

    /// East 100 m to an apex, then back west-south-west (a 160° hairpin) for 100 m.
    private var hairpin: Route {
        let apex = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 100).coordinate
        let back = Geodesic.wgs84.direct(from: apex, azimuthDegrees: 250, distanceMeters: 100).coordinate
        return RouteBuilder.route(
            from: RoutePlan(points: [self.start, apex, back]), routeID: 1, timeSeconds: 0, provider: "test")
    }

    /// A route from `start` along straight legs, each an azimuth [degrees] and a length [metres].
    private func route(legs: [(azimuth: Double, meters: Double)]) -> Route {
        var points = [self.start]
        for leg in legs {
            points.append(
                Geodesic.wgs84.direct(from: points.last!, azimuthDegrees: leg.azimuth, distanceMeters: leg.meters)
                    .coordinate)
        }
        return RouteBuilder.route(from: RoutePlan(points: points), routeID: 1, timeSeconds: 0, provider: "test")
    }

    private func fix(_ point: Coordinate, course: Double?, time: Double, speed: Double = 1.3) -> SmoothedFix {
        SmoothedFix(
            timeSeconds: time, latitude: point.latitude, longitude: point.longitude, horizontalAccuracyMeters: 5,
            speedMetersPerSecond: speed, courseDegrees: course, reset: false)
    }

    /// The target's bearing from the walker, relative to the walker's direction of travel [degrees].
    private func relativeTarget(_ target: GuidanceTarget, course: Double) -> Double {
        Angle.signedDifference(from: course, to: target.bearingDegrees)
    }

    @Test func approachingAHairpinTheTargetIsNeverBehindTheWalker() {
        var options = RouteTracker.Options.lookAhead
        for (announce, course, expectBehind) in [(10.0, 3.0, false), (10, 0, true), (0, 0, true)] {
            options.announceMeters = announce
            options.courseWeightMeters = course
            var tracker = RouteTracker(options: options)
            tracker.setRoute(self.hairpin)
            var worst = 0.0
            // Walking east on the first leg up to 4 m before the apex, the last 15 m with fixes 1.5 m south of it
            // (as GPS error would put them): nearer the second leg than the first from 4.3 m before the apex on.
            // (Within a metre or two of the apex no target direction means anything.)
            for (index, along) in stride(from: 0.0, through: 96, by: 1.3).enumerated() {
                let onLeg = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: along)
                let point = Geodesic.wgs84.direct(
                    from: onLeg.coordinate, azimuthDegrees: 180, distanceMeters: along > 81 ? 1.5 : 0
                ).coordinate
                guard let update = tracker.update(with: self.fix(point, course: 90, time: Double(index))) else {
                    continue
                }
                worst = max(worst, abs(self.relativeTarget(update.target, course: 90)))
            }
            // Guidance turns the walker around beyond 120°.
            #expect((worst > 120) == expectBehind, "announce \(announce), course \(course): worst \(worst)°")
        }
    }

    @Test func aCornerLimitMakesTheLastMetresBeforeAHairpinAStrongTurnNotATurnAround() throws {
        // A metre before the apex the point 2 m past it on the next leg lies behind the walker's right shoulder.
        func relative(limit: Double) throws -> Double {
            var options = RouteTracker.Options.lookAhead
            options.cornerLimitDegrees = limit
            var tracker = RouteTracker(options: options)
            tracker.setRoute(self.hairpin)
            let near = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 99).coordinate
            _ = tracker.update(with: self.fix(self.start, course: 90, time: 0))
            let answer = tracker.update(with: self.fix(near, course: 90, time: 1))
            let update = try #require(answer)
            return self.relativeTarget(update.target, course: 90)
        }
        #expect(try relative(limit: 0) > 120, "without the limit: a turn-around")
        // With it: at most 90° off the route's direction, on the hairpin's side (right).
        #expect(abs(try relative(limit: 90) - 90) < 0.5)
        #expect(abs(try relative(limit: 110) - 110) < 0.5)
    }

    @Test func withinTheAnnounceDistanceTheTargetSaysHalfTheTurnOnItsSide() throws {
        var tracker = RouteTracker(options: .lookAhead)
        tracker.setRoute(self.hairpin)
        let before = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 94).coordinate
        _ = tracker.update(with: self.fix(self.start, course: 90, time: 0))
        let answer = tracker.update(with: self.fix(before, course: 90, time: 1))
        let update = try #require(answer)
        // The hairpin turns 160° right: the target is 80° right, 6 m past the apex on the next leg.
        #expect(abs(self.relativeTarget(update.target, course: 90) - 80) < 2)
        // Farther than the announce distance, the corner itself, straight ahead.
        var far = RouteTracker(options: .lookAhead)
        far.setRoute(self.hairpin)
        let early = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 60).coordinate
        _ = far.update(with: self.fix(self.start, course: 90, time: 0))
        let answer2 = far.update(with: self.fix(early, course: 90, time: 1))
        let ahead = try #require(answer2)
        #expect(abs(self.relativeTarget(ahead.target, course: 90)) < 1)
    }

    /// East 100 m, then a right turn of 90° (south) for 100 m: a junction's turn.
    private var rightAngle: Route {
        let corner = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 100).coordinate
        let end = Geodesic.wgs84.direct(from: corner, azimuthDegrees: 180, distanceMeters: 100).coordinate
        return RouteBuilder.route(
            from: RoutePlan(points: [self.start, corner, end]), routeID: 1, timeSeconds: 0, provider: "test")
    }

    @Test func withATurnZoneTheTargetStaysStraightOnUntilTheCornerThenPointsAlongTheNextLeg() throws {
        var options = RouteTracker.Options.lookAhead
        options.turnZoneMeters = 4
        func relative(on route: Route, at along: Double, crossTrack: Double = 0) throws -> Double {
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route)
            let onLeg = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: along).coordinate
            let point = Geodesic.wgs84.direct(from: onLeg, azimuthDegrees: 0, distanceMeters: crossTrack).coordinate
            _ = tracker.update(with: self.fix(self.start, course: 90, time: 0))
            let answer = tracker.update(with: self.fix(point, course: 90, time: 1))
            let update = try #require(answer)
            return self.relativeTarget(update.target, course: 90)
        }
        // 6 m before the corner: straight on, and 2 m of cross-track error turns the target by less than 10° (a
        // target at the corner itself would swing by 18°).
        #expect(abs(try relative(on: self.rightAngle, at: 94)) < 1)
        #expect(abs(try relative(on: self.rightAngle, at: 94, crossTrack: 2)) < 10)
        // 3 m before it, in the zone: the next leg, a look-ahead (15 m) along it, nearly the whole turn.
        let inZone = try relative(on: self.rightAngle, at: 97)
        #expect(inZone > 75 && inZone < 90, "\(inZone)")
        // At the corner with 2 m of error across the track: still the branch to take, within 10°.
        #expect(abs(try relative(on: self.rightAngle, at: 99.5, crossTrack: 2) - 90) < 10)
        // A hairpin's next leg lies behind: before its corner a strong cue to its side, never a turn-around.
        let hairpin = try relative(on: self.hairpin, at: 97)
        #expect(hairpin > 100 && hairpin < 120, "\(hairpin)")
        // The same to the left: a hairpin back west-north-west.
        let apex = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 100).coordinate
        let back = Geodesic.wgs84.direct(from: apex, azimuthDegrees: 290, distanceMeters: 100).coordinate
        let leftHairpin = RouteBuilder.route(
            from: RoutePlan(points: [self.start, apex, back]), routeID: 1, timeSeconds: 0, provider: "test")
        let left = try relative(on: leftHairpin, at: 97)
        #expect(left < -100 && left > -120, "\(left)")
    }

    @Test func pathFollowingSteersAlongTheRouteSoErrorAcrossTheWayDoesNotSwingTheCue() throws {
        var options = RouteTracker.Options()
        options.targetMode = .path
        /// The bearing to steer relative to east (the first leg), for a fix `along` the first leg and `crossTrack`
        /// north of it (the fix's accuracy 5 m), moving or standing.
        func relative(
            on route: Route, at along: Double, crossTrack: Double = 0, speed: Double = 1.3
        ) throws
            -> Double
        {
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route)
            let onLeg = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: along).coordinate
            let point = Geodesic.wgs84.direct(from: onLeg, azimuthDegrees: 0, distanceMeters: crossTrack).coordinate
            _ = tracker.update(with: self.fix(self.start, course: 90, time: 0))
            let answer = tracker.update(with: self.fix(point, course: 90, time: 1, speed: speed))
            let update = try #require(answer)
            return self.relativeTarget(update.target, course: 90)
        }
        // Far from the corner, 4 m of error across the way (within the fix's accuracy): straight along the way; the
        // look-ahead point 15 m ahead would be 15° off.
        #expect(abs(try relative(on: self.rightAngle, at: 50, crossTrack: 4)) < 0.5)
        var lookAhead = RouteTracker(options: .lookAhead)
        lookAhead.setRoute(self.rightAngle)
        let beside = Geodesic.wgs84.direct(
            from: Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 50).coordinate,
            azimuthDegrees: 0, distanceMeters: 4
        ).coordinate
        _ = lookAhead.update(with: self.fix(self.start, course: 90, time: 0))
        let answer = lookAhead.update(with: self.fix(beside, course: 90, time: 1))
        let pointed = try #require(answer)
        #expect(abs(self.relativeTarget(pointed.target, course: 90)) > 14)
        // Farther off than the accuracy: turned back toward the route (right, being north of it), as toward a point
        // 15 m ahead on a line 3 m off.
        let back = try relative(on: self.rightAngle, at: 50, crossTrack: 8)
        #expect(abs(back - 11.31) < 1, "\(back)")  // atan(3 / 15)
        // At the junction, standing: the branch the route takes, as a walker there judges it (8 m along it).
        #expect(abs(try relative(on: self.rightAngle, at: 100, speed: 0) - 90) < 1)
        // 4 m before it, walking: the chord across the corner, on the turn's side, cueing the turn.
        let early = try relative(on: self.rightAngle, at: 96)
        #expect(early > 40 && early < 60, "\(early)")
        // A metre before a hairpin, walking: held to 90° on its side; standing at its apex: the next leg itself.
        #expect(abs(try relative(on: self.hairpin, at: 99) - 90) < 0.5)
        #expect(abs(try relative(on: self.hairpin, at: 100, speed: 0) - 160) < 1)
    }

    @Test func standingAtOneOfTwoJunctionsAFewMetresApartTheCueIsTheBranchToTakeThere() throws {
        // East 100 m to a junction, north 2.4 m along a street to the next junction, then west-north-west up a flight
        // of steps: from the first junction the route's direction 8 m along is back the way the walker came.
        let route = self.route(legs: [(90, 100), (0, 2.4), (290, 100)])
        let (first, second) = (route.points[1], route.points[2])
        func bearing(
            at point: Coordinate, speed: Double, junctionChord: Bool, known: [Int] = [1, 2]
        ) throws
            -> Double
        {
            var options = RouteTracker.Options()
            options.guidance = .bearing  // the bearing alone (turn events have tests of their own)
            options.junctionChord = junctionChord
            options.chordMeters = 8
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route, junctions: known.map { RouteJunction(index: $0) })
            _ = tracker.update(with: self.fix(self.start, course: 90, time: 0))
            let answer = tracker.update(with: self.fix(point, course: speed > 0 ? 90 : nil, time: 1, speed: speed))
            return try #require(answer).target.bearingDegrees
        }
        func off(_ bearing: Double, _ expected: Double) -> Double {
            abs(Angle.signedDifference(from: expected, to: bearing))
        }
        // Standing at the first junction: the street north, not the chord's direction back west.
        #expect(off(try bearing(at: first, speed: 0, junctionChord: false), 309) < 3)
        #expect(off(try bearing(at: first, speed: 0, junctionChord: true), 0) < 1)
        // Placed 1.5 m short of it (the estimate lags a walker who stopped): the same.
        let short = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 98.5).coordinate
        #expect(off(try bearing(at: short, speed: 0, junctionChord: true), 0) < 1)
        // Standing at the second: the steps.
        #expect(off(try bearing(at: second, speed: 0, junctionChord: true), 290) < 1)
        // Walking toward the first, or with no junctions known: path following as it was.
        let before = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 96).coordinate
        #expect(
            try bearing(at: before, speed: 1.3, junctionChord: true)
                == bearing(at: before, speed: 1.3, junctionChord: false))
        #expect(
            try bearing(at: first, speed: 0, junctionChord: true, known: [])
                == bearing(at: first, speed: 0, junctionChord: false))
        // Far from any junction, standing: the chord, straight on.
        let middle = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: 50).coordinate
        #expect(off(try bearing(at: middle, speed: 0, junctionChord: true), 90) < 1)
    }

    @Test func atAForkTheCueIsTheRoutesWayBeforeItAndClearOfTheWayThatCarriesStraightOn() throws {
        // East 100 m to a fork: the way straight on carries east-north-east (70°, 20° left of the walker), the
        // route's bears right (120°, 30° right), the way back is west. Walking along the street, the chord crosses
        // the fork at a shallow angle, inside the sink's tolerance: the walker would carry straight on.
        let route = self.route(legs: [(90, 100), (120, 50)])
        let fork = RouteJunction(index: 1, branchBearingsDegrees: [270, 70, 120], arrivingBranch: 0, routeBranch: 2)
        func bearing(
            at along: Double, speed: Double = 1.3, forkCueMeters: Double = 6, margin: Double = 25
        )
            throws -> Double
        {
            var options = RouteTracker.Options()
            options.guidance = .bearing  // the bearing alone (turn events have tests of their own)
            options.forkCueMeters = forkCueMeters
            options.branchMarginDegrees = margin
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route, junctions: [fork])
            _ = tracker.update(with: self.fix(self.start, course: 90, time: 0))
            let point = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: along).coordinate
            let answer = tracker.update(with: self.fix(point, course: speed > 0 ? 90 : nil, time: 1, speed: speed))
            return try #require(answer).target.bearingDegrees
        }
        // 5 m before it: the route's way, turned away from the way straight on to keep 25° from the half-way line
        // between them (95°): 120°, 30° right of the walker.
        #expect(abs(try bearing(at: 95) - 120) < 1)
        // Without the fork cue, the chord: 15° right, silent within the sink's 15° tolerance and its compass noise.
        let chord = try bearing(at: 95, forkCueMeters: 0)
        #expect(chord > 100 && chord < 110, "\(chord)")
        // 20 m before it: the chord along the street, straight on.
        #expect(abs(try bearing(at: 80) - 90) < 1)
        // Standing at it: the same way.
        #expect(abs(try bearing(at: 100, speed: 0) - 120) < 1)

        // A fork where the way straight on lies 10° from the route's: the cue is 25° clear of the half-way line
        // (115°), not the route's way itself, which a walker turning until the cue stops would miss as often as not.
        #expect(abs(RouteTracker.unmistakable([270, 110, 120], way: 2, marginDegrees: 25) - 140) < 0.01)
        #expect(RouteTracker.unmistakable([270, 110, 120], way: 2, marginDegrees: 0) == 120)
        // Both gaps narrow: the middle of the way's sector.
        #expect(abs(RouteTracker.unmistakable([100, 120, 150], way: 1, marginDegrees: 25) - 122.5) < 0.01)
        // Wide gaps on both sides: the way's own direction.
        #expect(RouteTracker.unmistakable([270, 0, 90], way: 2, marginDegrees: 25) == 90)
        // Narrow on one side only: turned away from it until 25° clear of the half-way line.
        #expect(abs(RouteTracker.unmistakable([270, 70, 120], way: 2, marginDegrees: 25) - 120) < 0.01)
        #expect(abs(RouteTracker.unmistakable([270, 100, 120], way: 2, marginDegrees: 25) - 135) < 0.01)
        #expect(abs(RouteTracker.unmistakable([270, 100, 120], way: 1, marginDegrees: 25) - 85) < 0.01)
    }

    @Test func standingAtAJunctionWhereTheChordPointsBetweenWaysTheCueIsTheRoutesWay() throws {
        // South-south-east 100 m to a junction where the route carries straight on, 4 m to the next junction, where
        // it turns left to east-north-east. At the first, ways leave north-east (65°) and south-west (235°) too: from
        // it, the chord 10 m along the route points 104°, nearer the way north-east than the route's (150°), and a
        // walker who stops there (a turn cued before it) and turns until the cue stops takes the way north-east
        // (Quai Albert 1er, Monaco).
        let route = self.route(legs: [(150, 100), (150, 4), (75, 50)])
        let second = RouteJunction(index: 2, branchBearingsDegrees: [330, 75, 150], arrivingBranch: 0, routeBranch: 1)
        func bearing(
            at along: Double, speed: Double = 0, clearance: Double, ways: [Double] = [330, 65, 235, 150]
        ) throws -> Double {
            var options = RouteTracker.Options()
            options.guidance = .bearing  // the bearing alone (turn events have tests of their own)
            options.chordMeters = 10
            options.chordClearanceDegrees = clearance
            var tracker = RouteTracker(options: options)
            let first = RouteJunction(index: 1, branchBearingsDegrees: ways, arrivingBranch: 0, routeBranch: 3)
            tracker.setRoute(route, junctions: [first, second])
            _ = tracker.update(with: self.fix(self.start, course: 150, time: 0))
            let point = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 150, distanceMeters: along).coordinate
            let answer = tracker.update(with: self.fix(point, course: speed > 0 ? 150 : nil, time: 1, speed: speed))
            return try #require(answer).target.bearingDegrees
        }
        // Standing at it: the chord without the clearance, the route's way with it.
        let chord = try bearing(at: 100, clearance: 0)
        #expect(chord > 95 && chord < 115, "\(chord)")
        #expect(abs(try bearing(at: 100, clearance: 20) - 150) < 1)
        // Walking toward it: the chord, as before.
        #expect(try bearing(at: 97, speed: 1.3, clearance: 20) == bearing(at: 97, speed: 1.3, clearance: 0))
        // Where the chord points clearly into the route's way (the other way farther round, at 10°): the chord.
        #expect(abs(try bearing(at: 100, clearance: 20, ways: [330, 10, 235, 150]) - chord) < 1)
    }

    @Test func aForkOnAWayThatBendsBackIsNeverCuedAsATurnAround() throws {
        // West 30 m, where the way bends south for 3 m to a fork: a flight of steps carries straight on (200°), the
        // route's way bears left (130°), back toward where the walker came from. 4 m before the fork the walker
        // still walks west.
        let route = self.route(legs: [(270, 30), (180, 3), (130, 40)])
        let fork = RouteJunction(index: 2, branchBearingsDegrees: [0, 200, 130], arrivingBranch: 0, routeBranch: 2)
        for mode in RouteTracker.GuidanceMode.allCases {
            var options = RouteTracker.Options()
            options.guidance = mode
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route, junctions: [fork])
            _ = tracker.update(with: self.fix(self.start, course: 270, time: 0))
            let before = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 270, distanceMeters: 29).coordinate
            let update = tracker.update(with: self.fix(before, course: 270, time: 1))
            let answer = try #require(update)
            // The route's way lies 140° from the walker's direction, a turn-around: held at 90° (bearing alone; by
            // events, the outgoing way's own direction held at 105°), to its side (left).
            let held = mode == .bearing ? 90.0 : 105.0
            #expect(
                abs(self.relativeTarget(answer.target, course: 270) + held) < 1,
                "\(mode): \(answer.target.bearingDegrees)")
        }
    }

    @Test func theErrorSeenAcrossOneLegIsTakenOffAlongTheNextWithTheRouteAsAMeasurement() throws {
        // East 100 m, north 20 m, east again; every fix 4 m north of the walker (a street canyon's error).
        let route = self.route(legs: [(90, 100), (0, 20), (90, 100)])
        let corner = route.points[1]
        func bearingEightMetresBeforeTheSecondCorner(biasSeconds: Double) throws -> Double {
            var options = RouteTracker.Options()
            options.guidance = .bearing  // the bearing alone (turn events have tests of their own)
            options.routeBiasSeconds = biasSeconds
            options.chordMeters = 8
            var tracker = RouteTracker(options: options)
            tracker.setRoute(route)
            var time = 0.0
            func fix(_ truth: Coordinate, course: Double) -> SmoothedFix {
                let seen = Geodesic.wgs84.direct(from: truth, azimuthDegrees: 0, distanceMeters: 4).coordinate
                return self.fix(seen, course: course, time: time)
            }
            for east in stride(from: 0.0, through: 100, by: 1.3) {
                let truth = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: east)
                _ = tracker.update(with: fix(truth.coordinate, course: 90))
                time += 1
            }
            var last: GuidanceTarget?
            for north in stride(from: 1.3, through: 12, by: 1.3) {
                let truth = Geodesic.wgs84.direct(from: corner, azimuthDegrees: 0, distanceMeters: north)
                last = tracker.update(with: fix(truth.coordinate, course: 0))?.target
                time += 1
            }
            return Angle.signedDifference(from: 0, to: try #require(last).bearingDegrees)
        }
        // The fix 4 m farther north places the walker 4 m nearer the second corner: its turn is cued already.
        #expect(try bearingEightMetresBeforeTheSecondCorner(biasSeconds: 0) > 30)
        // The 4 m seen across the first leg is taken off along the second: straight on, north, still.
        #expect(abs(try bearingEightMetresBeforeTheSecondCorner(biasSeconds: 30)) < 12)
    }

    /// A walker who stalls again on the new route, with no progress between, has stalled twice in a row (the route
    /// stage then starts its place on the ways again); getting along the route starts the count again.
    @Test func stallsAreCountedInARowUntilTheWalkerGetsAlongTheRoute() {
        var tracker = RouteTracker()
        tracker.setRoute(self.hairpin)
        let beside = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 0, distanceMeters: 12).coordinate
        var time = 0.0
        /// Back and forth over 8 m, 12 m beside the route's first leg, each stall answered with the same route anew.
        func pace(legs: Int) -> [Int] {
            var counts: [Int] = []
            for leg in 0..<legs {
                for step in 0..<10 {
                    let east = leg % 2 == 0 ? Double(step) * 0.9 : Double(9 - step) * 0.9
                    let point = Geodesic.wgs84.direct(from: beside, azimuthDegrees: 90, distanceMeters: east)
                    if let update = tracker.update(
                        with: self.fix(point.coordinate, course: leg % 2 == 0 ? 90 : 270, time: time)),
                        update.rerouteFrom != nil
                    {
                        counts.append(update.stallsInARow)
                        tracker.setRoute(self.hairpin)
                    }
                    time += 1
                }
            }
            return counts
        }
        #expect(pace(legs: 8) == [1, 2], "stalls in a row at each new route")
        // Along the route's first leg, 20 m: progress.
        for step in 0..<16 {
            let point = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 90, distanceMeters: Double(step) * 1.3)
            _ = tracker.update(with: self.fix(point.coordinate, course: 90, time: time))
            time += 1
        }
        #expect(pace(legs: 5).first == 1, "the count starts again after progress")
    }

    @Test func walkingBesideTheRouteWithoutGettingAlongItAsksForANewRoute() {
        // A way 12 m north of the route's first leg (within the off-route distance), walked west then east
        // again: no progress along the route for longer than stallSeconds.
        var tracker = RouteTracker()
        tracker.setRoute(self.hairpin)
        let beside = Geodesic.wgs84.direct(from: self.start, azimuthDegrees: 0, distanceMeters: 12).coordinate
        var reroutes: [Double] = []
        var time = 0.0
        for leg in 0..<6 {
            let course = leg % 2 == 0 ? 90.0 : 270.0
            for step in 0..<10 {
                let east = leg % 2 == 0 ? Double(step) * 1.3 : Double(9 - step) * 1.3
                let point = Geodesic.wgs84.direct(from: beside, azimuthDegrees: 90, distanceMeters: east).coordinate
                if let update = tracker.update(with: self.fix(point, course: course, time: time)),
                    update.rerouteFrom != nil
                {
                    reroutes.append(time)
                }
                time += 1
            }
        }
        // 10 m along the route in the first 8 s, then none: 30 s of walking later.
        #expect(reroutes.first.map { (37...40).contains($0) } == true, "\(reroutes)")
        // Standing still is no stall.
        var still = RouteTracker()
        still.setRoute(self.hairpin)
        var asked = false
        for second in 0..<120 {
            asked =
                asked
                || still.update(with: self.fix(beside, course: nil, time: Double(second), speed: 0))?
                    .rerouteFrom != nil
        }
        #expect(!asked)
    }
}
