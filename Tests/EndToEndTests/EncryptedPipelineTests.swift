import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// The pipeline over CURVE on TCP, every stage its own process, keys made by `hapticnav keys generate`: the
    /// walker is guided; an impostor holding another key bound at the route controller's endpoint is never heard.
    @Suite struct EncryptedPipelineTests {
        let folder: String
        let binary: String
        let log: String
        let ports = (0..<4).map { _ in freeTCPPort() }
        let bandPort = freeTCPPort()

        init() throws {
            self.folder = try scratchFolder()
            self.binary = try hapticnavExecutable()
            self.log = "\(self.folder)/band.jsonl"
        }

        private func generate(_ name: String, into keys: String) async throws {
            let keygen = try ChildProcess(self.binary, ["keys", "generate", name, "--out", keys])
            #expect(await keygen.wait(seconds: 20) == 0, "\(keygen.stderr)")
        }

        /// A config reading keys from `keys`: group 1 (source, smoother, route) and group 2 (haptic) with keys.
        private func writeConfig(_ name: String, keys: String) throws -> String {
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let p = self.ports
            let config = """
                {
                  bus: { joinGraceSeconds: 0.3 },
                  security: { keys: "\(keys)", readers: ["monitor"] },
                  stages: {
                    source: { plugin: "sim", group: "1", key: "group1", publish: "tcp://127.0.0.1:\(p[0])",
                              settings: { route: "\(route)", pace: 1, loop: true, pocketOffsetDegrees: 60, compassNoiseDegrees: 1, seed: 5 } },
                    smoother: { plugin: "kalman", group: "1", key: "group1", inputs: ["source"], topics: ["fix"],
                                publish: "tcp://127.0.0.1:\(p[1])" },
                    route: { plugin: "file", group: "1", key: "group1", inputs: ["smoother"], topics: ["smoothed"],
                             publish: "tcp://127.0.0.1:\(p[2])", settings: { file: "\(route)" },
                             options: { destination: [43.72977, 7.416504] } },
                    haptic: { plugin: "band", group: "2", key: "group2", inputs: ["source", "route"],
                              topics: ["heading", "target", "progress"], publish: "tcp://127.0.0.1:\(p[3])",
                              settings: { tcp: "127.0.0.1:\(self.bandPort)" },
                              options: { offsetDegrees: 0, staleAfterSeconds: 2.5 } },
                  },
                }
                """
            let file = "\(self.folder)/\(name).json5"
            try config.store(toFile: file)
            return file
        }

        private func stage(_ name: String, _ config: String) throws -> ChildProcess {
            try ChildProcess(self.binary, ["stage", name, "--config", config])
        }

        private func motorCommands() -> Int {
            bandFrames(self.log).filter { $0.type == "setMotors" && ($0.left > 0 || $0.right > 0) }.count
        }

        @Test func overCURVETheWalkerIsGuidedAndAnImpostorWithAnotherKeyIsNeverHeard() async throws {
            let keys = "\(self.folder)/keys"
            for name in ["group1", "group2", "monitor"] { try await self.generate(name, into: keys) }
            let config = try self.writeConfig("lab", keys: keys)
            let check = try ChildProcess(self.binary, ["config", "check", config, "--group", "2"])
            #expect(await check.wait(seconds: 20) == 0, "\(check.stderr)")
            #expect(check.stdout.contains("CURVE, only key 'group1' is heard"), "\(check.stdout)")

            // An impostor: the same pipeline with another "group1" key pair, its route controller bound at the
            // real one's endpoint. It admits the sink (it has the sink's public key) and sends targets.
            let stolen = "\(self.folder)/impostor-keys"
            try await self.generate("group1", into: stolen)
            for name in ["group2", "monitor"] {
                try FileManager.default.copyItem(atPath: "\(keys)/\(name).pub", toPath: "\(stolen)/\(name).pub")
            }
            let impostorConfig = try self.writeConfig("impostor", keys: stolen)

            let band = try ChildProcess(
                self.binary, ["band-emulator", "--tcp", "127.0.0.1:\(self.bandPort)", "--log", self.log])
            defer { band.ensureStopped() }
            let source = try self.stage("source", config)
            let impostor = try self.stage("route", impostorConfig)
            let impostorSmoother = try self.stage("smoother", impostorConfig)
            let haptic = try self.stage("haptic", config)
            var stages = [source, impostor, impostorSmoother, haptic]
            defer { for process in stages { process.ensureStopped() } }

            // The sink hears the real source's headings but none of the impostor's targets: it refuses the
            // handshake (counted in its status, read by the monitor's key) and never drives a motor.
            let monitor = try ChildProcess(
                self.binary, ["monitor", "--config", config, "--topic", "status", "--json", "--seconds", "8"])
            defer { monitor.ensureStopped() }
            #expect(await monitor.wait(seconds: 30) == 0, "\(monitor.stderr)")
            let hapticStatus = monitor.stdout.split(separator: "\n").last { $0.contains("\"stage\":\"haptic\"") }
            let refused = hapticStatus.flatMap { line in
                line.firstRange(of: "\"bus.refusedHandshakes\",\"value\":").map { range in
                    Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
                }
            }
            #expect((refused ?? 0) >= 1, "the sink counts the refused impostor: \(hapticStatus ?? "no haptic status")")
            #expect(self.motorCommands() == 0, "no motor command from the impostor's targets")

            // The real route controller takes its place: guidance flows over CURVE.
            impostor.signal(SIGKILL)
            impostorSmoother.signal(SIGKILL)
            _ = await impostor.wait(seconds: 5)
            _ = await impostorSmoother.wait(seconds: 5)
            let smoother = try self.stage("smoother", config)
            let route = try self.stage("route", config)
            stages += [smoother, route]
            #expect(await eventually(within: 20) { self.motorCommands() > 0 }, "guided over CURVE")
        }
    }
}
