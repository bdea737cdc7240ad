public import NavCore
/// Turns a provider's plan into a ``Route``: waypoints where the route turns, with spoken instructions.
public enum RouteBuilder {
    /// Builds the route. A waypoint sits at each vertex where the direction changes by more than
    /// `turnThresholdDegrees`, measured between bearings `windowMeters` before and after it (so that the
    /// many tiny segments of a curved footpath do not each become a waypoint); of several within
    /// `windowMeters` of each other, the sharpest stays.
    public static func route(
        from plan: RoutePlan, routeID: UInt32, timeSeconds: Double, provider: String,
        turnThresholdDegrees: Double = 30, windowMeters: Double = 10
    ) -> Route {
        let line = Polyline(plan.points)
        let length = line.lengthMeters
        guard plan.points.count >= 2, length > 0 else {
            let point = plan.points.first ?? Coordinate(latitude: 0, longitude: 0)
            return Route(
                routeID: routeID, timeSeconds: timeSeconds, provider: provider, lengthMeters: 0, points: plan.points,
                waypoints: [
                    Waypoint(
                        coordinate: point, distanceAlongMeters: 0, outgoingBearingDegrees: 0, turnDegrees: 0,
                        kind: .arrival, instruction: "You are at your destination")
                ])
        }
        func bearing(from a: Double, to b: Double) -> Double {
            let pa = line.point(atDistance: a)!.coordinate, pb = line.point(atDistance: b)!.coordinate
            return Angle.normalized(Geodesic.wgs84.inverse(pa, pb).initialAzimuthDegrees)
        }
        var candidates: [(index: Int, along: Double, turn: Double)] = []
        for index in 1..<(plan.points.count - 1) {
            let along = line.cumulativeMeters[index]
            let before = max(0, along - windowMeters), after = min(length, along + windowMeters)
            guard along - before > 0.5, after - along > 0.5 else { continue }
            let turn = Angle.signedDifference(
                from: bearing(from: before, to: along), to: bearing(from: along, to: after))
            if abs(turn) > turnThresholdDegrees { candidates.append((index, along, turn)) }
        }
        // Keep the sharpest of candidates closer than the window to each other.
        var kept: [(index: Int, along: Double, turn: Double)] = []
        for candidate in candidates {
            if let last = kept.last, candidate.along - last.along < windowMeters {
                if abs(candidate.turn) > abs(last.turn) { kept[kept.count - 1] = candidate }
            } else {
                kept.append(candidate)
            }
        }
        func name(ofSegment index: Int) -> String? {
            index >= 0 && index < plan.segmentNames.count ? plan.segmentNames[index] : nil
        }
        let startBearing = bearing(from: 0, to: min(length, windowMeters))
        var waypoints = [
            Waypoint(
                coordinate: plan.points[0], distanceAlongMeters: 0, outgoingBearingDegrees: startBearing,
                turnDegrees: 0, kind: .start,
                instruction: "Head \(Self.compassWord(startBearing))" + (name(ofSegment: 0).map { " on \($0)" } ?? ""))
        ]
        for turn in kept {
            let outgoing = bearing(from: turn.along, to: min(length, turn.along + windowMeters))
            let incomingName = name(ofSegment: turn.index - 1), outgoingName = name(ofSegment: turn.index)
            let onto = outgoingName.flatMap { $0 != incomingName ? " onto \($0)" : nil } ?? ""
            waypoints.append(
                Waypoint(
                    coordinate: plan.points[turn.index], distanceAlongMeters: turn.along,
                    outgoingBearingDegrees: outgoing, turnDegrees: turn.turn, kind: .turn,
                    instruction: Self.turnWords(turn.turn) + onto))
        }
        let end = plan.points[plan.points.count - 1]
        waypoints.append(
            Waypoint(
                coordinate: end, distanceAlongMeters: length,
                outgoingBearingDegrees: bearing(from: max(0, length - windowMeters), to: length),
                turnDegrees: 0, kind: .arrival, instruction: "Arrive at your destination"))
        return Route(
            routeID: routeID, timeSeconds: timeSeconds, provider: provider, lengthMeters: length,
            points: plan.points, waypoints: waypoints)
    }

    /// "Bear right", "Turn left", "Make a sharp right", "Make a U-turn".
    public static func turnWords(_ turn: Double) -> String {
        let side = turn > 0 ? "right" : "left"
        switch TurnWords.Sharpness(turnDegrees: turn) {
        case .straight, .bear: return "Bear \(side)"
        case .turn: return "Turn \(side)"
        case .sharp: return "Make a sharp \(side)"
        case .back: return "Make a U-turn"
        }
    }

    /// "north", "north-east", … for a bearing.
    public static func compassWord(_ bearing: Double) -> String {
        let words = ["north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west"]
        return words[Int((Angle.normalized(bearing) + 22.5) / 45) % 8]
    }
}

/// Follows a walker along a route: progress, waypoint completion, the guidance target, off-route and
/// wrong-way detection, and when to reroute. Time comes from the fixes: no clock reads.
public struct RouteTracker: Sendable {
    /// Where the guidance target is put.
    public enum TargetMode: String, Sendable, CaseIterable {
        /// A look-ahead distance beyond the walker's projection onto the route, capped at a sharp turn.
        case lookAhead
        /// The next waypoint.
        case waypoint
        /// Path following: the route's own direction a chord ahead of where the walker is placed on it, turned
        /// back toward the route only when the walker is farther from it than the estimate's accuracy explains.
        case path
    }

    /// How the walker is guided through junctions.
    public enum GuidanceMode: String, Sendable, CaseIterable {
        /// Turn events (``TurnEvent``) announce each manoeuvre and count the junctions before it; at a manoeuvre's
        /// junction the bearing to steer is the outgoing way's own direction.
        case events
        /// The bearing to the target alone.
        case bearing
    }

