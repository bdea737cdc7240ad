@testable import SessionTools
import Foundation
import TestSupport
import Testing

/// `hapticnav monitor --live` in a real terminal: tmux runs it beside a running pipeline; capture-pane reads the screen.
extension ProcessSuites.Stages {
    @Suite struct LiveMonitorTests {
        /// Runs one tmux command on the test's own server; its status and output. Through Python's subprocess, which
        /// closes every other descriptor: the tmux server a first command starts would otherwise keep the one by which
        /// Foundation learns that its child ended, and the command would never seem to end.
        private func tmux(_ socket: String, _ arguments: [String]) async -> (status: Int32, output: String) {
            let run = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
            guard
                let process = try? ChildProcess(
                    "/usr/bin/env", ["python3", "-c", run, "tmux", "-L", socket] + arguments)
            else {
                return (-1, "")
            }
            // A bound against a hang: beside two busy loops, starting Python and tmux's server took more than 10 s once.
            guard let status = await process.wait(seconds: 30) else {
                process.ensureStopped()
                return (-1, "")
            }
            return (status, process.stdout)
        }

        @Test func theLiveScreenRefreshesInPlaceWithStagesPositionProgressAndCue() async throws {
            let folder = try scratchFolder()
            let root = repositoryRoot.path
            let config = """
                {
                  name: "live",
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                              settings: { route: "\(root)/data/routes/monaco-demo-walk.geojson", pace: 5, loop: true, seed: 3 } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock" },
                    route: { plugin: "osm", inputs: ["smoother"], topics: ["smoothed"], publish: "ipc://\(folder)/route.sock",
                             settings: { map: "\(root)/data/maps/monaco-highways.osm" },
                             options: { destination: [43.72977, 7.416504] } },
                    haptic: { plugin: "console", inputs: ["source", "route"], topics: ["heading", "target", "progress"],
                              publish: "ipc://\(folder)/haptic.sock", settings: { prefix: "cue | " },
                              options: { offsetDegrees: 0,
                                         control: { listen: ["ipc://\(folder)/control.sock"],
                                                    stateFile: "\(folder)/control.json" } } },
                  },
                }
                """
            let file = "\(folder)/live.json5"
            try config.store(toFile: file)
            let binary = try hapticnavExecutable()
            let run = try ChildProcess(binary, ["run", "--config", file])
            defer { run.ensureStopped() }
            let socket = "hapticnav-test-\(getpid())"
            defer {
                _ = try? ChildProcess(
                    "/usr/bin/env",
                    [
                        "python3", "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])", "tmux", "-L", socket,
                        "kill-server",
                    ])
            }
            let started = await self.tmux(
                socket,
                [
                    "new-session", "-d", "-s", "live", "-x", "150", "-y", "30",
                    "\(binary) monitor --live --config \(file)",
                ])
            #expect(started.status == 0, "tmux started")
            var screen = ""
            let complete = await eventually(within: 60) {
                screen = await self.tmux(socket, ["capture-pane", "-p", "-t", "live"]).output
                return screen.contains("guiding on console") && screen.contains("position   43.")
                    && screen.contains("next waypoint")
                    && screen.range(of: "cue        [a-zA-Z]+ [0-9.]+  on console", options: .regularExpression) != nil
            }
            #expect(complete, "the screen:\n\(screen)\nrun: \(run.stderr.suffix(500))")
            // In place: the title stays on the first line while the counts change.
            func received(_ text: String) -> Int? {
                guard let range = text.range(of: "bus: [0-9]+ received", options: .regularExpression) else {
                    return nil
                }
                return Int(text[range].split(separator: " ")[1])
            }
            let first = received(screen) ?? 0
            var later = screen
            #expect(
                await eventually(within: 10) {
                    later = await self.tmux(socket, ["capture-pane", "-p", "-t", "live"]).output
                    return (received(later) ?? 0) > first
                })
            #expect(later.split(separator: "\n").first?.hasPrefix("HapticNav monitor: ") == true)
            for stage in ["source", "smoother", "route", "haptic"] {
                #expect(later.contains("\n\(stage) "), "a row for \(stage)")
            }
            // The experimenter's keys: s stops every output (the sink's row says so), r resumes, m marks.
            for (key, answer, row) in [
                ("s", "haptic: stopped: every output silent", "stopped by experimenter"),
                ("m", "haptic: marked", "stopped by experimenter"), ("r", "haptic: resumed", "guiding on console"),
            ] {
                _ = await self.tmux(socket, ["send-keys", "-t", "live", key])
                var shown = ""
                #expect(
                    await eventually(within: 15) {
                        shown = await self.tmux(socket, ["capture-pane", "-p", "-t", "live"]).output
                        return shown.contains(answer) && shown.contains(row)
                    }, "after '\(key)':\n\(shown)")
            }
            // Ctrl-C leaves the screen and ends the monitor (its tmux session with it).
            _ = await self.tmux(socket, ["send-keys", "-t", "live", "C-c"])
            #expect(
                await eventually(within: 10) { await self.tmux(socket, ["has-session", "-t", "live"]).status != 0 })
        }
    }
}
