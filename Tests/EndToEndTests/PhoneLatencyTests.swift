import Foundation
import NavCore
import Parsers
import Testing

extension ProcessSuites {
    /// The phone in the loop, every part its own process: the phone stand-in (phyphox's protocol over HTTP) serves a
    /// recording in which the phone, flat at the route's start, turns 90° off the route and back every 1.5 s; the
    /// source, smoother, route controller and haptic sink run as in a field session, the band is the emulator.
    /// Prints the time from the phone's turn (the sample's own time on the phone's clock, which is the host's here)
    /// to the band's first frame with a motor running; then freezes the phone and checks the sink goes quiet with one
    /// signal-lost.
    @Suite struct PhoneLatencyTests {
        /// Monaco's field at the route's start (WMM2025, late 2026): horizontal and downward [µT], declination [°].
        private static let horizontal = 23.66, down = 40.79

        /// Writes a phyphox CSV export: fixes once a second at `place`, the phone flat, facing `on` (true) for 1.5 s
        /// and `on + 90°` for 1.5 s, over and over, sampled at 50 Hz.
        private func recording(
            at place: Coordinate, facing on: Double, seconds: Double, folder: String
        ) throws
            -> [Double]
        {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let declination = try #require(
                MagneticModel.wmm2025.field(latitude: place.latitude, longitude: place.longitude, year: 2026.9)
            )
            .declinationDegrees
            var location = "\"Time (s)\",\"Latitude (°)\",\"Longitude (°)\",\"Height (m)\",\"Velocity (m/s)\","
            location += "\"Direction (°)\",\"Horizontal Accuracy (m)\",\"Vertical Accuracy (m)\"\n"
            for second in 0..<Int(seconds) {
                location += "\(Double(second) + 0.5),\(place.latitude),\(place.longitude),40,-1,-1,4,6\n"
            }
            var accelerometer = "\"Time (s)\",\"X (m/s^2)\",\"Y (m/s^2)\",\"Z (m/s^2)\"\n"
            var magnetometer = "\"Time (s)\",\"X (µT)\",\"Y (µT)\",\"Z (µT)\"\n"
            var turns: [Double] = []
            for index in 0..<Int(seconds * 50) {
                let t = Double(index) / 50 + 0.001
                let half = Int(t / 1.5)
                if index > 0, Int((t - 0.02) / 1.5) != half, half % 2 == 1 { turns.append(Double(half) * 1.5) }
                let magnetic = (half % 2 == 0 ? on : on + 90) - declination
                let h = magnetic * .pi / 180
                accelerometer += "\(t),0.01,-0.02,9.81\n"
                magnetometer += "\(t),\(-Self.horizontal * sin(h)),\(Self.horizontal * cos(h)),\(-Self.down)\n"
            }
            try location.write(toFile: folder + "/Location.csv", atomically: true, encoding: .utf8)
            try accelerometer.write(toFile: folder + "/Accelerometer.csv", atomically: true, encoding: .utf8)
            try magnetometer.write(toFile: folder + "/Magnetometer.csv", atomically: true, encoding: .utf8)
            return turns
        }