    /// Thresholds, all configurable.
    public struct Options: Sendable, Equatable {
        /// The settings a route stage's `options` may give, each with its key, unit, default and range.
        public enum Setting {
            /// The guidance mode, documented beside the numbers.
            public static let guidance = SettingDoc(
                key: "guidance", defaultText: "bearing", rangeText: "bearing, events",
                summary:
                    "bearing: the guidance target alone; events: turn events announce each manoeuvre at a junction of the offline router's walking graph (side, angle, the junctions before it), say now at it and straight on where a branch could mislead, and at the manoeuvre's junction the bearing to steer is the outgoing way's own direction, elsewhere as with bearing (a lab compares the two; without a walking graph there are no events)"
            )
            public static let announceMeters = SettingSpec(
                "announceMeters", unit: "m", default: 10.0, in: 0...50,
                "within this of a sharp turn the target moves onto the next leg as far past the corner as the walker is before it (a cue of half the turn, on its side); 0 aims at the corner until the turn's waypoint completes"
            )
            public static let turnZoneMeters = SettingSpec(
                "turnZoneMeters", unit: "m", default: 0.0, in: 0...30,
                "junction-aware look-ahead: before a sharp turn the target stays straight on (the incoming leg carried past the corner), and only within this of the corner does it swing onto the next leg, a look-ahead along it (never more than 105° off the incoming leg before the corner, so a hairpin is a strong turn, not a turn-around); 0 uses announceMeters instead"
            )
            public static let courseWeightMeters = SettingSpec(
                "courseWeightMeters", unit: "m", default: 0.0, in: 0...100,
                "placing the walker on the route, a part walked against the fix's course counts up to this much farther (a hairpin's two legs); 0 places by distance alone"
            )
            public static let cornerLimitDegrees = SettingSpec(
                "cornerLimitDegrees", unit: "°", default: 0.0, in: 0...180,
                "announcing a sharp turn before its corner, steer at most this far off the route's direction where the walker is (to the turn's side), so that a hairpin's next leg, beside or behind the walker, is a strong turn and not a turn-around; 0 steers at the point itself (path following holds to 90° then)"
            )
            public static let chordMeters = SettingSpec(
                "chordMeters", unit: "m", default: 10.0, in: 1...50,
                "target path: the direction to steer is the route's from where the walker is placed on it to this far along it (at a junction, the direction of the branch to take as a walker there judges it)"
            )
            public static let crossTrackDeadbandMeters = SettingSpec(
                "crossTrackDeadbandMeters", unit: "m", default: 2.0, in: 0...50,
                "target path: farther from the route than the larger of this and the fix's accuracy, the direction turns back toward it (as toward a point lookAheadMeters ahead on a line that far off), at most 75°"
            )
            public static let junctionChord = SettingDoc(
                key: "junctionChord", defaultText: "true", rangeText: "true, false",
                summary:
                    "target path, when the route stage knows the walking graph (an `osm` router among its providers): a walker standing within 2 m along the route of a junction (three or more walkable ways meet there) that the route turns sharply at (sharpTurnDegrees) or forks at (forkCueMeters), or where the chord would mislead (chordClearanceDegrees), is steered into the way the route takes there, as the graph gives it chordMeters along (up to the next junction) and kept clear of its neighbours (branchMarginDegrees): two junctions a few metres apart (a street taken for 2 m between two others) are cued one at a time"
            )
            public static let branchMarginDegrees = SettingSpec(
                "branchMarginDegrees", unit: "°", default: 25.0, in: 0...60,
                "junctionChord, where the walking graph gives the ways leaving a junction: the walker is cued into the route's way turned away from its nearest neighbour on either side, so that the cue's direction stays at least this far from the half-way line between them (where a walker taking the way they face would take the other), as far as the gap on the far side allows; 0 cues the way's own direction"
            )
            public static let chordClearanceDegrees = SettingSpec(
                "chordClearanceDegrees", unit: "°", default: 20.0, in: 0...60,
                "junctionChord: a junction the route passes where its direction chordMeters on from it (past a turn at a junction a few metres on) lies less than this from the half-way line between the route's way and another (a walker who stops there and turns until the cue stops may take either) is, standing there, cued into the route's way (as at a junction the route turns at); 0 never"
            )
            public static let forkCueMeters = SettingSpec(
                "forkCueMeters", unit: "m", default: 6.0, in: 0...50,
                "junctionChord, walking toward a fork (a junction where the route turns less than sharpTurnDegrees but not along the way that carries straight on, within sharpTurnDegrees of the direction of arrival): within this distance of it along the route, the cue is the route's way there (branchMarginDegrees), so that the walker turns there instead of carrying on; 0 never"
            )
            public static let routeBiasSeconds = SettingSpec(
                "routeBiasSeconds", unit: "s", default: 0.0, in: 0...600,
                "the route as a measurement: walking along the route, the fix's distance across it is taken as the GPS error's component across the route's direction, and the error (east and north, a first-order process of this time constant, σ 5 m) is estimated from them; after a turn what was across the route is along it, so the place to steer from is the fix less that error; 0 never"
            )
            public static let waypointRadiusMeters = SettingSpec(
                "waypointRadiusMeters", unit: "m", default: 10.0, in: 1...50,
                "a waypoint completes within this distance")
            public static let arrivalRadiusMeters = SettingSpec(
                "arrivalRadiusMeters", unit: "m", default: 2.0, in: 1...50,
                "the destination is reached within this distance")
            public static let arrivalAccuracyMeters = SettingSpec(
                "arrivalAccuracyMeters", unit: "m", default: 10.0, in: 1...100,
                "…and only by a fix whose accuracy is within this (the radius and two of its σ then reach at most 22 m); a poorer fix that would have reached it is counted (status: arrivals_held_for_accuracy) and guidance goes on"
            )
            public static let lookAheadMeters = SettingSpec(
                "lookAheadMeters", unit: "m", default: 15.0, in: 1...200,
                "how far ahead along the route the look-ahead target is")
            public static let sharpTurnDegrees = SettingSpec(
                "sharpTurnDegrees", unit: "°", default: 60.0, in: 10...180,
                "a waypoint turning at least this much caps the look-ahead target")
            public static let offRouteMeters = SettingSpec(
                "offRouteMeters", unit: "m", default: 15.0, in: 2...500,
                "off route beyond the larger of this and offRouteAccuracyFactor × the fix's accuracy…")
            public static let offRouteAccuracyFactor = SettingSpec(
                "offRouteAccuracyFactor", default: 1.5, in: 0...10, "…with this factor…")
            public static let offRouteFixes = SettingSpec(
                "offRouteFixes", default: 3, in: 1...100, "…for this many fixes in a row")
            public static let rerouteMinimumSeconds = SettingSpec(
                "rerouteMinimumSeconds", unit: "s", default: 10.0, in: 0...3600,
                "no reroute sooner than this after the last…")
            public static let rerouteMinimumMeters = SettingSpec(
                "rerouteMinimumMeters", unit: "m", default: 30.0, in: 0...10_000,
                "…nor nearer than this to where it was asked for")
            public static let stallSeconds = SettingSpec(
                "stallSeconds", unit: "s", default: 30.0, in: 0...600,
                "walking this long without getting stallMeters farther along the route asks for a new route from where the walker is (a way beside the route, a loop of turn-arounds); 0 never"
            )
            public static let stallMeters = SettingSpec(
                "stallMeters", unit: "m", default: 10.0, in: 1...200, "…the progress that counts")
            /// The choice of target, documented beside the numbers.
            public static let target = SettingDoc(
                key: "target", defaultText: "path", rangeText: "path, lookAhead, waypoint",
                summary:
                    "where the guidance target goes: path following (the route's direction over chordMeters ahead of the walker's place on it, turned toward the route when farther from it than the fix's accuracy), lookAheadMeters ahead on the route (capped at the next sharp turn), or the next waypoint"
            )

