public import SessionTools
public import Evaluation
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
import SystemIO
public import MapLogic

/// `hapticnav study report`: one tidy row per trial of the schedule (from its session and record), per-condition
/// medians and quartiles, paired within-participant differences (Wilcoxon signed-rank, rank-biserial effect size),
/// order effects, missing and aborted trials named; as CSV and as one self-contained HTML page.
///
/// Each participant walks each condition on another route (the schedule rotates the routes), so the paired tests
/// take only figures normalised by the route, centred on their route's mean (the route as a factor): a raw time or
/// count would measure the routes rather than the conditions.
public enum StudyReport {
    /// One trial's row.
    public struct Row: Sendable, Equatable {
        public var participant: String
        public var trial: Int
        /// The position in which the participant actually walked it among the trials run (by start time); nil when not run.
        public var order: Int?
        public var condition: String
        public var route: String
        /// `completed`, `aborted` (including a run interrupted: its record still says running) or `missing`.
        public var status: String
        public var reason: String
        public var summary: SessionReport.Summary?
        public var startedSeconds: Double?
        /// The condition lock stopped the outputs during the trial.
        public var conditionLocked = false
        /// The smoothed track and the first route, for the study's maps.
        public var track: [Coordinate] = []
        public var routePoints: [Coordinate] = []

        public var aborted: Bool { self.status == "aborted" }
        public var hasSession: Bool { self.summary != nil }
        /// Counted in the per-condition figures and the paired tests: completed, with its session.
        public var counts: Bool { self.status == "completed" && self.summary != nil }
    }

    /// A figure of a row, by column name.
    public struct Metric: Sendable {
        /// The CSV column and the key of the figure in the report's tables.
        public var column: String
        /// The figure's name on the page, with its unit.
        public var title: String
        /// Normalised by the route (a ratio, a share of the walk or a rate), so comparable between routes: put to the
        /// paired test. A raw time or count grows with the route and is shown per condition, not compared.
        public var normalised: Bool
        /// The figure of a trial's session; nil when it has none (no route, no time).
        public var value: @Sendable (SessionReport.Summary) -> Double?

        init(
            column: String, title: String, normalised: Bool = false,
            value: @escaping @Sendable (SessionReport.Summary) -> Double?
        ) {
            self.column = column
            self.title = title
            self.normalised = normalised
            self.value = value
        }
    }

    /// Every figure of a trial, in the CSV's order: each raw one followed by its normalised one.
    public static let metrics: [Metric] = [
        Metric(column: "time_s", title: "Time [s]") { $0.durationSeconds },
        Metric(column: "time_ratio", title: "Time against the route's walking time", normalised: true) { s in
            s.routeWalkingSeconds.flatMap { $0 > 0 ? s.durationSeconds / $0 : nil }
        },
        Metric(column: "distance_ratio", title: "Distance against the route's length", normalised: true) { s in
            s.routeLengthMeters.flatMap { $0 > 0 ? s.distanceMeters / $0 : nil }
        },
        Metric(column: "off_course_s", title: "Time off course [s]") { $0.offCourseSeconds },
        Metric(column: "off_course_percent", title: "Time off course [% of the walk]", normalised: true) { s in
            s.durationSeconds > 0 ? 100 * s.offCourseSeconds / s.durationSeconds : nil
        },
        Metric(column: "turn_cues_per_min", title: "Turn cues a minute", normalised: true) { $0.cueOnsetsPerMinute },
        Metric(column: "wrong_way_cues", title: "Wrong-way cues") { Double($0.wrongWayCues) },
        Metric(column: "wrong_way_cues_per_100m", title: "Wrong-way cues per 100 m of route", normalised: true) {
            Self.per100Meters($0.wrongWayCues, $0)
        },
        Metric(column: "reroutes", title: "Reroutes") { Double($0.reroutes) },
        Metric(column: "reroutes_per_100m", title: "Reroutes per 100 m of route", normalised: true) {
            Self.per100Meters($0.reroutes, $0)
        },
        Metric(column: "fail_safe_events", title: "Fail-safe events") { Double($0.failSafeEvents) },
        Metric(column: "fail_safe_events_per_100m", title: "Fail-safe events per 100 m of route", normalised: true) {
            Self.per100Meters($0.failSafeEvents, $0)
        },
        Metric(column: "experimenter_stops", title: "Experimenter's stops") { Double($0.experimenterStops) },
        Metric(column: "device_switches", title: "Device switches") { Double($0.deviceSwitches) },
    ]

