#if canImport(Glibc)
import Glibc
#endif
public import MapLogic
public import NavCore

/// What the evaluation harness needs of a simulated participant: where they are, which way their body faces, how
/// fast they move, and a step that takes the cue felt.
public protocol SimulatedParticipant: Sendable {
    var behaviour: Participant.Behaviour { get }
    /// Where the participant truly is.
    var position: Coordinate { get }
    /// The walking direction [degrees, true north, clockwise].
    var bodyHeadingDegrees: Double { get }
    /// Moving now [m/s], along `bodyHeadingDegrees`.
    var speedMetersPerSecond: Double { get }
    var started: Bool { get }
    mutating func start()
    mutating func step(feeling cue: CueKind, at time: Double, dt: Double)
    /// Takes a turn event as the sink rendered it (felt on the band or heard from the speaker).
    mutating func hear(_ event: TurnEvent)
}

extension SimulatedParticipant {
    /// The phone's true heading [degrees]: the body's, turned by the phone's angle in the pocket.
    public var phoneHeadingDegrees: Double {
        Angle.normalized(self.bodyHeadingDegrees + self.behaviour.pocketOffsetDegrees)
    }
}

extension Participant: SimulatedParticipant {
    /// The open-space participant knows only the bearing cues.
    public mutating func hear(_ event: TurnEvent) {}
}

/// A simulated participant held to the walkable ways, as a blind walker follows the kerb or the building line: they
/// walk along their way, follow its bends, and choose a branch only at a junction (three or more ways meet), by the
/// cues. Pure: the harness feeds it cues and time and reads the junctions it passed from `choices`.
///
/// - A turn-around cue between junctions: stops, pauses, turns 180° and walks back.
/// - A left or right cue between junctions: keeps walking (it cannot leave the way) and remembers the side for
///   `rememberMeters`.
/// - At a junction, with a turn cue playing or remembered: stops, pauses, turns in place toward the cued side while
///   a turn cue (left, right or around) plays (at most `orientSeconds`), then takes the branch closest to where it faces (the way it came
///   only within `backWithinDegrees` of it). With no cue: the straightest branch if within `straightDegrees`, else
///   it stops and turns with the cues, and after `waitSeconds` without one takes the straightest branch.
/// - At a dead end it turns around; at the arrival cue it stops for good.
/// - Following turn events (`Rules.followsEvents`): at a junction with an event pending it counts the junction and
///   turns at the announced one (see `hear`), unless it walks through it unnoticed (by chance, by kind), and finds
///   one so passed again when a turn cue or a *now* comes within `Rules.reachMeters` past it.
public struct NetworkParticipant: SimulatedParticipant {
    /// How choices at junctions are made, beyond the walking of ``Participant/Behaviour``.
    public struct Rules: Sendable, Equatable {
        /// A side cued between junctions is remembered this far [metres].
        public var rememberMeters = 20.0
        /// Turning in place at a junction lasts at most this long [seconds].
        public var orientSeconds = 8.0
        /// The way it came is taken only when facing within this of it [degrees].
        public var backWithinDegrees = 45.0
        /// With no cue, the straightest branch is taken without stopping when within this [degrees].
        public var straightDegrees = 60.0
        /// Stopped at a junction with no cue, it takes the straightest branch after this long [seconds].
        public var waitSeconds = 2.0
        /// How far along a branch its direction and the wrong-branch check are taken [metres].
        public var branchProbeMeters = 8.0
        /// It acts on turn events: counts the junctions it reaches since an announcement and turns at the announced
        /// one by its side and angle, goes straight on at the others; with no announcement pending, as by the cues.
        public var followsEvents = false
        /// Following events, the chance of walking through a junction without noticing it, by kind: where a road
        /// meets the way (a kerb) [percent]…
        public var missRoadPercent = 2.0
        /// …and where only footways, paths or steps branch off [percent].
        public var missPathPercent = 10.0
        /// A junction walked through unnoticed is found again when a turn cue (left, right or around) or a *now* comes
        /// before the participant is this far past it: it steps back to the opening it passed (the seconds that takes
        /// are not counted; the choice counts as a stop) and chooses there by the events, else stops there and orients
        /// by the cues, as a cane user who overshoots an opening by a step or two [metres].
        public var reachMeters = 3.0