            /// Every setting, in documentation order.
            public static let all: [SettingDoc] = [
                guidance, TurnAnnouncer.Options.Setting.manoeuvreDegrees.doc,
                TurnAnnouncer.Options.Setting.straightDegrees.doc, TurnAnnouncer.Options.Setting.marginFactor.doc,
                TurnAnnouncer.Options.Setting.minimumMarginMeters.doc,
                TurnAnnouncer.Options.Setting.junctionZoneMeters.doc,
                TurnAnnouncer.Options.Setting.announceJunctions.doc,
                target, lookAheadMeters.doc, sharpTurnDegrees.doc, announceMeters.doc, turnZoneMeters.doc,
                courseWeightMeters.doc, cornerLimitDegrees.doc, chordMeters.doc, crossTrackDeadbandMeters.doc,
                junctionChord, branchMarginDegrees.doc, forkCueMeters.doc, chordClearanceDegrees.doc,
                routeBiasSeconds.doc,
                waypointRadiusMeters.doc,
                arrivalRadiusMeters.doc, arrivalAccuracyMeters.doc,
                offRouteMeters.doc, offRouteAccuracyFactor.doc, offRouteFixes.doc, rerouteMinimumSeconds.doc,
                rerouteMinimumMeters.doc, stallSeconds.doc, stallMeters.doc,
            ]
        }

        /// A waypoint completes within this distance [metres].
        public var waypointRadiusMeters = Setting.waypointRadiusMeters.defaultValue
        /// The destination is reached within this distance [metres]…
        public var arrivalRadiusMeters = Setting.arrivalRadiusMeters.defaultValue
        /// …by a fix whose accuracy is within this [metres].
        public var arrivalAccuracyMeters = Setting.arrivalAccuracyMeters.defaultValue
        /// The bearing alone, or turn events too (docs/GUIDANCE.md, "Turn events at junctions").
        public var guidance = GuidanceMode.bearing
        /// When and what turn events announce.
        public var turns = TurnAnnouncer.Options()
        /// Where the guidance target goes.
        public var targetMode = TargetMode.path
        /// How far ahead along the route the look-ahead target is [metres].
        public var lookAheadMeters = Setting.lookAheadMeters.defaultValue
        /// A waypoint turning at least this much caps the look-ahead target [degrees].
        public var sharpTurnDegrees = Setting.sharpTurnDegrees.defaultValue
        /// Within this of a sharp turn, the target is on the next leg as far past the corner as the walker is before
        /// it [metres]; 0 for the corner until the turn's waypoint completes.
        public var announceMeters = Setting.announceMeters.defaultValue
        /// Junction-aware look-ahead: within this of a sharp turn's corner the target swings onto the next leg, and
        /// before that it stays straight on [metres]; 0 for `announceMeters`' half turn.
        public var turnZoneMeters = Setting.turnZoneMeters.defaultValue
        /// A part of the route walked against the fix's course counts up to this much farther [metres].
        public var courseWeightMeters = Setting.courseWeightMeters.defaultValue
        /// Before a sharp turn's corner, the most the announced target may lie off the route's direction [°]; 0 none.
        public var cornerLimitDegrees = Setting.cornerLimitDegrees.defaultValue
        /// Path following: the route's direction is taken over this much of it ahead of the walker's place [metres].
        public var chordMeters = Setting.chordMeters.defaultValue
        /// Path following: farther from the route than the larger of this and the fix's accuracy, steer back [metres].
        public var crossTrackDeadbandMeters = Setting.crossTrackDeadbandMeters.defaultValue
        /// Path following, when junctions are known: standing near a junction the route turns sharply or forks at, or
        /// where the chord would mislead (`chordClearanceDegrees`), the cue is the route's way there (up to the next
        /// junction); walking toward a fork, too (`forkCueMeters`).
        public var junctionChord = true
        /// …within this distance along the route of the junction [metres] (a walker placed farther from it with a
        /// larger error is steered as without: measured with 2 × the accuracy, no better).
        public var standingJunctionMeters = 2.0
        /// A walker at a junction is cued at least this far from the half-way line to a neighbouring way, where the
        /// gaps allow [degrees].
        public var branchMarginDegrees = Setting.branchMarginDegrees.defaultValue
        /// Walking toward a fork (the route turns less than sharply, but not along the way that carries straight on),
        /// within this distance of it along the route the cue is the route's way there [metres]; 0 never.
        public var forkCueMeters = Setting.forkCueMeters.defaultValue
        /// Standing at a junction where the chord points less than this from the half-way line between the route's
        /// way and another, the walker is cued into the route's way [degrees; 0 never].
        public var chordClearanceDegrees = Setting.chordClearanceDegrees.defaultValue
        /// The GPS error estimated from the distances across the route while walking along it, of this time constant
        /// [seconds]; 0 never.
        public var routeBiasSeconds = Setting.routeBiasSeconds.defaultValue
        /// Off route beyond max(this, factor × fix accuracy) [metres]…
        public var offRouteMinimumMeters = Setting.offRouteMeters.defaultValue
        /// …with this factor…
        public var offRouteAccuracyFactor = Setting.offRouteAccuracyFactor.defaultValue
        /// …for this many fixes in a row.
        public var offRouteFixes = Setting.offRouteFixes.defaultValue
        /// No reroute sooner than this after the last [seconds]…
        public var rerouteMinimumSeconds = Setting.rerouteMinimumSeconds.defaultValue
        /// …nor nearer than this to where it was asked for [metres].
        public var rerouteMinimumMeters = Setting.rerouteMinimumMeters.defaultValue
        /// Walking this long [seconds] without getting `stallMeters` farther along asks for a new route; 0 never.
        public var stallSeconds = Setting.stallSeconds.defaultValue
        /// The progress that counts [metres].
        public var stallMeters = Setting.stallMeters.defaultValue
        /// Walking against the route by more than this counts as the wrong way [degrees]…
        public var wrongWayDegrees = 120.0
        /// …at at least this speed [metres per second]…
        public var wrongWaySpeed = 0.5
        /// …for this many fixes in a row.
        public var wrongWayFixes = 3

        /// The defaults.
        public init() {}

        /// How far from the route a fix of this accuracy may be before it counts as off route [metres].
        public func offRouteThreshold(accuracyMeters: Double) -> Double {
            max(self.offRouteMinimumMeters, self.offRouteAccuracyFactor * accuracyMeters)
        }
    }

