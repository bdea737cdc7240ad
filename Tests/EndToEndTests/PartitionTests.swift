@testable import Bus
import Foundation
import NavCore
import Synchronization
import TestSupport
import Testing

extension ProcessSuites.Hosts {
    /// Group 1 and Group 2 on two test hosts (network namespaces joined by a veth pair) over CURVE, the link between
    /// them cut and healed, and Group 1 restarted during a cut.
    @Suite(.serialized) struct PartitionTests {
        private struct Lab {
            let network: TwoHostNetwork
            let folder: String
            let config: String
            let binary: String
            let log: String
            var group1: [ChildProcess] = []
            var group2: [ChildProcess] = []

            init() throws {
                self.network = try TwoHostNetwork()
                self.folder = try scratchFolder()
                self.binary = try hapticnavExecutable()
                self.log = "\(self.folder)/band.jsonl"
                let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
                let host = self.network.address1
                // Over CURVE, as a lab runs it across hosts.
                let keys = "\(self.folder)/keys"
                for name in ["group1", "group2", "monitor"] {
                    try CurveKeyPair.generate().write(name: name, folder: keys)
                }
                // Group 1 talks to itself over ipc and publishes to Group 2 over TCP; the walker holds the phone 60° off its
                // walking direction and the sink assumes none, so a motor runs nearly all the time.
                let config = """
                    {
                      bus: { joinGraceSeconds: 0.3 },
                      security: { keys: "\(keys)", readers: ["monitor"] },
                      stages: {
                        source: { plugin: "sim", key: "group1", publish: ["ipc://\(self.folder)/source.sock", "tcp://\(host):5601"],
                                  settings: { route: "\(route)", pace: 1, loop: true, pocketOffsetDegrees: 60, compassNoiseDegrees: 1, seed: 5 } },
                        smoother: { plugin: "kalman", key: "group1", inputs: ["ipc://\(self.folder)/source.sock"], topics: ["fix"],
                                    publish: "ipc://\(self.folder)/smoother.sock" },
                        route: { plugin: "file", key: "group1", inputs: ["ipc://\(self.folder)/smoother.sock"], topics: ["smoothed"],
                                 publish: ["ipc://\(self.folder)/route.sock", "tcp://\(host):5603"],
                                 settings: { file: "\(route)" }, options: { destination: [43.72977, 7.416504] } },
                        haptic: { plugin: "band", key: "group2", inputs: ["tcp://\(host):5601", "tcp://\(host):5603"], topics: ["heading", "target", "progress"],
                                  publish: "ipc://\(self.folder)/haptic.sock", settings: { tcp: "127.0.0.1:7800" },
                                  options: { offsetDegrees: 0, staleAfterSeconds: 2.5, headingStaleAfterSeconds: 1.0 } },
                      },
                    }
                    """
                self.config = "\(self.folder)/lab.json5"
                try config.store(toFile: self.config)
            }

            private func inside(_ host: String, _ arguments: [String]) throws -> ChildProcess {
                try ChildProcess(TwoHostNetwork.ipPath, self.network.inside(host, [self.binary] + arguments))
            }

            mutating func startGroup2() throws {
                self.group2.append(
                    try self.inside(
                        self.network.host2, ["band-emulator", "--tcp", "127.0.0.1:7800", "--log", self.log]))
                self.group2.append(try self.inside(self.network.host2, ["stage", "haptic", "--config", self.config]))
            }

            mutating func startGroup1() throws {
                self.group1 = try ["source", "smoother", "route"].map {
                    try self.inside(self.network.host1, ["stage", $0, "--config", self.config])
                }
            }

            func stop() {
                for process in self.group1 + self.group2 { process.ensureStopped() }
                self.network.remove()
            }
        }

        private func now() -> Double { Date().timeIntervalSince1970 }

        /// The first band frame after `time` that `matches`, waiting up to `seconds` for it.
        private func firstFrame(
            after time: Double, in log: String, within seconds: Double,
            _ matches: @escaping (BandLogEntry) -> Bool
        ) async throws -> BandLogEntry? {
            let deadline = self.now() + seconds
            while self.now() < deadline {
                if let entry = bandLog(log).first(where: { $0.time > time && matches($0) }) { return entry }
                try await Task.sleep(for: .milliseconds(20))
            }
            return bandLog(log).first { $0.time > time && matches($0) }
        }

        private let running: (BandLogEntry) -> Bool = { $0.type == "setMotors" && $0.left + $0.right > 0 }
        private let stopped: (BandLogEntry) -> Bool = {
            $0.left == 0 && $0.right == 0 && ($0.type == "stopAll" || $0.type == "setMotors" || $0.event != nil)
        }