        /// The rules of the evaluation (issue 23: 20 m, 8 s, 45°, 60°, 2 s, 8 m).
        public init() {}
    }

    /// One junction passed: where, the way it came from and the branch it took, and the point `branchProbeMeters`
    /// along that branch.
    public struct Choice: Sendable, Equatable {
        /// What the branch was chosen by.
        public enum Basis: String, Sendable, Codable, Equatable {
            /// The cues felt (or, with none, the straightest branch).
            case cues
            /// A turn event: the announced turn or a junction counted and carried straight on through.
            case events
            /// Nothing: the participant walked through the junction without noticing it.
            case missed
            /// Turn events, counted from a count that a junction walked through unnoticed since had put out.
            case miscounted
        }

        public var junction: Coordinate
        /// The point `branchProbeMeters` along the branch taken.
        public var branchPoint: Coordinate
        /// It stopped to orient before choosing.
        public var stopped: Bool
        /// The branch was the way it came.
        public var wentBack: Bool
        public var basis: Basis = .cues
    }

    enum Phase: Sendable, Equatable {
        case walking
        /// Stopped for a turn-around cue between junctions, since a time.
        case pausingToTurnAround(since: Double)
        /// Turning around: degrees still to turn.
        case turningAround(remaining: Double)
        /// Stopped at the junction at the end of the current edge: since when, when turning toward a cue began (nil
        /// before), whether it stopped because of a cue (else for want of a straight branch).
        case atJunction(since: Double, turningSince: Double?, cued: Bool)
        case arrived
    }

    public let behaviour: Participant.Behaviour
    public let rules: Rules
    private let graph: WalkingGraph
    /// The edge walked: from node, to node, metres along it, its length.
    private var from: Int32
    private var to: Int32
    private var along: Double
    private var length: Double
    public private(set) var bodyHeadingDegrees: Double
    var phase: Phase = .walking
    public private(set) var started = false
    /// A side cued between junctions (+1 right, −1 left) and the distance walked when it was last felt.
    private var remembered: (side: Double, at: Double)?
    /// Metres walked since the start.
    public private(set) var walkedMeters = 0.0
    /// The junctions passed, in order (a junction walked through unnoticed only once it is out of reach; see
    /// `settledChoices`).
    public private(set) var choices: [Choice] = []
    /// The junctions passed, with one walked through unnoticed and still within reach as it stands now: for a walk's
    /// end.
    public var settledChoices: [Choice] { self.choices + (self.overshot.map { [$0.choice] } ?? []) }
    /// Dead ends turned at [count].
    public private(set) var deadEnds = 0
    /// Following events: what it was told of the junctions ahead, each with the junctions still to pass before it, its
    /// angle [degrees, positive right], and whether it is a manoeuvre (else a straight on).
    private var pending: [(routeID: UInt32, manoeuvre: UInt32, junctionsToGo: Int, turnDegrees: Double, turn: Bool)] =
        []
    /// Following events: manoeuvres made (route id, number), so that a late announcement or *now* is not taken for the
    /// next.
    private var made: Set<UInt64> = []
    /// Junctions walked through without noticing them [count].
    public private(set) var missedJunctions = 0
    /// A junction was walked through unnoticed since the last announcement heard: the count may be out.
    private var missedSinceAnnouncement = false
    /// The junction last walked through unnoticed, while the participant is within `reachMeters` past it: the edge it
    /// arrived by, the choice held back from `choices` until then, the metres walked at the junction, and what
    /// `missedSinceAnnouncement` was before; whether a *now* came since.
    private var overshot:
        (from: Int32, to: Int32, length: Double, choice: Choice, at: Double, missedBefore: Bool, nowSince: Bool)?
    /// Junctions walked through unnoticed and then found again by a cue within `reachMeters` [count].
    public private(set) var foundAgain = 0
    /// Its own chances (noticing a junction).
    private var random: SeededGenerator