    /// The figures the paired tests compare: the normalised ones.
    public static let compared = Self.metrics.filter(\.normalised)

    /// A count over the route's length [1/100 m]; nil without a route.
    static func per100Meters(_ count: Int, _ summary: SessionReport.Summary) -> Double? {
        summary.routeLengthMeters.flatMap { $0 > 0 ? 100 * Double(count) / $0 : nil }
    }

    /// What the paired comparisons compare, in one sentence (the page and the command's text say it).
    public static var method: String {
        let figures = self.compared.map { $0.title.prefix(1).lowercased() + $0.title.dropFirst() }
        return "Conditions are compared on figures normalised by the route (\(figures.joined(separator: ", "))), "
            + "centred on each route's mean (the route as a factor), paired within participant (Wilcoxon signed-rank)."
    }

    /// Reads every trial of the schedule: its record and its session (a cut session reads to its last record).
    /// `read` reads a session folder (``SessionExport/read(_:)`` by default); a trial without parts has none.
    public static func rows(
        study: StudyFile, schedule: StudySchedule, kind: String = StudyTrial.participants,
        read: (String) throws -> SessionExport.Session = { try SessionExport.read($0) }
    ) -> [Row] {
        var rows: [Row] = []
        for trial in schedule.trials {
            let studyTrial = StudyTrial(study: study, trial: trial, kind: kind)
            let record = studyTrial.readRecord()
            var row = Row(
                participant: trial.participant, trial: trial.number, order: nil, condition: trial.condition,
                route: trial.route, status: "missing", reason: "not run", summary: nil,
                startedSeconds: record?.startedSeconds)
            let hasParts =
                ((try? FileManager.default.contentsOfDirectory(atPath: studyTrial.folder)) ?? []).contains {
                    $0.hasSuffix(".mcap")
                }
            if hasParts, let session = try? read(studyTrial.folder) {
                row.summary = SessionReport.summary(session)
                row.track = session.smoothed.filter { $0.latitude.isFinite && $0.longitude.isFinite }.map {
                    Coordinate(latitude: $0.latitude, longitude: $0.longitude)
                }
                row.routePoints = session.routes.first?.points ?? []
            }
            switch record?.status {
            case .completed?:
                row.status = "completed"
                row.reason = record?.reason ?? ""
            case .aborted?:
                row.status = "aborted"
                row.reason = record?.reason ?? ""
            case .running?:
                row.status = "aborted"
                row.reason = "interrupted (the run ended without closing its record: a crash or a killed process)"
            case nil where hasParts:
                row.status = "aborted"
                row.reason = "no record beside the session"
            case nil:
                break
            }
            if record?.conditionLocked == true || (row.summary?.conditionLockStops ?? 0) > 0 {
                row.conditionLocked = true
                row.reason += row.reason.isEmpty ? "condition lock" : "; condition lock stopped the outputs"
            }
            rows.append(row)
        }
        // The order actually walked, by start time, per participant.
        for participant in Set(rows.map(\.participant)) {
            let run = rows.indices.filter { rows[$0].participant == participant && rows[$0].startedSeconds != nil }
                .sorted { rows[$0].startedSeconds! < rows[$1].startedSeconds! }
            for (position, index) in run.enumerated() { rows[index].order = position + 1 }
        }
        return rows
    }

