import Foundation
import NavCore
import TestSupport
import Testing

/// `hapticnav calibrate` against a simulated walker who follows the calibration routine in another process.
extension ProcessSuites.Data {
    @Suite(.serialized) struct CalibrateTests {
        private func run(tilt: Bool) async throws -> (status: Int32?, output: String, file: String) {
            let folder = try scratchFolder()
            // A straight walk due north, as the routine wants: the walker keeps facing north after finding it.
            let start = (lat: 43.7300, lon: 7.4200)
            try
                "{\"type\":\"LineString\",\"coordinates\":[[\(start.lon),\(start.lat)],[\(start.lon),\(start.lat + 0.003)]]}"
                .store(toFile: "\(folder)/north.geojson")
            let tiltSetting = tilt ? ", tiltEpisodes: [[2, 2]]" : ""
            let config = """
                {
                  bus: { joinGraceSeconds: 0.5 },
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                              settings: { route: "\(folder)/north.geojson", pace: 4, calibrationRoutine: true, pocketOffsetDegrees: 73,
                                          phonePitchDegrees: 40, compassNoiseDegrees: 2, seed: 9\(tiltSetting) } },
                    haptic: { plugin: "console", inputs: ["source"], publish: "ipc://\(folder)/haptic.sock",
                              options: { calibrationFile: "\(folder)/calibration.json" } },
                  },
                }
                """
            try config.store(toFile: "\(folder)/pipeline.json5")
            let binary = try hapticnavExecutable()
            let calibrate = try ChildProcess(
                binary, ["calibrate", "--config", "\(folder)/pipeline.json5", "--timeout", "60"])
            defer { calibrate.ensureStopped() }
            // No wait here: the source holds its first messages for the bus's join grace (0.5 s).
            let source = try ChildProcess(binary, ["stage", "source", "--config", "\(folder)/pipeline.json5"])
            defer { source.ensureStopped() }
            let status = await calibrate.wait(seconds: 60)
            return (status, calibrate.stdout, "\(folder)/calibration.json")
        }

        @Test func aSimulatedWalkerIsCalibratedAndTheOffsetIsSaved() async throws {
            let (status, output, file) = try await self.run(tilt: false)
            #expect(status == 0, "\(output)")
            #expect(output.contains("[findNorth]") && output.contains("[putAway]") && output.contains("[move]"))
            let saved = try #require(
                JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
            let offset = try #require(saved["offsetDegrees"] as? Double)
            #expect(abs(offset - 73) < 3, "offset \(offset)")
        }

        /// The phone live: the stand-in serves a phone (by phyphox's protocol) held flat facing 40° and turned to north
        /// over four seconds, held there, put in the pocket 73° off (5 s countdown), then carried walking due north.
        /// The phone's headings are magnetic; the source turns them true with the model at its fixes.
        @Test func aPhoneReadLiveByPhyphoxIsCalibrated() async throws {
            let folder = try scratchFolder()
            let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
            try writePhyphoxRecording(
                folder: "\(folder)/phone", seconds: 40, at: start,
                heading: { t in t < 2 ? 40 : (t < 6 ? 40 - 10 * (t - 2) : (t < 8 ? 0 : 73)) },
                fix: { t in
                    // Walking north at 1.3 m/s from 14 s.
                    let walked = max(0, t - 14) * 1.3
                    return (
                        Coordinate(latitude: start.latitude + walked / 111_195, longitude: start.longitude),
                        t < 14 ? 0 : 1.3, 0
                    )
                })
            let port = freeTCPPort()
            let config = """
                {
                  bus: { joinGraceSeconds: 0.5 },
                  stages: {
                    source: { plugin: "phyphox", publish: "ipc://\(folder)/source.sock",
                              settings: { url: "http://127.0.0.1:\(port)" } },
                    haptic: { plugin: "console", inputs: ["source"], publish: "ipc://\(folder)/haptic.sock",
                              options: { calibrationFile: "\(folder)/calibration.json" } },
                  },
                }
                """
            try config.store(toFile: "\(folder)/phone.json5")
            let binary = try hapticnavExecutable()
            let calibrate = try ChildProcess(
                binary, ["calibrate", "--config", "\(folder)/phone.json5", "--timeout", "60"])
            defer { calibrate.ensureStopped() }
            let source = try ChildProcess(binary, ["stage", "source", "--config", "\(folder)/phone.json5"])
            defer { source.ensureStopped() }
            let (phone, _) = try await startPhoneStandIn(binary, recording: "\(folder)/phone", port: port)
            defer { phone.ensureStopped() }
            let status = await calibrate.wait(seconds: 60)
            print(calibrate.stdout.split(separator: "\n").last ?? "")
            #expect(status == 0, "\(calibrate.stdout)\n\(source.stderr.suffix(1500))")
            #expect(calibrate.stdout.contains("[findNorth]") && calibrate.stdout.contains("[move]"))
            let saved = try #require(
                JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(folder)/calibration.json")))
                    as? [String: Any])
            let offset = try #require(saved["offsetDegrees"] as? Double)
            #expect(abs(offset - 73) < 2, "offset \(offset)")
        }

        @Test func aTiltEpisodeAbortsTheCalibration() async throws {
            let (status, output, file) = try await self.run(tilt: true)
            #expect(status == 1)
            #expect(output.contains("aborted") && output.contains("upright"), "\(output)")
            #expect(!FileManager.default.fileExists(atPath: file))
        }
    }
}
