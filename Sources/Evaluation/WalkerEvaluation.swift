#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Logging
public import NavCore
import Routers
import Synchronization
import SystemIO
import MapLogic
import Devices

/// `hapticnav eval walkers`: the real smoother, route controller and haptic sink, each its own process started from
/// a config, with simulated participants (``Participant``) closing the loop. This process plays the location source:
/// a fix a second and a heading every 0.1 s of simulated time, each answered before the next is sent (lockstep), so
/// that the result does not depend on how loaded the machine is.
public enum WalkerEvaluation {
    /// A GPS error condition.
    public struct Condition: Sendable, Codable, Equatable {
        /// Its name in tables ("σ5", "σ10", "σ5 corr").
        public var name: String
        /// One sigma per axis [metres].
        public var sigmaMeters: Double
        /// The correlation time [seconds], nil for white error.
        public var timeConstantSeconds: Double?

        /// Parses "5", "10", "5c" (correlated, 30 s).
        public init?(_ text: String) {
            let correlated = text.hasSuffix("c")
            guard let sigma = Double(correlated ? String(text.dropLast()) : text), sigma >= 0 else { return nil }
            self.sigmaMeters = sigma
            self.timeConstantSeconds = correlated ? 30 : nil
            self.name = "σ\(fixedDecimal(sigma, digits: 0))" + (correlated ? " corr" : "")
        }
    }

    /// Who walks: the open-space participant (``Participant``), who walks wherever they face, or the participant held
    /// to the walkable ways (``NetworkParticipant``), who chooses a branch at each junction.
    public enum ParticipantKind: String, Sendable, Codable, CaseIterable {
        case open
        case network
        /// Held to the ways like `network`, and acting on turn events as a blind walker does (counting the junctions
        /// since an announcement, turning at the announced one; missing a junction now and then); with no event
        /// pending, by the cues.
        case events
        /// As `events`, but knowing of each event only what the band says of it (docs/BAND-PROTOCOL.md), through its
        /// frames as a wearer feels them (``FeltBand``): the side, the junctions counted in pulses, at the junction
        /// whether to bear, turn, turn sharply or turn back; not the angle, the distance, the street or which route it is
        /// of.
        case band

        /// Held to the walkable ways (chooses at junctions).
        public var onNetwork: Bool { self != .open }

        /// Acts on turn events.
        public var followsEvents: Bool { self == .events || self == .band }
    }

    /// What to run.
    public struct Setup: Sendable {
        /// The `hapticnav` executable that runs the stages.
        public var executable: String
        /// The config whose smoother, route and haptic stages are evaluated.
        public var config: String
        /// Start and destination of each route.
        public var pairs: [(origin: Coordinate, destination: Coordinate)]
        public var seeds: [UInt64]
        public var conditions: [Condition]
        /// A folder of the run's own (configs, sockets).
        public var folder: String
        public var behaviour = Participant.Behaviour()
        /// Who walks; each kind walks every route × seed × condition.
        public var participants: [ParticipantKind] = [.open]
        /// The junction rules of network participants.
        public var rules = NetworkParticipant.Rules()
        /// A map (OSM XML or PBF) to route and walk on instead of the config's (its route stage must be `osm`).
        public var map: String?
        /// The calibration's error [degrees, one sigma] and the compass noise [degrees, one sigma].
        public var calibrationErrorDegrees = 3.0
        public var compassNoiseDegrees = 5.0
        /// The receiver's velocity error [m/s, one sigma per axis]: a phone's Doppler velocity.
        public var velocityNoise = 0.3
        /// Where to keep each walk's bus as a session (an `mcap` recorder per walk, ``sigma10-corr-route3-seed1`), for
        /// `hapticnav report` and `replay`; nil to keep none.
        public var sessionsFolder: String?
        /// How each walk's stages run: their own processes (the default), or composed in this process.
        public var composition = StageComposition.processes
        /// Walk only this shard's share of the walks (every count-th, from the index-th), for a cluster's job array;
        /// nil for all of them.
        public var shard: Shard?
        /// The number of this run's first walk, when it is one combination of a parameter sweep (the walks of a whole
        /// sweep are numbered through, and a shard takes its share of every combination).
        public var firstNumber = 0
        /// The sweep's combination these walks are of ("toleranceDegrees=10"), nil outside a sweep.
        public var settingsLabel: String?

        public init(
            executable: String, config: String, pairs: [(origin: Coordinate, destination: Coordinate)],
            seeds: [UInt64], conditions: [Condition], folder: String
        ) {
            self.executable = executable
            self.config = config
            self.pairs = pairs
            self.seeds = seeds
            self.conditions = conditions
            self.folder = folder
        }
    }

    /// A share of a run's walks: the walks numbered index − 1, index − 1 + count, … (1-based index, "3/8").
    public struct Shard: Sendable, Codable, Equatable, CustomStringConvertible {
        public var index: Int
        public var count: Int

        /// Parses "I/N" with 1 ≤ I ≤ N.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1,
                (1...count).contains(index)
            else { return nil }
            self.index = index
            self.count = count
        }

        /// Whether the walk numbered `number` is this shard's.
        public func contains(_ number: Int) -> Bool { number % self.count == self.index - 1 }

