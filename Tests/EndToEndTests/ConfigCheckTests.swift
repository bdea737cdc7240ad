import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// `hapticnav config check` on what a lab gets wrong before it runs anything.
    @Suite struct ConfigCheckTests {
        @Test func aRunDirectoryOthersCanWriteIsWarnedAboutAndPlainTCPBeyondLoopbackIsRefused() async throws {
            let folder = try scratchFolder()
            let shared = "\(folder)/shared-run"
            try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
            chmod(shared, 0o777)
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let local = """
                { stages: {
                    source: { plugin: "sim", publish: "ipc://\(shared)/source.sock", settings: { route: "\(route)" } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(shared)/smoother.sock" },
                } }
                """
            try local.store(toFile: "\(folder)/local.json5")
            let check = try ChildProcess(try hapticnavExecutable(), ["config", "check", "\(folder)/local.json5"])
            #expect(await check.wait(seconds: 20) == 0, "\(check.stderr)")
            #expect(check.stdout.contains("warning: run directory \(shared) is writable by others"), "\(check.stdout)")

            let open = """
                { stages: {
                    source: { plugin: "sim", publish: "tcp://*:5601", settings: { route: "\(route)" } },
                } }
                """
            try open.store(toFile: "\(folder)/open.json5")
            let refused = try ChildProcess(try hapticnavExecutable(), ["config", "check", "\(folder)/open.json5"])
            #expect(await refused.wait(seconds: 20) == 1)
            #expect(refused.stderr.contains("insecure: true"), "\(refused.stderr)")
        }
    }
}