    /// A participant on the way nearest `start` (within `snapMeters`), facing along it in the direction closest to
    /// `heading`; nil when no way is that near.
    public init?(
        graph: WalkingGraph, at start: Coordinate, facing heading: Double, behaviour: Participant.Behaviour = .init(),
        rules: Rules = Rules(), snapMeters: Double = 250, seed: UInt64 = 1
    ) {
        self.random = SeededGenerator(seed: seed)
        guard let nearest = graph.snap(start, maximumMeters: snapMeters) else { return nil }
        // Of the ways as near as the nearest (a start on a junction lies on all its ways), the one running closest
        // to `heading`, either way along it.
        let snap =
            graph.snaps(near: start, maximumMeters: nearest.distance + 0.5).min { first, second in
                func off(_ snap: WalkingGraph.Snap) -> Double {
                    let segment = graph.segments[snap.segment]
                    let bearing = FlatProjection.bearing(
                        from: graph.nodes[Int(segment.a)], to: graph.nodes[Int(segment.b)])
                    let separation = Angle.separation(bearing, heading)
                    return min(separation, 180 - separation)
                }
                return off(first) < off(second)
            } ?? nearest
        let segment = graph.segments[snap.segment]
        self.graph = graph
        self.behaviour = behaviour
        self.rules = rules
        self.from = segment.a
        self.to = segment.b
        self.length = FlatProjection.distance(graph.nodes[Int(segment.a)], graph.nodes[Int(segment.b)])
        self.along = snap.fraction * self.length
        self.bodyHeadingDegrees = 0
        self.bodyHeadingDegrees = self.edgeBearing
        self.face(heading)
    }

    /// Turns to walk along the current way in the direction closest to `heading` (before the start).
    public mutating func face(_ heading: Double) {
        if Angle.separation(self.edgeBearing, heading) > 90 { self.reverse() }
        self.bodyHeadingDegrees = self.edgeBearing
    }

    public var position: Coordinate {
        let a = self.graph.nodes[Int(self.from)], b = self.graph.nodes[Int(self.to)]
        guard self.length > 0 else { return b }
        let plane = FlatProjection(origin: a)
        let end = plane.project(b), f = min(1, max(0, self.along / self.length))
        return plane.unproject(ENU(east: end.east * f, north: end.north * f))
    }

    public var speedMetersPerSecond: Double {
        self.started && self.phase == .walking ? self.behaviour.speedMetersPerSecond : 0
    }

    public mutating func start() { self.started = true }

    /// The current edge's direction of travel [degrees].
    private var edgeBearing: Double {
        let a = self.graph.nodes[Int(self.from)], b = self.graph.nodes[Int(self.to)]
        return FlatProjection.distance(a, b) > 0.01
            ? FlatProjection.bearing(from: a, to: b) : self.bodyHeadingDegrees
    }

    /// Walks back along the current edge.
    private mutating func reverse() {
        swap(&self.from, &self.to)
        self.along = self.length - self.along
    }

    /// The branches at the junction `node`, reached from `from`: each neighbour, its direction, and whether it is the
    /// way back.
    private func branches(at node: Int32, from: Int32) -> [(node: Int32, lengthMeters: Double, bearing: Double)] {
        let centre = self.graph.nodes[Int(node)]
        return self.graph.neighbours(of: node).map { neighbour in
            let probe = self.graph.point(from: node, through: neighbour.node, meters: self.rules.branchProbeMeters)
            return (neighbour.node, neighbour.lengthMeters, FlatProjection.bearing(from: centre, to: probe))
        }
    }

