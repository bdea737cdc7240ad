import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// Under systemd (standard error the journal's stream, as `JOURNAL_STREAM` says), `hapticnav run` and the stages
    /// it starts log over the journal's native protocol, each logging field its own journal field.
    @Suite struct JournalProcessTests {
        @Test func runAndItsStagesLogToTheJournalWithTheirFields() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let journal = try JournalListener(folder: folder)
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let config = """
                { name: "journal", stages: { source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                  settings: { route: "\(route)", pace: 200, loop: false, seed: 1 } } } }
                """
            try config.store(toFile: "\(folder)/pipeline.json5")
            // As systemd starts a service: JOURNAL_STREAM names the device and inode of standard error.
            let run = try ChildProcess(
                "/bin/sh",
                [
                    "-c", #"JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$0" run --config "$1""#,
                    try hapticnavExecutable(), "\(folder)/pipeline.json5",
                ], environment: ["HAPTICNAV_JOURNAL_SOCKET": journal.path])
            defer { run.ensureStopped() }
            // Read until the run ends (a full queue would hold up its senders, as a journal that stopped reading
            // would), then what is left; bounded.
            var messages: [[String: String]] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                if let fields = journal.receive(within: 0.1) {
                    messages.append(fields)
                } else if !run.process.isRunning {
                    break
                }
            }
            #expect(await run.wait(seconds: 1) == 0)
            let launcher = messages.first { $0["MESSAGE"]?.contains("pipeline 'journal': starting source") == true }
            #expect(launcher?["PRIORITY"] == "6")
            #expect(launcher?["SYSLOG_IDENTIFIER"] == "hapticnav")
            let stage = messages.first { $0["MESSAGE"]?.contains("running plugin 'sim'") == true }
            #expect(stage?["HAPTICNAV_STAGE"] == "source", "\(messages)")
            #expect(stage?["CODE_FILE"]?.contains("SourceStage.swift") == true)
            // Nothing went to standard error as text: the journal had every line.
            #expect(!run.stderr.contains("running plugin"), "\(run.stderr)")
        }
    }
}