        /// Cuts the link for `seconds` (doing `during` meanwhile); returns how long the motors took to stop after the cut
        /// and to run again after the heal.
        private func cut(
            _ lab: inout Lab, for seconds: Double, during: (inout Lab) throws -> Void = { _ in }
        ) async throws
            -> (stop: Double, resume: Double)
        {
            let ready = try await self.firstFrame(after: self.now(), in: lab.log, within: 20, self.running)
            _ = try #require(ready, "a motor runs before the cut")
            let cutAt = self.now()
            try lab.network.cut()
            try during(&lab)
            let stop = try await self.firstFrame(after: cutAt, in: lab.log, within: 5, self.stopped)
            try await Task.sleep(for: .seconds(max(0, cutAt + seconds - self.now())))
            // Nothing but stops while the link is down.
            #expect(
                !bandLog(lab.log).contains { $0.time > (stop?.time ?? cutAt) && self.running($0) },
                "no guidance during the cut")
            let healAt = self.now()
            try lab.network.heal()
            let resume = try await self.firstFrame(after: healAt, in: lab.log, within: 20, self.running)
            if resume == nil {
                print("partition: no guidance after the heal; the sink said:\n\(lab.group2[1].stderr.suffix(3000))")
            }
            return (
                try #require(stop, "the motors stopped").time - cutAt,
                try #require(resume, "guidance resumed").time - healAt
            )
        }

        @Test func cutsOfFiveAndThirtySecondsAndARestartDuringACutStopTheMotorsAndGuidanceResumes()
            async throws
        {
            var lab = try Lab()
            defer { lab.stop() }
            try lab.startGroup2()
            try lab.startGroup1()
            let context = ZMQContext()
            // The sink's status, read with the lab's monitor key.
            let statusEndpoint = "ipc://\(lab.folder)/haptic.sock"
            var statusOptions = SubscriberOptions()
            statusOptions.curve = CurveClientOptions(
                identity: try CurveKeyPair.load(name: "monitor", folder: "\(lab.folder)/keys"),
                publisherKeys: [statusEndpoint: try CurveKeyPair.loadPublic(file: "\(lab.folder)/keys/group2.pub")])
            let status = try BusSubscriber(context: context, connect: [statusEndpoint], options: statusOptions)
            defer {
                status.close()
                context.terminate()
            }
            let latest = Mutex<StageStatus?>(nil)
            let reader = Task.detached {
                for await received in status.messages {
                    if case let .status(report) = received.message { latest.withLock { $0 = report } }
                }
            }
            defer { reader.cancel() }

            var results: [(String, Double, Double)] = []
            for seconds in [5.0, 30.0] {
                let (stop, resume) = try await self.cut(&lab, for: seconds)
                results.append(("\(Int(seconds)) s cut", stop, resume))
            }
            let (stop, resume) = try await self.cut(&lab, for: 10) { lab in
                // Group 1 dies and starts again while the link is down: Group 2's connections to it are half-open.
                for process in lab.group1 { process.signal(SIGKILL) }
                for process in lab.group1 { process.process.waitUntilExit() }
                try lab.startGroup1()
            }
            results.append(("Group 1 restarted during a 10 s cut", stop, resume))
            for (what, stop, resume) in results {
                print(
                    "partition: \(what): motors 0 after \(String(format: "%.3f", stop)) s, guidance \(String(format: "%.3f", resume)) s after the heal"
                )
                #expect(stop < 1.5, "\(what): motors at zero \(stop) s after the cut")
                // How soon guidance comes back after the heal (reconnection, the CURVE handshake, a fresh heading) is a
                // figure, printed above (0.5–1.7 s on a quiet machine): awaited as an event, up to 20 s, not judged by a
                // window that a busy machine stretches (4.5 s beside two busy loops).
            }
            // Nothing older than the stale limit was ever acted on, and the sink counted what it dropped as late.
            var report: StageStatus?
            for _ in 0..<50 {
                report = latest.withLock { $0 }
                if report != nil { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let counters = Dictionary(
                try #require(report, "the sink reports its status").counters.map { ($0.name, $0.value) },
                uniquingKeysWith: { $1 })
            let oldest = try #require(counters["oldestInputActedOnMilliseconds"])
            print(
                "partition: oldest input a cue was computed from: \(oldest) ms; dropped late: \(counters["time.dropped.late"] ?? 0)"
            )
            #expect(oldest <= 2500, "no input older than the stale limit was acted on")
            for process in lab.group1 + lab.group2 {
                #expect(process.process.isRunning, "every stage still runs: \(process.stderr.suffix(300))")
            }
        }
    }
}
