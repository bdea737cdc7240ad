import Foundation
import NavCore
import Parsers
import TestSupport
import Testing

extension ProcessSuites.Data {
    /// The phone in the loop, every part its own process: the phone stand-in (phyphox's protocol over HTTP) serves a
    /// recording in which the phone, flat at the route's start, turns 90° off the route and back every 1.5 s; the
    /// source, smoother, route controller and haptic sink run as in a field session, the band is the emulator.
    /// Prints the time from the phone's turn (the sample's own time on the phone's clock, which is the host's here)
    /// to the band's first frame with a motor running; then freezes the phone and checks the sink goes quiet with one
    /// signal-lost.
    @Suite struct PhoneLatencyTests {
        @Test func fromAPhoneSampleToABandFrameAndAPhoneThatGoesAway() async throws {
            let binary = try hapticnavExecutable()
            let folder = try scratchFolder()
            let routeFile = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let route = try RouteFile.load(file: routeFile)
            let start = route.points[0]
            // The route's direction over its first 25 m: guidance says nothing while the phone faces it.
            let ahead = route.points.first { Geodesic.wgs84.inverse(start, $0).distanceMeters > 25 } ?? route.points[1]
            let bearing = Geodesic.wgs84.inverse(start, ahead).initialAzimuthDegrees
            // Facing the route for 1.5 s, then 90° off it for 1.5 s, over and over; the turns away at 1.5 s, 4.5 s, ….
            try writePhyphoxRecording(
                folder: "\(folder)/phone", seconds: 40, at: start,
                heading: { Int($0 / 1.5) % 2 == 0 ? bearing : bearing + 90 }, fix: { _ in (start, -1, -1) })
            let turns = stride(from: 1.5, to: 40, by: 3.0).map { $0 }
            let phonePort = freeTCPPort(), bandPort = freeTCPPort()
            let band = try ChildProcess(
                binary, ["band-emulator", "--tcp", "127.0.0.1:\(bandPort)", "--log", "\(folder)/band.jsonl"])
            defer { band.ensureStopped() }
            let config = """
                {
                  stages: {
                    source: { plugin: "phyphox", publish: "ipc://\(folder)/source.sock",
                              settings: { url: "http://127.0.0.1:\(phonePort)", timeoutSeconds: 0.5, pollIntervalSeconds: 0.05, headingIntervalSeconds: 0.05 } },
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
            try config.store(toFile: "\(folder)/field.json5")
            let stages = try ["recorder", "haptic", "route", "smoother", "source"].map {
                try ChildProcess(binary, ["stage", $0, "--config", "\(folder)/field.json5"])
            }
            defer { for stage in stages { stage.ensureStopped() } }
            let (phone, startedAt) = try await startPhoneStandIn(binary, recording: "\(folder)/phone", port: phonePort)
            defer { phone.ensureStopped() }
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
                    "phone sample to band frame: p50 \(String(format: "%.3f", p50)) s, p99 \(String(format: "%.3f", p99)) s, max \(String(format: "%.3f", sorted.last!)) s over \(sorted.count) turns (poll 0.05 s, heading interval 0.05 s, as configs/field-phone.json5; debounce 0)"
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