        @Test func fromAPhoneSampleToABandFrameAndAPhoneThatGoesAway() async throws {
            let binary = try hapticnavExecutable()
            let folder = try scratchFolder()
            let routeFile = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let route = try RouteFile.load(file: routeFile)
            let start = route.points[0]
            // The route's direction over its first 25 m: guidance says nothing while the phone faces it.
            let ahead = route.points.first { Geodesic.wgs84.inverse(start, $0).distanceMeters > 25 } ?? route.points[1]
            let bearing = Geodesic.wgs84.inverse(start, ahead).initialAzimuthDegrees
            let turns = try self.recording(at: start, facing: bearing, seconds: 40, folder: "\(folder)/phone")
            let phonePort = freeTCPPort(), bandPort = freeTCPPort()
            let band = try ChildProcess(
                binary, ["band-emulator", "--tcp", "127.0.0.1:\(bandPort)", "--log", "\(folder)/band.jsonl"])
            defer { band.ensureStopped() }
            let config = """
                {
                  stages: {
                    source: { plugin: "phyphox", publish: "ipc://\(folder)/source.sock",
                              settings: { url: "http://127.0.0.1:\(phonePort)", timeoutSeconds: 0.5 } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock" },
                    route: { plugin: "file", inputs: ["smoother"], topics: ["smoothed"], publish: "ipc://\(folder)/route.sock",
                             settings: { file: "\(routeFile)" }, options: { destination: [43.72977, 7.416504] } },
                    haptic: { plugin: "band", inputs: ["source", "route"], topics: ["heading", "target", "progress", "fix"],
                              publish: "ipc://\(folder)/haptic.sock", settings: { tcp: "127.0.0.1:\(bandPort)" },
                              options: { offsetDegrees: 0, debounceSeconds: 0, staleAfterSeconds: 3, headingStaleAfterSeconds: 1 } },
                    recorder: { role: "recorder", plugin: "jsonl", inputs: ["haptic"], topics: ["status"],
                                settings: { file: "\(folder)/haptic-status.jsonl" } },
                  },
                }
                """
            try config.write(toFile: "\(folder)/field.json5", atomically: true, encoding: .utf8)
            let stages = try ["recorder", "haptic", "route", "smoother", "source"].map {
                try ChildProcess(binary, ["stage", $0, "--config", "\(folder)/field.json5"])
            }
            defer { for stage in stages { stage.ensureStopped() } }
            let phone = try ChildProcess(
                binary, ["phone-standin", "--recording", "\(folder)/phone", "--listen", "127.0.0.1:\(phonePort)"])
            defer { phone.ensureStopped() }
            #expect(await eventually(within: 20) { phone.stdout.contains("started at") }, "\(phone.stderr)")
            let line = phone.stdout.split(separator: "\n").first { $0.contains("started at") } ?? ""
            let startedAt = try #require(
                line.split(separator: " ").compactMap { Double($0) }.first { $0 > 1e9 }, "\(line)")
            // Every turn away from the route that the band can have heard of, 2 s after the first fix.
            let lastTurn = turns.filter { $0 > 4 && $0 < 34 }
            #expect(await eventually(within: 60) { Date().timeIntervalSince1970 > startedAt + lastTurn.last! + 1.5 })
            let frames = bandFrames("\(folder)/band.jsonl")
            var latencies: [Double] = []
            for turn in lastTurn {
                let at = startedAt + turn
                // The first frame that runs a motor after the turn, before the phone turns back.
                if let frame = frames.first(where: {
                    $0.time >= at && $0.time < at + 1.5 && ($0.left > 0 || $0.right > 0)
                }) {
                    latencies.append(frame.time - at)
                }
            }
            let sorted = latencies.sorted()
            #expect(
                sorted.count >= lastTurn.count - 1,
                "a cue for (nearly) every turn: \(sorted.count) of \(lastTurn.count)")
            if !sorted.isEmpty {
                let p50 = sorted[sorted.count / 2],
                    p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
                print(
                    "phone sample to band frame: p50 \(String(format: "%.3f", p50)) s, p99 \(String(format: "%.3f", p99)) s, max \(String(format: "%.3f", sorted.last!)) s over \(sorted.count) turns (poll 0.1 s, heading interval 0.1 s, debounce 0)"
                )
                #expect(p50 < 0.6)
            }
            // The phone goes away (frozen: it answers nothing): the sink goes quiet with one signal-lost.
            phone.signal(SIGSTOP)
            let frozeAt = Date().timeIntervalSince1970
            defer { phone.signal(SIGCONT) }
            func signalLost() -> Int? {
                let text = (try? String(contentsOfFile: "\(folder)/haptic-status.jsonl", encoding: .utf8)) ?? ""
                let last = text.split(separator: "\n").last { $0.contains("\"signalLost\"") } ?? ""
                guard let range = last.range(of: "\"name\":\"signalLost\",\"value\":") else { return nil }
                return Int(last[range.upperBound...].prefix { $0.isNumber })
            }
            let before = signalLost() ?? 0
            #expect(await eventually(within: 10) { (signalLost() ?? 0) > before }, "the sink noticed")
            let quiet = await eventually(within: 5) {
                bandFrames("\(folder)/band.jsonl").last.map { $0.left == 0 && $0.right == 0 && $0.time > frozeAt }
                    == true
            }
            #expect(quiet, "motors at zero")
            // Still one signal-lost a few seconds later (not one per check).
            try await Task.sleep(for: .seconds(3))
            #expect(signalLost() == before + 1, "one signal-lost: \(String(describing: signalLost()))")
            let stopped = bandFrames("\(folder)/band.jsonl").first {
                $0.time > frozeAt && $0.left == 0 && $0.right == 0
            }
            print(
                "phone frozen: signal-lost \(before) → \(signalLost() ?? -1), motors at 0 \(stopped.map { String(format: "%.2f", $0.time - frozeAt) } ?? "?") s after"
            )
        }
    }
}
