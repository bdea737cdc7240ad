import Devices
import Evaluation
import Glibc
import NavCore
import Testing
import MapLogic

/// The participant held to the ways, on small networks drawn in metres around a point in Monaco.
@Suite struct NetworkParticipantTests {
    static let origin = Coordinate(latitude: 43.73, longitude: 7.42)

    /// A graph from points in metres (east, north) and edges between them.
    static func graph(_ points: [(Double, Double)], _ edges: [(Int32, Int32)]) -> WalkingGraph {
        let plane = FlatProjection(origin: self.origin)
        return WalkingGraph(
            nodes: points.map { plane.unproject(ENU(east: $0.0, north: $0.1)) },
            edges: edges.map { (a: $0.0, b: $0.1, name: -1) }, names: [], warnings: [])
    }

    static func local(_ point: Coordinate) -> ENU { FlatProjection(origin: self.origin).project(point) }

    /// A way from the south up to a junction at (0, 0), where branches go west, east and on north.
    static let crossing = graph(
        [(0, -60), (0, 0), (-60, 0), (60, 0), (0, 60)], [(0, 1), (1, 2), (1, 3), (1, 4)])

    /// Walks `seconds` feeling `cue(t, walker)` each 0.1 s.
    static func walk(
        _ walker: inout NetworkParticipant, seconds: Double, cue: (Double, NetworkParticipant) -> CueKind
    ) {
        walker.start()
        var t = 0.0
        while t < seconds {
            walker.step(feeling: cue(t, walker), at: t, dt: 0.1)
            t += 0.1
        }
    }

    @Test func itStartsOnTheNearestWayFacingAlongItTowardTheGivenDirection() throws {
        let way = Self.graph([(-100, 0), (100, 0)], [(0, 1)])
        let point = FlatProjection(origin: Self.origin).unproject(ENU(east: 10, north: 4))
        var walker = try #require(NetworkParticipant(graph: way, at: point, facing: 250))
        #expect(abs(Self.local(walker.position).north) < 0.01)
        #expect(Angle.separation(walker.bodyHeadingDegrees, 270) < 0.5)
        Self.walk(&walker, seconds: 10) { _, _ in .silent }
        #expect(abs(Self.local(walker.position).east - (10 - 13)) < 0.2)
        #expect(abs(walker.phoneHeadingDegrees - Angle.normalized(270 + 70)) < 0.5)
    }

    @Test func startingOnAJunctionItWalksAlongTheWayClosestToTheGivenDirection() throws {
        // The junction lies on all four ways: each direction given starts it along its own branch.
        for (facing, east, north) in [(90.0, 1.0, 0.0), (270, -1, 0), (0, 0, 1), (180, 0, -1), (80, 1, 0)] {
            var walker = try #require(NetworkParticipant(graph: Self.crossing, at: Self.origin, facing: facing))
            Self.walk(&walker, seconds: 10) { _, _ in .silent }
            let here = Self.local(walker.position)
            #expect(abs(here.east - 13 * east) < 0.2 && abs(here.north - 13 * north) < 0.2, "facing \(facing): \(here)")
        }
    }

    @Test func withNoCueItGoesStraightOnThroughAJunctionWithoutStopping() throws {
        let start = FlatProjection(origin: Self.origin).unproject(ENU(east: 0, north: -30))
        var walker = try #require(NetworkParticipant(graph: Self.crossing, at: start, facing: 0))
        Self.walk(&walker, seconds: 40) { _, _ in .silent }
        #expect(walker.choices.count == 1)
        #expect(walker.choices.first?.stopped == false)
        #expect(Self.local(walker.position).north > 10)
        #expect(abs(Self.local(walker.position).east) < 0.1)
    }

    @Test func aRightCueAtTheJunctionStopsItTurnsItAndItTakesTheEasternBranch() throws {
        let start = FlatProjection(origin: Self.origin).unproject(ENU(east: 0, north: -30))
        var walker = try #require(NetworkParticipant(graph: Self.crossing, at: start, facing: 0))
        // The sink's rule, roughly: a right cue while the walker faces more than 15° left of east, once near.
        Self.walk(&walker, seconds: 60) { _, walker in
            let here = Self.local(walker.position)
            guard here.north > -5, here.east < 5 else { return .silent }
            return Angle.signedDifference(from: walker.bodyHeadingDegrees, to: 90) > 15 ? .turnRight : .silent
        }
        let choice = try #require(walker.choices.first)
        #expect(choice.stopped)
        #expect(!choice.wentBack)
        #expect(Self.local(choice.branchPoint).east > 7)
        #expect(Self.local(walker.position).east > 20)
    }

