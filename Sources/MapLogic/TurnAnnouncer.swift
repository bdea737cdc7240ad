public import NavCore
/// The route's manoeuvres at the junctions of the walking network, and when to announce them (``TurnEvent``): pure,
/// time and place come from the caller.
///
/// A manoeuvre is a junction where the route turns by `turnDegrees` or more, or where the way that carries straight
/// on (within `straightDegrees` of the direction of arrival) is not the route's. A junction passed straight through
/// where another way also lies within `straightDegrees` of straight on could mislead: it gets a *straight on*.
///
/// Announcements and straight-ons count junctions, so they are made only where the count is sure: the walker's place
/// on the route, give or take the margin (`marginFactor` × the estimate's accuracy, at least `minimumMarginMeters`),
/// lies between two junctions, so the one behind is surely behind and the next surely ahead. Each is made again
/// whenever its count changes (after each junction passed), so a walker who missed counting one is set right. *Now*
/// is said once the walker may be at the manoeuvre's junction (within the margin of it).
public struct TurnAnnouncer: Sendable {
    /// Thresholds, all configurable.
    public struct Options: Sendable, Equatable {
        /// The settings a route stage's `options` may give for turn events.
        public enum Setting {
            public static let manoeuvreDegrees = SettingSpec(
                "manoeuvreDegrees", unit: "°", default: 30.0, in: 5...90,
                "guidance events: a junction where the route turns by this much or more is a manoeuvre (as is one where the way that carries straight on is not the route's)"
            )
            public static let straightDegrees = SettingSpec(
                "straightDegrees", unit: "°", default: 60.0, in: 5...90,
                "guidance events: a way within this of the direction of arrival carries straight on; a junction passed through with two such ways gets a straight on"
            )
            public static let marginFactor = SettingSpec(
                "marginFactor", default: 2.0, in: 0...10,
                "guidance events: the walker's place along the route is taken as sure to within this many times the estimate's accuracy…"
            )
            public static let minimumMarginMeters = SettingSpec(
                "minimumMarginMeters", unit: "m", default: 8.0, in: 0...50,
                "…and never closer than this, for counting junctions (an announcement, a straight on, now)")
            public static let junctionZoneMeters = SettingSpec(
                "junctionZoneMeters", unit: "m", default: 4.0, in: 0...50,
                "guidance events: within this (or marginFactor × the estimate's accuracy) of a manoeuvre's junction along the route, the bearing to steer is the outgoing way's own direction"
            )
            public static let announceJunctions = SettingSpec(
                "announceJunctions", default: 3, in: 0...20,
                "guidance events: a manoeuvre is announced once at most this many junctions lie before it")
        }

        /// A manoeuvre turns at least this much [degrees].
        public var manoeuvreDegrees = Setting.manoeuvreDegrees.defaultValue
        /// A way within this of the direction of arrival carries straight on [degrees].
        public var straightDegrees = Setting.straightDegrees.defaultValue
        /// The margin on the walker's place: this many times the estimate's accuracy…
        public var marginFactor = Setting.marginFactor.defaultValue
        /// …and at least this [metres].
        public var minimumMarginMeters = Setting.minimumMarginMeters.defaultValue
        /// Within this (or the factor × the accuracy) of a manoeuvre's junction, its outgoing way's direction [metres].
        public var junctionZoneMeters = Setting.junctionZoneMeters.defaultValue
        /// Announce once at most this many junctions lie before the manoeuvre [count].
        public var announceJunctions = Setting.announceJunctions.defaultValue

        /// The defaults.
        public init() {}

        /// The margin on the walker's place for counting junctions, for an estimate of this accuracy [metres].
        public func marginMeters(accuracyMeters: Double) -> Double {
            self.margin(atLeast: self.minimumMarginMeters, accuracyMeters: accuracyMeters)
        }

        /// The zone around a junction where the outgoing way's direction is steered, for this accuracy [metres].
        public func zoneMeters(accuracyMeters: Double) -> Double {
            self.margin(atLeast: self.junctionZoneMeters, accuracyMeters: accuracyMeters)
        }

        private func margin(atLeast minimum: Double, accuracyMeters: Double) -> Double {
            let accuracy = accuracyMeters.isFinite ? max(0, accuracyMeters) : 50
            return max(minimum, self.marginFactor * accuracy)
        }
    }

    /// A junction of the route.
    public struct Junction: Sendable, Equatable {
        /// Its distance from the route's start along it [metres].
        public var along: Double
        /// Its place.
        public var coordinate: Coordinate
        /// The route's change of direction there [degrees, −180...180, positive = right].
        public var turnDegrees: Double
        /// The direction of the way the route takes there, as the map gives it [degrees, true north].
        public var outgoingBearingDegrees: Double
        /// The street the route takes there ("" when unnamed).
        public var street: String
        /// Its manoeuvre number, when it is one.
        public var manoeuvre: Int?
        /// A junction passed straight through where another way could be taken for the route's.
        public var misleading: Bool
    }

    /// The options in use.
    public let options: Options
    /// The route this is for.
    public let routeID: UInt32
    /// The route's junctions in order along it.
    public let junctions: [Junction]
    /// The manoeuvres' indices into ``junctions``, in order.
    public let manoeuvres: [Int]
    /// The count each manoeuvre (and straight-on junction) was last announced with, by junction index.
    private var announced: [Int: Int] = [:]
    /// Manoeuvres whose *now* was said, by junction index.
    private var nowSaid: Set<Int> = []