    /// What one fix caused.
    public struct Update: Sendable, Equatable {
        /// Progress along the route.
        public var progress: RouteProgress
        /// Where to steer.
        public var target: GuidanceTarget
        /// Waypoints completed by this fix, by index.
        public var completedWaypoints: [Int] = []
        /// Set when a new route should be computed from here.
        public var rerouteFrom: Coordinate?
        /// With `rerouteFrom` when the walker walked without getting along the route (`stallSeconds`): how many times
        /// in a row, with no progress between (the new route did not help either). Guidance the walker cannot follow
        /// from where they are, again and again: a place estimated on the ways may be on the wrong one.
        public var stallsInARow = 0
        /// True on the fix that reached the destination.
        public var arrived = false
        /// Turn events this fix caused (guidance by events).
        public var turnEvents: [TurnEvent] = []
    }

    /// The options in use.
    public let options: Options
    /// The route followed, if any.
    public private(set) var route: Route?
    /// The current state.
    public private(set) var state: RouteState = .onRoute
    /// Reroutes asked for so far [count].
    public private(set) var reroutes = 0
    /// Fixes that would have reached the destination but whose accuracy was worse than `arrivalAccuracyMeters`.
    public private(set) var arrivalsHeldForAccuracy = 0

    private var polyline: Polyline?
    /// The route's junctions (where three or more walkable ways meet) that path following works with, in order: each
    /// one's distance along the route [metres]; where the ways leaving it are known, the direction that cues a walker
    /// there into the route's way unmistakably; and whether it is a fork (the route turns less than sharply, but not
    /// along the way that carries straight on).
    private var junctionsAlong: [(along: Double, aim: Double?, fork: Bool)] = []
    /// The route's manoeuvres and their announcements (guidance by events, with the map's junctions).
    public private(set) var announcer: TurnAnnouncer?
    private var nextWaypoint = 1
    private var lastAlong: Double?
    private var offRouteCount = 0
    private var wrongWayCount = 0
    private var lastReroute: (time: Double, position: Coordinate)?
    /// The farthest along the route the walker has been since the last progress, and the seconds walked since.
    private var progressMark: (along: Double, walkedSeconds: Double, lastTime: Double)?
    private var stallsInARow = 0
    /// The last fix's time: a fix before it starts a new time line.
    private var lastTime: Double?
    /// The GPS error estimated from the route (east, north [metres]), its covariance, and its time.
    private var bias: (east: Double, north: Double, ee: Double, en: Double, nn: Double, time: Double)?

    /// Creates a tracker.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// Follows a new route from its start (a first route, or a reroute). `junctions`: the walkable network's
    /// junctions it passes, when the map is known.
    public mutating func setRoute(_ route: Route, junctions: [RouteJunction] = []) {
        self.route = route
        let line = Polyline(route.points)
        self.polyline = line
        let points = route.points
        let sharp = self.options.sharpTurnDegrees
        self.junctionsAlong = junctions.compactMap { junction in
            let index = junction.index
            guard index > 0, index + 1 < points.count else { return nil }
            let turn = Angle.signedDifference(
                from: FlatProjection.bearing(from: points[index - 1], to: points[index]),
                to: FlatProjection.bearing(from: points[index], to: points[index + 1]))
            let ways = junction.branchBearingsDegrees
            guard let leaving = junction.routeBranch, ways.indices.contains(leaving) else {
                // Only its place known: the junctions the route turns sharply at (elsewhere the chord reaching past
                // a junction is straight on).
                return abs(turn) >= sharp ? (line.cumulativeMeters[index], nil, false) : nil
            }
            // A fork: the way that carries straight on (within sharpTurnDegrees of the direction of arrival) is not
            // the route's, though the route turns less than sharply.
            var fork = false
            if abs(turn) < sharp, let arriving = junction.arrivingBranch, ways.indices.contains(arriving) {
                let ahead = Angle.normalized(ways[arriving] + 180)
                let straightest = ways.indices.filter { $0 != arriving }.min {
                    Angle.separation(ways[$0], ahead) < Angle.separation(ways[$1], ahead)
                }
                fork = straightest != leaving && straightest.map { Angle.separation(ways[$0], ahead) < sharp } == true
            }
            // Where the chord would mislead, a walker standing there is cued into the route's way (walking toward it,
            // the chord as before: cueing the route's way there too did no better).
            let misleading = !fork && abs(turn) < sharp && self.chordMisleads(at: junction, leaving: leaving, on: line)
            guard abs(turn) >= sharp || fork || misleading else { return nil }
            let aim = Self.unmistakable(ways, way: leaving, marginDegrees: self.options.branchMarginDegrees)
            return (line.cumulativeMeters[index], aim, fork)
        }.sorted { $0.along < $1.along }
        self.announcer =
            self.options.guidance == .events && !junctions.isEmpty
            ? TurnAnnouncer(routeID: route.routeID, line: line, junctions: junctions, options: self.options.turns) : nil
        self.nextWaypoint = min(1, route.waypoints.count - 1)
        self.lastAlong = nil
        self.offRouteCount = 0
        self.wrongWayCount = 0
        self.progressMark = nil
        if self.state != .arrived { self.state = .onRoute }
    }

    /// Whether the chord would mislead a walker at `junction`: the route's direction `chordMeters` on from it (past a
    /// turn at a junction a few metres on) lies less than `chordClearanceDegrees` from the half-way line between the
    /// route's way (`leaving`) and another way leaving it (the way of arrival aside).
    private func chordMisleads(at junction: RouteJunction, leaving: Int, on line: Polyline) -> Bool {
        let ways = junction.branchBearingsDegrees
        let along = line.cumulativeMeters[junction.index]
        guard self.options.chordClearanceDegrees > 0,
            let ahead = line.point(atDistance: min(line.lengthMeters, along + self.options.chordMeters))?.coordinate,
            FlatProjection.distance(line.points[junction.index], ahead) > 1
        else { return false }
        let chord = FlatProjection.bearing(from: line.points[junction.index], to: ahead)
        let own = Angle.separation(ways[leaving], chord)
        let other = ways.indices.filter { $0 != leaving && $0 != junction.arrivingBranch }
            .map { Angle.separation(ways[$0], chord) }.min()
        return other.map { ($0 - own) / 2 < self.options.chordClearanceDegrees } ?? false
    }

    /// The fixes' time line started again at `timeSeconds`, earlier than the last fix's (a replay or simulation
    /// restarted, a receiver's clock corrected: ``InputTimeGuard`` re-based the stream). What is timed against the old
    /// time line is timed from here: the last reroute (else an off-route walker would get no new route until the new
    /// time line passed the old one, however far they went), the walking that counts toward a stall, and the route's
    /// estimate of the GPS error (else it would not decay until then).
    private mutating func timeLineRestarted(at timeSeconds: Double, after last: Double) {
        // The time since each, as far as the old time line went, carries over to the new one.
        if let reroute = self.lastReroute { self.lastReroute!.time = timeSeconds - max(0, last - reroute.time) }
        self.progressMark?.lastTime = timeSeconds
        if let bias = self.bias { self.bias!.time = timeSeconds - max(0, last - bias.time) }
    }

