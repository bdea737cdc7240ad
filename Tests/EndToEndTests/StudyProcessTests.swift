@testable import SessionTools
import Foundation
import NavCore
import Runtime
import TestSupport
import Testing

/// A study folder beside the demo config: two routes of Monaco (a route file, and the way back by destination).
private func writeStudy(participants: Int, conditions: String, routes: String? = nil) throws -> String {
    let folder = try scratchFolder()
    let walk = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
    let config = repositoryRoot.appendingPathComponent("configs/demo.json5").path
    let study = """
        {
          name: "pilot",
          config: "\(config)",
          participants: \(participants),
          routes: \(routes ?? """
        {
            condamine: { file: "\(walk)" },
            back: { destination: [43.731947, 7.421611], start: [43.72977, 7.416504] },
          }
        """),
          conditions: \(conditions),
        }
        """
    try study.store(toFile: "\(folder)/study.json5")
    return folder
}

/// Splits a CSV line (fields quoted with ", "" inside).
private func fields(_ line: Substring) -> [String] {
    var fields: [String] = [], current = "", quoted = false
    var characters = Array(line)[...]
    while let character = characters.popFirst() {
        if quoted {
            if character == "\"" {
                if characters.first == "\"" {
                    current.append("\"")
                    characters.removeFirst()
                } else {
                    quoted = false
                }
            } else {
                current.append(character)
            }
        } else if character == "\"" {
            quoted = true
        } else if character == "," {
            fields.append(current)
            current = ""
        } else {
            current.append(character)
        }
    }
    return fields + [current]
}

private func table(_ csv: String) -> [[String: String]] {
    let lines = csv.split(separator: "\n")
    guard let header = lines.first.map(fields) else { return [] }
    return lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, fields($0))) }
}

