/// A counterbalanced study schedule: participants × conditions, each participant walking every condition once, on
/// routes rotated so that each route meets each condition equally.
///
/// Condition order follows a Williams design (a balanced Latin square): with n conditions, n orders for even n, 2n
/// for odd n, in which every condition takes every position equally often and follows every other condition equally
/// often (first-order carryover). Participant i takes order i mod (number of orders). The route of condition c for
/// participant i is route (c + i / orders) mod routes: the participants of each round of orders shift the routes by
/// one, so over orders × routes participants every (condition, route) pair comes up equally often, and a participant
/// never walks one route twice while there are at least as many routes as conditions.
public struct StudySchedule: Equatable, Sendable {
    /// One trial of the schedule.
    public struct Trial: Equatable, Sendable {
        public var participant: String
        /// The trial's number for its participant, from 1.
        public var number: Int
        public var condition: String
        public var route: String
    }

    /// Why a schedule cannot be made.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public let participants: [String]
    public let conditions: [String]
    public let routes: [String]
    /// Every trial, participant by participant, in the order walked.
    public let trials: [Trial]

    /// The condition orders of a Williams design for `n` conditions (indices).
    public static func williamsOrders(_ n: Int) -> [[Int]] {
        guard n > 0 else { return [] }
        var first: [Int] = [0]
        var low = 1
        var high = n - 1
        while first.count < n {
            first.append(low)
            low += 1
            if first.count < n {
                first.append(high)
                high -= 1
            }
        }
        let orders = (0..<n).map { shift in first.map { ($0 + shift) % n } }
        // For an odd number of conditions the mirrored orders balance the carryover.
        return n % 2 == 0 ? orders : orders + orders.map { Array($0.reversed()) }
    }

    /// Participants for a fully balanced schedule: a multiple of this.
    public static func balancedMultiple(conditions: Int, routes: Int) -> Int {
        Self.williamsOrders(conditions).count * max(1, routes)
    }

    public init(participants: [String], conditions: [String], routes: [String]) throws(Problem) {
        guard !participants.isEmpty else { throw Problem(description: "no participants") }
        guard !conditions.isEmpty else { throw Problem(description: "no conditions") }
        guard !routes.isEmpty else { throw Problem(description: "no routes") }
        for (kind, names) in [("participant", participants), ("condition", conditions), ("route", routes)] {
            if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
                throw Problem(description: "\(kind) '\(repeated)' named twice")
            }
        }
        self.participants = participants
        self.conditions = conditions
        self.routes = routes
        let orders = Self.williamsOrders(conditions.count)
        var trials: [Trial] = []
        for (index, participant) in participants.enumerated() {
            let order = orders[index % orders.count]
            let shift = index / orders.count
            for (position, condition) in order.enumerated() {
                trials.append(
                    Trial(
                        participant: participant, number: position + 1, condition: conditions[condition],
                        route: routes[(condition + shift) % routes.count]))
            }
        }
        self.trials = trials
    }

    /// How often each condition takes each position [condition][position].
    public var positionCounts: [[Int]] {
        var counts = Array(repeating: Array(repeating: 0, count: self.conditions.count), count: self.conditions.count)
        for trial in self.trials {
            counts[self.conditions.firstIndex(of: trial.condition)!][trial.number - 1] += 1
        }
        return counts
    }

    /// How often each condition is walked on each route [condition][route].
    public var routeCounts: [[Int]] {
        var counts = Array(repeating: Array(repeating: 0, count: self.routes.count), count: self.conditions.count)
        for trial in self.trials {
            counts[self.conditions.firstIndex(of: trial.condition)!][self.routes.firstIndex(of: trial.route)!] += 1
        }
        return counts
    }

    /// True when every condition takes every position, and meets every route, equally often.
    public var isBalanced: Bool {
        let positions = Set(self.positionCounts.flatMap { $0 })
        let pairs = Set(self.routeCounts.flatMap { $0 })
        return positions.count == 1 && pairs.count == 1
    }

    /// The schedule as CSV: `participant,trial,condition,route`, one row per trial.
    public var csv: String {
        (["participant,trial,condition,route"]
            + self.trials.map {
                "\(Self.field($0.participant)),\($0.number),\(Self.field($0.condition)),\(Self.field($0.route))"
            })
            .joined(separator: "\n") + "\n"
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break.
    static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }
}
