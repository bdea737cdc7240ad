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

struct StudyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "study",
        abstract: "A study: participants × routes × conditions, counterbalanced.",
        subcommands: [Init.self, RunTrial.self, Simulate.self])

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

extension String {
    fileprivate func padding(_ width: Int) -> String {
        self.count >= width ? self : self + String(repeating: " ", count: width - self.count)
    }
}
