import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// The route controller with a routing engine first and the offline router after it, every stage its own
    /// process: an engine that never answers, and a live Valhalla killed and restarted mid-walk. The walker takes a
    /// detour (A to C, then C to B, while the route goes from A to B), so the route controller reroutes again and again.
    @Suite(.serialized) struct EngineFallbackTests {
        let folder: String
        let binary: String
        let map = repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm").path
        static let start = "43.7319471,7.4216106"
        static let detour = "43.7345,7.4235"
        static let destination = "43.72977,7.416504"

        init() throws {
            self.folder = try scratchFolder()
            self.binary = try hapticnavExecutable()
        }

        /// The detour as a GeoJSON route file for the simulated walker, made by `hapticnav route` over the bundled map.
        private func writeDetour() async throws -> String {
            var coordinates: [[Double]] = []
            for (from, to) in [(Self.start, Self.detour), (Self.detour, Self.destination)] {
                let route = try ChildProcess(
                    self.binary, ["route", "--from", from, "--to", to, "--map", self.map, "--format", "json"])
                #expect(await route.wait(seconds: 60) == 0, "\(route.stderr)")
                let object = try #require(
                    JSONSerialization.jsonObject(with: Data(route.stdout.utf8)) as? [String: Any])
                let leg = try #require(object["coordinates"] as? [[Double]])  // [latitude, longitude]
                coordinates += leg.dropFirst(coordinates.isEmpty ? 0 : 1).map { [$0[1], $0[0]] }
            }
            let file = "\(self.folder)/detour.geojson"
            let json = try JSONSerialization.data(withJSONObject: ["type": "LineString", "coordinates": coordinates])
            try json.store(toFile: file)
            return file
        }

        /// A pipeline whose route stage asks `engine` (a provider's plugin and settings) first and the offline router
        /// after it; a recorder keeps what the route and haptic stages publish.
        private func writeConfig(
            engine: String, routeOptions: String, pace: Int, staleAfterSeconds: Double = 1
        ) async throws -> String {
            let walk = try await self.writeDetour()
            let f = self.folder
            let config = """
                {
                  bus: { joinGraceSeconds: 0.3 },
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(f)/source.sock",
                              settings: { route: "\(walk)", pace: \(pace), gpsNoiseMeters: 2, compassNoiseDegrees: 2, seed: 3 } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(f)/smoother.sock" },
                    route: { \(engine), inputs: ["smoother"], topics: ["smoothed"], publish: "ipc://\(f)/route.sock",
                             options: { destination: [\(Self.destination)], \(routeOptions),
                                        fallback: [{ plugin: "osm", settings: { map: "\(self.map)" } }] } },
                    haptic: { plugin: "console", inputs: ["source", "route"], topics: ["heading", "target", "progress"],
                              publish: "ipc://\(f)/haptic.sock", settings: { prefix: "cue | " },
                              options: { offsetDegrees: 0, staleAfterSeconds: \(staleAfterSeconds) } },
                    recorder: { role: "recorder", plugin: "jsonl", inputs: ["route", "haptic"],
                                topics: ["route", "target", "progress", "status"],
                                settings: { file: "\(f)/recording.jsonl" } },
                  },
                }
                """
            let file = "\(f)/pipeline.json5"
            try config.store(toFile: file)
            let check = try ChildProcess(self.binary, ["config", "check", file])
            #expect(await check.wait(seconds: 30) == 0, "\(check.stderr)")
            return file
        }

        /// One recorded message: its topic, payload, sending stage and send time.
        struct Recorded {
            var topic: String
            var payload: [String: Any]
            var stage: String
            /// When its stage sent it, by that stage's clock (the recorder's receipt, where the send time is missing):
            /// the intervals measured on it are the stage's own, not the recorder's delays on a loaded host.
            var time: Double
        }

        private func recording() -> [Recorded] {
            let text = (try? String(contentsOfFile: "\(self.folder)/recording.jsonl", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let message = object["message"] as? [String: Any], let topic = message["topic"] as? String,
                    let payload = message["payload"] as? [String: Any],
                    let time = object["sendTimeSeconds"] as? Double ?? object["receiveTimeSeconds"] as? Double
                else { return nil }
                return Recorded(topic: topic, payload: payload, stage: object["stage"] as? String ?? "", time: time)
            }
        }

        /// Each route's id, provider and first send time, in order.
        private func routes(_ recorded: [Recorded]) -> [(id: Int, provider: String, time: Double)] {
            var seen = Set<Int>()
            return recorded.compactMap { entry in
                guard entry.topic == "route", let id = entry.payload["routeID"] as? Int, seen.insert(id).inserted else {
                    return nil
                }
                return (id, entry.payload["provider"] as? String ?? "", entry.time)
            }
        }

        private func start(_ config: String) throws -> [ChildProcess] {
            try ["recorder", "haptic", "route", "smoother", "source"].map {
                try ChildProcess(self.binary, ["stage", $0, "--config", config])
            }
        }

        /// The sink's signal-lost count, from its last status before `time` (when the test began to stop the stages).
        private func signalLost(_ recorded: [Recorded], before time: Double) -> Int? {
            let last = recorded.last { $0.topic == "status" && $0.stage == "haptic" && $0.time < time }
            let counters = last?.payload["counters"] as? [[String: Any]] ?? []
            return counters.first { $0["name"] as? String == "signalLost" }?["value"] as? Int
        }

        /// The longest gap between targets sent by the route stage, between two times [seconds].
        private func longestTargetGap(_ recorded: [Recorded], from: Double, to: Double) -> Double {
            let times = recorded.filter { $0.topic == "target" && $0.time >= from && $0.time <= to }.map(\.time)
            return zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .infinity
        }

        @Test func anEngineThatNeverAnswersNeverStallsGuidanceAndTheOfflineRouterTakesOver() async throws {
            // A real TCP listener that accepts connections (the kernel completes them) and never answers.
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let port = freeTCPPort()
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            #expect(bound == 0 && listen(listener, 64) == 0)
            defer { close(listener) }
            // Longer than the sink's 1 s staleness limit; at 5 × real time the walker moves 10 m while the engine is awaited,
            // so the answer still fits where the walker is.
            let timeout = 1.5
            let config = try await self.writeConfig(
                engine:
                    "plugin: \"valhalla\", settings: { url: \"http://127.0.0.1:\(port)\", timeoutSeconds: 60, retries: 0 }",
                routeOptions: "providerTimeoutSeconds: \(timeout), providerBackoffSeconds: 0", pace: 5)
            let stages = try self.start(config)
            defer { for stage in stages { stage.ensureStopped() } }
            // Until two reroutes have come from the offline router (or 90 s).
            let rerouted = await eventually(within: 90) {
                self.routes(self.recording()).filter { $0.id >= 3 }.count >= 1
            }
            let stopAt = Date().timeIntervalSince1970
            for stage in stages { stage.signal(SIGTERM) }
            for stage in stages { _ = await stage.wait(seconds: 10) }
            let recorded = self.recording()
            let routes = self.routes(recorded)
            #expect(rerouted, "two reroutes within 90 s: \(routes), route stage: \(stages[2].stderr.suffix(1500))")
            #expect(routes.allSatisfy { $0.provider == "osm" }, "\(routes)")
            // Each reroute: asked for when progress first said "rerouting", answered by the offline router within the
            // provider timeout (plus the map router's own time); targets kept flowing meanwhile.
            for route in routes.dropFirst() {
                let asked = recorded.last {
                    $0.topic == "progress" && $0.time < route.time && ($0.payload["state"] as? String) == "rerouting"
                        && ($0.payload["routeID"] as? Int) == route.id - 1
                }
                let firstAsked = recorded.first {
                    $0.topic == "progress" && ($0.payload["state"] as? String) == "rerouting"
                        && ($0.payload["routeID"] as? Int) == route.id - 1
                }
                guard let askedAt = firstAsked?.time, asked != nil else { continue }
                let waited = route.time - askedAt
                let gap = self.longestTargetGap(recorded, from: askedAt, to: route.time)
                print(
                    "silent engine: reroute \(route.id) by \(route.provider) \(String(format: "%.2f", waited)) s after it was asked; longest gap between targets meanwhile \(String(format: "%.3f", gap)) s"
                )
                #expect(waited >= timeout - 0.1 && waited < timeout + 3, "reroute \(route.id): \(waited) s")
                #expect(gap < 0.5, "targets kept flowing at the fix rate (5 fixes a second at this pace): \(gap) s")
            }
            #expect(
                self.signalLost(recorded, before: stopAt) == 0,
                "the sink never tripped to signal-lost: \(stages[1].stderr.suffix(2000))")
            let statuses = recorded.filter { $0.topic == "status" && $0.stage == "route" }.compactMap {
                $0.payload["message"] as? String
            }
            #expect(statuses.contains { $0.hasPrefix("rerouting: asking valhalla") }, "\(statuses)")
            #expect(
                statuses.contains {
                    $0.hasPrefix("rerouting: asking osm") && $0.contains("valhalla did not answer within 1.5 s")
                }, "\(statuses)")
            #expect(statuses.contains { $0.contains("by osm") && $0.contains("valhalla did not answer within 1.5 s") })
        }

        @Test func aValhallaKilledMidWalkLeavesTheWalkOnTheOfflineRouterAndIsUsedAgainOnceItIsBack() async throws {
            let valhalla = try await LocalRoutingEngine(.valhalla)
            defer { valhalla.process.ensureStopped() }
            let config = try await self.writeConfig(
                engine: "plugin: \"valhalla\", settings: { url: \"\(valhalla.url)\", timeoutSeconds: 2, retries: 0 }",
                routeOptions: "providerTimeoutSeconds: 3, providerBackoffSeconds: 1, providerBackoffMaxSeconds: 2",
                // Valhalla's restart loads its tiles on the same two cores as the five stage processes: the sink's
                // limit is the lab config's order (2 s), not the 1 s of the silent-engine test, whose reroutes are
                // checked for gaps between targets one by one.
                pace: 30, staleAfterSeconds: 2)
            let stages = try self.start(config)
            defer { for stage in stages { stage.ensureStopped() } }
            let byValhalla = await eventually(within: 60) {
                self.routes(self.recording()).contains { $0.provider == "valhalla" }
            }
            #expect(byValhalla, "the first route from Valhalla: \(stages[2].stderr.suffix(1500))")
            await valhalla.kill()
            let killedAt = Date().timeIntervalSince1970
            let byOSM = await eventually(within: 60) {
                self.routes(self.recording()).contains { $0.provider == "osm" && $0.time > killedAt }
            }
            #expect(
                byOSM, "a reroute from the offline router after Valhalla was killed: \(self.routes(self.recording()))")
            try await valhalla.restart()
            let restartedAt = Date().timeIntervalSince1970
            let arrived = await eventually(within: 120) {
                self.recording().contains { $0.topic == "target" && ($0.payload["kind"] as? String) == "arrived" }
            }
            let stopAt = Date().timeIntervalSince1970
            for stage in stages { stage.signal(SIGTERM) }
            for stage in stages { _ = await stage.wait(seconds: 10) }
            let recorded = self.recording()
            let routes = self.routes(recorded)
            print("valhalla killed and restarted: routes \(routes.map { "\($0.id) by \($0.provider)" })")
            let firstTarget = recorded.first { $0.topic == "target" }?.time ?? stopAt
            print(
                "valhalla killed and restarted: longest gap between targets \(String(format: "%.3f", self.longestTargetGap(recorded, from: firstTarget, to: stopAt))) s"
            )
            #expect(arrived, "the walk arrived: \(routes)")
            #expect(
                routes.contains { $0.provider == "valhalla" && $0.time > restartedAt }, "Valhalla used again: \(routes)"
            )
            #expect(
                !routes.contains { $0.provider == "valhalla" && $0.time > killedAt && $0.time < restartedAt },
                "no route from a dead Valhalla")
            // Up to the arrival: the simulated walk ends there and its source with it, so the sink rightly says its
            // input went stale after (how long after depends on when this test saw the arrival and stopped).
            let arrivedAt =
                recorded.first { $0.topic == "target" && ($0.payload["kind"] as? String) == "arrived" }?.time ?? stopAt
            #expect(self.signalLost(recorded, before: arrivedAt) == 0, "the sink never tripped to signal-lost")
        }
    }
}