extension ProcessSuites.Data {
    @Suite struct StudyProcessTests {
        /// `study init`, `study simulate` through the real processes, `study report`: the schedule is counterbalanced,
        /// every trial has its session, the report's numbers are those of the sessions, the page renders in headless
        /// Chromium; a trial cut short by a crash reads to its last record and is named aborted.
        @Test func aSimulatedStudyGoesFromInitToReportAndTheReportsNumbersAreTheSessions() async throws {
            let binary = try hapticnavExecutable()
            let folder = try writeStudy(
                participants: 4,
                conditions: """
                    { narrow: { haptic: { options: { toleranceDegrees: 10 } } }, wide: { haptic: { options: { toleranceDegrees: 25 } } } }
                    """)
            let initRun = try ChildProcess(binary, ["study", "init", folder])
            #expect(await initRun.wait(seconds: 30) == 0, "\(initRun.stderr)")
            #expect(initRun.stdout.contains("balanced: each condition in each position 2 times"), "\(initRun.stdout)")
            // Counterbalancing, read from the schedule written: each condition in each position equally often, and on
            // each route equally often.
            let schedule = table(try String(contentsOfFile: "\(folder)/schedule.csv", encoding: .utf8))
            #expect(schedule.count == 8)
            var positions: [String: Int] = [:], routes: [String: Int] = [:]
            for row in schedule {
                positions["\(row["condition"]!) \(row["trial"]!)", default: 0] += 1
                routes["\(row["condition"]!) \(row["route"]!)", default: 0] += 1
            }
            #expect(positions == ["narrow 1": 2, "narrow 2": 2, "wide 1": 2, "wide 2": 2], "\(positions)")
            #expect(routes == ["narrow back": 2, "narrow condamine": 2, "wide back": 2, "wide condamine": 2])

            let simulate = try ChildProcess(binary, ["study", "simulate", folder, "--gps", "5"])
            #expect(await simulate.wait(seconds: 300) == 0, "\(simulate.stderr.suffix(2000))")
            print(simulate.stdout)
            let report = try ChildProcess(
                binary,
                [
                    "study", "report", folder, "--simulated", "--out", "\(folder)/study.html", "--csv",
                    "\(folder)/trials.csv",
                ])
            #expect(await report.wait(seconds: 60) == 0, "\(report.stderr)")
            print(report.stdout)
            let trials = table(try String(contentsOfFile: "\(folder)/trials.csv", encoding: .utf8))
            #expect(trials.count == 8)
            // Each row against its own session, read here: arrival, time and turn-cue onsets counted from the records.
            for row in trials {
                let number = Int(row["trial"]!)!
                let session = try SessionExport.read(
                    "\(folder)/simulated/\(row["participant"]!)/T0\(number)-\(row["condition"]!)-\(row["route"]!)")
                let arrived = session.records.contains {
                    if case let .progress(progress) = $0.message { progress.state == .arrived } else { false }
                }
                #expect(row["arrived"] == (arrived ? "TRUE" : "FALSE"))
                #expect(row["status"] == (arrived ? "completed" : "aborted"))
                let times = session.fixes.map(\.timeSeconds) + session.smoothed.map(\.timeSeconds)
                let duration = try #require(times.max()) - times.min()!
                #expect(abs(Double(row["time_s"]!)! - duration) < 0.001, "\(row)")
                var onsets = 0
                var previous = CueKind.silent
                for cue in session.cues {
                    if [.turnLeft, .turnRight, .turnAround].contains(cue.kind), cue.kind != previous { onsets += 1 }
                    previous = cue.kind
                }
                let perMinute = Double(onsets) / (duration / 60)
                #expect(abs(Double(row["turn_cues_per_min"]!)! - perMinute) < 0.001, "\(row) \(onsets) onsets")
                let length = try #require(session.routes.first?.lengthMeters)
                #expect(abs(Double(row["time_ratio"]!)! - duration / (length / 1.3)) < 0.001)
            }
            // The per-condition medians of the page are the medians of the rows.
            let html = try String(contentsOfFile: "\(folder)/study.html", encoding: .utf8)
            for condition in ["narrow", "wide"] {
                let values = trials.filter { $0["condition"] == condition }.map { Double($0["time_ratio"]!)! }.sorted()
                let median = (values[1] + values[2]) / 2
                // The table's time_ratio column (trials, arrived, then it), to its two decimals: a median on a
                // rounding boundary (1.055 computed as 1.0549999…) may print either way.
                let line = report.stdout.split(separator: "\n").first { $0.hasPrefix(condition + " ") }
                let printed = line.flatMap { $0.split(separator: " ").dropFirst(3).first }.flatMap { Double($0) }
                #expect(
                    printed.map { abs($0 - median) <= 0.0051 } == true, "\(condition) median \(median) in \(line ?? "")"
                )
            }
            #expect(html.contains("Wilcoxon") && html.contains("<table id=\"pairs\">"))
            // Headless Chromium parses the page and finds every trial on each of its five plots.
            let chromium = try #require(
                ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
                    FileManager.default.isExecutableFile(atPath: $0)
                }, "chromium is not installed: run scripts/setup")
            let dom = try ChildProcess(
                chromium,
                [
                    "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(folder)/profile", "--dump-dom",
                    "file://\(folder)/study.html",
                ])
            #expect(await dom.wait(seconds: 60) == 0)
            #expect(
                dom.stdout.components(separatedBy: "class=\"trial\"").count - 1 == 5 * 8, "\(dom.stdout.prefix(300))")
            #expect(dom.stdout.components(separatedBy: "<svg class=\"plot\"").count - 1 == 5)
            // Each route's map: every trial's track over the walkable ways of the study config's map.
            #expect(dom.stdout.components(separatedBy: "<svg class=\"map\"").count - 1 == 2)
            #expect(dom.stdout.components(separatedBy: "class=\"track\"").count - 1 == 8)
            #expect(dom.stdout.components(separatedBy: "class=\"ways\"").count - 1 == 2)
            // A trial's own session report draws them too, found through its trial record.
            let first = "\(folder)/simulated/P02/T01-\(schedule[2]["condition"]!)-\(schedule[2]["route"]!)"
            let sessionReport = try ChildProcess(binary, ["report", first, "--out", "\(folder)/trial.html"])
            #expect(await sessionReport.wait(seconds: 60) == 0, "\(sessionReport.stderr)")
            #expect(sessionReport.stdout.contains("walkable way segments under the tracks"), "\(sessionReport.stdout)")
            #expect(try String(contentsOfFile: "\(folder)/trial.html", encoding: .utf8).contains("class=\"ways\""))

            // A crash in the middle of a trial: its record still says running, its last part is cut short.
            let victim = "\(folder)/simulated/P01/T01-\(schedule[0]["condition"]!)-\(schedule[0]["route"]!)"
            var record = try String(contentsOfFile: "\(victim)/trial.json", encoding: .utf8)
            record = record.replacingOccurrences(of: "\"completed\"", with: "\"running\"")
            try record.store(toFile: "\(victim)/trial.json")
            let part = "\(victim)/part-0001.mcap"
            let bytes = try Data(contentsOf: URL(fileURLWithPath: part))
            try bytes.prefix(bytes.count / 2).store(toFile: part)
            let again = try ChildProcess(
                binary, ["study", "report", folder, "--simulated", "--csv", "\(folder)/trials2.csv"])
            #expect(await again.wait(seconds: 60) == 0, "\(again.stderr)")
            let cut = try #require(table(try String(contentsOfFile: "\(folder)/trials2.csv", encoding: .utf8)).first)
            #expect(cut["status"] == "aborted" && cut["aborted"] == "TRUE", "\(cut)")
            #expect(cut["reason"]?.hasPrefix("interrupted") == true)
            #expect(Double(cut["time_s"] ?? "") ?? 0 > 0, "the cut session reads to its last record: \(cut)")
            #expect(again.stdout.contains("P01 trial 1") && again.stdout.contains("aborted"))
        }

        /// `study run` with a participant in the band condition, the band lost mid-trial: the condition lock stops the
        /// outputs (no speaker, though the config falls back to it), the session and the trial's row say so, and the
        /// trial's start and end marks are in the session.
        @Test func aBandLostMidTrialStopsTheOutputsAndTheTrialIsMarked() async throws {
            let binary = try hapticnavExecutable()
            let folder = try writeStudy(
                participants: 2,
                conditions: """
                    { band: { haptic: { plugin: "band" } }, console: { haptic: { plugin: "console", settings: { prefix: "cue | " } } } }
                    """,
                routes:
                    "{ condamine: { file: \"\(repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path)\" } }"
            )
            let initRun = try ChildProcess(binary, ["study", "init", folder])
            #expect(await initRun.wait(seconds: 30) == 0, "\(initRun.stderr)")
            let schedule = table(try String(contentsOfFile: "\(folder)/schedule.csv", encoding: .utf8))
            let bandTrial = try #require(schedule.first { $0["participant"] == "P01" && $0["condition"] == "band" })
            let port = freeTCPPort()
            let bandLog = "\(folder)/band.jsonl"
            let emulator = try ChildProcess(binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)", "--log", bandLog])
            defer { emulator.ensureStopped() }
            let runFolder = try scratchFolder()
            let environment = ["HAPTICNAV_BAND_PORT": "\(port)", "HAPTICNAV_RUN_DIR": runFolder]
            let run = try ChildProcess(
                binary,
                [
                    "study", "run", folder, "--participant", "P01", "--trial", bandTrial["trial"]!, "--log-level",
                    "error",
                ],
                environment: environment)
            defer { run.ensureStopped() }
            // The band plays, then is lost.
            #expect(
                await eventually(within: 60) {
                    bandFrames(bandLog).contains { $0.type == "setMotors" && $0.left + $0.right > 0 }
                }, "the band played: \(run.stderr.suffix(1000))")
            emulator.signal(SIGKILL)
            _ = await emulator.wait(seconds: 5)
            #expect(await run.wait(seconds: 120) == 0, "\(run.stdout.suffix(1000)) \(run.stderr.suffix(2000))")
            let trialFolder = "\(folder)/sessions/P01/T0\(bandTrial["trial"]!)-band-condamine"
            let record = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: "\(trialFolder)/trial.json")))
                    as? [String: Any])
            #expect(record["conditionLocked"] as? Bool == true, "\(record)")
            #expect(record["status"] as? String == "completed", "the walk went on to its arrival: \(record)")
            let session = try SessionExport.read(trialFolder)
            var locks: [ControlEvent] = [], marks: [String] = [], outputs: [String] = []
            for recorded in session.records {
                switch recorded.message {
                case let .control(event):
                    if event.sender == "condition-lock" { locks.append(event) }
                    if event.command == .mark { marks.append(event.text) }
                case let .status(status) where status.message.hasPrefix("output: "):
                    outputs.append(status.message)
                default: break
                }
            }
            #expect(locks.count == 1 && locks.first?.text.hasPrefix("band") == true, "\(locks)")
            #expect(!outputs.contains { $0.contains("speaker") || $0.contains("console") }, "\(outputs)")
            #expect(marks.contains { $0.hasSuffix(": start") } && marks.contains { $0.hasSuffix(": end, arrived") })
            // No cue moved after the lock: every cue the sink published after it is silent or its own stop.
            let lockTime = try #require(locks.first?.timeSeconds)
            let after = session.cues.filter { $0.timeSeconds > lockTime + 0.05 }
            #expect(after.allSatisfy { $0.kind == .silent || $0.kind == .signalLost }, "\(after.prefix(5))")
            let report = try ChildProcess(binary, ["study", "report", folder, "--csv", "\(folder)/trials.csv"])
            #expect(await report.wait(seconds: 60) == 0, "\(report.stderr)")
            let row = try #require(
                table(try String(contentsOfFile: "\(folder)/trials.csv", encoding: .utf8)).first {
                    $0["participant"] == "P01" && $0["condition"] == "band"
                })
            #expect(row["condition_locked"] == "TRUE" && row["reason"]?.contains("condition lock") == true, "\(row)")

            // The lock's stop is kept by the sink (until the experimenter resumes): the participant's next trial
            // refuses to start on a silent sink rather than walk them without guidance.
            let next = try #require(schedule.first { $0["participant"] == "P01" && $0["condition"] != "band" })
            let again = try ChildProcess(
                binary,
                ["study", "run", folder, "--participant", "P01", "--trial", next["trial"]!, "--log-level", "error"],
                environment: environment)
            defer { again.ensureStopped() }
            #expect(await again.wait(seconds: 60) == 1, "\(again.stdout.suffix(500))")
            let refused = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(
                        contentsOf: URL(
                            fileURLWithPath: "\(folder)/sessions/P01/T0\(next["trial"]!)-console-condamine/trial.json"))
                )
                    as? [String: Any])
            #expect(refused["status"] as? String == "aborted")
            #expect(
                (refused["reason"] as? String)?.hasPrefix("the sink started with its outputs stopped") == true,
                "\(refused)")
            // A study file changed after its schedule was written is refused: trial N would be another trial.
            var changed = try String(contentsOfFile: "\(folder)/study.json5", encoding: .utf8)
            changed = changed.replacingOccurrences(of: "conditions: {", with: "conditions: { another: {},")
            try changed.store(toFile: "\(folder)/study.json5")
            let stale = try ChildProcess(binary, ["study", "report", folder])
            #expect(await stale.wait(seconds: 30) == 1)
            #expect(stale.stderr.contains("a schedule written before study.json5 changed"), "\(stale.stderr)")
        }
    }
}
