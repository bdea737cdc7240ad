@testable import Evaluation
import Testing

@Suite struct StudyScheduleTests {
    /// Williams designs: every condition in every position equally often, and every ordered pair of different
    /// conditions adjacent equally often (first-order carryover), for even and odd numbers of conditions.
    @Test(arguments: [2, 3, 4, 5, 6])
    func williamsOrdersAreBalanced(conditions n: Int) {
        let orders = StudySchedule.williamsOrders(n)
        #expect(orders.count == (n % 2 == 0 ? n : 2 * n))
        for order in orders { #expect(order.sorted() == Array(0..<n), "a permutation: \(order)") }
        for position in 0..<n {
            let counts = (0..<n).map { condition in orders.filter { $0[position] == condition }.count }
            #expect(Set(counts).count == 1, "position \(position): \(counts)")
        }
        var pairs: [[Int]: Int] = [:]
        for order in orders { for (a, b) in zip(order, order.dropFirst()) { pairs[[a, b], default: 0] += 1 } }
        #expect(pairs.count == n * (n - 1) && Set(pairs.values).count == 1, "carryover \(pairs)")
    }

    /// 8 participants × 2 conditions × 2 routes: balanced in positions and in condition-route pairs; each
    /// participant walks each condition once, on two different routes.
    @Test func aStudyOfEightParticipantsIsBalanced() throws {
        let participants = (1...8).map { "P0\($0)" }
        let schedule = try StudySchedule(
            participants: participants, conditions: ["band", "speaker"], routes: ["harbour", "casino"])
        #expect(StudySchedule.balancedMultiple(conditions: 2, routes: 2) == 4)
        #expect(schedule.trials.count == 16)
        #expect(schedule.positionCounts == [[4, 4], [4, 4]])
        #expect(schedule.routeCounts == [[4, 4], [4, 4]])
        #expect(schedule.isBalanced)
        for participant in participants {
            let mine = schedule.trials.filter { $0.participant == participant }
            #expect(Set(mine.map(\.condition)) == ["band", "speaker"] && Set(mine.map(\.route)).count == 2)
            #expect(mine.map(\.number) == [1, 2])
        }
        #expect(schedule.csv.hasPrefix("participant,trial,condition,route\nP01,1,band,harbour\nP01,2,speaker,casino\n"))
    }

    /// Six participants cannot balance 2 × 2 (a multiple of 4 can): the schedule says so rather than pretend.
    @Test func anUnbalancedCountIsReportedAndBadNamesAreRefused() throws {
        let schedule = try StudySchedule(
            participants: (1...6).map { "P\($0)" }, conditions: ["a", "b"], routes: ["r1", "r2"])
        #expect(!schedule.isBalanced)
        #expect(schedule.positionCounts == [[3, 3], [3, 3]], "positions still balance with an even count")
        #expect(throws: StudySchedule.Problem.self) {
            try StudySchedule(participants: ["P1", "P1"], conditions: ["a"], routes: ["r"])
        }
        #expect(throws: StudySchedule.Problem.self) {
            try StudySchedule(participants: [], conditions: ["a"], routes: ["r"])
        }
        #expect(StudySchedule.field("a, \"b\"") == "\"a, \"\"b\"\"\"")
    }
}
