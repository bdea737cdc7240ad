import Foundation
import TestSupport
import Testing

extension ProcessSuites.Data {
    /// `eval walkers` spread over a cluster: shards of one run merged by `eval merge` give the whole run's walks and
    /// figures (all but the measured cue latencies, which are wall-clock), whether the shards ran here or as a Slurm
    /// job array; a merge refuses shards that do not make one run; a sweep walks each combination.
    @Suite struct ShardedEvaluationTests {
        static let walkArguments = [
            "--config", repositoryRoot.appendingPathComponent("configs/demo.json5").path,
            "--pairs", repositoryRoot.appendingPathComponent("data/routing/monaco-pedestrian-routes.json").path,
            "--routes", "2", "--seeds", "2", "--noise", "5", "--participant", "network",
        ]

        /// A run's JSON without what is measured in wall-clock time.
        static func comparable(_ json: String) throws -> (plan: Data, summaries: [Data], walks: [Data]) {
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json.prefix(500))")
            let walks = try #require(object["walks"] as? [[String: Any]]).map { walk -> Data in
                var walk = walk
                // Measured on the machine, not walked: wall-clock latencies, answers that timed out, restarts.
                for key in ["latenciesMilliseconds", "timeouts", "restarts"] { walk[key] = nil }
                return try JSONSerialization.data(withJSONObject: walk, options: .sortedKeys)
            }
            let summaries = try #require(object["summaries"] as? [[String: Any]]).map { summary -> Data in
                var summary = summary
                for key in ["cueLatencyP50Milliseconds", "cueLatencyP99Milliseconds", "timeouts", "restarts"] {
                    summary[key] = nil
                }
                return try JSONSerialization.data(withJSONObject: summary, options: .sortedKeys)
            }
            let plan = try JSONSerialization.data(
                withJSONObject: try #require(object["plan"] as? [String: Any]), options: .sortedKeys)
            return (plan, summaries, walks)
        }

        static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcess {
            let process = try ChildProcess(try hapticnavExecutable(), arguments, environment: environment)
            #expect(
                await process.wait(seconds: 300) == 0,
                "\(arguments.joined(separator: " ")): \(process.stderr.suffix(2000))")
            return process
        }

        static func expectEqual(_ merged: String, _ whole: String) throws {
            let (a, b) = (try Self.comparable(merged), try Self.comparable(whole))
            #expect(
                a.plan == b.plan,
                "\(String(decoding: a.plan, as: UTF8.self)) against \(String(decoding: b.plan, as: UTF8.self))")
            #expect(a.walks.count == 4 && a.walks.count == b.walks.count)
            for (one, other) in zip(a.walks, b.walks) {
                #expect(
                    one == other,
                    "merged \(String(decoding: one, as: UTF8.self))\nwhole \(String(decoding: other, as: UTF8.self))")
            }
            #expect(a.summaries == b.summaries)
        }

        @Test func shardsMergeToTheWholeRunAndAMergeRefusesWhatIsNotOneRun() async throws {
            let folder = try scratchFolder()
            let whole = try await Self.run(["eval", "walkers"] + Self.walkArguments + ["--json"])
            var shards: [String] = []
            for index in 1...3 {
                let shard = try await Self.run(
                    ["eval", "walkers"] + Self.walkArguments + ["--json", "--shard", "\(index)/3"])
                let file = "\(folder)/shard-\(index).json"
                try shard.stdout.store(toFile: file)
                shards.append(file)
            }
            // In any order.
            let merged = try await Self.run(["eval", "merge", "--json"] + shards.reversed())
            try Self.expectEqual(merged.stdout, whole.stdout)
            let table = try await Self.run(["eval", "merge"] + shards)
            #expect(table.stdout.contains("2 routes × 2 seeds"), "\(table.stdout)")
            #expect(table.stdout.contains("network      σ5             4"), "\(table.stdout)")

            // A shard missing, one given twice, a whole run, another run's shard: refused, and said why.
            // (One route: a run of two walks, whose third shard walks none.)
            let otherRun = try await Self.run(
                ["eval", "walkers"] + Self.walkArguments + ["--routes", "1", "--json", "--shard", "3/3"])
            try otherRun.stdout.store(toFile: "\(folder)/other.json")
            try whole.stdout.store(toFile: "\(folder)/whole.json")
            for (files, reason) in [
                (Array(shards.prefix(2)), "missing: shard 3/3"),
                (shards + [shards[0]], "shard 1/3 again"),
                (shards.prefix(2) + ["\(folder)/whole.json"], "a whole run, not a shard"),
                (shards.prefix(2) + ["\(folder)/other.json"], "the shard of another run"),
            ] {
                let refused = try ChildProcess(try hapticnavExecutable(), ["eval", "merge"] + files)
                #expect(await refused.wait(seconds: 60) == 1)
                #expect(refused.stderr.contains(reason), "\(refused.stderr)")
            }
        }

        /// A sweep of the sink's tolerance: a row per value, each walked with its value (the cues differ), and a key
        /// the stage does not have named before anything walks.
        @Test func aSweepWalksEveryCombinationAsARowOfItsOwn() async throws {
            let arguments =
                Array(Self.walkArguments.prefix(4)) + [
                    "--routes", "1", "--seeds", "1", "--noise", "5", "--participant", "network", "--json",
                ]
            let sweep = try await Self.run(
                ["eval", "walkers"] + arguments + ["--set", "stages.haptic.options.toleranceDegrees=10,30"])
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(sweep.stdout.utf8)) as? [String: Any],
                "\(sweep.stdout.prefix(500))")
            let summaries = try #require(object["summaries"] as? [[String: Any]])
            #expect(
                summaries.compactMap { $0["settings"] as? String } == ["toleranceDegrees=10", "toleranceDegrees=30"])
            let cues = summaries.compactMap { $0["turnOnsetsPerMinute"] as? Double }
            #expect(cues.count == 2 && cues[0] > cues[1], "a wider tolerance cues less: \(cues)")
            let walks = try #require(object["walks"] as? [[String: Any]])
            #expect(walks.compactMap { $0["number"] as? Int } == [0, 1])

            let wrong = try ChildProcess(
                try hapticnavExecutable(),
                ["eval", "walkers"] + arguments + ["--set", "stages.haptic.options.toleranceDegree=10"])
            #expect(await wrong.wait(seconds: 60) == 1)
            #expect(wrong.stderr.contains("unknown key 'toleranceDegree' in stages.haptic.options"), "\(wrong.stderr)")
        }

        /// Four shards as a Slurm job array on a real single-node Slurm (Debian's slurmctld, slurmd and munge, started
        /// here as root) through `scripts/slurm-walkers`: their merge is the whole run.
        @Test(.enabled(if: geteuid() == 0, "needs root to start Slurm's daemons"))
        func fourShardsAsASlurmJobArrayMergeToTheWholeRun() async throws {
            let cluster = try await SlurmCluster.start()
            defer { cluster.stop() }
            let out = "\(cluster.folder)/shards"
            let submit = await cluster.command(
                "/usr/bin/sbatch",
                [
                    "--wait", "--array=1-4", "--chdir", repositoryRoot.path, "--output",
                    "\(cluster.folder)/task-%a.log",
                    repositoryRoot.appendingPathComponent("scripts/slurm-walkers").path, out, "4",
                ] + Self.walkArguments,
                environment: ["HAPTICNAV": try hapticnavExecutable()], seconds: 400)
            let taskLogs = (1...4).map {
                (try? String(contentsOfFile: "\(cluster.folder)/task-\($0).log", encoding: .utf8)) ?? ""
            }.joined(separator: "\n")
            try #require(submit.status == 0, "sbatch: \(submit.output)\n\(taskLogs)\n\(cluster.logs)")
            let shards = (1...4).map { "\(out)/shard-\($0)-of-4.json" }
            let merged = try await Self.run(["eval", "merge", "--json"] + shards)
            let whole = try await Self.run(["eval", "walkers"] + Self.walkArguments + ["--json"])
            try Self.expectEqual(merged.stdout, whole.stdout)
            let table = try await Self.run(["eval", "merge"] + shards)
            print(
                "slurm: 4 shards of \(taskLogs.components(separatedBy: "written to").count - 1) tasks merged:\n\(table.stdout)"
            )
        }
    }
}
