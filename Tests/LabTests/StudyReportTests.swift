import Evaluation
import NavCore
@testable import Lab
import Runtime
@testable import SessionTools
import Testing

/// The study report's paired comparisons on synthetic studies walked by the real schedule, where every participant
/// walks each condition on another route: the comparison must see the conditions, not the routes.
@Suite struct StudyReportTests {
    /// A route of a synthetic study.
    struct Route {
        var name: String
        var lengthMeters: Double
        /// The route's walking time against 1.3 m/s for an average walker (a hill, crossings, a crowd).
        var slowness: Double
        /// The share of the walk spent off course on it [0…1].
        var offCourseShare: Double
    }

    /// A short route, a long and slow one, and another short one.
    static let harbour = Route(name: "harbour", lengthMeters: 500, slowness: 1.1, offCourseShare: 0.03)
    static let hill = Route(name: "hill", lengthMeters: 1500, slowness: 1.6, offCourseShare: 0.12)
    static let market = Route(name: "market", lengthMeters: 450, slowness: 1.15, offCourseShare: 0.04)

    /// A study walked by its schedule (``StudySchedule``'s rotation of the routes): a trial's time is the route's
    /// walking time × its slowness × the participant's pace (0.85…1.15) × the condition's factor in `slower` × a
    /// spread of its own (±4 %); its time off course is the route's share of it (±30 %). Seeded, so the same on
    /// every machine.
    static func walk(
        participants: Int, conditions: [String], routes: [Route], slower: [String: Double] = [:]
    ) throws -> (StudySchedule, [StudyReport.Row]) {
        let schedule = try StudySchedule(
            participants: (1...participants).map { "P\($0)" }, conditions: conditions, routes: routes.map(\.name))
        var generator = SeededGenerator(seed: 7)
        func uniform() -> Double { Double(generator.next() >> 11) / 0x1p53 }
        var paces: [String: Double] = [:]
        var rows: [StudyReport.Row] = []
        for trial in schedule.trials {
            let route = try #require(routes.first { $0.name == trial.route })
            let pace = paces[trial.participant] ?? 0.85 + 0.3 * uniform()
            paces[trial.participant] = pace
            let walkingSeconds = route.lengthMeters / 1.3
            var summary = SessionReport.Summary()
            summary.durationSeconds =
                walkingSeconds * route.slowness * pace * (slower[trial.condition] ?? 1)
                * (1 + 0.04 * (2 * uniform() - 1))
            summary.offCourseSeconds = summary.durationSeconds * route.offCourseShare * (1 + 0.3 * (2 * uniform() - 1))
            summary.routeLengthMeters = route.lengthMeters
            summary.routeWalkingSeconds = walkingSeconds
            summary.distanceMeters = route.lengthMeters
            summary.arrived = true
            rows.append(
                StudyReport.Row(
                    participant: trial.participant, trial: trial.number, order: trial.number,
                    condition: trial.condition, route: trial.route, status: "completed", reason: "", summary: summary,
                    startedSeconds: Double(trial.number)))
        }
        return (schedule, rows)
    }

    /// The paired test as it would be without the report's fairness: per participant, the mean of `first`'s raw
    /// `value` minus `second`'s.
    static func uncorrected(
        _ rows: [StudyReport.Row], _ first: String, _ second: String, value: (SessionReport.Summary) -> Double?
    ) -> StudyStatistics.SignedRank {
        var differences: [Double] = []
        for participant in StudyReport.participants(rows) {
            func mean(_ condition: String) -> Double? {
                let values = rows.filter { $0.participant == participant && $0.condition == condition }
                    .compactMap { $0.summary.flatMap(value) }
                return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
            }
            if let a = mean(first), let b = mean(second) { differences.append(a - b) }
        }
        return StudyStatistics.signedRank(differences)
    }

    static func comparison(
        _ comparisons: [StudyReport.Comparison], _ first: String, _ second: String, _ metric: String
    ) throws -> StudyReport.Comparison {
        try #require(comparisons.first { $0.first == first && $0.second == second && $0.metric == metric })
    }

