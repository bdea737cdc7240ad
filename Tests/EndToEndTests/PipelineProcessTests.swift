import Foundation
import NavCore
import TestSupport
import Testing

/// `hapticnav run` with real child processes.
extension ProcessSuites.Stages {
    @Suite struct PipelineProcessTests {
        /// A pipeline like the demo's, in its own folder: a looping simulated walker, a recorder, a console.
        private func writeConfig(in folder: String, loop: Bool, pace: Double, routePoints: Int? = nil) throws -> String
        {
            var route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            if let routePoints {
                // The first points of the demo walk only, for a short run.
                let data = try Data(contentsOf: URL(fileURLWithPath: route))
                var feature = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
                var geometry = try #require(feature["geometry"] as? [String: Any])
                geometry["coordinates"] = Array(try #require(geometry["coordinates"] as? [Any]).prefix(routePoints))
                feature["geometry"] = geometry
                route = "\(folder)/short.geojson"
                try JSONSerialization.data(withJSONObject: feature).store(toFile: route)
            }
            let config = """
                {
                  name: "e2e",
                  bus: { joinGraceSeconds: 0.5 },
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                              settings: { route: "\(route)", pace: \(pace), loop: \(loop), seed: 3 } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock" },
                    recorder: { role: "recorder", plugin: "jsonl", inputs: ["source", "smoother"],
                                settings: { file: "\(folder)/recording.jsonl" } },
                    console: { role: "recorder", plugin: "console", inputs: ["source"], topics: ["status"] },
                  },
                }
                """
            let file = "\(folder)/pipeline.json5"
            try config.store(toFile: file)
            return file
        }

        /// Waits until `run` has `count` children; returns their pids.
        private func waitForChildren(of run: ChildProcess, count: Int) async -> [pid_t] {
            for _ in 0..<500 {
                let children = childPIDs(of: run.pid)
                if children.count == count { return children }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return childPIDs(of: run.pid)
        }

        @Test func sigtermToRunStopsEveryChildWithinTwoSeconds() async throws {
            let folder = try scratchFolder()
            let config = try self.writeConfig(in: folder, loop: true, pace: 5)
            let run = try ChildProcess(try hapticnavExecutable(), ["run", "--config", config])
            defer { run.ensureStopped() }
            let children = await self.waitForChildren(of: run, count: 4)
            #expect(children.count == 4, "run started four stage processes: \(run.stderr)")
            // Let the pipeline get going: the recorder has written something.
            for _ in 0..<500
            where ((try? String(contentsOfFile: "\(folder)/recording.jsonl", encoding: .utf8)) ?? "").isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            let stoppedAt = ContinuousClock.now
            run.signal(SIGTERM)
            let status = await run.wait(seconds: 2)
            let elapsed = ContinuousClock.now - stoppedAt
            #expect(status == 0, "run exited cleanly: \(run.stderr)")
            #expect(elapsed < .seconds(2))
            for pid in children {
                #expect(!isAlive(pid), "stage process \(pid) outlived run")
            }
            let lines = try String(contentsOfFile: "\(folder)/recording.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(!lines.isEmpty)
            let sockets = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sock") }
            #expect(sockets.isEmpty, "stopping leaves no socket file behind: \(sockets)")
        }

        @Test func stagesStopThemselvesWhenRunIsKilled() async throws {
            let folder = try scratchFolder()
            let config = try self.writeConfig(in: folder, loop: true, pace: 5)
            let run = try ChildProcess(try hapticnavExecutable(), ["run", "--config", config])
            defer { run.ensureStopped() }
            let children = await self.waitForChildren(of: run, count: 4)
            #expect(children.count == 4)
            run.signal(SIGKILL)
            _ = await run.wait(seconds: 2)
            var survivors = children
            for _ in 0..<300 where !survivors.isEmpty {
                survivors = survivors.filter(isAlive)
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(survivors.isEmpty, "orphaned stage processes: \(survivors)")
            for pid in survivors { kill(pid, SIGKILL) }
        }

        @Test func aFiniteWalkRunsToItsEndAndEveryMessageIsRecorded() async throws {
            let folder = try scratchFolder()
            // The demo's pace (20 × real time, about 450 messages a second); at pace 0 a burst beyond the
            // high-water marks is dropped by design, and counted.
            let config = try self.writeConfig(in: folder, loop: false, pace: 20, routePoints: 8)
            let run = try ChildProcess(try hapticnavExecutable(), ["run", "--config", config])
            defer { run.ensureStopped() }
            let status = await run.wait(seconds: 30)
            #expect(status == 0, "run failed: \(run.stderr)")
            let decoder = JSONDecoder()
            let records = try String(contentsOfFile: "\(folder)/recording.jsonl", encoding: .utf8)
                .split(separator: "\n").map { try decoder.decode(RecordedMessage.self, from: Data($0.utf8)) }
            let statuses = records.compactMap {
                if case let .status(status) = $0.message, status.stage == "source" { status } else { nil }
            }
            let end = try #require(statuses.last, "the recorder received status reports")
            #expect(end.health == .endOfStream)
            // The source's own count of what it published equals what arrived, kind by kind.
            for kind in [BusMessage.Kind.fix, .heading, .attitude] {
                let published = end.counters.first { $0.name == "published.\(kind.topic)" }?.value
                let recorded = records.filter { $0.message.kind == kind }.count
                #expect(published == UInt64(recorded), "\(kind)")
            }
            #expect(run.stdout.contains("endOfStream"), "the console stage printed the end of the stream")
            // The sim's fixes crossed to the smoother, another process, and came back smoothed, every one.
            let fixes = records.filter { $0.message.kind == .fix }.count
            let smoothed = records.compactMap { if case let .smoothed(fix) = $0.message { fix } else { nil } }
            #expect(smoothed.count == fixes)
            #expect(records.allSatisfy { $0.message.kind != .smoothed || $0.stage == "smoother" })
            #expect(
                smoothed.allSatisfy {
                    $0.latitude.isFinite && $0.longitude.isFinite && $0.speedMetersPerSecond.isFinite
                })
        }

        @Test func aConfigWithAnUnknownKeyIsRejectedNamingTheKeyAndTheValidOnes() async throws {
            let folder = try scratchFolder()
            let file = "\(folder)/bad.json5"
            try """
            { stages: { source: { plugin: "sim", publish: "ipc://\(folder)/s.sock", settings: { route: "x.geojson", sped: 2 } } } }
            """.store(toFile: file)
            let check = try ChildProcess(try hapticnavExecutable(), ["config", "check", file])
            #expect(await check.wait(seconds: 10) != 0)
            // The route file is checked first and does not exist: fix that, and the misspelt key is next.
            try "{\"type\": \"LineString\", \"coordinates\": [[7.42, 43.73], [7.43, 43.74]]}"
                .store(toFile: "\(folder)/x.geojson")
            let again = try ChildProcess(try hapticnavExecutable(), ["config", "check", file])
            #expect(await again.wait(seconds: 10) != 0)
            #expect(again.stderr.contains("unknown key 'sped' in stages.source.settings"), "\(again.stderr)")
            #expect(again.stderr.contains("speedMetersPerSecond"))
        }
    }
}

extension ProcessSuites.Stages {
    @Suite struct RouteCommandTests {
        @Test func routeJSONCarriesTheLengthAndTheCoordinates() async throws {
            let map = repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm").path
            let route = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "route", "--from", "43.7319471,7.4216106", "--to", "43.7297696,7.4165044", "--map", map, "--format",
                    "json",
                ])
            #expect(await route.wait(seconds: 60) == 0, "\(route.stderr)")
            let object = try #require(JSONSerialization.jsonObject(with: Data(route.stdout.utf8)) as? [String: Any])
            let length = try #require(object["lengthMeters"] as? Double)
            #expect(abs(length - 658) / 658 < 0.02, "Valhalla's route is 658 m")
            #expect((object["coordinates"] as? [[Double]])?.count ?? 0 > 10)
            #expect((object["waypoints"] as? [[String: Any]])?.last?["kind"] as? String == "arrival")
        }

        /// The route printed is the one a route stage follows: to the destination, 15 m off the ways here, not to the
        /// way nearest it; one that would end 110 m away is refused as the stage refuses it.
        @Test func aRouteThatEndsShortOfTheDestinationIsPrintedToIt() async throws {
            let map = repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm").path
            let route = try ChildProcess(
                try hapticnavExecutable(),
                ["route", "--from", "43.7319,7.4216", "--to", "43.7335,7.4285", "--map", map, "--format", "json"])
            #expect(await route.wait(seconds: 60) == 0, "\(route.stderr)")
            let object = try #require(JSONSerialization.jsonObject(with: Data(route.stdout.utf8)) as? [String: Any])
            let last = try #require((object["coordinates"] as? [[Double]])?.last)
            #expect(last == [43.7335, 7.4285], "the destination, as [latitude, longitude]")
            #expect(route.stderr.contains("route ends 15 m from the destination"), "\(route.stderr)")
            let far = try ChildProcess(
                try hapticnavExecutable(),
                ["route", "--from", "43.7319,7.4216", "--to", "43.7360,7.4250", "--map", map])
            #expect(await far.wait(seconds: 60) == 1)
            #expect(far.stderr.contains("ends 110 m from the destination, farther than destinationLegMeters (30 m)"))
        }

        @Test func aPointInTheSeaIsAClearError() async throws {
            let map = repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm").path
            let route = try ChildProcess(
                try hapticnavExecutable(), ["route", "--from", "43.70,7.50", "--to", "43.7297,7.4165", "--map", map])
            #expect(await route.wait(seconds: 60) != 0)
            #expect(route.stderr.contains("no walkable way within 250 m of the start"))
        }

        @Test func southernAndWesternCoordinatesAreValuesNotOptions() async throws {
            let map = repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm").path
            let route = try ChildProcess(
                try hapticnavExecutable(), ["route", "--from", "-33.8,151.2", "--to", "-33.81,-70.5", "--map", map])
            #expect(await route.wait(seconds: 60) == 1, "a runtime failure, not a usage error: \(route.stderr)")
            #expect(route.stderr.contains("of the start (-33.8, 151.2)"), "\(route.stderr)")
            #expect(!route.stderr.contains("Usage:"))
        }
    }
}
