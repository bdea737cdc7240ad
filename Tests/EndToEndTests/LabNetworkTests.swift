import Bus
import Foundation
import TestSupport
import Testing

extension ProcessSuites.Hosts {
    /// The lab as it runs: Group 1 on one host, Group 2 on another, a stranger on a third, all on one shared
    /// segment (network namespaces on a bridge; needs root, as CI runs). Over CURVE the walk arrives; the stranger,
    /// with another key, with none, or with plain text, reads nothing from either group.
    @Suite(.enabled(if: geteuid() == 0, "needs root to make network namespaces")) struct LabNetworkTests {
        @Test func overCURVETheWalkArrivesAndAStrangerOnTheNetworkReadsNothing() async throws {
            let network = try LabNetwork(hostCount: 3)
            defer { network.remove() }
            let (group1Host, group2Host, strangerHost) = (network.hosts[0], network.hosts[1], network.hosts[2])
            let (address1, address2) = (network.addresses[0], network.addresses[1])
            let folder = try scratchFolder()
            let binary = try hapticnavExecutable()
            let keys = "\(folder)/keys"
            for name in ["group1", "group2", "monitor"] { try CurveKeyPair.generate().write(name: name, folder: keys) }
            // The stranger has the public keys (they are no secret) and a "monitor" key pair of its own.
            let strangerKeys = "\(folder)/stranger-keys"
            try CurveKeyPair.generate().write(name: "monitor", folder: strangerKeys)
            for name in ["group1", "group2"] {
                try FileManager.default.copyItem(atPath: "\(keys)/\(name).pub", toPath: "\(strangerKeys)/\(name).pub")
            }
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            func config(_ name: String, keys: String) throws -> String {
                let text = """
                    {
                      bus: { joinGraceSeconds: 0.5 },
                      security: { keys: "\(keys)", readers: ["monitor"] },
                      stages: {
                        source: { plugin: "sim", group: "1", key: "group1", publish: "tcp://\(address1):5601",
                                  settings: { route: "\(route)", pace: 10, loop: false, seed: 5 } },
                        smoother: { plugin: "kalman", group: "1", key: "group1", inputs: ["source"], topics: ["fix"],
                                    publish: "tcp://\(address1):5602" },
                        route: { plugin: "file", group: "1", key: "group1", inputs: ["smoother"], topics: ["smoothed"],
                                 publish: "tcp://\(address1):5603", settings: { file: "\(route)" },
                                 options: { destination: [43.72977, 7.416504] } },
                        haptic: { plugin: "band", group: "2", key: "group2", inputs: ["source", "route"],
                                  topics: ["heading", "target", "progress"], publish: "tcp://\(address2):5604",
                                  settings: { tcp: "127.0.0.1:7800" }, options: { offsetDegrees: 0, staleAfterSeconds: 2.5 } },
                      },
                    }
                    """
                let file = "\(folder)/\(name).json5"
                try text.store(toFile: file)
                return file
            }
            let lab = try config("lab", keys: keys)
            let stranger = try config("stranger", keys: strangerKeys)
            func inside(_ host: String, _ arguments: [String]) throws -> ChildProcess {
                try ChildProcess(TwoHostNetwork.ipPath, network.inside(host, [binary] + arguments))
            }

            let band = try inside(
                group2Host, ["band-emulator", "--tcp", "127.0.0.1:7800", "--log", "\(folder)/band.jsonl"])
            let group2 = try inside(group2Host, ["run", "--config", lab, "--host", "2"])
            let group1 = try inside(group1Host, ["run", "--config", lab, "--host", "1"])
            // The lab's own monitor, on Group 1's host with the monitor key: it sees the sink's cues to the end.
            let watcher = try inside(
                group1Host,
                ["monitor", "--config", lab, "--key", "monitor", "--topic", "cue", "--json", "--seconds", "90"])
            defer { for process in [watcher, group1, group2, band] { process.ensureStopped() } }
            #expect(
                await eventually(within: 30) { watcher.stdout.contains("\"stage\":\"haptic\"") },
                "the lab's monitor reads the sink's cues over CURVE: \(watcher.stderr.suffix(800)) \(group2.stderr.suffix(800))"
            )

            // The stranger, on the third host, while the walk goes on: with its own key, with none, and in plain
            // text. Each reads nothing, from either group.
            let withKey = try inside(
                strangerHost, ["monitor", "--config", stranger, "--key", "monitor", "--json", "--seconds", "4"])
            let withoutKey = try inside(
                strangerHost,
                [
                    "monitor", "--connect", "tcp://\(address1):5603", "--connect", "tcp://\(address2):5604", "--json",
                    "--seconds", "4",
                ])
            let plainText = try ChildProcess(
                TwoHostNetwork.ipPath,
                network.inside(
                    strangerHost,
                    [
                        "bash", "-c",
                        "for port in 5601 5602 5603; do printf 'GET / HTTP/1.1\\r\\n\\r\\n' > /dev/tcp/\(address1)/$port; done; printf 'hello' > /dev/tcp/\(address2)/5604",
                    ]))
            #expect(await withKey.wait(seconds: 30) == 0, "\(withKey.stderr.suffix(500))")
            #expect(await withoutKey.wait(seconds: 30) == 0, "\(withoutKey.stderr.suffix(500))")
            _ = await plainText.wait(seconds: 30)
            #expect(withKey.stdout.isEmpty, "a stranger's key reads nothing: \(withKey.stdout.prefix(300))")
            #expect(withoutKey.stdout.isEmpty, "no key reads nothing: \(withoutKey.stdout.prefix(300))")

            // The sink counted the stranger's key among the readers it refused, in its status.
            let status = try inside(
                group1Host,
                ["monitor", "--config", lab, "--key", "monitor", "--topic", "status", "--json", "--seconds", "3"])
            #expect(await status.wait(seconds: 30) == 0)
            let sinkStatus = status.stdout.split(separator: "\n").last { $0.contains("\"stage\":\"haptic\"") }
            let refused = sinkStatus.flatMap { line in
                line.firstRange(of: "\"bus.refusedReaders\",\"value\":").map {
                    Int(line[$0.upperBound...].prefix { $0.isNumber }) ?? 0
                }
            }
            #expect((refused ?? 0) >= 1, "the sink counts the refused reader: \(sinkStatus ?? "no status")")

            // The walk arrives; Group 1 logged the stranger's key once.
            #expect(
                await eventually(within: 80) { watcher.stdout.contains("arrival") },
                "the walk arrives: \(group2.stderr.suffix(1000))")
            #expect(group1.stderr.contains("refused a subscriber"), "Group 1 logs the refused key")
            #expect(!group1.stderr.contains("failed (status"), "no Group 1 stage failed: \(group1.stderr.suffix(500))")
        }
    }
}
