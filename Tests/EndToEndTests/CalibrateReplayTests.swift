import Foundation
import Testing

extension ProcessSuites.Data {
    /// `hapticnav calibrate --replay` on a real phone recording (phyphox: accelerometer and magnetometer of a 116 m
    /// hallway loop, bundled in data/walks with its licence).
    @Suite struct CalibrateReplayTests {
        let recording = repositoryRoot.appendingPathComponent("data/walks/phyphox-indoor-loop-116m").path

        @Test func aRecordingAlongACorridorCalibratesAgainstTheDirectionFacedAndSavesTheOffset() async throws {
            let output = try scratchFolder() + "/calibration.json"
            let run = try ChildProcess(
                try hapticnavExecutable(),
                ["calibrate", "--replay", self.recording, "--facing", "300", "--output", output])
            #expect(await run.wait(seconds: 60) == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.contains("168 steps in the accelerometer"), "walking from the steps: \(run.stdout)")
            for step in ["[findNorth]", "[putAway]", "[move]", "[done]"] {
                #expect(run.stdout.contains(step), "\(step) in \(run.stdout)")
            }
            let line = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("calibrated: offset ") })
            let numbers = line.split(whereSeparator: { !"0123456789.".contains($0) }).compactMap { Double($0) }
            let (offset, spread) = (numbers[0], numbers[1])
            print("phyphox hallway loop, facing 300°: \(line)")
            #expect(spread <= 10, "the run's own limit")
            #expect(offset < 30 || offset > 330, "the phone was held pointing along the corridor: \(offset)°")
            let saved = try #require(
                JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
            #expect(abs((saved["offsetDegrees"] as? Double ?? -1) - offset) < 0.06)
        }

        @Test func aRecordingThatNeverFacesNorthEndsUnfinishedAndSaysHowNearItCame() async throws {
            let run = try ChildProcess(try hapticnavExecutable(), ["calibrate", "--replay", self.recording])
            #expect(await run.wait(seconds: 60) == 1, "\(run.stdout)\n\(run.stderr)")
            #expect(
                run.stdout.contains(
                    "calibration unfinished: the log ended in step 'findNorth' (the heading came within 17° of 0°"),
                "\(run.stdout)")
        }

        @Test func aLogThatIsNotThereIsOneLineAndExitOne() async throws {
            let run = try ChildProcess(try hapticnavExecutable(), ["calibrate", "--replay", "/nowhere/log.csv"])
            #expect(await run.wait(seconds: 30) == 1)
            #expect(run.stderr.contains("/nowhere/log.csv") && !run.stderr.contains("Usage:"), "\(run.stderr)")
        }
    }
}