    /// The reroute asked for could not be made: stay on the last good route, off it.
    public mutating func rerouteFailed() {
        if self.state == .rerouting { self.state = .offRoute }
    }

    /// The position as measured, beside a place estimated otherwise (on the ways), and how far it may be from the
    /// walker (one σ per axis, as the estimate has learnt it: a street canyon's error outlasts any smoothing).
    public struct ArrivalWitness: Sendable, Equatable {
        public var position: Coordinate
        public var errorSigmaMeters: Double

        public init(position: Coordinate, errorSigmaMeters: Double) {
            self.position = position
            self.errorSigmaMeters = errorSigmaMeters
        }
    }

    /// Takes one smoothed fix; nil until there is a route. `offRouteMeters`, when given, is the distance from the route
    /// beyond which this fix is off it, instead of the options' (a walker matched to a way that is not the route's is
    /// off it however near that way runs). `arrivalWitness`, when the fix's place is an estimate of another kind (on
    /// the ways), is the position as measured: the destination is reached only when it too is within the arrival
    /// radius and two σ of its error (the larger of the fix's accuracy and the witness's own σ) of it. A walker placed
    /// on a way near the destination, who is not there, is not told they have arrived; one standing there is, though
    /// the error of the fix, correlated over tens of seconds, holds it a few metres off.
    public mutating func update(
        with fix: SmoothedFix, offRouteMeters: Double? = nil, arrivalWitness: ArrivalWitness? = nil
    ) -> Update? {
        guard let route = self.route, let line = self.polyline, !route.waypoints.isEmpty else { return nil }
        let walker = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        let time = fix.timeSeconds
        if time.isFinite {
            if let last = self.lastTime, time < last { self.timeLineRestarted(at: time, after: last) }
            self.lastTime = time
        }

        // Project within a window around the last position, unless that puts the walker far off.
        // Moving, the walker is placed on a part of the route they walk along rather than one they cross.
        let course = fix.courseDegrees.flatMap { course in
            fix.speedMetersPerSecond >= self.options.wrongWaySpeed && self.options.courseWeightMeters > 0
                ? (degrees: course, weightMeters: self.options.courseWeightMeters) : nil
        }
        var projection = self.lastAlong.flatMap {
            line.project(walker, alongRange: ($0 - 30)...($0 + 150), course: course)
        }
        let threshold =
            offRouteMeters ?? self.options.offRouteThreshold(accuracyMeters: fix.horizontalAccuracyMeters)
        if projection == nil || projection!.distanceMeters > threshold {
            if let global = line.project(walker, alongRange: nil, course: course),
                global.distanceMeters < (projection?.distanceMeters ?? .infinity)
            {
                projection = global
            }
        }
        guard let here = projection else { return nil }
        self.lastAlong = here.distanceAlongMeters
        var steering = here
        if self.options.routeBiasSeconds > 0, let place = self.steeringPlace(fix, here, line, threshold: threshold) {
            // Along the route from the fix less the error; across it, the fix's own distance (a walker off the route
            // is steered back to it, whatever the error is thought to be).
            steering.distanceAlongMeters = place.distanceAlongMeters
        }
        var update = Update(
            progress: self.progress(fix, here, route), target: self.target(fix, steering, route, line))

        guard self.state != .arrived else {
            update.progress.state = .arrived
            update.target.kind = .arrived
            return update
        }

        // Waypoints: within the radius, or passed along the route while on it.
        while self.nextWaypoint < route.waypoints.count {
            let waypoint = route.waypoints[self.nextWaypoint]
            let isArrival = self.nextWaypoint == route.waypoints.count - 1
            let distance = FlatProjection.distance(walker, waypoint.coordinate)
            let radius = isArrival ? self.options.arrivalRadiusMeters : self.options.waypointRadiusMeters
            let onRoute = here.distanceMeters <= threshold
            // A place on the ways (witnessed) errs along the way, either side of the walker alike: the destination is
            // reached when that place reaches the route's end, not a radius before it, so that a walker is told no
            // sooner short of it than late past it (a radius before, a place ahead of the walker by a false arrival's
            // bound less the radius already tells them short of it). Past the end, it may be on another way than the
            // route's (the walker stepped on past a destination at a junction).
            let placed = isArrival && arrivalWitness != nil
            // Past the destination along the route counts only as near it as the fix's accuracy allows: a walker
            // who went on past the route's end (on along the way, or off round a corner it ends at) is placed at the
            // end however far they went, and is turned back to it instead.
            let passed =
                isArrival
                ? (onRoute || placed) && here.distanceAlongMeters >= route.lengthMeters - 0.5
                    && distance <= radius + 2 * fix.horizontalAccuracyMeters
                : onRoute && here.distanceAlongMeters > waypoint.distanceAlongMeters + 2
            let witnessed =
                !isArrival
                || arrivalWitness.map {
                    FlatProjection.distance($0.position, waypoint.coordinate)
                        <= radius + 2 * max(fix.horizontalAccuracyMeters, $0.errorSigmaMeters)
                } ?? true
            let within = distance <= radius && !placed
            guard (within || passed) && witnessed else { break }
            // A fix too poor to tell the destination from well away from it: the radius and its two σ are metres,
            // the walker may be tens of metres off. Guidance goes on until a fix good enough says so.
            if isArrival && !(fix.horizontalAccuracyMeters <= self.options.arrivalAccuracyMeters) {
                self.arrivalsHeldForAccuracy += 1
                break
            }
            update.completedWaypoints.append(self.nextWaypoint)
            self.nextWaypoint += 1
            if isArrival {
                self.state = .arrived
                update.arrived = true
                update.progress.state = .arrived
                update.target.kind = .arrived
                return update
            }
        }
        update.progress.nextWaypointIndex = UInt32(min(self.nextWaypoint, route.waypoints.count - 1))
        update.progress = self.progress(fix, here, route)
        update.target = self.target(fix, steering, route, line)
        if self.announcer != nil, here.distanceMeters <= threshold {
            update.turnEvents = self.announcer!.update(
                along: steering.distanceAlongMeters, accuracyMeters: fix.horizontalAccuracyMeters, time: time)
            if self.state == .onRoute {
                update.target.bearingDegrees = self.eventsBearing(
                    fix, steering, line, otherwise: update.target.bearingDegrees)
            }
        }

        // Off route, for several fixes in a row: ask for a reroute, unless one was asked for too recently or too near.
        self.offRouteCount = here.distanceMeters > threshold ? self.offRouteCount + 1 : 0
        if self.offRouteCount >= self.options.offRouteFixes {
            let allowed =
                self.lastReroute.map {
                    time - $0.time >= self.options.rerouteMinimumSeconds
                        && FlatProjection.distance($0.position, walker) >= self.options.rerouteMinimumMeters
                } ?? true
            if allowed && self.state != .rerouting {
                self.lastReroute = (time, walker)
                self.reroutes += 1
                self.state = .rerouting
                update.rerouteFrom = walker
            } else if self.state != .rerouting {
                self.state = .offRoute
            }
        } else if self.offRouteCount == 0 && (self.state == .offRoute) {
            self.state = .onRoute
        }

        // Walking without getting along the route (a way beside it, turn-arounds back and forth): a new route from
        // where the walker is, which starts along the way they are on.
        if update.rerouteFrom == nil, self.options.stallSeconds > 0 {
            var mark = self.progressMark ?? (here.distanceAlongMeters, 0, time)
            if fix.speedMetersPerSecond >= self.options.wrongWaySpeed {
                mark.walkedSeconds += max(0, min(time - mark.lastTime, 5))
            }
            mark.lastTime = time
            if here.distanceAlongMeters >= mark.along + self.options.stallMeters {
                mark = (here.distanceAlongMeters, 0, time)
                self.stallsInARow = 0
            } else if mark.walkedSeconds >= self.options.stallSeconds, self.state != .rerouting,
                self.lastReroute.map({ time - $0.time >= self.options.rerouteMinimumSeconds }) ?? true
            {
                self.lastReroute = (time, walker)
                self.reroutes += 1
                self.state = .rerouting
                update.rerouteFrom = walker
                self.stallsInARow += 1
                update.stallsInARow = self.stallsInARow
                mark = (here.distanceAlongMeters, 0, time)
            }
            self.progressMark = mark
        }

        // Walking against the route.
        if self.state != .rerouting, self.offRouteCount == 0, let course = fix.courseDegrees,
            fix.speedMetersPerSecond >= self.options.wrongWaySpeed,
            let segmentBearing = line.point(atDistance: here.distanceAlongMeters)?.bearingDegrees
        {
            self.wrongWayCount =
                Angle.separation(course, segmentBearing) > self.options.wrongWayDegrees ? self.wrongWayCount + 1 : 0
            if self.wrongWayCount >= self.options.wrongWayFixes {
                self.state = .wrongWay
            } else if self.state == .wrongWay && self.wrongWayCount == 0 {
                self.state = .onRoute
            }
        }
        update.progress.state = self.state
        return update
    }