    @Test func aSideCuedBeforeTheJunctionIsRememberedAndStopsItThere() throws {
        let start = FlatProjection(origin: Self.origin).unproject(ENU(east: 0, north: -30))
        var walker = try #require(NetworkParticipant(graph: Self.crossing, at: start, facing: 0))
        // A left cue 15 m before the junction, felt for 1 s, then nothing: it stops at the junction to orient.
        Self.walk(&walker, seconds: 40) { t, _ in t > 11 && t < 12 ? .turnLeft : .silent }
        #expect(walker.choices.first?.stopped == true)
        // Felt 40 m before, it is forgotten: no stop.
        var early = try #require(NetworkParticipant(graph: Self.crossing, at: start, facing: 0))
        let farther = FlatProjection(origin: Self.origin).unproject(ENU(east: 0, north: -55))
        early = try #require(NetworkParticipant(graph: Self.crossing, at: farther, facing: 0))
        Self.walk(&early, seconds: 60) { t, _ in t > 1 && t < 2 ? .turnLeft : .silent }
        #expect(early.choices.first?.stopped == false)
    }

    @Test func aTurnAroundCueBetweenJunctionsTurnsItBackAlongItsWay() throws {
        let way = Self.graph([(-100, 0), (100, 0)], [(0, 1)])
        var walker = try #require(NetworkParticipant(graph: way, at: Self.origin, facing: 90))
        // 2 s east, then a turn-around: 0.5 s pause, 2 s turning, then west.
        Self.walk(&walker, seconds: 10) { t, _ in t >= 2 && t < 2.2 ? .turnAround : .silent }
        #expect(Angle.separation(walker.bodyHeadingDegrees, 270) < 0.5)
        let east = Self.local(walker.position).east
        #expect(abs(east - (2.0 * 1.3 - (10 - 2 - 0.5 - 2) * 1.3)) < 0.5)
    }

    @Test func atADeadEndItTurnsAround() throws {
        let way = Self.graph([(0, 0), (20, 0)], [(0, 1)])
        var walker = try #require(NetworkParticipant(graph: way, at: Self.origin, facing: 90))
        Self.walk(&walker, seconds: 30) { _, _ in .silent }
        #expect(walker.deadEnds >= 1)
        #expect(Self.local(walker.position).east < 20)
    }

    @Test func whereTheWayBendsItFollowsTheBend() throws {
        // An L: east 30 m, then north; two ways meet at the corner, no junction.
        let way = Self.graph([(0, 0), (30, 0), (30, 40)], [(0, 1), (1, 2)])
        var walker = try #require(NetworkParticipant(graph: way, at: Self.origin, facing: 90))
        Self.walk(&walker, seconds: 30) { _, _ in .silent }
        #expect(walker.choices.isEmpty)
        #expect(abs(Self.local(walker.position).east - 30) < 0.1)
        #expect(Self.local(walker.position).north > 5)
        #expect(Angle.separation(walker.bodyHeadingDegrees, 0) < 0.5)
    }

    @Test func withNoStraightBranchAndNoCueItWaitsThenTakesTheStraightest() throws {
        // A T: from the south into a junction with only west and east.
        let tee = Self.graph([(0, -30), (0, 0), (-50, 0), (50, 4)], [(0, 1), (1, 2), (1, 3)])
        let start = FlatProjection(origin: Self.origin).unproject(ENU(east: 0, north: -20))
        var walker = try #require(NetworkParticipant(graph: tee, at: start, facing: 0))
        Self.walk(&walker, seconds: 40) { _, _ in .silent }
        let choice = try #require(walker.choices.first)
        #expect(choice.stopped)
        #expect(Self.local(choice.branchPoint).east > 5)  // east bends 4.6° toward north: the straighter
    }

    @Test func atAHairpinJunctionTheTurnCuesTurnItInPlaceOntoTheSharpBranchNotBack() throws {
        // From the west into a junction; on east, or back sharply right at 243° (27° from the way back).
        let hairpin = Self.graph(
            [(-60, 0), (0, 0), (60, 0), (-26.7, -13.6)], [(0, 1), (1, 2), (1, 3)])
        let start = FlatProjection(origin: Self.origin).unproject(ENU(east: -20, north: 0))
        var walker = try #require(NetworkParticipant(graph: hairpin, at: start, facing: 90))
        // Announced before the corner with a right cue (the target half the turn to the right), then at the
        // junction the sink's rule toward 243°: around beyond 120°, else the side, silent within 15°.
        Self.walk(&walker, seconds: 40) { _, walker in
            guard walker.choices.isEmpty else { return .silent }
            let east = Self.local(walker.position).east
            if east < -8 { return .silent }
            if east < -0.01 && walker.speedMetersPerSecond > 0 { return .turnRight }
            let deviation = Angle.signedDifference(from: walker.bodyHeadingDegrees, to: 243)
            return abs(deviation) > 120
                ? .turnAround : abs(deviation) <= 15 ? .silent : deviation > 0 ? .turnRight : .turnLeft
        }
        let choice = try #require(walker.choices.first)
        #expect(choice.stopped)
        #expect(!choice.wentBack)
        #expect(Self.local(walker.position).north < -5)
    }