    /// Leaves the junction at the end of the current edge by the branch to `next`.
    private mutating func take(_ next: Int32, lengthMeters: Double, stopped: Bool, by basis: Choice.Basis = .cues) {
        let junction = self.to
        self.commitOvershot()
        let choice = Choice(
            junction: self.graph.nodes[Int(junction)],
            branchPoint: self.graph.point(from: junction, through: next, meters: self.rules.branchProbeMeters),
            stopped: stopped, wentBack: next == self.from, basis: basis)
        if basis == .missed {
            self.overshot = (
                self.from, junction, self.length, choice, self.walkedMeters, self.missedSinceAnnouncement, false
            )
        } else {
            self.choices.append(choice)
        }
        self.from = junction
        self.to = next
        self.along = 0
        self.length = lengthMeters
        self.bodyHeadingDegrees = self.edgeBearing
        self.remembered = nil
        self.phase = .walking
    }

    /// Takes the branch closest to where the body faces (the way back only within `backWithinDegrees`).
    private mutating func takeFacing(stopped: Bool) {
        let options = self.branches(at: self.to, from: self.from)
        let candidates = options.filter {
            $0.node != self.from
                || Angle.separation($0.bearing, self.bodyHeadingDegrees) <= self.rules.backWithinDegrees
        }
        guard
            let best = (candidates.isEmpty ? options : candidates).min(by: {
                Angle.separation($0.bearing, self.bodyHeadingDegrees)
                    < Angle.separation($1.bearing, self.bodyHeadingDegrees)
            })
        else { return }
        self.take(best.node, lengthMeters: best.lengthMeters, stopped: stopped)
    }

    /// The branch closest to straight on (never the way back), and how far from straight it is [degrees].
    private func straightest() -> (node: Int32, lengthMeters: Double, offDegrees: Double)? {
        let travel = self.bodyHeadingDegrees
        return self.branches(at: self.to, from: self.from).filter { $0.node != self.from }
            .map { ($0.node, $0.lengthMeters, Angle.separation($0.bearing, travel)) }
            .min(by: { $0.2 < $1.2 })
    }

    /// Takes a turn event (following events; else ignored): an announcement sets (or sets right) the junctions to
    /// count before its manoeuvre, *now* puts a manoeuvre it was not told of at the next junction (or the one after
    /// those it waits for) and sets the turn of one it was told of, *straight on* marks a junction to carry straight on
    /// at.
    public mutating func hear(_ event: TurnEvent) {
        guard self.rules.followsEvents else { return }
        // A new route: what was said of the old one no longer holds.
        self.pending.removeAll { $0.routeID != event.routeID }
        let key = UInt64(event.routeID) << 32 | UInt64(event.manoeuvre)
        let count = Int(event.junctionsBefore)
        switch event.phase {
        case .announce:
            guard !self.made.contains(key) else { return }
            self.pending.removeAll { $0.turn && $0.manoeuvre == event.manoeuvre }
            self.pending.append((event.routeID, event.manoeuvre, count, event.turnDegrees, true))
            self.missedSinceAnnouncement = false
            self.overshot?.missedBefore = false
        case .now:
            if !self.made.contains(key) { self.overshot?.nowSince = true }
            guard !self.made.contains(key) else { return }
            if let told = self.pending.firstIndex(where: { $0.turn && $0.manoeuvre == event.manoeuvre }) {
                // Announced already: *now* may say more of the turn (a band says how sharp only at the junction).
                self.pending[told].turnDegrees = event.turnDegrees
                return
            }
            let after = self.pending.filter { $0.turn && $0.manoeuvre < event.manoeuvre }.map(\.junctionsToGo).max()
            self.pending.append((event.routeID, event.manoeuvre, after.map { $0 + 1 } ?? 0, event.turnDegrees, true))
        case .straightOn:
            self.pending.removeAll { !$0.turn && $0.junctionsToGo == count }
            self.pending.append((event.routeID, event.manoeuvre, count, event.turnDegrees, false))
        }
    }