    /// 12 participants × 3 conditions (a common count, short of the 18 that would balance routes fully): the
    /// rotation puts condition A on the long, slow hill route for half the participants and C never, so a raw paired
    /// test finds A slower, and B's normalised time ratio looks higher than C's because the hill is walked slower
    /// than 1.3 m/s. There is no condition effect: route-centred, the comparison finds none.
    @Test func aRouteMuchLongerAndSlowerThanTheOthersIsNotTakenForAConditionEffect() throws {
        let (schedule, rows) = try Self.walk(
            participants: 12, conditions: ["A", "B", "C"], routes: [Self.harbour, Self.hill, Self.market])
        #expect(!schedule.isBalanced)
        // What the fairness is for: the raw time, and the time ratio left uncentred, do find a difference.
        let rawTime = Self.uncorrected(rows, "A", "C") { $0.durationSeconds }
        #expect(try #require(rawTime.medianDifference) > 300, "\(rawTime)")
        #expect(try #require(rawTime.p) < 0.01, "\(rawTime)")
        let timeRatio = try #require(StudyReport.metrics.first { $0.column == "time_ratio" })
        let uncentred = Self.uncorrected(rows, "B", "C", value: timeRatio.value)
        #expect(try #require(uncentred.medianDifference) > 0.15, "\(uncentred)")
        #expect(try #require(uncentred.p) < 0.01, "\(uncentred)")
        let rawOffCourse = Self.uncorrected(rows, "B", "C") { $0.offCourseSeconds }
        #expect(try #require(rawOffCourse.medianDifference) > 30, "\(rawOffCourse)")

        let comparisons = StudyReport.comparisons(rows, names: schedule.conditions)
        // Raw times and counts are not put to the test at all.
        #expect(Set(comparisons.map(\.metric)) == Set(StudyReport.compared.map(\.column)))
        for raw in ["time_s", "off_course_s", "wrong_way_cues", "reroutes", "fail_safe_events"] {
            #expect(!comparisons.contains { $0.metric == raw }, "\(raw) compared")
        }
        #expect(
            StudyReport.compared.map(\.column) == [
                "time_ratio", "distance_ratio", "off_course_percent", "turn_cues_per_min", "wrong_way_cues_per_100m",
                "reroutes_per_100m", "fail_safe_events_per_100m",
            ])
        #expect(StudyReport.routeCentred(rows).singleConditionRoutes.isEmpty)
        // The route gap is 0.5 in time ratio and 8 points of the walk off course; what is left is the walkers'
        // spread. (A fixed seed: with no effect, about one draw in twenty gives some p under 0.05 by chance.)
        for (first, second) in [("A", "B"), ("A", "C"), ("B", "C")] {
            let time = try Self.comparison(comparisons, first, second, "time_ratio")
            #expect(time.differences.count == 12)
            #expect(abs(try #require(time.test.medianDifference)) < 0.05, "\(first) − \(second): \(time.test)")
            #expect(try #require(time.test.p) > 0.05, "\(first) − \(second): \(time.test)")
            let offCourse = try Self.comparison(comparisons, first, second, "off_course_percent")
            #expect(abs(try #require(offCourse.test.medianDifference)) < 2, "\(first) − \(second): \(offCourse.test)")
            #expect(try #require(offCourse.test.p) > 0.05, "\(first) − \(second): \(offCourse.test)")
        }
    }

    /// 8 participants × 2 conditions × 2 routes (fully balanced), condition B 20 % slower on every route: the raw
    /// time's differences are swamped by the route (each participant's ±700 s), the fair comparison finds B slower by
    /// about a fifth of A's time ratio, for every participant.
    @Test func aConditionTwentyPercentSlowerOnEveryRouteIsFoundWithItsSignAndSize() throws {
        let (schedule, rows) = try Self.walk(
            participants: 8, conditions: ["A", "B"], routes: [Self.hill, Self.harbour], slower: ["B": 1.2])
        #expect(schedule.isBalanced)
        let rawTime = Self.uncorrected(rows, "A", "B") { $0.durationSeconds }
        #expect(try #require(rawTime.p) > 0.05, "the raw time misses it: \(rawTime)")

        let time = try Self.comparison(
            StudyReport.comparisons(rows, names: schedule.conditions), "A", "B", "time_ratio")
        #expect(time.differences.count == 8 && time.test.n == 8)
        #expect(time.test.rankBiserial == -1, "every participant slower in B: \(time.differences)")
        #expect(try #require(time.test.p) < 0.01, "\(time.test)")
        let timeRatio = try #require(StudyReport.metrics.first { $0.column == "time_ratio" })
        let aValues = rows.filter { $0.condition == "A" }.compactMap { $0.summary.flatMap(timeRatio.value) }
        let aMean = aValues.reduce(0, +) / Double(aValues.count)
        let share = try #require(time.test.medianDifference) / aMean
        #expect(share > -0.27 && share < -0.13, "A − B is \(share) of A's time ratio, not about −0.2")
        // The condition means of the values compared: B's about 1.2 × A's.
        let centred = StudyReport.routeCentred(rows).values
        func centredMean(_ condition: String) -> Double {
            let values = rows.indices.filter { rows[$0].condition == condition }.compactMap {
                centred[$0]?["time_ratio"]
            }
            return values.reduce(0, +) / Double(values.count)
        }
        let factor = centredMean("B") / centredMean("A")
        #expect(factor > 1.13 && factor < 1.27, "B/A \(factor)")
    }

    /// Routes walked under one condition only (4 participants, 2 conditions, 3 routes: the rotation gives the castle
    /// only to A and the hill only to B) cannot be centred: the report names them, and their trials keep their
    /// normalised value; the harbour, walked under both, is centred. The page and the CSV say what is compared.
    @Test func routesWalkedUnderOneConditionOnlyAreNamedAndKeepTheirNormalisedValues() throws {
        let castle = Route(name: "castle", lengthMeters: 800, slowness: 1.3, offCourseShare: 0.05)
        let (schedule, rows) = try Self.walk(
            participants: 4, conditions: ["A", "B"], routes: [castle, Self.harbour, Self.hill])
        let centred = StudyReport.routeCentred(rows)
        #expect(centred.singleConditionRoutes == ["castle", "hill"])
        let timeRatio = try #require(StudyReport.metrics.first { $0.column == "time_ratio" })
        let values = try rows.map { try #require($0.summary.flatMap(timeRatio.value)) }
        let grandMean = values.reduce(0, +) / Double(values.count)
        let harbour = rows.indices.filter { rows[$0].route == "harbour" }
        #expect(Set(harbour.map { rows[$0].condition }) == ["A", "B"])
        let harbourMean = harbour.map { values[$0] }.reduce(0, +) / Double(harbour.count)
        for index in rows.indices {
            let expected = rows[index].route == "harbour" ? values[index] - harbourMean + grandMean : values[index]
            let value = try #require(centred.values[index]?["time_ratio"])
            #expect(abs(value - expected) < 1e-12, "\(rows[index].route): \(value) against \(expected)")
        }
        let warning = try #require(StudyReport.singleConditionWarning(centred.singleConditionRoutes))
        #expect(warning.contains("routes castle, hill were walked under one condition only"), "\(warning)")
        #expect(StudyReport.singleConditionWarning([]) == nil)

        #expect(
            StudyReport.method.hasPrefix(
                "Conditions are compared on figures normalised by the route (time against the route's walking time, "
                    + "distance against the route's length, time off course [% of the walk], turn cues a minute, "
                    + "wrong-way cues per 100 m of route, reroutes per 100 m of route, fail-safe events per 100 m of "
                    + "route), centred on each route's mean (the route as a factor), paired within participant "
                    + "(Wilcoxon signed-rank)"), "\(StudyReport.method)")
        let study = StudyFile(
            name: "fair", config: "lab.json5", participants: schedule.participants,
            routes: schedule.routes.map { ($0, .file("\($0).geojson")) },
            conditions: schedule.conditions.map { ($0, .null) })
        let html = StudyReport.html(rows, study: study, schedule: schedule)
        #expect(html.contains(xmlEscaped(StudyReport.method)))
        #expect(html.contains("<p id=\"route-warning\"><strong>\(xmlEscaped(warning))</strong></p>"))
        #expect(!html.contains("<td>Time [s]</td><td>A − B</td>"), "raw time is not in the paired table")
        let csv = StudyReport.csv(rows).split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        let header = try #require(csv.first)
        let column = try #require(header.firstIndex(of: "time_ratio_route_centred"))
        #expect(header.contains("time_s") && header.contains("wrong_way_cues_per_100m"))
        for (index, fields) in csv.dropFirst().enumerated() {
            let value = try #require(centred.values[index]?["time_ratio"])
            #expect(fields[column] == StudyReport.number(value))
        }
    }
}
