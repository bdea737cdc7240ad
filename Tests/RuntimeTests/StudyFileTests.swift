import Foundation
import NavCore
@testable import Runtime
import Testing
import TestSupport

@Suite struct StudyFileTests {
    private func write(_ text: String) throws -> String {
        let folder = try scratchFolder()
        try text.write(toFile: "\(folder)/study.json5", atomically: true, encoding: .utf8)
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