    /// Guidance by events: at (or near) a manoeuvre's or a straight on's junction, the bearing to steer is the
    /// outgoing way's own direction, which position error does not move (walking toward it, held within 105° of the
    /// route's direction coming in: a strong turn, never a turn-around before the corner, also where the estimate is
    /// past the corner and the walker's course is not); elsewhere path following's bearing
    /// (`bearing`), unchanged. (Measured and not kept: between junctions, the route's direction nearest the walker's
    /// course where the estimate may place them; open-space walkers then drifted off the route.)
    private func eventsBearing(
        _ fix: SmoothedFix, _ here: PolylineProjection, _ line: Polyline, otherwise bearing: Double
    ) -> Double {
        let along = here.distanceAlongMeters
        guard let junction = self.announcer?.junction(near: along, accuracyMeters: fix.horizontalAccuracyMeters) else {
            return bearing
        }
        // The route's direction coming into the junction (where the walker is, before it).
        let direction =
            line.point(atDistance: min(along, junction.along - 1))?.bearingDegrees ?? junction.outgoingBearingDegrees
        // Still coming: before the junction, or past it by the estimate, still within the junction's zone of its
        // place (not a walker gone on straight past it), while the walker's own course (which the position's error
        // does not move) still runs along the way in.
        let zone = self.options.turns.zoneMeters(accuracyMeters: fix.horizontalAccuracyMeters)
        let coming =
            along < junction.along
            || (fix.courseDegrees.map { Angle.separation($0, direction) <= 45 } ?? false)
                && FlatProjection.distance(
                    Coordinate(latitude: fix.latitude, longitude: fix.longitude), junction.coordinate) <= zone
        guard fix.speedMetersPerSecond >= self.options.wrongWaySpeed, coming else {
            return junction.outgoingBearingDegrees
        }
        return Self.held(
            junction.outgoingBearingDegrees, within: 105, of: direction,
            toward: Angle.signedDifference(from: direction, to: junction.outgoingBearingDegrees))
    }

    /// The route as a measurement: the GPS error (a first-order process, σ 5 m, time constant `routeBiasSeconds`)
    /// updated by the fix's distance across the route while walking along it (course within 30° of the route's), and
    /// the fix less that error placed on the route.
    private mutating func steeringPlace(
        _ fix: SmoothedFix, _ here: PolylineProjection, _ line: Polyline, threshold: Double
    ) -> PolylineProjection? {
        let sigma2 = 25.0
        var bias = self.bias ?? (0, 0, sigma2, 0, sigma2, fix.timeSeconds)
        let dt = max(0, fix.timeSeconds - bias.time)
        let a = _exp(-dt / self.options.routeBiasSeconds), q = (1 - a * a) * sigma2
        bias = (
            a * bias.east, a * bias.north, a * a * bias.ee + q, a * a * bias.en, a * a * bias.nn + q, fix.timeSeconds
        )
        if let course = fix.courseDegrees, fix.speedMetersPerSecond >= self.options.wrongWaySpeed,
            here.distanceMeters < threshold, let segment = line.point(atDistance: here.distanceAlongMeters),
            Angle.separation(course, segment.bearingDegrees) <= 30
        {
            // Right of the route is positive across it: the normal to the right of its direction.
            let radians = segment.bearingDegrees * .pi / 180
            let ne = _cos(radians), nn = -_sin(radians)
            let r = max(2, fix.horizontalAccuracyMeters)
            let pne = bias.ee * ne + bias.en * nn, pnn = bias.en * ne + bias.nn * nn
            let innovation = here.crossTrackMeters - (ne * bias.east + nn * bias.north)
            let s = ne * pne + nn * pnn + r * r
            let ke = pne / s, kn = pnn / s
            bias.east += ke * innovation
            bias.north += kn * innovation
            bias.ee -= ke * pne
            bias.en -= ke * pnn
            bias.nn -= kn * pnn
        }
        self.bias = bias
        let walker = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        let plane = FlatProjection(origin: walker)
        let corrected = plane.unproject(ENU(east: -bias.east, north: -bias.north))
        let along = here.distanceAlongMeters
        return line.project(corrected, alongRange: (along - 30)...(along + 30))
    }

