import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Bus
import SystemIO
import Devices
import Evaluation
import LocationSources
import Routers
import Logging
import NavCore
import Runtime
import MapLogic

struct Eval: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluations that print their figures.",
        subcommands: [
            SmootherEval.self, GuidanceEval.self, TargetsEval.self, WalkersEval.self, MergeEval.self, PairsEval.self,
        ])

    struct SmootherEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "smoother",
            abstract: "RMS error of raw and smoothed fixes and the mean lag, on simulated walks and a real one.")

        @Option(help: "A GnssLogger log whose GPS fixes are the truth of a real walk ('' to skip).")
        var realWalk = "data/walks/gnsslogger-pixel7-stanford-walk.txt"

        @Option(help: "Walks (or noise seeds on the real walk) per noise level.")
        var walks = 20

        @Option(help: "The smoother's acceleration noise [m/s²].")
        var accelerationNoise = KalmanSmoother.Options().accelerationNoise

        func run() throws {
            var options = KalmanSmoother.Options()
            options.accelerationNoise = self.accelerationNoise
            let rows = try SmootherReport.run(
                realWalk: self.realWalk.isEmpty ? nil : self.realWalk, walks: self.walks,
                options: options)
            print(
                "smoother: Kalman, constant velocity, acceleration noise \(options.accelerationNoise) m/s²; "
                    + "walks at 1.4 m/s (real walk: its own pace), a fix every second, Gaussian noise per axis")
            print(
                "walk                                   σ m  runs  fixes  raw RMS m  smoothed RMS m  below raw  mean lag m"
            )
            var pass = true
            for row in rows {
                let m = row.metrics
                print(
                    row.walk.padded(to: 37)
                        + String(
                            cFormat: "%5.0f %5d %6d %10.2f %15.2f %9.0f %% %11.2f", row.sigma, row.runs, m.fixes,
                            m.rawRMSMeters, m.smoothedRMSMeters, m.improvement * 100, m.meanLagMeters))
                pass = pass && m.improvement >= 0.3 && (row.sigma < 10 || abs(m.meanLagMeters) <= 2)
            }
            print(
                "targets: RMS at least 30 % below raw at σ 5 and 10 m; |mean lag| at most 2 m at σ 10 m: "
                    + (pass ? "met" : "NOT met"))
        }
    }
}

extension Eval {
    struct GuidanceEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "guidance",
            abstract:
                "Cue changes a minute for simulated walkers who obey cues: the plain rule against the debounced one.")

        @Option(help: "Minutes walked per seed.")
        var minutes = 10.0

        @Option(help: "Seeds.")
        var seeds = 5

        func run() {
            let walker = GuidanceSimulation.Walker()
            print(
                "walkers who obey cues: compass noise \(walker.compassNoiseDegrees)°, drift \(walker.driftDegreesPerRootSecond)°/√s, "
                    + "turn \(walker.turnRateDegreesPerSecond)°/s at full intensity, reaction \(walker.reactionSeconds) s, "
                    + "\(Int(walker.sampleRateHz)) Hz; tolerance 15°, debounce 0.3 s, release band 5°")
            print("seed   plain rule /min   debounced /min")
            var plain: [Double] = [], debounced: [Double] = []
            for seed in 1...max(1, self.seeds) {
                plain.append(
                    GuidanceSimulation.cueChangesPerMinute(debounced: false, minutes: self.minutes, seed: UInt64(seed)))
                debounced.append(
                    GuidanceSimulation.cueChangesPerMinute(debounced: true, minutes: self.minutes, seed: UInt64(seed)))
                print(String(cFormat: "%4d %17.1f %16.1f", seed, plain.last!, debounced.last!))
            }
            let median = { (values: [Double]) in values.sorted()[values.count / 2] }
            print(String(cFormat: "median %15.1f %16.1f", median(plain), median(debounced)))
        }
    }
}