    /// The rows as CSV (one row per trial, `NA` where there is no value), for R or pandas as it is: every figure, then
    /// the values the paired tests compared (`<figure>_route_centred`, counted trials only).
    public static func csv(_ rows: [Row]) -> String {
        var header = ["participant", "trial", "order", "condition", "route", "status", "arrived"]
        header += self.metrics.map(\.column)
        header += self.compared.map { $0.column + "_route_centred" }
        header += ["aborted", "condition_locked", "reason"]
        var lines = [header.joined(separator: ",")]
        let centred = self.routeCentred(rows).values
        for (index, row) in rows.enumerated() {
            var fields = [row.participant, "\(row.trial)", row.order.map { "\($0)" } ?? "NA", row.condition, row.route]
            fields.append(row.status)
            fields.append(row.summary.map { $0.arrived ? "TRUE" : "FALSE" } ?? "NA")
            for metric in self.metrics {
                fields.append(row.summary.flatMap(metric.value).map { self.number($0) } ?? "NA")
            }
            for metric in self.compared {
                fields.append(centred[index]?[metric.column].map { self.number($0) } ?? "NA")
            }
            fields.append(row.status == "missing" ? "NA" : (row.aborted ? "TRUE" : "FALSE"))
            fields.append(row.status == "missing" ? "NA" : (row.conditionLocked ? "TRUE" : "FALSE"))
            fields.append(self.quoted(row.reason))
            lines.append(fields.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A number as CSV writes it: up to four decimals, no trailing zeros.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "NA" }
        var text = fixedDecimal(value, digits: 4)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }

    static func quoted(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }

    /// One condition's figures over its trials with a session.
    public struct ConditionSummary: Sendable, Equatable {
        public var condition: String
        public var trials: Int
        public var arrived: Int
        public var aborted: Int
        /// Per metric column: (median, first quartile, third quartile), nil without values.
        public var figures: [String: (Double, Double, Double)]

        public static func == (a: Self, b: Self) -> Bool {
            a.condition == b.condition && a.trials == b.trials && a.arrived == b.arrived && a.aborted == b.aborted
                && a.figures.keys.sorted() == b.figures.keys.sorted()
                && a.figures.keys.allSatisfy { a.figures[$0]! == b.figures[$0]! }
        }
    }

    /// Per condition, over its completed trials (aborted ones are named apart, not averaged in).
    public static func conditions(_ rows: [Row], names: [String]) -> [ConditionSummary] {
        names.map { name in
            let mine = rows.filter { $0.condition == name && $0.counts }
            var figures: [String: (Double, Double, Double)] = [:]
            for metric in self.metrics {
                let values = mine.compactMap { $0.summary.flatMap(metric.value) }
                if let median = StudyStatistics.quantile(values, 0.5), let q1 = StudyStatistics.quantile(values, 0.25),
                    let q3 = StudyStatistics.quantile(values, 0.75)
                {
                    figures[metric.column] = (median, q1, q3)
                }
            }
            return ConditionSummary(
                condition: name, trials: mine.count, arrived: mine.filter { $0.summary?.arrived == true }.count,
                aborted: rows.filter { $0.condition == name && $0.aborted }.count, figures: figures)
        }
    }

    /// The values the paired tests compare: each counted trial's normalised figure minus the mean of that figure over
    /// every counted trial on its route (all conditions), plus the mean over every counted trial.
    public struct RouteCentred: Sendable {
        /// Per row (its index in the rows given), per compared figure's column: the value put to the test.
        public var values: [Int: [String: Double]]
        /// Routes whose counted trials (those with the figure, for some compared figure) were all walked under one
        /// condition: centring them would take the condition's effect away with the route's, so their trials keep
        /// the normalised value.
        public var singleConditionRoutes: [String]
    }

    /// The route as a factor: every compared figure centred on its route's mean (``RouteCentred``).
    public static func routeCentred(_ rows: [Row]) -> RouteCentred {
        var centred = RouteCentred(values: [:], singleConditionRoutes: [])
        var single: Set<String> = []
        for metric in self.compared {
            let valued = rows.indices.compactMap { index -> (index: Int, value: Double)? in
                guard rows[index].counts, let value = rows[index].summary.flatMap(metric.value), value.isFinite
                else { return nil }
                return (index, value)
            }
            guard !valued.isEmpty else { continue }
            let grandMean = valued.map(\.value).reduce(0, +) / Double(valued.count)
            for route in Set(valued.map { rows[$0.index].route }) {
                let mine = valued.filter { rows[$0.index].route == route }
                let routeMean = mine.map(\.value).reduce(0, +) / Double(mine.count)
                let separable = Set(mine.map { rows[$0.index].condition }).count > 1
                if !separable { single.insert(route) }
                for (index, value) in mine {
                    centred.values[index, default: [:]][metric.column] =
                        separable ? value - routeMean + grandMean : value
                }
            }
        }
        centred.singleConditionRoutes = single.sorted()
        return centred
    }

    /// The warning for routes walked under one condition only (``RouteCentred/singleConditionRoutes``); nil when
    /// there is none.
    public static func singleConditionWarning(_ routes: [String]) -> String? {
        guard !routes.isEmpty else { return nil }
        let named = routes.count == 1 ? "route \(routes[0]) was" : "routes \(routes.joined(separator: ", ")) were"
        return "Warning: \(named) walked under one condition only in the whole study, so centring cannot separate the "
            + "route from the condition there: those trials are compared on their normalised figures as they are."
    }

    /// A paired comparison of two conditions on one figure.
    public struct Comparison: Sendable {
        /// The condition whose values come first in each difference.
        public var first: String
        /// The condition whose values are taken away.
        public var second: String
        /// The compared figure's column (one of ``StudyReport/compared``).
        public var metric: String
        /// Per participant with both: the mean of the first condition's route-centred values minus the second's.
        public var differences: [(participant: String, difference: Double)]
        /// The Wilcoxon signed-rank test on ``differences``.
        public var test: StudyStatistics.SignedRank
    }

    /// Every pair of conditions on every compared figure, on the route-centred values (``routeCentred(_:)``), paired
    /// within participant.
    public static func comparisons(_ rows: [Row], names: [String]) -> [Comparison] {
        let centred = self.routeCentred(rows).values
        var comparisons: [Comparison] = []
        for (i, first) in names.enumerated() {
            for second in names.dropFirst(i + 1) {
                for metric in self.compared {
                    var differences: [(String, Double)] = []
                    for participant in Self.participants(rows) {
                        func mean(_ condition: String) -> Double? {
                            let values = rows.indices.filter {
                                rows[$0].participant == participant && rows[$0].condition == condition
                            }.compactMap { centred[$0]?[metric.column] }
                            return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
                        }
                        if let a = mean(first), let b = mean(second) { differences.append((participant, a - b)) }
                    }
                    comparisons.append(
                        Comparison(
                            first: first, second: second, metric: metric.column, differences: differences,
                            test: StudyStatistics.signedRank(differences.map(\.1))))
                }
            }
        }
        return comparisons
    }

    static func participants(_ rows: [Row]) -> [String] {
        var seen: Set<String> = []
        return rows.map(\.participant).filter { seen.insert($0).inserted }
    }

    /// The page.
    public static func html(
        _ rows: [Row], study: StudyFile, schedule: StudySchedule, ways: WalkingGraph? = nil
    ) -> String {
        let names = schedule.conditions
        let summaries = self.conditions(rows, names: names)
        let comparisons = self.comparisons(rows, names: names)
        let warning =
            self.singleConditionWarning(self.routeCentred(rows).singleConditionRoutes).map {
                "<p id=\"route-warning\"><strong>\(xmlEscaped($0))</strong></p>\n"
            } ?? ""
        func cell(_ text: String) -> String { "<td>\(xmlEscaped(text))</td>" }
        func figure(_ value: (Double, Double, Double)?) -> String {
            guard let (median, q1, q3) = value else { return "–" }
            return "\(decimal(median, 2)) [\(decimal(q1, 2))–\(decimal(q3, 2))]"
        }
        var conditionTable = "<tr><th>figure</th>" + summaries.map { "<th>\(xmlEscaped($0.condition))</th>" }.joined()
        conditionTable += "</tr>\n<tr><td>trials completed</td>" + summaries.map { cell("\($0.trials)") }.joined()
        conditionTable +=
            "</tr>\n<tr><td>arrived</td>" + summaries.map { cell("\($0.arrived) of \($0.trials)") }.joined()
        conditionTable += "</tr>\n<tr><td>aborted</td>" + summaries.map { cell("\($0.aborted)") }.joined() + "</tr>\n"
        for metric in self.metrics {
            conditionTable +=
                "<tr><td>\(xmlEscaped(metric.title))</td>"
                + summaries.map { cell(figure($0.figures[metric.column])) }.joined() + "</tr>\n"
        }
        var pairTable =
            "<tr><th>figure</th><th>conditions</th><th>pairs</th><th>median difference (route-centred)</th><th>W+ / W−</th><th>p (two-sided)</th><th>rank-biserial r</th></tr>\n"
        for comparison in comparisons {
            let title = self.metrics.first { $0.column == comparison.metric }?.title ?? comparison.metric
            let test = comparison.test
            pairTable +=
                "<tr>" + cell(title) + cell("\(comparison.first) − \(comparison.second)")
                + cell("\(comparison.differences.count) (\(test.n) non-zero)")
                + cell(test.medianDifference.map { decimal($0, 2) } ?? "–")
                + cell("\(decimal(test.wPlus, 1)) / \(decimal(test.wMinus, 1))")
                + cell(test.p.map { decimal($0, 3) } ?? "–") + cell(test.rankBiserial.map { decimal($0, 2) } ?? "–")
                + "</tr>\n"
        }
        // Order effects: each figure by the position walked.
        let positions = (rows.compactMap(\.order).max() ?? 0)
        var orderTable =
            "<tr><th>figure</th>" + (0..<positions).map { "<th>trial walked \($0 + 1)</th>" }.joined() + "</tr>\n"
        for metric in self.compared.prefix(5) {
            orderTable += "<tr>" + cell(metric.title)
            for position in 0..<positions {
                let values = rows.filter { $0.order == position + 1 }.compactMap { $0.summary.flatMap(metric.value) }
                orderTable += cell(
                    StudyStatistics.quantile(values, 0.5).map { "\(decimal($0, 2)) (n \(values.count))" } ?? "–")
            }
            orderTable += "</tr>\n"
        }
        let timeRatio = self.metrics.first { $0.column == "time_ratio" }
        let trialsTable =
            "<tr><th>participant</th><th>trial</th><th>order</th><th>condition</th><th>route</th><th>status</th><th>arrived</th><th>time ratio</th><th>turn cues/min</th><th>reason</th></tr>\n"
            + rows.map { row in
                "<tr>" + cell(row.participant) + cell("\(row.trial)") + cell(row.order.map { "\($0)" } ?? "–")
                    + cell(row.condition) + cell(row.route) + cell(row.status)
                    + cell(row.summary.map { $0.arrived ? "yes" : "no" } ?? "–")
                    + cell(row.summary.flatMap { timeRatio?.value($0) }.map { decimal($0, 2) } ?? "–")
                    + cell(row.summary.map { decimal($0.cueOnsetsPerMinute, 1) } ?? "–") + cell(row.reason) + "</tr>"
            }.joined(separator: "\n")
        let notRun = rows.filter { $0.status != "completed" }
        let problems =
            notRun.isEmpty
            ? "<p id=\"problems\">Every trial of the schedule completed.</p>"
            : "<ul id=\"problems\">"
                + notRun.map {
                    "<li>\(xmlEscaped("\($0.participant) trial \($0.trial) (\($0.condition) on \($0.route)): \($0.status), \($0.reason)"))</li>"
                }.joined() + "</ul>"
        let plots = self.compared.prefix(5).map { self.plot($0, rows: rows, conditions: names) }.joined(separator: "\n")
        let balance =
            schedule.isBalanced
            ? "balanced: each condition in each position \(schedule.positionCounts[0][0]) times, on each route \(schedule.routeCounts[0][0]) times"
            : "not fully balanced: positions \(schedule.positionCounts), condition × route \(schedule.routeCounts)"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(xmlEscaped("Study \(study.name)"))</title>
            <style>
            body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
            h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
            table { border-collapse: collapse; } th, td { text-align: left; padding: 3px 12px 3px 0; }
            th { font-weight: normal; color: #555; } svg { border: 1px solid #ccc; background: #fafafa; margin: 4px; }
            h3 { font-size: 14px; } .legend span { display: inline-block; margin-right: 16px; font-size: 13px; }
            .legend i { display: inline-block; width: 18px; height: 4px; margin-right: 4px; vertical-align: middle; }
            </style></head><body>
            <h1>\(xmlEscaped("Study \(study.name)"))</h1>
            <p>\(schedule.participants.count) participants × \(names.count) conditions (\(xmlEscaped(names.joined(separator: ", ")))) on routes \(xmlEscaped(schedule.routes.joined(separator: ", "))); \(xmlEscaped(balance)). \(rows.filter { $0.status == "completed" }.count) of \(rows.count) trials completed.</p>
            <h2>Conditions side by side</h2>
            <p>Median [first–third quartile] over the completed trials; aborted ones are named below, not averaged in.</p>
            <table id="conditions">
            \(conditionTable)</table>
            <h2>Paired within participants</h2>
            <p id="method">\(xmlEscaped(self.method)) Each participant walked each condition on another route (the schedule rotates them), so raw times and counts, which grow with the route, are shown above but not compared.</p>
            \(warning)<p>Per participant, the first condition's route-centred value minus the second's; Wilcoxon signed-rank test (zero differences dropped; exact up to 25 pairs) and the matched-pairs rank-biserial correlation.</p>
            <table id="pairs">
            \(pairTable)</table>
            <h2>Every trial</h2>
            <p>The normalised figures as walked, before centring. Each dot is a trial; the bar is the condition's median; lines join each participant's conditions.</p>
            \(plots)
            <h2>Tracks</h2>
            <p>Each route with every trial's smoothed track, coloured by condition, over the map's walkable ways.</p>
            \(schedule.routes.map { self.map(route: $0, rows: rows, conditions: names, ways: ways) }.joined(separator: "\n"))
            <h2>Order effects</h2>
            <table id="order">
            \(orderTable)</table>
            <h2>Missing and aborted trials</h2>
            \(problems)
            <h2>Trials</h2>
            <table id="trials">
            \(trialsTable)
            </table>
            </body></html>

            """
    }

    static let palette = ["#1f5fbf", "#e07b00", "#2a9d4b", "#8e44ad", "#c0392b", "#16a0a0"]

    /// One route's map: its route line, every trial's track in its condition's colour, the walkable ways under them.
    static func map(route: String, rows: [Row], conditions: [String], ways: WalkingGraph?) -> String {
        let mine = rows.filter { $0.route == route && !$0.track.isEmpty }
        let points = mine.flatMap { $0.track + $0.routePoints }
        guard let origin = points.first else {
            return "<p>\(xmlEscaped(route)): no track recorded.</p>"
        }
        let width = 900.0, height = 520.0, margin = 20.0
        let projection = FlatProjection(origin: origin)
        let local = points.map { projection.project($0) }
        let (minEast, maxEast) = (local.map(\.east).min()!, local.map(\.east).max()!)
        let (minNorth, maxNorth) = (local.map(\.north).min()!, local.map(\.north).max()!)
        let scale = max((maxEast - minEast) / (width - 2 * margin), (maxNorth - minNorth) / (height - 2 * margin), 0.01)
        let centerEast = (minEast + maxEast) / 2, centerNorth = (minNorth + maxNorth) / 2
        func xy(_ point: Coordinate) -> (Double, Double) {
            let p = projection.project(point)
            return (width / 2 + (p.east - centerEast) / scale, height / 2 - (p.north - centerNorth) / scale)
        }
        func polyline(_ points: [Coordinate]) -> String {
            points.map { point in
                let (x, y) = xy(point)
                return "\(decimal(x, 1)),\(decimal(y, 1))"
            }.joined(separator: " ")
        }
        var body = ways.map { WaysDrawing.path($0, xy: xy, bounds: (width, height)) } ?? ""
        if let line = mine.first?.routePoints, !line.isEmpty {
            body +=
                "<polyline class=\"route\" points=\"\(polyline(line))\" fill=\"none\" stroke=\"#9aa\" stroke-width=\"7\" stroke-linejoin=\"round\"/>"
        }
        for row in mine {
            let colour = self.palette[(conditions.firstIndex(of: row.condition) ?? 0) % self.palette.count]
            body +=
                "<polyline class=\"track\" points=\"\(polyline(row.track))\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" stroke-opacity=\"0.7\"><title>\(xmlEscaped("\(row.participant) trial \(row.trial) (\(row.condition))"))</title></polyline>"
        }
        let legend = conditions.enumerated().map { index, condition in
            "<span><i style=\"background:\(self.palette[index % self.palette.count])\"></i>\(xmlEscaped(condition))</span>"
        }.joined()
        return "<h3>\(xmlEscaped(route))</h3>\n"
            + "<div class=\"legend\"><span><i style=\"background:#d6d6d6\"></i>walkable ways</span><span><i style=\"background:#9aa\"></i>route</span>\(legend)</div>\n"
            + "<svg class=\"map\" data-route=\"\(xmlEscaped(route))\" width=\"\(Int(width))\" height=\"\(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">\(body)</svg>"
    }

    /// A strip plot of one figure: a column per condition, every trial a dot, the median a bar, each participant's
    /// trials joined by a line.
    static func plot(_ metric: Metric, rows: [Row], conditions: [String]) -> String {
        let width = 120.0 + 160.0 * Double(conditions.count), height = 260.0
        let top = 30.0, bottom = 40.0, left = 60.0
        let values = rows.compactMap { $0.summary.flatMap(metric.value) }
        guard let low = values.min(), let high = values.max() else {
            return
                "<svg class=\"plot\" width=\"\(Int(width))\" height=\"60\"><text x=\"10\" y=\"30\">\(xmlEscaped(metric.title)): no values</text></svg>"
        }
        let span = high > low ? high - low : max(1, abs(high))
        let minimum = low - 0.05 * span, maximum = high + 0.05 * span
        func y(_ value: Double) -> Double { top + (maximum - value) / (maximum - minimum) * (height - top - bottom) }
        func x(_ condition: Int) -> Double { left + 80 + 160 * Double(condition) }
        let participants = self.participants(rows)
        func jitter(_ participant: String) -> Double {
            let index = Double(participants.firstIndex(of: participant) ?? 0)
            return participants.count > 1 ? (index / Double(participants.count - 1) - 0.5) * 50 : 0
        }
        var svg =
            "<svg class=\"plot\" data-metric=\"\(metric.column)\" width=\"\(Int(width))\" height=\"\(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">"
        svg += "<text x=\"10\" y=\"18\" font-size=\"13\">\(xmlEscaped(metric.title))</text>"
        for tick in 0...4 {
            let value = minimum + (maximum - minimum) * Double(tick) / 4
            svg +=
                "<line x1=\"\(left)\" x2=\"\(width - 10)\" y1=\"\(decimal(y(value), 1))\" y2=\"\(decimal(y(value), 1))\" stroke=\"#e4e4e4\"/>"
                + "<text x=\"6\" y=\"\(decimal(y(value) + 4, 1))\" font-size=\"11\" fill=\"#666\">\(decimal(value, 2))</text>"
        }
        for participant in participants {
            let points = conditions.enumerated().compactMap { index, condition -> (Double, Double)? in
                let mine = rows.filter { $0.participant == participant && $0.condition == condition }
                    .compactMap { $0.summary.flatMap(metric.value) }
                guard !mine.isEmpty else { return nil }
                return (x(index) + jitter(participant), y(mine.reduce(0, +) / Double(mine.count)))
            }
            if points.count > 1 {
                svg +=
                    "<polyline fill=\"none\" stroke=\"#9ab\" stroke-width=\"1\" points=\""
                    + points.map { "\(decimal($0.0, 1)),\(decimal($0.1, 1))" }.joined(separator: " ") + "\"/>"
            }
        }
        for (index, condition) in conditions.enumerated() {
            let mine = rows.filter { $0.condition == condition }
            for row in mine {
                guard let value = row.summary.flatMap(metric.value) else { continue }
                let colour = row.aborted ? "#e0301e" : "#1f5fbf"
                svg +=
                    "<circle class=\"trial\" cx=\"\(decimal(x(index) + jitter(row.participant), 1))\" cy=\"\(decimal(y(value), 1))\" r=\"4\" fill=\"\(colour)\"><title>\(xmlEscaped("\(row.participant) trial \(row.trial): \(decimal(value, 2))"))</title></circle>"
            }
            if let median = StudyStatistics.quantile(mine.compactMap { $0.summary.flatMap(metric.value) }, 0.5) {
                svg +=
                    "<line class=\"median\" x1=\"\(decimal(x(index) - 40, 1))\" x2=\"\(decimal(x(index) + 40, 1))\" y1=\"\(decimal(y(median), 1))\" y2=\"\(decimal(y(median), 1))\" stroke=\"#222\" stroke-width=\"3\"/>"
            }
            svg +=
                "<text x=\"\(decimal(x(index) - 30, 1))\" y=\"\(decimal(height - 14, 1))\" font-size=\"12\">\(xmlEscaped(condition))</text>"
        }
        return svg + "</svg>"
    }
}