    /// An event follower that never notices a junction by itself, told of a right turn at the next one, walking north
    /// into the crossing and feeling a right cue once it is `cueAfter` metres past it.
    static func overshoot(cueAfter: Double) throws -> NetworkParticipant {
        var rules = NetworkParticipant.Rules()
        rules.followsEvents = true
        rules.missRoadPercent = 100
        rules.missPathPercent = 100
        let start = FlatProjection(origin: Self.origin).unproject(ENU(east: 0, north: -20))
        var walker = try #require(NetworkParticipant(graph: Self.crossing, at: start, facing: 0, rules: rules))
        walker.hear(
            TurnEvent(
                timeSeconds: 0, routeID: 1, manoeuvre: 0, phase: .announce, turnDegrees: 90, junctionsBefore: 0,
                distanceMeters: 20, outgoingBearingDegrees: 90))
        Self.walk(&walker, seconds: 40) { _, walker in
            let here = Self.local(walker.position)
            return walker.choices.isEmpty && abs(here.east) < 0.01 && here.north >= cueAfter ? .turnRight : .silent
        }
        return walker
    }

    @Test func anEventFollowerWhoWalksThroughTheTurnUnnoticedFindsItAgainOnACueWithinReach() throws {
        let walker = try Self.overshoot(cueAfter: 1)
        let choice = try #require(walker.choices.first)
        #expect(walker.choices.count == 1, "the junction chosen once: \(walker.choices)")
        #expect(walker.missedJunctions == 1)
        #expect(walker.foundAgain == 1)
        #expect(choice.basis == .events)
        #expect(choice.stopped)
        #expect(Self.local(choice.branchPoint).east > 5)
        #expect(Self.local(walker.position).east > 20)
    }

    @Test func aCueBeyondReachLeavesTheUnnoticedJunctionWalkedThrough() throws {
        let walker = try Self.overshoot(cueAfter: NetworkParticipant.Rules().reachMeters + 2)
        let choice = try #require(walker.choices.first)
        #expect(walker.missedJunctions == 1)
        #expect(walker.foundAgain == 0)
        #expect(choice.basis == .missed)
        #expect(Self.local(choice.branchPoint).north > 5)
    }

    /// The stairs by Monaco's market: arriving westward at a hairpin where flights leave at 139° (the route's, a sharp
    /// left of 138°) and at 162° (a left of 115°). Told through the band (its frames, as a wearer feels them), the
    /// walker takes the route's flight: the band's *now* says the turn is sharp. Felt as a plain left (the band's *now*
    /// before it told sharpness, taken as 90°), the 162° flight is the nearer and the walker goes down the wrong one.
    @Test func feltThroughTheBandASharpTurnIsToldFromALeftAtAHairpin() throws {
        func bearing(_ degrees: Double, _ meters: Double) -> (Double, Double) {
            (meters * sin(degrees * .pi / 180), meters * cos(degrees * .pi / 180))
        }
        let hairpin = Self.graph(
            [(40, 0), (0, 0), bearing(139, 30), bearing(162, 30), bearing(338, 30)], [(0, 1), (1, 2), (1, 3), (1, 4)])
        var rules = NetworkParticipant.Rules()
        rules.followsEvents = true
        rules.missRoadPercent = 0
        rules.missPathPercent = 0
        func walk(told frames: [(BandProtocol.FrameType, [UInt8])]) throws -> ENU {
            let start = FlatProjection(origin: Self.origin).unproject(ENU(east: 20, north: 0))
            var walker = try #require(NetworkParticipant(graph: hairpin, at: start, facing: 270, rules: rules))
            var band = FeltBand()
            for (type, payload) in frames where type == .pulse {
                band.take(type: "pulse", payload: payload.map(Int.init), left: 0, right: 0, time: 0)
            }
            for event in band.drainEvents() { walker.hear(event) }
            Self.walk(&walker, seconds: 40) { _, _ in .silent }
            return Self.local(try #require(walker.choices.first).branchPoint)
        }
        func event(_ phase: TurnPhase) -> TurnEvent {
            TurnEvent(
                timeSeconds: 0, routeID: 1, manoeuvre: 0, phase: phase, turnDegrees: -138, junctionsBefore: 0,
                distanceMeters: 10, outgoingBearingDegrees: 139)
        }
        let told = BandProtocol.frames(for: event(.announce)) + BandProtocol.frames(for: event(.now))
        #expect(told.last?.1.first == BandProtocol.Pattern.sharpLeft.rawValue)
        let taken = try walk(told: told)
        #expect(
            Angle.separation(
                FlatProjection.bearing(from: Self.origin, to: FlatProjection(origin: Self.origin).unproject(taken)), 139
            ) < 3, "\(taken)")
        // A plain *now* on the left: the branch nearest a left of 90° is the 162° flight.
        let plain =
            BandProtocol.frames(for: event(.announce)) + [(.pulse, [BandProtocol.Pattern.nowLeft.rawValue, 255, 1])]
        let wrong = try walk(told: plain)
        #expect(
            Angle.separation(
                FlatProjection.bearing(from: Self.origin, to: FlatProjection(origin: Self.origin).unproject(wrong)), 162
            ) < 3, "\(wrong)")
    }
}