extension Eval {
    struct TargetsEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "targets",
            abstract:
                "Cue-obeying walkers on the 25 Monaco routes: how many stay within 10 m of the route, aiming at the next waypoint or at a look-ahead point."
        )

        @Option(help: "The OSM extract.")
        var map = "data/maps/monaco-highways.osm"

        @Option(help: "The reference pairs.")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "Walkers (seeds) per route and rule.")
        var seeds = 4

        func run() throws {
            let osm = try OSMRouteProvider(map: self.map, logger: Logger(label: "eval"))
            var within: [RouteTracker.TargetMode: Int] = [:], arrived: [RouteTracker.TargetMode: Int] = [:]
            var worst: [RouteTracker.TargetMode: [Double]] = [:]
            var walks = 0
            for pair in try RouteBenchmark.pairs(file: self.pairs) {
                let plan = try osm.graph.shortestRoute(from: pair.origin, to: pair.destination)
                let route = RouteBuilder.route(from: plan, routeID: 1, timeSeconds: 0, provider: "osm")
                for seed in 1...max(1, self.seeds) {
                    walks += 1
                    for mode in RouteTracker.TargetMode.allCases {
                        let walk = TargetModeSimulation.walk(route: route, mode: mode, seed: UInt64(seed))
                        if walk.maximumOffRouteMeters <= 10 { within[mode, default: 0] += 1 }
                        if walk.arrived { arrived[mode, default: 0] += 1 }
                        worst[mode, default: []].append(walk.maximumOffRouteMeters)
                    }
                }
            }
            let walker = GuidanceSimulation.Walker()
            print(
                "cue-obeying walkers on \(walks / max(1, self.seeds)) Monaco routes × \(self.seeds) seeds: compass noise \(walker.compassNoiseDegrees)°, "
                    + "drift \(walker.driftDegreesPerRootSecond)°/√s, turn \(walker.turnRateDegreesPerSecond)°/s, reaction \(walker.reactionSeconds) s, 1.4 m/s; no rerouting"
            )
            print("target rule    within 10 m of the route   arrived   median / max distance from the route")
            for mode in RouteTracker.TargetMode.allCases {
                let sorted = (worst[mode] ?? []).sorted()
                print(
                    mode.rawValue.padded(to: 14)
                        + String(
                            cFormat: "%8d of %d (%3.0f %%)   %7d   %6.1f m / %6.1f m", within[mode, default: 0], walks,
                            100 * Double(within[mode, default: 0]) / Double(max(1, walks)), arrived[mode, default: 0],
                            sorted.isEmpty ? 0 : sorted[sorted.count / 2], sorted.last ?? 0))
            }
        }
    }

    struct WalkersEval: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "walkers",
            abstract:
                "Simulated participants who know only the cues, through the real smoother, route controller and sink processes of a config, in lockstep with simulated time: arrival, time on route, cues, reroutes, per GPS error condition."
        )

        @Option(help: "The config whose smoother, route and haptic stages are evaluated.")
        var config = "configs/demo.json5"

        @Option(help: "The route pairs (origin and destination of each).")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "Use the first N pairs only.")
        var routes: Int?

        @Option(help: "Seeds per route.")
        var seeds = 2

        @Option(
            help:
                "GPS error conditions: sigma in metres, white, or with 'c' correlated with a 30 s time constant (repeatable)."
        )
        var noise: [String] = ["5", "10", "5c"]

        @Flag(help: "Print the summaries and every walk as JSON.")
        var json = false

        @Option(
            help:
                "Keep each walk's bus as a session in this folder (CONDITION-routeN-seedS), for `hapticnav report` and `replay`."
        )
        var sessions: String?

        @Option(
            help:
                "Who walks (repeatable): 'open' (walks wherever they face), 'network' (held to the walkable ways, choosing a branch at each junction by the cues), 'events' (as network, acting on turn events: counting junctions, turning at the announced one) or 'band' (as events, knowing of them only what the band's pulses say: side, count, how sharp)."
        )
        var participant: [String] = ["open"]

        @Option(
            help:
                "An OpenStreetMap extract to route and walk on instead of the config's map (its route stage must be 'osm')."
        )
        var map: String?

        @Flag(
            help:
                "Run each walk's stages as processes of their own, as a lab runs them, instead of composed in this process over in-memory sockets (the same stage code and messages; the same walks, more slowly)."
        )
        var processes = false

        @Option(
            help:
                "Walk only this share of the walks, I/N (every Nth from the Ith), for a cluster's job array; merge the shards' --json with `eval merge`."
        )
        var shard: String?

        @Option(
            name: .customLong("set"),
            help:
                "A parameter sweep (repeatable): PATH=V1,V2,… sets a key of the config (stages.haptic.options.toleranceDegrees=10,15,20); every combination of the values is walked and is a row of the table."
        )
        var sets: [String] = []

        func run() async throws {
            let conditions = try self.noise.map { text -> WalkerEvaluation.Condition in
                guard let condition = WalkerEvaluation.Condition(text) else {
                    throw ValidationError("--noise: '\(text)' is not a sigma in metres (5, 10, or 5c for correlated)")
                }
                return condition
            }
            var pairs = try RouteBenchmark.endpoints(file: self.pairs)
            if let routes = self.routes { pairs = Array(pairs.prefix(max(1, routes))) }
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "hapticnav-eval-\(getpid())"
            ).path
            defer { try? FileManager.default.removeItem(atPath: folder) }
            var setup = WalkerEvaluation.Setup(
                executable: executable, config: self.config, pairs: pairs,
                seeds: (1...max(1, self.seeds)).map { UInt64($0) }, conditions: conditions, folder: folder)
            setup.sessionsFolder = self.sessions.map { Paths.absolute($0) }
            for name in self.participant where WalkerEvaluation.ParticipantKind(rawValue: name) == nil {
                throw ValidationError(
                    "--participant: '\(name)' is none of \(WalkerEvaluation.ParticipantKind.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", "))"
                )
            }
            setup.participants = WalkerEvaluation.ParticipantKind.allCases.filter {
                self.participant.contains($0.rawValue)
            }
            setup.map = self.map
            if !self.processes {
                setup.composition = .composedByStageHost
            }
            if let text = self.shard {
                guard let shard = WalkerEvaluation.Shard(text) else {
                    throw ValidationError("--shard: '\(text)' is not I/N with 1 ≤ I ≤ N")
                }
                setup.shard = shard
            }
            let sweep: ConfigSweep
            do {
                sweep = try ConfigSweep(self.sets)
            } catch {
                throw ValidationError("\(error)")
            }
            let combinations = sweep.combinations
            var plan = WalkerEvaluation.Plan(
                config: self.config, routes: pairs.count, seeds: setup.seeds.count, participants: setup.participants,
                conditions: conditions.map(\.name), settings: sweep.settings.isEmpty ? [] : combinations.map(\.label),
                velocityNoise: setup.velocityNoise, shard: setup.shard)
            // Each combination's config, checked (a wrong key is named) before anything walks.
            var configs: [String] = []
            if sweep.settings.isEmpty {
                configs = [self.config]
            } else {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                for (index, combination) in combinations.enumerated() {
                    let file = "\(folder)/sweep-\(index + 1).json"
                    do {
                        let tree = try ConfigSweep.config(file: self.config, setting: combination.values)
                        try writeFile(Array(try encoder.encode(tree)), to: file)
                    } catch let error as ConfigError {
                        throw CommandFailure("\(self.config): \(error)")
                    }
                    do {
                        _ = try PipelineConfig.load(file: file, calibrationMayBeMissing: true)
                    } catch let error as ConfigError {
                        throw CommandFailure("\(self.config) with \(combination.label): \(error)")
                    }
                    configs.append(file)
                }
            }
            plan.fingerprint = try Self.fingerprint(configs: configs, pairs: pairs, map: self.map)
            let quiet = self.json
            var walks: [WalkerEvaluation.Walk] = []
            let perCombination = plan.walks / max(1, combinations.count)
            for (index, combination) in combinations.enumerated() {
                setup.config = configs[index]
                setup.firstNumber = index * perCombination
                setup.settingsLabel = sweep.settings.isEmpty ? nil : combination.label
                walks += try await WalkerEvaluation.run(setup) { line in
                    if !quiet { StandardStreams.writeError(line + "\n") }
                }.walks
            }
            let summaries = WalkerEvaluation.summaries(
                of: walks, participants: plan.participants, conditions: plan.conditions, settings: plan.settings)
            try Self.print(WalkerEvaluation.Results(plan: plan, summaries: summaries, walks: walks), json: self.json)
        }

        /// A digest (64-bit FNV-1a, hex) of what a run walks beyond its counts: every combination's config file as
        /// written, the route pairs, the name and size of the map given with --map, and this program's version.
        static func fingerprint(
            configs: [String], pairs: [(origin: Coordinate, destination: Coordinate)], map: String?
        ) throws -> String {
            // Each part ended by a zero byte, so that no two different lists of parts read the same.
            var bytes = Array(HapticNavVersion.text.utf8) + [0]
            for config in configs {
                do {
                    bytes += try InputFile.contents(of: config) + [0]
                } catch {
                    throw CommandFailure("\(error)")
                }
            }
            for pair in pairs {
                bytes +=
                    Array(
                        "\(pair.origin.latitude),\(pair.origin.longitude) \(pair.destination.latitude),\(pair.destination.longitude)"
                            .utf8) + [0]
            }
            if let map {
                let size = (try? FileManager.default.attributesOfItem(atPath: map)[.size] as? Int) ?? -1
                bytes += Array("\(Paths.absolute(map)) \(size)".utf8) + [0]
            }
            return String(fnv1a64(bytes), radix: 16)
        }

        /// The results as the table (under its header) or as JSON, the one form `eval merge` reads.
        static func print(_ results: WalkerEvaluation.Results, json: Bool) throws {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                encoder.nonConformingFloatEncodingStrategy = .convertToString(
                    positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
                Swift.print(String(decoding: try encoder.encode(results), as: UTF8.self))
            } else {
                Swift.print(results.plan.header)
                Swift.print(WalkerEvaluation.table(results.summaries))
            }
        }
    }

    struct MergeEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge",
            abstract:
                "The shards of one `eval walkers --shard I/N --json` run as the whole run's table (or JSON): every shard once, every walk once, checked to be of one run."
        )

        @Argument(help: "The shards' JSON files.")
        var files: [String]

        @Flag(help: "Print the merged summaries and every walk as JSON, as `eval walkers --json` does.")
        var json = false

        func run() throws {
            let decoder = JSONDecoder()
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(
                positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            var parts: [(name: String, results: WalkerEvaluation.Results)] = []
            for file in self.files {
                let bytes: [UInt8]
                do {
                    bytes = try InputFile.contents(of: file)
                } catch {
                    throw CommandFailure("\(error)")
                }
                do {
                    parts.append((file, try decoder.decode(WalkerEvaluation.Results.self, from: Data(bytes))))
                } catch {
                    throw CommandFailure("\(file): not the JSON of `eval walkers --json` (\(error))")
                }
            }
            do {
                try WalkersEval.print(try WalkerEvaluation.merge(parts), json: self.json)
            } catch let failure as WalkerEvaluation.Failure {
                throw CommandFailure(failure.description)
            }
        }
    }
}

