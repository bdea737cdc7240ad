import Foundation
import Testing

extension ProcessSuites.Data {
    /// `hapticnav eval walkers` on a small configuration: simulated participants through the real smoother, route
    /// controller and sink processes. Checks that the figures are computed, not the thresholds.
    @Suite struct WalkerEvaluationTests {
        /// The field config names its map as `${HAPTICNAV_MAP:-…}`: the evaluation expands it as a run does (it took the
        /// text for a path and refused it).
        @Test func aConfigWhoseMapIsAVariableIsEvaluated() async throws {
            let run = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "eval", "walkers", "--config",
                    repositoryRoot.appendingPathComponent("configs/field-phone.json5").path,
                    "--pairs", repositoryRoot.appendingPathComponent("data/routing/monaco-pedestrian-routes.json").path,
                    "--routes", "1", "--seeds", "1", "--noise", "5", "--participant", "events", "--json",
                ])
            #expect(await run.wait(seconds: 300) == 0, "\(run.stderr.suffix(2000))")
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout.prefix(500))"
            )
            let walks = try #require(object["walks"] as? [[String: Any]])
            #expect(walks.count == 1)
        }

        @Test func twoRoutesThroughTheRealProcessesGiveEveryFigure() async throws {
            let sessions = try scratchFolder()
            let run = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "eval", "walkers", "--config", repositoryRoot.appendingPathComponent("configs/demo.json5").path,
                    "--pairs", repositoryRoot.appendingPathComponent("data/routing/monaco-pedestrian-routes.json").path,
                    "--routes", "2", "--seeds", "1", "--noise", "5", "--noise", "10c", "--json", "--sessions", sessions,
                ])
            #expect(await run.wait(seconds: 300) == 0, "\(run.stderr.suffix(2000))")
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout.prefix(500))"
            )
            let summaries = try #require(object["summaries"] as? [[String: Any]])
            let walks = try #require(object["walks"] as? [[String: Any]])
            #expect(summaries.map { $0["condition"] as? String } == ["σ5", "σ10 corr"])
            #expect(walks.count == 4)
            for summary in summaries {
                #expect(summary["walks"] as? Int == 2)
                for key in ["arrivedPercent", "onRoutePercent"] {
                    let value = try #require(summary[key] as? Double, "\(key)")
                    #expect((0...100).contains(value), "\(key) \(value)")
                }
                for key in [
                    "turnOnsetsPerMinute", "medianTimeRatio", "reroutesPerWalk", "wrongWayCuesPerWalk",
                    "smoothedRMSMeters", "cueLatencyP50Milliseconds", "cueLatencyP99Milliseconds",
                ] {
                    let value = try #require(summary[key] as? Double, "\(key) in \(summary)")
                    #expect(value.isFinite && value >= 0, "\(key) \(value)")
                }
                #expect((summary["medianTimeRatio"] as? Double ?? 0) > 0.5, "a walk takes about its route's time")
                #expect(summary["timeouts"] as? Int == 0, "every fix and heading was answered")
            }
            for walk in walks {
                #expect((walk["seconds"] as? Double ?? 0) > 60, "each walk went on for minutes: \(walk)")
                #expect((walk["latenciesMilliseconds"] as? [Double])?.count ?? 0 > 500)
            }
            // Each walk's bus kept as a session, which the report reads.
            let folders = try FileManager.default.contentsOfDirectory(atPath: sessions).sorted()
            #expect(
                folders == [
                    "sigma10-corr-route1-seed1", "sigma10-corr-route2-seed1", "sigma5-route1-seed1",
                    "sigma5-route2-seed1",
                ])
            let report = try ChildProcess(
                try hapticnavExecutable(),
                ["report", "\(sessions)/sigma5-route1-seed1", "--out", "\(sessions)/report.html"])
            #expect(await report.wait(seconds: 60) == 0, "\(report.stderr)")
            #expect(report.stdout.contains("1 route(s)") || report.stdout.contains("route(s) ("), "\(report.stdout)")
            #expect(report.stdout.contains("arrived"), "\(report.stdout)")
        }

        /// Participants who act on turn events, the stages composed (the same stage code and messages as a process
        /// each: `stagesComposedInOneProcessGiveTheSameWalksAsAProcessEach`): every walk hears the route controller's
        /// announcements as the sink rendered them (in full, or as the band's pulses say them), walks its route to the
        /// arrival, and takes the turns it was told.
        @Test func eventFollowingParticipantsHearTheTurnsAndArrive() async throws {
            let run = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "eval", "walkers", "--config", repositoryRoot.appendingPathComponent("configs/demo.json5").path,
                    "--pairs", repositoryRoot.appendingPathComponent("data/routing/monaco-pedestrian-routes.json").path,
                    "--routes", "3", "--seeds", "1", "--noise", "5", "--participant", "events", "--participant",
                    "band", "--json", "--set", "stages.route.options.guidance=events",
                ])
            #expect(await run.wait(seconds: 400) == 0, "\(run.stderr.suffix(2000))")
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout.prefix(500))"
            )
            let walks = try #require(object["walks"] as? [[String: Any]])
            // Those who hear the events in full, and those who know of them only what the band's pulses say.
            #expect(walks.count == 6)
            #expect(
                walks.map { $0["participant"] as? String ?? "" }.sorted() == [
                    "band", "band", "band", "events", "events", "events",
                ])
            for walk in walks {
                #expect((walk["turnEvents"] as? Int ?? 0) >= 2, "announcements and nows felt: \(walk)")
                #expect(walk["arrived"] as? Bool == true, "\(walk)")
                #expect(walk["timeouts"] as? Int == 0)
                let junctions = walk["junctionsOnRoute"] as? Int ?? 0
                #expect(junctions > 0 && (walk["wrongBranches"] as? Int ?? 99) * 4 <= junctions, "\(walk)")
            }
        }

        /// The place on the network (`place: network`), the stages composed, GPS error correlated over 30 s: network
        /// participants arrive on every route, never falsely, and the route controller places them along the route far
        /// nearer where they are than from the smoothed fix (the same walks' error, `place: smoothed`).
        @Test func theNetworkPlacePlacesWalkersAlongTheRoute() async throws {
            let run = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "eval", "walkers", "--config", repositoryRoot.appendingPathComponent("configs/demo.json5").path,
                    "--pairs", repositoryRoot.appendingPathComponent("data/routing/monaco-pedestrian-routes.json").path,
                    "--routes", "3", "--seeds", "1", "--noise", "5c", "--participant", "network", "--json", "--set",
                    "stages.route.options.place=smoothed,network",
                ])
            #expect(await run.wait(seconds: 400) == 0, "\(run.stderr.suffix(2000))")
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout.prefix(500))"
            )
            let walks = try #require(object["walks"] as? [[String: Any]])
            #expect(walks.count == 6)
            func rms(_ setting: String) -> Double {
                let errors = walks.filter { ($0["settings"] as? String)?.contains(setting) == true }
                    .flatMap { $0["alongErrorsMeters"] as? [Double] ?? [] }
                return (errors.map { $0 * $0 }.reduce(0, +) / Double(max(1, errors.count))).squareRoot()
            }
            for walk in walks where (walk["settings"] as? String)?.contains("network") == true {
                #expect(walk["arrived"] as? Bool == true, "\(walk)")
                #expect(walk["falseArrival"] as? Bool == false)
                #expect(walk["timeouts"] as? Int == 0)
            }
            let smoothed = rms("place=smoothed"), network = rms("place=network")
            #expect(
                network > 0 && network < 0.7 * smoothed, "along the route: network \(network) m, smoothed \(smoothed) m"
            )
        }

        /// Stages composed in the evaluating process (the default) and a process per stage (`--processes`) give the
        /// same walks, figure for figure; only the measured latency of a cue differs.
        @Test func stagesComposedInOneProcessGiveTheSameWalksAsAProcessEach() async throws {
            func walks(_ extra: [String]) async throws -> [[String: Any]] {
                let run = try ChildProcess(
                    try hapticnavExecutable(),
                    [
                        "eval", "walkers", "--config",
                        repositoryRoot.appendingPathComponent("configs/demo.json5").path, "--pairs",
                        repositoryRoot.appendingPathComponent("data/routing/monaco-pedestrian-routes.json").path,
                        "--routes", "2", "--seeds", "1", "--noise", "5c", "--participant", "open", "--participant",
                        "network", "--participant", "events", "--set", "stages.route.options.guidance=events", "--json",
                    ] + extra)
                #expect(await run.wait(seconds: 300) == 0, "\(run.stderr.suffix(2000))")
                let object = try #require(
                    JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                    "\(run.stdout.prefix(500))")
                return try #require(object["walks"] as? [[String: Any]]).map {
                    var walk = $0
                    walk["latenciesMilliseconds"] = nil
                    return walk
                }
            }
            let composed = try await walks([])
            let processes = try await walks(["--processes"])
            #expect(composed.count == 6)
            #expect(composed.count == processes.count)
            for (one, other) in zip(composed, processes) {
                let (a, b) = try (
                    JSONSerialization.data(withJSONObject: one, options: .sortedKeys),
                    JSONSerialization.data(withJSONObject: other, options: .sortedKeys)
                )
                #expect(
                    a == b,
                    "composed \(String(decoding: a, as: UTF8.self))\nprocesses \(String(decoding: b, as: UTF8.self))")
            }
        }

        /// Participants held to the ways of a second city (Andorra la Vella), on its two shortest pairs: every junction
        /// figure is computed, and each walk passes junctions on its route.
        @Test func networkParticipantsOnASecondCityGiveTheJunctionFigures() async throws {
            let folder = try scratchFolder()
            let all = try #require(
                JSONSerialization.jsonObject(
                    with: Data(
                        contentsOf: repositoryRoot.appendingPathComponent("data/routing/andorra-walking-pairs.json")))
                    as? [String: Any])
            let routes = try #require(all["routes"] as? [[String: Any]])
            let shortest = routes.sorted { ($0["osm_length_m"] as? Double ?? 0) < ($1["osm_length_m"] as? Double ?? 0) }
            let pairs = "\(folder)/pairs.json"
            try JSONSerialization.data(withJSONObject: ["routes": Array(shortest.prefix(2))]).write(
                to: URL(fileURLWithPath: pairs))
            let run = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "eval", "walkers", "--config", repositoryRoot.appendingPathComponent("configs/demo.json5").path,
                    "--map", repositoryRoot.appendingPathComponent("data/maps/andorra.osm.pbf").path,
                    "--pairs", pairs, "--participant", "network", "--seeds", "1", "--noise", "5", "--json",
                ])
            #expect(await run.wait(seconds: 300) == 0, "\(run.stderr.suffix(2000))")
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout.prefix(500))"
            )
            let summary = try #require((object["summaries"] as? [[String: Any]])?.first)
            let walks = try #require(object["walks"] as? [[String: Any]])
            #expect(summary["participant"] as? String == "network")
            #expect(walks.count == 2)
            let right = try #require(summary["junctionsRightPercent"] as? Double)
            #expect((0...100).contains(right))
            for key in ["wrongBranchesPerWalk", "junctionStopsPerWalk", "turnOnsetsPerMinute", "medianTimeRatio"] {
                let value = try #require(summary[key] as? Double, "\(key) in \(summary)")
                #expect(value.isFinite && value >= 0, "\(key) \(value)")
            }
            #expect(summary["timeouts"] as? Int == 0)
            for walk in walks {
                #expect(walk["participant"] as? String == "network")
                #expect((walk["junctionsOnRoute"] as? Int ?? 0) > 0, "junctions passed on the route: \(walk)")
                #expect((walk["seconds"] as? Double ?? 0) > 60)
                // Each wrong branch is named where it was taken, within the map's extent.
                let wrong = try #require(walk["wrongJunctions"] as? [[String: Any]])
                #expect(wrong.count == walk["wrongBranches"] as? Int)
                for junction in wrong {
                    #expect((42.4...42.7).contains(junction["latitude"] as? Double ?? 0), "\(junction)")
                    #expect((1.3...1.8).contains(junction["longitude"] as? Double ?? 0), "\(junction)")
                }
            }
        }
    }
}