    /// The branch at the junction ahead closest to a turn of `turnDegrees` from the direction of arrival (never the way
    /// back).
    private func branch(turning turnDegrees: Double) -> (node: Int32, lengthMeters: Double)? {
        let ways = self.branches(at: self.to, from: self.from)
        // The direction of arrival as a walker judges it: the way walked, over its last metres (not the last step's).
        let arrival = ways.first { $0.node == self.from }.map { Angle.normalized($0.bearing + 180) }
        let wanted = Angle.normalized((arrival ?? self.bodyHeadingDegrees) + turnDegrees)
        return ways.filter { $0.node != self.from }
            .min { Angle.separation($0.bearing, wanted) < Angle.separation($1.bearing, wanted) }
            .map { ($0.node, $0.lengthMeters) }
    }

    /// Following events at a junction: walks through it unnoticed (by chance), turns at the announced one, or counts it
    /// and goes straight on. Nil when it has nothing to go by (nothing pending): the cues decide.
    private mutating func followEvents(noticed: Bool = false, stopped: Bool = false) -> Bool? {
        guard self.rules.followsEvents, !self.pending.isEmpty else { return nil }
        let road = self.graph.neighbours(of: self.to).contains {
            $0.node != self.from && self.graph.isRoad(from: self.to, to: $0.node)
        }
        let miss = (road ? self.rules.missRoadPercent : self.rules.missPathPercent) / 100
        if !noticed, Double(self.random.next() >> 11) / Double(1 << 53) < miss {
            self.missedJunctions += 1
            guard let straight = self.straightest() else { return nil }
            self.take(straight.node, lengthMeters: straight.lengthMeters, stopped: false, by: .missed)
            self.missedSinceAnnouncement = true
            return true
        }
        // This junction's: a manoeuvre before a straight on.
        let here = self.pending.filter { $0.junctionsToGo <= 0 }.sorted { $0.turn && !$1.turn }.first
        for index in self.pending.indices { self.pending[index].junctionsToGo -= 1 }
        self.pending.removeAll { $0.junctionsToGo < 0 }
        if let here, here.turn { self.made.insert(UInt64(here.routeID) << 32 | UInt64(here.manoeuvre)) }
        guard let branch = self.branch(turning: here?.turnDegrees ?? 0) else { return nil }
        self.take(
            branch.node, lengthMeters: branch.lengthMeters, stopped: stopped,
            by: self.missedSinceAnnouncement ? .miscounted : .events)
        return true
    }

    /// The junction walked through unnoticed, now out of reach: its choice stands.
    private mutating func commitOvershot() {
        guard let overshot = self.overshot else { return }
        self.choices.append(overshot.choice)
        self.overshot = nil
    }

    /// Walking within reach past a junction it walked through unnoticed, with `cue` felt: found again by a turn cue or
    /// a *now* (back at the opening, it chooses there, events first; true), else out of reach its choice stands.
    private mutating func findAgain(feeling cue: CueKind, at time: Double) -> Bool {
        guard let overshot = self.overshot else { return false }
        guard self.walkedMeters - overshot.at <= self.rules.reachMeters else {
            self.commitOvershot()
            return false
        }
        let side = cue == .turnLeft ? -1.0 : cue == .turnRight ? 1.0 : nil
        guard side != nil || cue == .turnAround || overshot.nowSince else { return false }
        self.overshot = nil
        self.foundAgain += 1
        self.missedSinceAnnouncement = overshot.missedBefore
        self.from = overshot.from
        self.to = overshot.to
        self.length = overshot.length
        self.along = overshot.length
        self.bodyHeadingDegrees = self.edgeBearing
        if self.followEvents(noticed: true, stopped: true) == nil {
            if let side { self.remembered = (side, self.walkedMeters) }
            self.phase = .atJunction(since: time, turningSince: nil, cued: true)
        }
        return true
    }