extension Eval {
    struct PairsEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pairs",
            abstract:
                "Draws start and destination pairs from a map (places on the ways of its largest network, a walking route of a chosen length apart) and prints them as a pairs file for `eval walkers --pairs`."
        )

        @Option(help: "The OpenStreetMap extract (XML or PBF).")
        var map: String

        @Option(help: "How many pairs.")
        var count = 25

        @Option(help: "The seed of the draw.")
        var seed: UInt64 = 1

        @Option(help: "The shortest walking route between a pair [metres].")
        var minimumMeters = 600.0

        @Option(help: "The longest walking route between a pair [metres].")
        var maximumMeters = 2000.0

        @Option(help: "Only places within --radius-meters of this point, as LAT,LON (a town within a larger extract).")
        var near: String?

        @Option(help: "The radius around --near [metres].")
        var radiusMeters = 1500.0

        func run() throws {
            let centre = try self.near.map { text -> Coordinate in
                guard let coordinate = Coordinate(latitudeLongitude: text) else {
                    throw ValidationError("--near: expected LAT,LON, like 42.5075,1.5300")
                }
                return coordinate
            }
            let graph = try OSMRouteProvider(map: self.map, logger: Logger(label: "eval")).graph
            let pairs = try RoutePairs.draw(
                from: graph, count: self.count, seed: self.seed, minimumMeters: self.minimumMeters,
                maximumMeters: self.maximumMeters, near: centre, radiusMeters: self.radiusMeters)
            func point(_ c: Coordinate) -> String {
                "{ \"lat\": \(fixedDecimal(c.latitude, digits: 7)), \"lon\": \(fixedDecimal(c.longitude, digits: 7)) }"
            }
            let area =
                centre.map {
                    " within \(Int(self.radiusMeters)) m of \(fixedDecimal($0.latitude, digits: 5)),\(fixedDecimal($0.longitude, digits: 5))"
                } ?? ""
            print("{")
            print(
                "  \"source\": \"hapticnav eval pairs --map \(self.map.split(separator: "/").last.map(String.init) ?? self.map) --seed \(self.seed): places on the ways\(area), walking routes \(Int(self.minimumMeters))–\(Int(self.maximumMeters)) m by the offline router\","
            )
            print("  \"routes\": [")
            for (index, pair) in pairs.enumerated() {
                print(
                    "    { \"origin\": \(point(pair.origin)), \"destination\": \(point(pair.destination)), \"osm_length_m\": \(fixedDecimal(pair.lengthMeters, digits: 1)) }"
                        + (index == pairs.count - 1 ? "" : ","))
            }
            print("  ]")
            print("}")
        }
    }
}