        public var description: String { "\(self.index)/\(self.count)" }
    }

    /// What a run walks, written with its results so that the shards of one run can be checked and merged: the
    /// same plan in every shard but for `shard`.
    public struct Plan: Sendable, Codable, Equatable {
        public var config: String
        public var routes: Int
        public var seeds: Int
        public var participants: [ParticipantKind]
        public var conditions: [String]
        /// The sweep's combinations, in order; empty outside a sweep.
        public var settings: [String]
        /// Walks in the whole run, every shard's together.
        public var walks: Int
        public var velocityNoise: Double
        /// The share these results are of; nil for a whole run (or a merge of all shards).
        public var shard: Shard?
        /// A digest of what was walked beyond the counts: every combination's config as read, the route pairs, the
        /// map given instead of the config's, the program's version (shards of runs that differ in any are not one).
        public var fingerprint = ""

        public init(
            config: String, routes: Int, seeds: Int, participants: [ParticipantKind], conditions: [String],
            settings: [String], velocityNoise: Double, shard: Shard?
        ) {
            self.config = config
            self.routes = routes
            self.seeds = seeds
            self.participants = participants
            self.conditions = conditions
            self.settings = settings
            self.walks = routes * seeds * participants.count * conditions.count * max(1, settings.count)
            self.velocityNoise = velocityNoise
            self.shard = shard
        }

        /// The line printed above the table.
        public var header: String {
            "\(self.routes) routes × \(self.seeds) seeds, config \(self.config): participants at 1.3 m/s, pocket 70° (calibrated ±3°), compass ±5°, Doppler velocity ±\(fixedDecimal(self.velocityNoise, digits: 1)) m/s, fixes 1 Hz, headings 10 Hz, phones' accelerometers 50 Hz (a step of 0.72 ± 0.05 m, each participant's own; their detector's steps on the bus)"
                + (self.participants.contains(where: \.followsEvents)
                    ? "; event-following participants walk through a junction unnoticed \(fixedDecimal(NetworkParticipant.Rules().missRoadPercent, digits: 0)) % of the time where a road meets their way, \(fixedDecimal(NetworkParticipant.Rules().missPathPercent, digits: 0)) % where only footways, paths or steps branch off, and find one again when a turn cue or a now comes within \(fixedDecimal(NetworkParticipant.Rules().reachMeters, digits: 0)) m past it"
                    : "")
                + (self.shard.map { ", shard \($0) (\(self.walks) walks in all)" } ?? "")
        }
    }

    /// A run's (or a shard's) results as `eval walkers --json` prints them and `eval merge` reads them.
    public struct Results: Sendable, Codable {
        public var plan: Plan
        public var summaries: [Summary]
        public var walks: [Walk]

        public init(plan: Plan, summaries: [Summary], walks: [Walk]) {
            self.plan = plan
            self.summaries = summaries
            self.walks = walks
        }
    }

    /// One walk's figures.
    public struct Walk: Sendable, Codable {
        /// Its place in the whole run (numbered through every participant, condition, route, seed and combination).
        public var number = 0
        /// The sweep's combination it was walked with; nil outside a sweep.
        public var settings: String?
        public var route: Int
        public var seed: UInt64
        public var condition: String
        public var participant: ParticipantKind = .open
        /// The arrival cue came while the participant was truly within 10 m of the destination.
        public var arrived: Bool
        /// The arrival cue came while the participant was truly more than 10 m from the destination.
        public var falseArrival = false
        /// From the participant's first coming within 5 m of the destination to the arrival cue (or to the walk's
        /// end without one) [seconds]; nil when they never came that near.
        public var destinationWaitSeconds: Double?
        /// Junctions passed within 5 m of the route in force, and at how many of them the branch taken left it
        /// (its point 8 m along more than 5 m from the route, or behind the junction along it) [count].
        public var junctionsOnRoute = 0
        public var wrongBranches = 0
        /// Where the wrong branches were taken, and when [seconds into the walk], for a reader to look at.
        public var wrongJunctions: [WrongJunction] = []
        /// Where each turn-around cue came (`wrongWayCues` of them).
        public var turnArounds: [TurnAround] = []
        /// Junctions at which the participant stopped to orient [count].
        public var junctionStops = 0
        /// Turn events felt (announcements, nows, straight-ons), and junctions walked through unnoticed [count].
        public var turnEvents = 0
        public var missedJunctions = 0
        /// Of them, found again by a cue or a *now* within the participant's reach past them [count].
        public var junctionsFoundAgain = 0
        /// Never more than 10 m from the route in use.
        public var onRoute: Bool
        public var maximumOffRouteMeters: Double
        /// Onsets of turn cues (left, right, around) [count].
        public var turnOnsets: Int
        public var wrongWayCues: Int
        public var reroutes: Int
        /// Walk time [seconds] and the first route's walking time at the participant's pace [seconds].
        public var seconds: Double
        public var routeSeconds: Double
        /// Root mean square of the smoothed position's error [metres].
        public var smoothedRMSMeters: Double
        /// At each fix on the route in force, the route controller's place (its progress) less the walker's, along
        /// the route (positive ahead), and its whole error along and across [metres].
        public var alongErrorsMeters: [Double] = []
        public var placeErrorsMeters: [Double] = []
        /// Heading to cue through the processes, per heading [milliseconds].
        public var latenciesMilliseconds: [Double]
        /// Answers that did not come within the wait [count].
        public var timeouts: Int
        /// Times the walk's stages were started again because they never answered [count].
        public var restarts = 0
    }

    /// A turn-around cue's onset: the route controller's place error along the route then (positive: ahead of the
    /// walker) and how far the walker truly was from the route [metres]; nil before the walk's first place.
    public struct TurnAround: Sendable, Codable, Equatable {
        /// Seconds into the walk.
        public var atSeconds: Double
        public var alongErrorMeters: Double?
        public var offRouteMeters: Double?
    }

    /// A junction where the branch taken left the route in force.
    public struct WrongJunction: Sendable, Codable, Equatable {
        public var latitude: Double
        public var longitude: Double
        /// Seconds into the walk.
        public var atSeconds: Double
        /// The participant had stopped there to orient.
        public var stopped: Bool
        /// What the branch was chosen by (the cues, the events, the events from a count put out by a junction walked
        /// through unnoticed, or nothing: walked through unnoticed).
        public var basis: NetworkParticipant.Choice.Basis = .cues
    }

    /// One condition's figures over its walks.
    public struct Summary: Sendable, Codable {
        /// The sweep's combination; nil outside a sweep.
        public var settings: String?
        public var condition: String
        public var participant: ParticipantKind = .open
        public var walks: Int
        public var arrivedPercent: Double
        public var onRoutePercent: Double
        public var turnOnsetsPerMinute: Double
        public var medianTimeRatio: Double
        public var reroutesPerWalk: Double
        public var wrongWayCuesPerWalk: Double
        public var smoothedRMSMeters: Double
        public var cueLatencyP50Milliseconds: Double
        public var cueLatencyP99Milliseconds: Double
        public var timeouts: Int
        /// Walks whose stages were started again because they never answered [count].
        public var restarts: Int
        /// Walks announced as arrived more than 10 m from the destination [count].
        public var falseArrivals = 0
        /// From within 5 m of the destination to the arrival cue, median and longest over the walks that came that
        /// near [seconds].
        public var destinationWaitMedianSeconds = Double.nan
        public var destinationWaitLongestSeconds = Double.nan
        public var wrongBranchesPerWalk = 0.0
        /// Of them, the branches taken at junctions walked through unnoticed (participants following events).
        public var unnoticedWrongBranchesPerWalk = 0.0
        /// Of the junctions passed on the route, the share where the right branch was taken [percent].
        public var junctionsRightPercent = 100.0
        public var junctionStopsPerWalk = 0.0
        /// The route controller's place: its error along the route, RMS and 95th percentile of its size, and its
        /// whole error's RMS [metres].
        public var alongMeanMeters = Double.nan
        public var alongRMSMeters = Double.nan
        public var alongP95Meters = Double.nan
        public var placeRMSMeters = Double.nan
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private static let walkCounter = Atomic<Int>(0)

    /// A walk's stages that never answered: the walk is started again (counted).
    struct StartFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs every route × seed × condition; `progress` hears a line per walk.
    public static func run(
        _ setup: Setup, progress: @Sendable (String) -> Void
    ) async throws -> (walks: [Walk], summaries: [Summary]) {
        try FileManager.default.createDirectory(atPath: setup.folder, withIntermediateDirectories: true)
        // The stages stop themselves should this process die without stopping them (as under `hapticnav run`: the
        // stage host's parent watchdog reads this variable).
        setenv("HAPTICNAV_PARENT_PID", String(getpid()), 1)
        let template = try StageTemplate(config: setup.config, map: setup.map)
        let graph = setup.participants.contains(where: \.onNetwork) ? try template.walkingGraph() : nil
        var walks: [Walk] = []
        var number = setup.firstNumber - 1
        for kind in setup.participants {
            for condition in setup.conditions {
                for (index, pair) in setup.pairs.enumerated() {
                    for seed in setup.seeds {
                        number += 1
                        if let shard = setup.shard, !shard.contains(number) { continue }
                        let name =
                            (setup.settingsLabel.map { "\($0) " } ?? "")
                            + "\(kind.rawValue) \(condition.name) route \(index) seed \(seed)"
                        var attempt = 0
                        var result: Walk?
                        while result == nil {
                            do {
                                result = try await self.walk(
                                    setup, template: template, graph: graph, kind: kind, route: index, pair: pair,
                                    seed: seed, condition: condition)
                            } catch let failure as StartFailure {
                                attempt += 1
                                progress("\(name): \(failure); starting again")
                                guard attempt < 3 else { throw Failure(description: failure.description) }
                            }
                        }
                        var walk = result!
                        walk.restarts = attempt
                        walk.number = number
                        walk.settings = setup.settingsLabel
                        progress(
                            "\(name): "
                                + (walk.arrived ? "arrived" : walk.falseArrival ? "ARRIVED FALSELY" : "not arrived")
                                + ", max \(fixedDecimal(walk.maximumOffRouteMeters, digits: 1)) m off, \(walk.turnOnsets) turn cues, \(walk.reroutes) reroutes, "
                                + (kind.onNetwork
                                    ? "\(walk.wrongBranches) wrong of \(walk.junctionsOnRoute) junctions"
                                        + walk.wrongJunctions.map {
                                            " (at \(fixedDecimal($0.latitude, digits: 6)),\(fixedDecimal($0.longitude, digits: 6)) after \(fixedDecimal($0.atSeconds, digits: 0)) s, by \($0.basis.rawValue)\($0.stopped ? ", stopped" : ""))"
                                        }.joined() + ", \(walk.junctionStops) stops, "
                                    : "")
                                + "\(fixedDecimal(walk.seconds, digits: 0)) s")
                        walks.append(walk)
                    }
                }
            }
        }
        return (
            walks,
            self.summaries(
                of: walks, participants: setup.participants, conditions: setup.conditions.map(\.name),
                settings: setup.settingsLabel.map { [$0] } ?? [])
        )
    }

    /// A summary per combination × participant × condition, in that order, over the walks given.
    public static func summaries(
        of walks: [Walk], participants: [ParticipantKind], conditions: [String], settings: [String]
    ) -> [Summary] {
        var summaries: [Summary] = []
        for label in settings.isEmpty ? [nil] : settings.map({ Optional($0) }) {
            for kind in participants {
                for condition in conditions {
                    var summary = self.summary(
                        condition,
                        walks.filter { $0.condition == condition && $0.participant == kind && $0.settings == label })
                    summary.participant = kind
                    summary.settings = label
                    summaries.append(summary)
                }
            }
        }
        return summaries
    }

    /// The shards of one run as one: checked to be of the same run (the same plan), each shard once, every walk
    /// there once; the walks in the order of the whole run, and the summaries computed again from them (equal to
    /// the whole run's but for the measured cue latencies).
    public static func merge(_ parts: [(name: String, results: Results)]) throws -> Results {
        guard let first = parts.first else { throw Failure(description: "nothing to merge") }
        var plan = first.results.plan
        plan.shard = nil
        var shards: [Int: String] = [:]
        let count = first.results.plan.shard?.count
        for (name, results) in parts {
            var other = results.plan
            other.shard = nil
            guard other == plan else {
                let differing = [
                    ("config", other.config == plan.config), ("routes", other.routes == plan.routes),
                    ("seeds", other.seeds == plan.seeds), ("participants", other.participants == plan.participants),
                    ("conditions", other.conditions == plan.conditions), ("settings", other.settings == plan.settings),
                    ("walks", other.walks == plan.walks), ("velocity noise", other.velocityNoise == plan.velocityNoise),
                    (
                        "fingerprint (the configs' contents, the pairs, the map or the program's version)",
                        other.fingerprint == plan.fingerprint
                    ),
                ].filter { !$0.1 }.map(\.0)
                throw Failure(
                    description:
                        "\(name): the shard of another run (its \(differing.joined(separator: ", ")) differ from \(first.name)'s)"
                )
            }
            guard let shard = results.plan.shard else {
                throw Failure(description: "\(name): a whole run, not a shard (`eval walkers --shard I/N --json`)")
            }
            guard shard.count >= 1, (1...shard.count).contains(shard.index) else {
                throw Failure(description: "\(name): shard \(shard) is no shard")
            }
            guard shard.count == count else {
                throw Failure(description: "\(name): shard \(shard) of a run split \(shard.count) ways, not \(count!)")
            }
            if let earlier = shards[shard.index] {
                throw Failure(description: "\(name): shard \(shard) again (also \(earlier))")
            }
            shards[shard.index] = name
        }
        let missing = (1...count!).filter { shards[$0] == nil }
        guard missing.isEmpty else {
            throw Failure(
                description: "missing: shard\(missing.count > 1 ? "s" : "") "
                    + missing.map { "\($0)/\(count!)" }.joined(separator: ", "))
        }
        var walks: [Walk] = []
        var seen: [Int: String] = [:]
        for (name, results) in parts {
            for walk in results.walks {
                guard walk.number >= 0, walk.number < plan.walks, results.plan.shard!.contains(walk.number) else {
                    throw Failure(
                        description: "\(name): walk \(walk.number) is not one of shard \(results.plan.shard!)'s")
                }
                if let earlier = seen[walk.number] {
                    throw Failure(description: "\(name): walk \(walk.number) again (also in \(earlier))")
                }
                seen[walk.number] = name
                walks.append(walk)
            }
        }
        guard walks.count == plan.walks else {
            throw Failure(
                description: "\(walks.count) walks in the shards, \(plan.walks) in the run: a shard is incomplete")
        }
        walks.sort { $0.number < $1.number }
        let summaries = self.summaries(
            of: walks, participants: plan.participants, conditions: plan.conditions, settings: plan.settings)
        return Results(plan: plan, summaries: summaries, walks: walks)
    }

    static func summary(_ name: String, _ walks: [Walk]) -> Summary {
        let count = Double(max(1, walks.count))
        let minutes = walks.map(\.seconds).reduce(0, +) / 60
        let ratios = walks.map { $0.seconds / max(1, $0.routeSeconds) }.sorted()
        let waits = walks.compactMap(\.destinationWaitSeconds).sorted()
        let latencies = walks.flatMap(\.latenciesMilliseconds).sorted()
        func percentile(_ values: [Double], _ p: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int(Double(values.count - 1) * p))]
        }
        let squared = walks.map { $0.smoothedRMSMeters * $0.smoothedRMSMeters }.reduce(0, +) / count
        let along = walks.flatMap(\.alongErrorsMeters)
        return Summary(
            condition: name, walks: walks.count,
            arrivedPercent: 100 * Double(walks.filter(\.arrived).count) / count,
            onRoutePercent: 100 * Double(walks.filter(\.onRoute).count) / count,
            turnOnsetsPerMinute: Double(walks.map(\.turnOnsets).reduce(0, +)) / max(minutes, 1e-9),
            medianTimeRatio: percentile(ratios, 0.5),
            reroutesPerWalk: Double(walks.map(\.reroutes).reduce(0, +)) / count,
            wrongWayCuesPerWalk: Double(walks.map(\.wrongWayCues).reduce(0, +)) / count,
            smoothedRMSMeters: squared.squareRoot(),
            cueLatencyP50Milliseconds: percentile(latencies, 0.5),
            cueLatencyP99Milliseconds: percentile(latencies, 0.99),
            timeouts: walks.map(\.timeouts).reduce(0, +), restarts: walks.map(\.restarts).reduce(0, +),
            falseArrivals: walks.filter(\.falseArrival).count,
            destinationWaitMedianSeconds: percentile(waits, 0.5),
            destinationWaitLongestSeconds: waits.last ?? .nan,
            wrongBranchesPerWalk: Double(walks.map(\.wrongBranches).reduce(0, +)) / count,
            unnoticedWrongBranchesPerWalk: Double(
                walks.map { $0.wrongJunctions.filter { $0.basis == .missed }.count }
                    .reduce(0, +)) / count,
            junctionsRightPercent: 100
                * (1 - Double(walks.map(\.wrongBranches).reduce(0, +))
                    / Double(max(1, walks.map(\.junctionsOnRoute).reduce(0, +)))),
            junctionStopsPerWalk: Double(walks.map(\.junctionStops).reduce(0, +)) / count,
            alongMeanMeters: along.reduce(0, +) / Double(max(1, along.count)),
            alongRMSMeters: Self.rms(along),
            alongP95Meters: percentile(along.map(abs).sorted(), 0.95),
            placeRMSMeters: Self.rms(walks.flatMap(\.placeErrorsMeters)))
    }

    static func rms(_ values: [Double]) -> Double {
        values.isEmpty ? .nan : (values.map { $0 * $0 }.reduce(0, +) / Double(values.count)).squareRoot()
    }

    /// The table the command prints.
    public static func table(_ summaries: [Summary]) -> String {
        // A sweep's combinations in a first column.
        let labels = summaries.compactMap(\.settings)
        let width = labels.isEmpty ? 0 : max(9, labels.map(\.count).max()!) + 2
        var lines = [
            (width > 0 ? "settings".padded(to: width) : "")
                + "participant  condition   walks  arrived  false arr.  wait at dest. p50/max  on route  wrong branches/walk  unnoticed  junctions right  stops/walk  turn cues/min  time ×route  reroutes/walk  wrong-way/walk  smoothed RMS  place RMS  along mean, RMS/p95  cue latency p50/p99"
        ]
        for s in summaries {
            let network = s.participant.onNetwork
            lines.append(
                (width > 0 ? (s.settings ?? "").padded(to: width) : "")
                    + s.participant.rawValue.padded(to: 13) + s.condition.padded(to: 10)
                    + String(
                        cFormat: "%6d  %6.1f%%  %10d  %11.0f / %4.0f s  %7.1f%%  ", s.walks, s.arrivedPercent,
                        s.falseArrivals, s.destinationWaitMedianSeconds, s.destinationWaitLongestSeconds,
                        s.onRoutePercent)
                    + (network
                        ? String(
                            cFormat: "%19.2f  %9.2f  %14.1f%%  %10.2f", s.wrongBranchesPerWalk,
                            s.unnoticedWrongBranchesPerWalk, s.junctionsRightPercent, s.junctionStopsPerWalk)
                        : "                  —          —                —           —")
                    + String(
                        cFormat:
                            "  %13.1f  %11.2f  %13.2f  %14.2f  %10.1f m  %7.1f m  %+5.1f, %4.1f / %4.1f m  %7.2f / %.2f ms",
                        s.turnOnsetsPerMinute, s.medianTimeRatio, s.reroutesPerWalk,
                        s.wrongWayCuesPerWalk, s.smoothedRMSMeters, s.placeRMSMeters, s.alongMeanMeters,
                        s.alongRMSMeters,
                        s.alongP95Meters, s.cueLatencyP50Milliseconds,
                        s.cueLatencyP99Milliseconds)
                    + (s.timeouts > 0 ? "  (\(s.timeouts) answers timed out)" : "")
                    + (s.restarts > 0 ? "  (\(s.restarts) walks started again)" : ""))
        }
        return lines.joined(separator: "\n")
    }

    // MARK: One walk

    /// What the stages sent back, gathered by a reader task; the lockstep loop waits on `changed`.
    final class Inbox: Sendable {
        struct State {
            var cues: [Double: CueKind] = [:]
            var cueArrivals: [Double: Double] = [:]
            var targets: [Double: GuidanceTarget] = [:]
            var smoothed: [Double: SmoothedFix] = [:]
            var progress: [Double: RouteProgress] = [:]
            var routes: [UInt32: Route] = [:]
            /// The route controller's turn events by their fix's time, to relay to the sink.
            var turns: [Double: [TurnEvent]] = [:]
            /// The turn events the sink rendered, not yet felt.
            var rendered: [TurnEvent] = []
            var publishers: Set<String> = []
        }
        let state = Mutex(State())
    }

    /// Whether a network participant's choice at a junction kept to `line` (the route in force): nil when the
    /// junction is more than 5 m from it; false when the point 8 m along the branch taken lies more than 5 m from the
    /// route, or behind the junction along it. A junction the route ends at (within a metre of its end) is no choice
    /// of the route's (nil): no branch of it goes on, and a walker who steps on past the destination there before they
    /// are told it (their place on the ways reaching it a step after them) has overshot, not taken a wrong branch.
    static func keptToRoute(_ choice: NetworkParticipant.Choice, line: Polyline) -> Bool? {
        guard let junction = line.project(choice.junction), junction.distanceMeters <= 5,
            junction.distanceAlongMeters < line.lengthMeters - 1
        else { return nil }
        let along = junction.distanceAlongMeters
        guard
            let branch = line.project(choice.branchPoint, alongRange: (along - 12)...(along + 12))
                ?? line.project(choice.branchPoint)
        else { return nil }
        return branch.distanceMeters <= 5 && branch.distanceAlongMeters > along
    }

    /// One walk of `kind` on `pair` with `seed` under `condition`, through the real processes of `setup.config`,
    /// recorded as a session in `session` (with `metadata` in its first metadata record): a study's simulated trial.
    /// Starts the stages again (up to three times) when they do not answer at first.
    public static func single(
        _ setup: Setup, kind: ParticipantKind, pair: (origin: Coordinate, destination: Coordinate), seed: UInt64,
        condition: Condition, session: String, metadata: [(String, String)]
    ) async throws -> Walk {
        try FileManager.default.createDirectory(atPath: setup.folder, withIntermediateDirectories: true)
        setenv("HAPTICNAV_PARENT_PID", String(getpid()), 1)
        let template = try StageTemplate(config: setup.config, map: setup.map)
        let graph = kind.onNetwork ? try template.walkingGraph() : nil
        var attempt = 0
        while true {
            do {
                var walk = try await self.walk(
                    setup, template: template, graph: graph, kind: kind, route: 0, pair: pair, seed: seed,
                    condition: condition, session: (session, metadata))
                walk.restarts = attempt
                return walk
            } catch let failure as StartFailure {
                attempt += 1
                guard attempt < 3 else { throw Failure(description: failure.description) }
            }
        }
    }

    private static func walk(
        _ setup: Setup, template: StageTemplate, graph: WalkingGraph?, kind: ParticipantKind, route index: Int,
        pair: (origin: Coordinate, destination: Coordinate), seed: UInt64, condition: Condition,
        session given: (folder: String, metadata: [(String, String)])? = nil
    ) async throws -> Walk {
        var random = SeededGenerator(
            seed: seed &* 7919 &+ UInt64(index) &* 104_729 &+ UInt64(condition.sigmaMeters * 10))
        let calibrated =
            setup.behaviour.pocketOffsetDegrees
            + random.gaussian(standardDeviation: setup.calibrationErrorDegrees)
        // A folder per walk: no socket path is reused while the last walk's sockets may still be closing.
        let run = "\(setup.folder)/walk-\(Self.walkCounter.add(1, ordering: .relaxed).newValue)"
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: run) }
        let configFile = "\(run)/pipeline.json"
        let label = condition.name.map { $0 == "σ" ? "sigma" : $0 == " " ? "-" : String($0) }.joined()
        let who = kind == .open ? "" : "\(kind.rawValue)-"
        // A sweep's combination in the name: each combination's walks are sessions of their own.
        let combination =
            setup.settingsLabel.map {
                $0.map { $0 == " " ? "_" : $0 == "/" ? "-" : String($0) }.joined() + "-"
            } ?? ""
        let session =
            given?.folder
            ?? setup.sessionsFolder.map { "\($0)/\(combination)\(who)\(label)-route\(index + 1)-seed\(seed)" }
        if let session {
            // A new session each time (a part of an earlier one would be read with it).
            for name in (try? FileManager.default.contentsOfDirectory(atPath: session)) ?? []
            where name.hasSuffix(".mcap") {
                try? FileManager.default.removeItem(atPath: "\(session)/\(name)")
            }
        }
        try template.write(
            to: configFile, folder: run, destination: pair.destination, offsetDegrees: calibrated, session: session,
            metadata: given?.metadata ?? [])

        // Composed, a hub of the walk's own carries the bus in memory and its thread runs the stages and this
        // harness: a message costs no thread switch. As processes, each has its own context and sockets.
        let hub = setup.composition.isComposed ? DirectHub() : nil
        defer { hub?.close() }
        return try await withTaskExecutorPreference(hub?.executor) {
            try await Self.lockstep(
                setup, template: template, graph: graph, kind: kind, route: index, pair: pair, seed: seed,
                condition: condition, run: run, configFile: configFile, session: session, calibrated: calibrated,
                random: &random, hub: hub)
        }
    }

    /// A walk with its stages running: started, probed, then stepped in lockstep with simulated time until the
    /// arrival cue or the time limit; its figures.
    private static func lockstep(
        _ setup: Setup, template: StageTemplate, graph: WalkingGraph?, kind: ParticipantKind, route index: Int,
        pair: (origin: Coordinate, destination: Coordinate), seed: UInt64, condition: Condition, run: String,
        configFile: String, session: String?, calibrated: Double, random: inout SeededGenerator, hub: DirectHub?
    ) async throws -> Walk {
        let context = hub?.context ?? ZMQContext()
        defer { if hub == nil { context.terminate() } }
        let endpoint = { (name: String) in "ipc://\(run)/\(name).sock" }
        // Lossless: it counts the stages that read it, and a walk's message waits for room rather than being lost.
        var sourceOptions = PublisherOptions()
        sourceOptions.lossless = true
        let source =
            try hub.map {
                try BusPublisher(hub: $0, bind: [endpoint("source")], stage: "source", options: sourceOptions)
            }
            ?? BusPublisher(context: context, bind: [endpoint("source")], stage: "source", options: sourceOptions)
        defer { source.close() }
        let stages = try WalkStages(
            setup.composition,
            names: [template.haptic, template.route, template.smoother]
                + (session == nil ? [] : ["recorder"]),
            configFile: configFile, executable: setup.executable, hub: hub)
        defer { stages.stop() }
        let inputs = [template.smoother, template.route, template.haptic].map(endpoint)
        let topics = SubscriberOptions(topics: ["smoothed", "target", "route", "cue", "turn", "progress"])
        let subscriber =
            try hub.map { BusSubscriber(hub: $0, connect: inputs, options: topics) }
            ?? BusSubscriber(context: context, connect: inputs, options: topics)
        defer { subscriber.close() }
        let inbox = Inbox()
        let (changed, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let reader = Task.detached(executorPreference: hub?.executor) {
            for await event in subscriber {
                switch event {
                case let .message(received):
                    inbox.state.withLock { state in
                        switch received.message {
                        case let .cue(cue):
                            state.cues[cue.timeSeconds] = cue.kind
                            state.cueArrivals[cue.timeSeconds] = SystemClock.monotonicSeconds()
                        case let .target(target): state.targets[target.timeSeconds] = target
                        case let .smoothed(fix): state.smoothed[fix.timeSeconds] = fix
                        case let .progress(progress): state.progress[progress.timeSeconds] = progress
                        case let .route(route): state.routes[route.routeID] = route
                        case let .turn(event) where received.header.stage == template.haptic:
                            state.rendered.append(event)
                        case let .turn(event):
                            if !(state.turns[event.timeSeconds] ?? []).contains(event) {
                                state.turns[event.timeSeconds, default: []].append(event)
                            }
                        default: break
                        }
                    }
                case let .publisherUp(_, stage): inbox.state.withLock { _ = $0.publishers.insert(stage) }
                case .publisherLost: break
                }
                signal.yield()
            }
        }
        defer { reader.cancel() }
        // Wakes the loop at least every 20 ms, so that a wait can end on its deadline.
        let ticker = Task.detached(executorPreference: hub?.executor) {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
                signal.yield()
            }
        }
        defer { ticker.cancel() }
        var wakes = changed.makeAsyncIterator()
        func wait(seconds: Double, until condition: () -> Bool) async -> Bool {
            let deadline = SystemClock.monotonicSeconds() + seconds
            while !condition() {
                if SystemClock.monotonicSeconds() > deadline { return false }
                _ = await wakes.next()
            }
            return true
        }
        // Every stage up (their heartbeats heard), and each that reads this source subscribed to it, so that the
        // first probe reaches them: the walk is then the same whatever the machine's load or the stages' composition
        // (a probe more would be one more fix in the smoother's history).
        let expected = Set([template.smoother, template.route, template.haptic])
        // The smoother, the route controller (the phone's steps) and the sink; the recorder.
        let readers = 3 + (session == nil ? 0 : 1)
        guard
            await wait(
                seconds: 30,
                until: {
                    (inbox.state.withLock { expected.isSubset(of: $0.publishers) }
                        && source.subscriberCount >= readers) || !stages.allRunning
                }), stages.allRunning
        else {
            throw Failure(description: "the stages did not start (see their errors above)")
        }
        // Probes at the start, before the walk's time, each answered by a target (smoother and route controller) and
        // a cue (sink): always `probes` of them, then more only if none is answered, so that the smoother's history is
        // the same whichever the route controller heard first (its link to the smoother may come up a moment after
        // this source's). Each heading faces its probe's target: no cue starts, and the sink's state is the same.
        let epoch = 1_767_225_600.0
        let probes = 3
        var probe = 0
        var sent: [Double] = []
        while true {
            // After the first probes, one more only when none of them has been answered (late answers count: a
            // probe more would be a fix more).
            if probe >= probes,
                await wait(
                    seconds: 10,
                    until: {
                        inbox.state.withLock { state in
                            sent.contains { state.targets[$0] != nil && state.cues[$0] != nil }
                        }
                    })
            {
                break
            }
            let time = epoch - 0.5 + Double(probe) * 0.001  // just before the walk: its first fix is no jump
            try await source.publish(
                .fix(
                    LocationFix(
                        timeSeconds: time, latitude: pair.origin.latitude, longitude: pair.origin.longitude,
                        horizontalAccuracyMeters: max(1, condition.sigmaMeters), speedMetersPerSecond: 0,
                        courseDegrees: nil)))
            // Generous waits: the route controller's first answer waits for its first route.
            var facing = 0.0
            if await wait(seconds: 2, until: { inbox.state.withLock { $0.targets[time] != nil } }),
                let target = inbox.state.withLock({ $0.targets[time] })
            {
                try await source.publish(.target(target))
                if target.bearingDegrees.isFinite { facing = Angle.normalized(target.bearingDegrees + calibrated) }
            }
            try await source.publish(
                .heading(HeadingSample(timeSeconds: time, headingDegrees: facing, reference: .trueNorth)))
            sent.append(time)
            _ = await wait(
                seconds: 2, until: { inbox.state.withLock { $0.targets[time] != nil && $0.cues[time] != nil } })
            probe += 1
            guard probe < probes + 8 else {
                let seen = inbox.state.withLock { state in
                    "smoothed fixes \(state.smoothed.count), targets \(state.targets.count), cues \(state.cues.count), publishers heard \(state.publishers.sorted())"
                }
                throw StartFailure(description: "the stages did not answer the source's probes (\(seen))")
            }
        }

        // The walk.
        let dt = 0.1
        func placed(facing heading: Double) throws -> any SimulatedParticipant {
            switch kind {
            case .open:
                return Participant(at: pair.origin, facing: heading, behaviour: setup.behaviour)
            case .network, .events, .band:
                var rules = setup.rules
                rules.followsEvents = kind.followsEvents
                guard
                    let graph,
                    let walker = NetworkParticipant(
                        graph: graph, at: pair.origin, facing: heading, behaviour: setup.behaviour,
                        rules: rules, seed: seed &* 7919 &+ UInt64(index))
                else { throw Failure(description: "route \(index + 1): no walkable way within 250 m of its start") }
                return walker
            }
        }
        var participant = try placed(facing: 0)
        // What a `band` participant feels of the turn events.
        var band = FeltBand()
        var telling = BandProtocol.TurnTelling()
        var tally = WalkTally()
        var gps = GPSError(sigmaMeters: condition.sigmaMeters, timeConstantSeconds: condition.timeConstantSeconds)
        // The phone's steps come from a generator of their own: the GPS error and the compass noise stay as they were.
        var stepRandom = SeededGenerator(seed: seed &* 104_729 &+ UInt64(index) &* 7919 &+ 17)
        var pedometer = SimulatedPedometer(random: &stepRandom)
        var felt: CueKind = .silent
        var timeouts = 0
        var firstRoute: Route?
        var currentRouteID: UInt32 = 0
        var currentLine: Polyline?
        var step = 0
        var limit = Double.infinity
        var endedAt = 0.0
        while Double(step) * dt < limit {
            let t = Double(step) * dt
            let time = epoch + t
            if step % 10 == 0 {
                // Speed and course from the receiver's Doppler velocity along the body's heading.
                let fix = gps.fix(
                    time: time, position: participant.position, speed: participant.speedMetersPerSecond,
                    headingDegrees: participant.bodyHeadingDegrees, velocityNoise: setup.velocityNoise,
                    random: &random)
                try await source.publish(.fix(fix))
                // The target, and the smoothed fix it came from (on another connection, it may come after it).
                if await !wait(
                    seconds: Self.answerWaitSeconds,
                    until: { inbox.state.withLock { $0.targets[time] != nil && $0.smoothed[time] != nil } })
                {
                    timeouts += 1
                    try Self.checkAnswering(timeouts)
                }
                let (target, smoothed, routes, turns, progress) = inbox.state.withLock {
                    ($0.targets[time], $0.smoothed[time], $0.routes, $0.turns[time] ?? [], $0.progress[time])
                }
                // A route asked for at this fix (the first, or a reroute) is awaited before the next fix, as in the
                // field a route of milliseconds comes within the second between two fixes: which fix it came before
                // would otherwise hang on how the threads ran, and the whole walk with it.
                if step == 0 && routes.isEmpty || progress?.state == .rerouting {
                    let known = routes.keys.max() ?? 0
                    _ = await wait(
                        seconds: Self.routeWaitSeconds,
                        until: { inbox.state.withLock { ($0.routes.keys.max() ?? 0) > known } })
                }
                // The fix's turn events before its target, as the route controller sent them.
                for event in turns { try await source.publish(.turn(event)) }
                if let target { try await source.publish(.target(target)) }
                if let smoothed { tally.estimated(smoothed, truth: participant.position) }
                // Published before the target: here with it.
                if let progress, progress.routeID == currentRouteID, participant.started, let line = currentLine {
                    tally.placed(progress, truth: participant.position, on: line)
                }
                if let target, target.routeID != currentRouteID, let route = routes[target.routeID] {
                    currentRouteID = target.routeID
                    currentLine = Polyline(route.points)
                    if firstRoute == nil {
                        firstRoute = route
                        limit = t + 3 * route.lengthMeters / setup.behaviour.speedMetersPerSecond + 120
                        // The route's direction over its first metres (its first points may be a metre apart).
                        let opening = route.waypoints.first?.outgoingBearingDegrees ?? 0
                        // Open space: facing roughly along the route; on the network: along its way, toward the route.
                        let spread = random.gaussian(standardDeviation: 30)
                        participant = try placed(facing: kind == .open ? opening + spread : opening)
                        participant.start()
                    }
                }
            }
            // The phone's steps up to now (its detector tells each about 0.6 s after it).
            for step in pedometer.advance(to: time, speed: participant.speedMetersPerSecond, random: &stepRandom) {
                try await source.publish(.step(step))
            }
            // A heading, answered by the sink's cue in force.
            let heading = HeadingSample(
                timeSeconds: time,
                headingDegrees: Angle.normalized(
                    participant.phoneHeadingDegrees + random.gaussian(standardDeviation: setup.compassNoiseDegrees)),
                reference: .trueNorth)
            let sent = SystemClock.monotonicSeconds()
            try await source.publish(.heading(heading))
            if await wait(seconds: Self.answerWaitSeconds, until: { inbox.state.withLock { $0.cues[time] != nil } }) {
                let (kind, arrival) = inbox.state.withLock { ($0.cues[time]!, $0.cueArrivals[time] ?? sent) }
                felt = kind
                tally.latenciesMilliseconds.append((arrival - sent) * 1000)
            } else {
                timeouts += 1
                try Self.checkAnswering(timeouts)
            }
            // The turn events the sink rendered up to this heading's cue (it published them before the cue).
            let heard = inbox.state.withLock { state in
                defer { state.rendered.removeAll() }
                return state.rendered
            }
            inbox.state.withLock { state in
                state.cues[time] = nil
                state.cueArrivals[time] = nil
                state.turns = state.turns.filter { $0.key > time - 5 }
                state.targets = state.targets.filter { $0.key > time - 5 }
                state.smoothed = state.smoothed.filter { $0.key > time - 5 }
                state.progress = state.progress.filter { $0.key > time - 5 }
            }
            tally.felt(felt, at: t)
            if felt == .arrival {
                tally.arrived(at: participant.position, destination: pair.destination, at: t)
                endedAt = t
                break
            }
            if kind == .band {
                for event in heard where telling.tells(event) {
                    for (type, payload) in BandProtocol.frames(for: event) where type == .pulse {
                        band.take(type: "pulse", payload: payload.map(Int.init), left: 0, right: 0, time: t)
                    }
                }
                for event in band.drainEvents() { participant.hear(event) }
            } else {
                for event in heard { participant.hear(event) }
            }
            tally.heard(heard)
            participant.step(feeling: felt, at: t, dt: dt)
            if let walker = participant as? NetworkParticipant {
                tally.judge(walker.choices, against: currentLine, at: t)
            }
            if participant.started, let line = currentLine { tally.track(participant.position, on: line) }
            if participant.started { tally.approach(participant.position, destination: pair.destination, at: t) }
            step += 1
            endedAt = t
        }
        // A junction walked through unnoticed just before the walk ended (within reach of it): its choice stands.
        if let walker = participant as? NetworkParticipant {
            tally.judge(walker.settledChoices, against: currentLine, at: endedAt)
        }
        let routeIDs = inbox.state.withLock { Set($0.routes.keys) }
        // The walk starts with its first fix, at the epoch (the probes before it are no part of it).
        var walk = tally.walk(
            route: index, seed: seed, condition: condition.name, firstRoute: firstRoute,
            reroutes: max(0, routeIDs.count - 1),
            seconds: max(0, endedAt), speedMetersPerSecond: setup.behaviour.speedMetersPerSecond, timeouts: timeouts)
        walk.participant = kind
        walk.junctionStops = (participant as? NetworkParticipant)?.settledChoices.filter(\.stopped).count ?? 0
        walk.missedJunctions = (participant as? NetworkParticipant)?.missedJunctions ?? 0
        walk.junctionsFoundAgain = (participant as? NetworkParticipant)?.foundAgain ?? 0
        // Composed stages ended (a recorder's session closed) before the walk is done.
        await stages.stop(waitingSeconds: 10)
        return walk
    }

    /// How long the harness waits for a stage's answer to a fix or a heading before it counts the answer as timed out
    /// and steps on [seconds]. Long: the stages answer every message, and a loaded machine (a fresh-clone run beside
    /// two busy loops) held answers beyond 5 s, which changed the walk (a timed-out answer is a step without it).
    static let answerWaitSeconds = 20.0
    /// How long a route asked for is awaited before the walk goes on without it [seconds, real time]: the offline
    /// router answers in milliseconds; a route it cannot make (no way there) costs this wait once.
    static let routeWaitSeconds = 5.0

    /// Gives up on a walk whose stages stopped answering: a stage stuck with its queue full would otherwise hold
    /// the source's lossless sends, and the walk, for ever.
    static func checkAnswering(_ timeouts: Int) throws {
        guard timeouts < 15 else {
            throw Failure(
                description:
                    "the stages stopped answering: 15 fixes or headings without an answer in \(Int(answerWaitSeconds)) s"
            )
        }
    }
}