    private func progress(_ fix: SmoothedFix, _ here: PolylineProjection, _ route: Route) -> RouteProgress {
        let walker = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        let index = min(self.nextWaypoint, route.waypoints.count - 1)
        let next = route.waypoints[index].coordinate
        let remaining = max(0, route.lengthMeters - here.distanceAlongMeters)
        return RouteProgress(
            timeSeconds: fix.timeSeconds, routeID: route.routeID, distanceAlongMeters: here.distanceAlongMeters,
            distanceRemainingMeters: remaining, crossTrackMeters: here.crossTrackMeters,
            nextWaypointIndex: UInt32(index), bearingToNextDegrees: FlatProjection.bearing(from: walker, to: next),
            distanceToNextMeters: FlatProjection.distance(walker, next),
            etaSeconds: fix.speedMetersPerSecond > 0.3
                ? (remaining + here.distanceMeters) / fix.speedMetersPerSecond : nil,
            state: self.state)
    }

    private func target(
        _ fix: SmoothedFix, _ here: PolylineProjection, _ route: Route, _ line: Polyline
    ) -> GuidanceTarget {
        let walker = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        let index = min(self.nextWaypoint, route.waypoints.count - 1)
        var point: Coordinate
        var bearing: Double? = nil
        let kind: TargetKind
        switch self.options.targetMode {
        case .waypoint:
            point = route.waypoints[index].coordinate
            kind = .waypoint
        case .path:
            (point, bearing) = self.pathTarget(fix, here, route, line)
            kind = .lookAhead
        case .lookAhead where self.options.turnZoneMeters > 0:
            (point, bearing) = self.turnZoneTarget(walker, here.distanceAlongMeters, route, line)
            kind = .lookAhead
        case .lookAhead where self.options.announceMeters > 0:
            // The next sharp turn (or the arrival) ahead of where the walker is placed on the route.
            let here = here.distanceAlongMeters
            var aheadOfCorner: Waypoint?
            var along = here + self.options.lookAheadMeters
            if let corner = route.waypoints.first(where: {
                $0.distanceAlongMeters > here
                    && ($0.kind == .arrival || $0.kind == .turn && abs($0.turnDegrees) >= self.options.sharpTurnDegrees)
            }) {
                let before = corner.distanceAlongMeters - here
                if corner.kind == .arrival || before > self.options.announceMeters {
                    along = min(along, corner.distanceAlongMeters)  // its corner, straight on
                } else {
                    // As far past the corner as the walker is before it (at least 2 m): the cue says half the
                    // turn, on its side, and never turns the walker back before the corner (a hairpin's next leg
                    // lies behind them).
                    along = corner.distanceAlongMeters + max(before, 2)
                    aheadOfCorner = corner
                }
            }
            point = line.point(atDistance: along)?.coordinate ?? route.waypoints[index].coordinate
            if let corner = aheadOfCorner, self.options.cornerLimitDegrees > 0,
                let along = line.point(atDistance: here)?.bearingDegrees
            {
                // Close before a hairpin the point past the corner lies beside or behind the walker: steer at most
                // this far off the route's direction where the walker is, to the turn's side — a strong turn,
                // never a turn-around, before the corner is passed.
                bearing = Self.held(
                    FlatProjection.bearing(from: walker, to: point), within: self.options.cornerLimitDegrees,
                    of: along, toward: corner.turnDegrees)
            }
            kind = .lookAhead
        case .lookAhead:
            var along = here.distanceAlongMeters + self.options.lookAheadMeters
            // Not past the next sharp turn: aim at its corner until it is reached.
            if let sharp = route.waypoints[index...].first(where: {
                $0.kind == .arrival || abs($0.turnDegrees) >= self.options.sharpTurnDegrees
            }) {
                along = min(along, sharp.distanceAlongMeters)
            }
            point = line.point(atDistance: along)?.coordinate ?? route.waypoints[index].coordinate
            kind = .lookAhead
        }
        return GuidanceTarget(
            timeSeconds: fix.timeSeconds, routeID: route.routeID, coordinate: point,
            bearingDegrees: bearing ?? FlatProjection.bearing(from: walker, to: point),
            distanceMeters: FlatProjection.distance(walker, point), kind: kind)
    }

    /// `bearing`, or, when it lies more than `limit` off `reference`, the direction `limit` off `reference` on the
    /// side of `side` (≥ 0 right, < 0 left): before a sharp turn's corner, a strong turn to its side, never a
    /// turn-around.
    private static func held(
        _ bearing: Double, within limit: Double, of reference: Double, toward side: Double
    )
        -> Double
    {
        guard abs(Angle.signedDifference(from: reference, to: bearing)) > limit else { return bearing }
        return Angle.normalized(reference + (side >= 0 ? limit : -limit))
    }

    /// Path following: the point a look-ahead along the route (for display), and the bearing to steer — the route's
    /// direction from the walker's place on it to `chordMeters` farther along (measured on the route, so that the
    /// estimate's error across the way does not swing it; at a junction it is the direction of the branch the route
    /// takes there), turned back toward the route as toward a point `lookAheadMeters` ahead on a line as far off as
    /// the walker is beyond the estimate's accuracy. Moving toward a sharp turn, the chord's direction is held within
    /// `cornerLimitDegrees` (90° when that is 0) of the route's where the walker is, to the turn's side, so that the
    /// last metres before a hairpin cue a strong turn, not a turn-around; a walker standing still (at a junction,
    /// choosing) is given the branch's own direction — with `junctionChord`, that of the route's way at the junction
    /// they stand near that it turns or forks at (or where the chord would mislead), as the walking graph gives it,
    /// kept clear of its neighbours by `branchMarginDegrees` (else the route up to the next junction); and a walker
    /// within `forkCueMeters` before a fork is given that way's direction, held like a corner.
    private func pathTarget(
        _ fix: SmoothedFix, _ here: PolylineProjection, _ route: Route, _ line: Polyline
    ) -> (Coordinate, Double) {
        let walker = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        let along = here.distanceAlongMeters
        let display =
            line.point(atDistance: min(route.lengthMeters, along + self.options.lookAheadMeters))?
            .coordinate ?? walker
        let moving = fix.speedMetersPerSecond >= self.options.wrongWaySpeed
        var from = along
        var end = min(route.lengthMeters, along + self.options.chordMeters)
        if self.options.junctionChord, !moving {
            // A walker stops to choose at a junction: standing near one the route turns sharply or forks at (or where
            // the chord would mislead), they are taken to stand at it, and cued into the route's way there (the chord
            // is that way, no farther than the next junction: two junctions a few metres apart are cued one at a time).
            if let junction = self.junctionsAlong.min(by: { abs($0.along - along) < abs($1.along - along) }),
                abs(junction.along - along) <= self.options.standingJunctionMeters
            {
                if let aim = junction.aim { return (display, self.backToward(aim, here, fix)) }
                from = junction.along
                end = min(route.lengthMeters, junction.along + self.options.chordMeters)
                if let next = self.junctionsAlong.first(where: { $0.along > junction.along + 0.5 }) {
                    end = min(end, next.along)
                }
            }
        } else if self.options.junctionChord, self.options.forkCueMeters > 0,
            let fork = self.junctionsAlong.first(where: {
                $0.fork && $0.along > along - 0.5 && $0.along - along <= self.options.forkCueMeters
            }), let aim = fork.aim
        {
            // Walking toward a fork: cued into the route's way before it, or the walker carries straight on; held
            // within cornerLimitDegrees (90° when 0) of the route's direction where the walker is, never a
            // turn-around (the way may bend back on itself before the fork).
            let direction = line.point(atDistance: along)?.bearingDegrees ?? aim
            return (display, self.backToward(self.heldToCornerLimit(aim, of: direction), here, fix))
        }
        guard end - from > 0.5, let start = line.point(atDistance: from), let ahead = line.point(atDistance: end)
        else {
            // At the route's end: toward it.
            return (display, FlatProjection.bearing(from: walker, to: display))
        }
        var bearing = FlatProjection.bearing(from: start.coordinate, to: ahead.coordinate)
        if moving { bearing = self.heldToCornerLimit(bearing, of: start.bearingDegrees) }
        return (display, self.backToward(bearing, here, fix))
    }

