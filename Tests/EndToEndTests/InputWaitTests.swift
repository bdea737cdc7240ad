import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// A stage whose input has no publisher says so, with the endpoint and for how long, in its status and so in
    /// the monitor; once the publisher comes, it says that too.
    @Suite struct InputWaitTests {
        @Test func aStageWithoutItsPublisherSaysWhatItWaitsForInTheMonitor() async throws {
            let folder = try scratchFolder()
            let binary = try hapticnavExecutable()
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let config = """
                {
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(folder)/source.sock", settings: { route: "\(route)", pace: 1 } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock" },
                    route: { plugin: "file", inputs: ["smoother"], topics: ["smoothed"], publish: "ipc://\(folder)/route.sock",
                             settings: { file: "\(route)" }, options: { destination: [43.72977, 7.416504] } },
                  },
                }
                """
            let file = "\(folder)/pipeline.json5"
            try config.store(toFile: file)
            // Only the route controller: its input, the smoother, is not running.
            let stage = try ChildProcess(binary, ["stage", "route", "--config", file])
            defer { stage.ensureStopped() }
            let monitor = try ChildProcess(
                binary, ["monitor", "--config", file, "--topic", "status", "--json", "--seconds", "60"])
            defer { monitor.ensureStopped() }
            let expected = "waiting for publisher 'smoother' at ipc://\(folder)/smoother.sock for "
            func statuses() -> [String] {
                monitor.stdout.split(separator: "\n").compactMap { line in
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        let payload = object["payload"] as? [String: Any], payload["stage"] as? String == "route"
                    else { return nil }
                    return payload["message"] as? String
                }
            }
            let waiting = await eventually(within: 30) { statuses().contains { $0.contains(expected) } }
            #expect(waiting, "the monitor shows the wait: \(statuses()); stage: \(stage.stderr.suffix(800))")
            // The time waited grows, in whole seconds.
            let secondsWaited = statuses().compactMap { message -> Int? in
                guard let range = message.range(of: expected) else { return nil }
                return Int(message[range.upperBound...].prefix { $0.isNumber })
            }
            #expect(secondsWaited.first.map { $0 >= 2 } == true, "\(secondsWaited)")
            // The smoother comes: the wait ends, and the status says so.
            let smoother = try ChildProcess(binary, ["stage", "smoother", "--config", file])
            defer { smoother.ensureStopped() }
            let heard = await eventually(within: 30) {
                statuses().contains { $0.contains("smoother.sock is heard again") }
            }
            #expect(heard, "\(statuses())")
        }
    }
}
