import Evaluation
import Foundation
import NavCore
@testable import Lab
import Runtime
import Testing
import TestSupport

@Suite struct StudyFileTests {
    private func write(_ text: String) throws -> String {
        let folder = try scratchFolder()
        try text.store(toFile: "\(folder)/study.json5")
        return folder
    }

    @Test func aStudyFileGivesItsParticipantsRoutesConditionsAndSchedule() throws {
        let folder = try self.write(
            """
            {
              name: "band against speaker",
              config: "lab.json5",
              participants: 8,
              routes: { harbour: { destination: [43.7347, 7.4206] }, casino: { file: "routes/casino.geojson" } },
              conditions: {
                speaker: { haptic: { plugin: "speaker" } },
                band: { haptic: { plugin: "band", options: { fallback: [] } } },
              },
            }
            """)
        let study = try StudyFile.load(folder: folder)
        #expect(study.name == "band against speaker" && study.config == "\(folder)/lab.json5")
        #expect(study.participants == ["P01", "P02", "P03", "P04", "P05", "P06", "P07", "P08"])
        #expect(study.routes.map(\.name) == ["casino", "harbour"])
        #expect(study.routes[0].source == .file("\(folder)/routes/casino.geojson"))
        #expect(study.routes[1].source == .destination(Coordinate(latitude: 43.7347, longitude: 7.4206)))
        #expect(study.conditions.map(\.name) == ["band", "speaker"])
        let schedule = try study.schedule()
        #expect(schedule.isBalanced && schedule.trials.count == 16)
    }

    @Test(arguments: [
        (
            "{ config: \"x\", participants: 2, routes: { r: { destination: [1, 2], file: \"f\" } }, conditions: { a: {} } }",
            "study.routes.r"
        ),
        (
            "{ config: \"x\", participants: 0, routes: { r: { file: \"f\" } }, conditions: { a: {} } }",
            "study.participants"
        ),
        (
            "{ config: \"x\", participants: [\"P 1\"], routes: { r: { file: \"f\" } }, conditions: { a: {} } }",
            "study.participants[0]"
        ),
        (
            "{ config: \"x\", participants: 2, routes: { r: { file: \"f\" } }, conditions: { a: 3 } }",
            "study.conditions.a"
        ),
        ("{ participants: 2, routes: { r: { file: \"f\" } }, conditions: { a: {} } }", "config"),
        (
            "{ config: \"x\", participants: 2, routes: { r: { file: \"f\" } }, conditions: { a: {} }, extra: 1 }",
            "extra"
        ),
    ])
    func aMistakeNamesItsKey(text: String, key: String) throws {
        let folder = try self.write(text)
        do {
            _ = try StudyFile.load(folder: folder)
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)".contains(key), "\(error)")
        }
    }
}

@Suite struct StudyTrialTests {
    /// A trial's config: the study's with `directory` (its relative paths still hold), the route's destination, the
    /// condition merged in (another plugin drops the old one's settings), the lock on; it loads as a pipeline.
    @Test func aTrialsConfigIsTheStudysWithItsRouteConditionAndLock() throws {
        let folder = try scratchFolder()
        let config = repositoryRoot.appendingPathComponent("configs/demo.json5").path
        try """
        {
          config: "\(config)",
          participants: 2,
          routes: { back: { destination: [43.731947, 7.421611], start: [43.72977, 7.416504] } },
          conditions: {
            console: { haptic: { plugin: "console", settings: { prefix: "" }, options: { toleranceDegrees: 25 } } },
            band: { haptic: { options: { fallback: null } } },
          },
        }
        """.store(toFile: "\(folder)/study.json5")
        let study = try StudyFile.load(folder: folder)
        let schedule = try study.schedule()
        let trial = try StudyTrial.find(study: study, schedule: schedule, participant: "P01", number: nil)
        #expect(trial.trial.number == 1)
        #expect(trial.folder.hasSuffix("/sessions/P01/T01-\(trial.trial.condition)-back"))
        for condition in ["console", "band"] {
            let scheduled = try #require(schedule.trials.first { $0.participant == "P01" && $0.condition == condition })
            let tree = try StudyTrial(study: study, trial: scheduled).config()
            let haptic = try #require(tree["stages"]?["haptic"])
            #expect(haptic["options"]?["lockDevice"] == .bool(true))
            #expect(tree["stages"]?["route"]?["options"]?["destination"] == [.number(43.731947), .number(7.421611)])
            #expect(tree["stages"]?["source"]?["settings"]?["from"] == [.number(43.72977), .number(7.416504)])
            #expect(tree["directory"] == .string(repositoryRoot.appendingPathComponent("configs").path))
            if condition == "console" {
                #expect(haptic["plugin"] == "console" && haptic["settings"] == ["prefix": ""])
                #expect(haptic["options"]?["toleranceDegrees"] == .number(25))
                #expect(haptic["options"]?["fallback"] != nil, "kept from the study's config")
            } else {
                #expect(haptic["plugin"] == "band" && haptic["settings"]?["tcp"] != nil)
                #expect(haptic["options"]?["fallback"] == nil, "null removes")
            }
            let file = try StudyTrial(study: study, trial: scheduled).writeConfig()
            let pipeline = try PipelineConfig.load(file: file)
            #expect(
                pipeline.stages.first { $0.name == "route" }?.settings.baseDirectory == tree["directory"]?.stringValue)
        }
        // A condition that names a stage the config does not have is an error naming it.
        try """
        { config: "\(config)", participants: 2, routes: { r: { destination: [1, 2] } },
          conditions: { a: { hapticc: {} }, b: {} } }
        """.store(toFile: "\(folder)/study.json5")
        let wrong = try StudyFile.load(folder: folder)
        let first = try #require(try wrong.schedule().trials.first { $0.condition == "a" })
        #expect {
            try StudyTrial(study: wrong, trial: first).config()
        } throws: { "\($0)".contains("study.conditions.a.hapticc") }
    }
}