    /// Path following, walking: `bearing` held within `cornerLimitDegrees` (90° when that is 0) of the route's
    /// direction where the walker is, on its own side: a strong turn, never a turn-around.
    private func heldToCornerLimit(_ bearing: Double, of direction: Double) -> Double {
        let limit = self.options.cornerLimitDegrees > 0 ? self.options.cornerLimitDegrees : 90
        return Self.held(
            bearing, within: limit, of: direction, toward: Angle.signedDifference(from: direction, to: bearing))
    }

    /// `bearing`, turned back toward the route as toward a point `lookAheadMeters` ahead on a line as far off as the
    /// walker is beyond the estimate's accuracy (and `crossTrackDeadbandMeters`).
    private func backToward(_ bearing: Double, _ here: PolylineProjection, _ fix: SmoothedFix) -> Double {
        let deadband = max(self.options.crossTrackDeadbandMeters, fix.horizontalAccuracyMeters)
        let excess = abs(here.crossTrackMeters) - deadband
        guard excess > 0 else { return bearing }
        // Right of the route: steer left, and the other way.
        let correction = min(75, _atan2(excess, self.options.lookAheadMeters) * 180 / .pi)
        return Angle.normalized(bearing + (here.crossTrackMeters > 0 ? -correction : correction))
    }

    /// The direction that sends a walker at a junction into the way `way` of those leaving it (`bearings`, each judged
    /// some metres along it) unmistakably: that way's own direction, turned away from the nearest way on either side
    /// so as to keep at least `marginDegrees` from the half-way line to it (where a walker taking the way they face
    /// would take the other), as far as the gap on the far side allows; with both gaps narrow, the middle of the
    /// way's sector.
    public static func unmistakable(_ bearings: [Double], way: Int, marginDegrees: Double) -> Double {
        let own = bearings[way]
        var clockwise = 360.0, anticlockwise = 360.0
        for (index, other) in bearings.enumerated() where index != way {
            let gap = Angle.normalized(other - own)
            guard gap > 0.5, gap < 359.5 else { continue }  // the same way twice
            clockwise = min(clockwise, gap)
            anticlockwise = min(anticlockwise, 360 - gap)
        }
        guard clockwise < 360, marginDegrees > 0 else { return own }
        let middle = (clockwise - anticlockwise) / 4  // the turn that leaves as much on either side
        var shift = 0.0
        if anticlockwise / 2 < marginDegrees {
            shift = min(marginDegrees - anticlockwise / 2, middle)
        } else if clockwise / 2 < marginDegrees {
            shift = max(clockwise / 2 - marginDegrees, middle)
        }
        return Angle.normalized(own + shift)
    }

    /// The junction-aware look-ahead target and the bearing to steer: straight on toward a sharp turn (past its
    /// corner along the incoming leg, so that no side is cued at an earlier junction), onto the next leg within
    /// `turnZoneMeters` of the corner (so that a walker who stops at the junction faces the branch to take), and
    /// the plain look-ahead past it. A corner a few metres ahead would make the bearing swing with every metre of
    /// position error; a point a look-ahead away does not.
    private func turnZoneTarget(
        _ walker: Coordinate, _ here: Double, _ route: Route, _ line: Polyline
    ) -> (Coordinate, Double) {
        let look = self.options.lookAheadMeters
        func isSharp(_ waypoint: Waypoint) -> Bool {
            waypoint.kind == .arrival
                || waypoint.kind == .turn && abs(waypoint.turnDegrees) >= self.options.sharpTurnDegrees
        }
        let plain = { (along: Double) -> (Coordinate, Double) in
            let point = line.point(atDistance: along)?.coordinate ?? walker
            return (point, FlatProjection.bearing(from: walker, to: point))
        }
        guard let corner = route.waypoints.first(where: { $0.distanceAlongMeters > here && isSharp($0) }) else {
            return plain(here + look)
        }
        if corner.kind == .arrival { return plain(min(here + look, corner.distanceAlongMeters)) }
        let before = corner.distanceAlongMeters - here
        let incoming =
            line.point(atDistance: max(0, corner.distanceAlongMeters - 0.5))?.bearingDegrees
            ?? Angle.normalized(corner.outgoingBearingDegrees - corner.turnDegrees)
        if before > self.options.turnZoneMeters {
            guard here + look > corner.distanceAlongMeters else { return plain(here + look) }
            // Straight on: the incoming leg carried past the corner.
            let point = Geodesic.wgs84.direct(
                from: corner.coordinate, azimuthDegrees: incoming,
                distanceMeters: here + look - corner.distanceAlongMeters
            ).coordinate
            return (point, FlatProjection.bearing(from: walker, to: point))
        }
        // In the turn zone: a look-ahead along the next leg, not past the sharp turn after it.
        let following = route.waypoints.first { $0.distanceAlongMeters > corner.distanceAlongMeters && isSharp($0) }
        let along = min(corner.distanceAlongMeters + look, following?.distanceAlongMeters ?? .infinity)
        let point = line.point(atDistance: along)?.coordinate ?? corner.coordinate
        var bearing = FlatProjection.bearing(from: walker, to: point)
        // Before the corner a hairpin's next leg lies behind: a strong cue to its side, never a turn-around there.
        bearing = Self.held(bearing, within: 105, of: incoming, toward: corner.turnDegrees)
        return (point, bearing)
    }
}
