import ArgumentParser
import Evaluation
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import Runtime
import SystemIO
import MapLogic
import Lab

struct StudyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "study",
        abstract: "A study: participants × routes × conditions, counterbalanced.",
        subcommands: [Init.self, RunTrial.self, Simulate.self, StudyReportCommand.self])

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Plan a study from DIR/study.json5: a counterbalanced schedule in DIR/schedule.csv, shown as a table.",
            discussion: """
                Condition order follows a Williams design (each condition in each position, and after each other \
                condition, equally often); routes are rotated so that each condition meets each route equally. \
                The table says whether the participant count balances it fully, and which count would.
                """)

        @Argument(help: "The study folder (with study.json5).")
        var folder: String

        @Flag(help: "Replace a schedule.csv that differs.")
        var force = false

        func run() async throws {
            let study: StudyFile
            let schedule: StudySchedule
            do {
                study = try StudyFile.load(folder: self.folder)
                schedule = try study.schedule()
                _ = try PipelineConfig.load(file: study.config, calibrationMayBeMissing: true)
            } catch let error as ConfigError {
                throw CommandFailure("\(error)")
            }
            let file = "\(self.folder)/schedule.csv"
            if let existing = try? InputFile.contents(of: file), existing != Array(schedule.csv.utf8), !self.force {
                throw CommandFailure(
                    "\(file) exists and differs from this plan (trials may have been run by it); --force replaces it")
            }
            do {
                let output = try OutputFile(path: file, mode: .truncate)
                output.write(schedule.csv)
                output.close()
            } catch {
                throw CommandFailure("\(error)")
            }
            print(
                "study '\(study.name)': \(study.participants.count) participants × \(study.conditions.count) conditions, routes \(study.routes.map(\.name).joined(separator: ", "))"
            )
            let width = max(11, study.participants.map(\.count).max() ?? 0)
            let columns = (1...study.conditions.count).map { "trial \($0)" }
            print((["participant".padding(width)] + columns.map { $0.padding(24) }).joined(separator: " "))
            for participant in study.participants {
                let trials = schedule.trials.filter { $0.participant == participant }
                print(
                    participant.padding(width) + " "
                        + trials.map { "\($0.condition) on \($0.route)".padding(24) }.joined(separator: " "))
            }
            let multiple = StudySchedule.balancedMultiple(
                conditions: study.conditions.count, routes: study.routes.count)
            if schedule.isBalanced {
                print(
                    "balanced: each condition in each position \(schedule.positionCounts[0][0]) times, on each route \(schedule.routeCounts[0][0]) times"
                )
            } else {
                print(
                    "NOT fully balanced with \(study.participants.count) participants: positions \(schedule.positionCounts), condition × route \(schedule.routeCounts); a multiple of \(multiple) participants balances both"
                )
            }
            print("schedule: \(file)")
        }
    }
}

extension StudyCommand {
    struct StudyReportCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract: "A study's trials and conditions side by side: trials.csv and one self-contained HTML page.",
            discussion: """
                One row per trial of the schedule (its session's figures and its record: completed, aborted, \
                missing), per condition the median and quartiles, paired within-participant differences with a \
                Wilcoxon signed-rank test and the rank-biserial effect size, every trial plotted, order effects, and \
                the missing and aborted trials named. Each condition is walked on another route, so the paired tests \
                take the figures normalised by the route (ratios, a share of the walk, rates per minute or per \
                100 m), centred on each route's mean (the route as a factor), not raw times or counts.
                """)

        @Argument(help: "The study folder.")
        var folder: String

        @Option(help: "The HTML page to write.")
        var out: String?

        @Option(help: "The CSV file of trials to write.")
        var csv: String?

        @Option(
            help:
                "The map (OSM XML or PBF) whose walkable ways are drawn under the tracks; the study config's by default."
        )
        var map: String?

        @Flag(help: "Report the simulated participants' trials (DIR/simulated) instead of the participants'.")
        var simulated = false

        func run() throws {
            let (study, schedule) = try loadStudy(self.folder)
            let rows = StudyReport.rows(
                study: study, schedule: schedule,
                kind: self.simulated ? StudyTrial.simulated : StudyTrial.participants)
            if let csv = self.csv { try writeFile(Array(StudyReport.csv(rows).utf8), to: csv) }
            if let out = self.out {
                let ways: WalkingGraph?
                do {
                    ways = try WalkableWays.graph(
                        given: self.map, found: WalkableWays.map(config: study.config),
                        note: { StandardStreams.writeError("study report: \($0)\n") })
                } catch {
                    throw CommandFailure("\(error)")
                }
                let html = StudyReport.html(rows, study: study, schedule: schedule, ways: ways)
                try writeFile(Array(html.utf8), to: out)
            }
            let completed = rows.filter { $0.status == "completed" }.count
            print("study '\(study.name)': \(completed) of \(rows.count) trials completed")
            let summaries = StudyReport.conditions(rows, names: schedule.conditions)
            let shown = [
                "time_ratio", "distance_ratio", "off_course_percent", "turn_cues_per_min", "reroutes_per_100m",
            ]
            print(
                "condition".padding(12) + "trials".padding(8) + "arrived".padding(9)
                    + shown.map { $0.padding(22) }.joined())
            for summary in summaries {
                let figures = shown.map { column -> String in
                    guard let (median, q1, q3) = summary.figures[column] else { return "–".padding(22) }
                    return
                        "\(fixedDecimal(median, digits: 2)) [\(fixedDecimal(q1, digits: 2))–\(fixedDecimal(q3, digits: 2))]"
                        .padding(22)
                }
                print(
                    summary.condition.padding(12) + "\(summary.trials)".padding(8) + "\(summary.arrived)".padding(9)
                        + figures.joined())
            }
            print(StudyReport.method)
            if let warning = StudyReport.singleConditionWarning(StudyReport.routeCentred(rows).singleConditionRoutes) {
                print(warning)
            }
            for comparison in StudyReport.comparisons(rows, names: schedule.conditions)
            where shown.contains(comparison.metric) {
                let test = comparison.test
                print(
                    "\(comparison.metric): \(comparison.first) − \(comparison.second) over \(comparison.differences.count) participants: median \(test.medianDifference.map { fixedDecimal($0, digits: 2) } ?? "–"), Wilcoxon p \(test.p.map { fixedDecimal($0, digits: 3) } ?? "–"), r \(test.rankBiserial.map { fixedDecimal($0, digits: 2) } ?? "–")"
                )
            }
            for row in rows where row.status != "completed" {
                print(
                    "\(row.participant) trial \(row.trial) (\(row.condition) on \(row.route)): \(row.status), \(row.reason)"
                )
            }
            if let csv = self.csv { print("trials: \(csv)") }
            if let out = self.out { print("report: \(out)") }
        }
    }
}

/// A study folder's plan and the schedule its trials are run by (`schedule.csv`, which must still be the plan's);
/// a mistake is one line naming its key or file.
func loadStudy(_ folder: String) throws -> (StudyFile, StudySchedule) {
    do {
        let study = try StudyFile.load(folder: folder)
        return (study, try study.writtenSchedule())
    } catch let error as ConfigError {
        throw CommandFailure("\(error)")
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        self.count >= width ? self : self + String(repeating: " ", count: width - self.count)
    }
}