    /// Reached the end of the current edge, with `cue` felt: follows the way, turns at a dead end, or chooses at a
    /// junction. Returns false when it stopped there.
    private mutating func reachNode(feeling cue: CueKind, at time: Double) -> Bool {
        let onward = self.graph.neighbours(of: self.to)
        if onward.count <= 1 {
            self.deadEnds += 1
            self.phase = .turningAround(remaining: 180)
            return false
        }
        if onward.count == 2, let next = onward.first(where: { $0.node != self.from }) {
            // Where two ways meet, or a way bends: follow it.
            let node = self.to
            self.from = node
            self.to = next.node
            self.along = 0
            self.length = next.lengthMeters
            self.bodyHeadingDegrees = self.edgeBearing
            return true
        }
        if let went = self.followEvents() { return went }
        let side = cue == .turnLeft ? -1.0 : cue == .turnRight ? 1.0 : nil
        if side != nil || self.remembered != nil || cue == .turnAround {
            self.phase = .atJunction(since: time, turningSince: nil, cued: true)
            return false
        }
        if let straight = self.straightest(), straight.offDegrees <= self.rules.straightDegrees {
            self.take(straight.node, lengthMeters: straight.lengthMeters, stopped: false)
            return true
        }
        self.phase = .atJunction(since: time, turningSince: nil, cued: false)
        return false
    }

    public mutating func step(feeling cue: CueKind, at time: Double, dt: Double) {
        guard self.started, self.phase != .arrived else { return }
        if cue == .arrival {
            self.commitOvershot()
            self.phase = .arrived
            return
        }
        let side: Double? = cue == .turnLeft ? -1 : cue == .turnRight ? 1 : nil
        let rate = self.behaviour.turnRateDegreesPerSecond
        switch self.phase {
        case .arrived:
            return
        case .walking:
            if self.findAgain(feeling: cue, at: time) { return }
            if cue == .turnAround {
                self.phase = .pausingToTurnAround(since: time)
                return
            }
            // Following an announcement, a side felt between junctions is not taken for the next junction's.
            if let side, self.pending.isEmpty { self.remembered = (side, self.walkedMeters) }
            if let memory = self.remembered, self.walkedMeters - memory.at > self.rules.rememberMeters {
                self.remembered = nil
            }
            var distance = self.behaviour.speedMetersPerSecond * dt
            while distance > 0 {
                let left = self.length - self.along
                if distance < left {
                    self.along += distance
                    self.walkedMeters += distance
                    break
                }
                self.along = self.length
                self.walkedMeters += left
                distance -= left
                guard self.reachNode(feeling: cue, at: time) else { break }
            }
        case let .pausingToTurnAround(since):
            if time - since >= self.behaviour.pauseSeconds { self.phase = .turningAround(remaining: 180) }
        case let .turningAround(remaining):
            let turn = min(remaining, rate * dt)
            self.bodyHeadingDegrees = Angle.normalized(self.bodyHeadingDegrees + turn)
            guard remaining - turn <= 0 else {
                self.phase = .turningAround(remaining: remaining - turn)
                return
            }
            self.reverse()
            self.bodyHeadingDegrees = self.edgeBearing
            self.remembered = nil
            // Turned back: the junctions counted since the announcement no longer lie ahead.
            self.pending.removeAll()
            self.phase = .walking
        case let .atJunction(since, turningSince, cued):
            // At a junction every turn cue turns it in place; a turn-around toward the side last cued (else right),
            // until the cue says left or right or stops.
            let side = side ?? (cue == .turnAround ? self.remembered?.side ?? 1 : nil)
            if let turningSince {
                // Turning toward the cue while it plays, for at most orientSeconds; then the branch it faces.
                if let side, time - turningSince < self.rules.orientSeconds {
                    self.bodyHeadingDegrees = Angle.normalized(self.bodyHeadingDegrees + side * rate * dt)
                } else {
                    self.takeFacing(stopped: true)
                }
            } else if side != nil, time - since >= self.behaviour.pauseSeconds {
                self.phase = .atJunction(since: since, turningSince: time, cued: cued)
            } else if side == nil, cued, time - since >= self.behaviour.pauseSeconds {
                self.takeFacing(stopped: true)  // the cue that stopped it is over: the branch it faces
            } else if side == nil, !cued, time - since >= self.rules.waitSeconds {
                if let straight = self.straightest() {
                    self.take(straight.node, lengthMeters: straight.lengthMeters, stopped: true)
                } else {
                    self.takeFacing(stopped: true)
                }
            }
        }
    }
}