    /// The announcer for a route (its id and line) and the network's junctions along it (``WalkingGraph/routeJunctions``);
    /// none, when the map is not known: then there are no events.
    public init(routeID: UInt32, line: Polyline, junctions: [RouteJunction], options: Options = Options()) {
        self.options = options
        self.routeID = routeID
        let points = line.points
        var list: [Junction] = []
        var manoeuvres: [Int] = []
        for junction in junctions.sorted(by: { $0.index < $1.index }) {
            let index = junction.index
            guard index > 0, index + 1 < points.count else { continue }
            let along = line.cumulativeMeters[index]
            // The route's own directions at the point, a few metres either side, when the ways are not known.
            let arrival = FlatProjection.bearing(from: points[index - 1], to: points[index])
            let onward = FlatProjection.bearing(from: points[index], to: points[index + 1])
            let ways = junction.branchBearingsDegrees
            var turn = Angle.signedDifference(from: arrival, to: onward)
            var outgoing = onward
            var manoeuvre = abs(turn) >= options.manoeuvreDegrees
            var misleading = false
            if let leaving = junction.routeBranch, ways.indices.contains(leaving) {
                outgoing = ways[leaving]
                let straight =
                    junction.arrivingBranch.flatMap {
                        ways.indices.contains($0) ? Angle.normalized(ways[$0] + 180) : nil
                    }
                    ?? arrival
                turn = Angle.signedDifference(from: straight, to: outgoing)
                let others = ways.indices.filter { $0 != leaving && $0 != junction.arrivingBranch }
                let straightOthers = others.filter { Angle.separation(ways[$0], straight) < options.straightDegrees }
                let straightest = ways.indices.filter { $0 != junction.arrivingBranch }.min {
                    Angle.separation(ways[$0], straight) < Angle.separation(ways[$1], straight)
                }
                manoeuvre =
                    abs(turn) >= options.manoeuvreDegrees
                    || (straightest != leaving && !straightOthers.isEmpty)
                misleading = !manoeuvre && !straightOthers.isEmpty
            }
            if manoeuvre { manoeuvres.append(list.count) }
            list.append(
                Junction(
                    along: along, coordinate: points[index], turnDegrees: turn, outgoingBearingDegrees: outgoing,
                    street: junction.routeStreet ?? "", manoeuvre: manoeuvre ? manoeuvres.count - 1 : nil,
                    misleading: misleading))
        }
        // Two points of the route on one junction (a route that passes a junction twice is two): one junction each.
        self.junctions = list
        self.manoeuvres = manoeuvres
    }

    /// The events for a walker placed `along` the route with an estimate of `accuracyMeters`, at `time` (a fix's).
    public mutating func update(along: Double, accuracyMeters: Double, time: Double) -> [TurnEvent] {
        guard along.isFinite, !self.junctions.isEmpty else { return [] }
        let margin = self.options.marginMeters(accuracyMeters: accuracyMeters)
        var events: [TurnEvent] = []
        // Now: the walker may be at a manoeuvre's junction.
        for index in self.manoeuvres where !self.nowSaid.contains(index) {
            let junction = self.junctions[index]
            guard along + margin >= junction.along, along <= junction.along + margin else { continue }
            self.nowSaid.insert(index)
            events.append(self.event(index, phase: .now, junctionsBefore: 0, along: along, time: time))
        }
        // Counts only where the walker is surely between two junctions.
        let next = self.junctions.firstIndex { $0.along > along } ?? self.junctions.count
        let previousSure = next == 0 || along - margin > self.junctions[next - 1].along
        let nextSure = next == self.junctions.count || along + margin < self.junctions[next].along
        guard previousSure, nextSure, next < self.junctions.count else { return events }
        // Every manoeuvre and straight on within `announceJunctions` junctions ahead, each with its count, when the count
        // is new (first told, or one junction fewer since).
        for index in next..<min(self.junctions.count, next + self.options.announceJunctions + 1) {
            let junction = self.junctions[index]
            guard junction.manoeuvre != nil || junction.misleading else { continue }
            let count = index - next
            guard self.announced[index] != count else { continue }
            self.announced[index] = count
            events.append(
                self.event(
                    index, phase: junction.manoeuvre != nil ? .announce : .straightOn, junctionsBefore: count,
                    along: along, time: time))
        }
        return events
    }

    /// The junction a walker placed `along` may be standing at or just past, and is to leave by the route's way: the
    /// nearest manoeuvre or straight-on junction within `junctionZoneMeters` (or the factor × the accuracy).
    public func junction(near along: Double, accuracyMeters: Double) -> Junction? {
        let margin = self.options.zoneMeters(accuracyMeters: accuracyMeters)
        return self.junctions.filter { ($0.manoeuvre != nil || $0.misleading) && abs($0.along - along) <= margin }
            .min { abs($0.along - along) < abs($1.along - along) }
    }

    private func event(_ index: Int, phase: TurnPhase, junctionsBefore: Int, along: Double, time: Double) -> TurnEvent {
        let junction = self.junctions[index]
        return TurnEvent(
            // A straight on carries the number of the manoeuvre after it: the one the walker is still to make.
            timeSeconds: time, routeID: self.routeID,
            manoeuvre: UInt32(junction.manoeuvre ?? self.manoeuvres.filter { $0 < index }.count), phase: phase,
            turnDegrees: junction.turnDegrees, junctionsBefore: UInt32(junctionsBefore),
            distanceMeters: max(0, junction.along - along),
            outgoingBearingDegrees: Angle.normalized(junction.outgoingBearingDegrees), street: junction.street)
    }
}
