import ArgumentParser
import Evaluation
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import Runtime
import SystemIO
#if canImport(Glibc)
import Glibc
import Lab
#endif

extension StudyCommand {
    struct Simulate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Pilot a study with simulated participants: every trial of the schedule through the real processes.",
            discussion: """
                Each participant is an `eval walkers` participant with traits of its own (pace, reaction time, turn \
                rate, pocket offset), drawn from its seed. Each trial runs its condition's config (the console plays \
                the cues, which the participant feels) on its route, and is kept as `study run` keeps a trial: \
                DIR/simulated/P07/T04-<condition>-<route>/ (apart from the participants' DIR/sessions) with its \
                session, config and trial.json. Routes given by destination need a `start` in the study file. Then \
                `hapticnav study report DIR --simulated`.
                """)

        @Argument(help: "The study folder (with study.json5 and schedule.csv from `study init`).")
        var folder: String

        @Option(help: "The GPS error: a sigma in metres, 'c' for correlated over 30 s (5, 10, 5c).")
        var gps = "5"

        @Option(
            help:
                "Who walks: 'open' (wherever they face), 'network' (held to the walkable ways, by the cues) or 'events' (held to the ways, acting on turn events)."
        )
        var participant = "open"

        @Option(help: "The seed the participants' traits and walks are drawn from.")
        var seed: UInt64 = 1

        @Option(help: "Only these participants (repeatable).")
        var only: [String] = []

        @Flag(help: "Replace trials run before without asking.")
        var yes = false

        func run() async throws {
            guard let condition = WalkerEvaluation.Condition(self.gps) else {
                throw ValidationError("--gps: a sigma in metres, with 'c' for correlated (5, 10, 5c)")
            }
            guard let kind = WalkerEvaluation.ParticipantKind(rawValue: self.participant) else {
                throw ValidationError("--participant: 'open', 'network' or 'events'")
            }
            let (study, schedule) = try loadStudy(self.folder)
            for id in self.only where !schedule.participants.contains(id) {
                throw ValidationError("--only: '\(id)' is not a participant of the schedule")
            }
            let trials = schedule.trials.filter { self.only.isEmpty || self.only.contains($0.participant) }
            for trial in trials {
                try askBeforeReplacing(
                    StudyTrial(study: study, trial: trial, kind: StudyTrial.simulated), yes: self.yes)
            }
            let run = FileManager.default.temporaryDirectory.appendingPathComponent("hapticnav-study-\(getpid())").path
            defer { try? FileManager.default.removeItem(atPath: run) }
            print(
                "study '\(study.name)': simulating \(trials.count) trial(s), \(kind.rawValue) participants, GPS \(condition.name)"
            )
            for trial in trials {
                let index = schedule.participants.firstIndex(of: trial.participant) ?? 0
                let traits = ParticipantTraits(seed: self.seed, participant: index)
                let studyTrial = StudyTrial(study: study, trial: trial, kind: StudyTrial.simulated)
                let label = "\(trial.participant) trial \(trial.number) (\(trial.condition) on \(trial.route))"
                let configFile: String
                let endpoints: (start: Coordinate?, destination: Coordinate)
                do {
                    configFile = try studyTrial.writeConfig()
                    _ = try PipelineConfig.load(file: configFile)
                    endpoints = try studyTrial.endpoints()
                } catch {
                    throw CommandFailure("\(label): \(error)")
                }
                guard let start = endpoints.start else {
                    throw CommandFailure(
                        "study.routes.\(trial.route): a simulated participant needs a start ([latitude, longitude])")
                }
                var record = StudyTrialRecord(
                    trial: studyTrial, mode: "simulate", startedSeconds: Date().timeIntervalSince1970)
                try studyTrial.write(record)
                var setup = WalkerEvaluation.Setup(
                    executable: Launcher.currentExecutable(), config: configFile,
                    pairs: [(start, endpoints.destination)], seeds: [traits.walkSeed], conditions: [condition],
                    folder: run)
                setup.behaviour = traits.behaviour
                let metadata =
                    studyTrial.metadata + [
                        ("recorder", "hapticnav study simulate"), ("traits", traits.description),
                        ("gps", condition.name),
                    ]
                let walk: WalkerEvaluation.Walk
                do {
                    walk = try await WalkerEvaluation.single(
                        setup, kind: kind, pair: (start, endpoints.destination), seed: traits.walkSeed,
                        condition: condition, session: Paths.absolute(studyTrial.folder), metadata: metadata)
                } catch {
                    record.status = .aborted
                    record.reason = "\(error)"
                    record.endedSeconds = Date().timeIntervalSince1970
                    try studyTrial.write(record)
                    throw CommandFailure("\(label): \(error)")
                }
                record.status = walk.arrived ? .completed : .aborted
                record.reason = walk.arrived ? "arrived" : "no arrival within the walk's time limit"
                record.endedSeconds = Date().timeIntervalSince1970
                try studyTrial.write(record)
                print(
                    "\(label): \(walk.arrived ? "arrived" : "NOT arrived") in \(fixedDecimal(walk.seconds, digits: 0)) s, \(walk.turnOnsets) turn cues, \(walk.reroutes) reroutes; \(traits.description)"
                )
            }
            print(
                "sessions: \(study.folder)/\(StudyTrial.simulated) (apart from participants'); next: hapticnav study report \(self.folder) --simulated --out study.html"
            )
        }
    }
}

/// A simulated participant's traits, drawn from the study's seed and the participant's place in it: pace,
/// reaction time (the pause before turning), turn rate and the phone's offset in the pocket.
struct ParticipantTraits: CustomStringConvertible {
    var behaviour = Participant.Behaviour()
    /// The seed of the participant's walks (GPS error, compass noise, calibration error).
    var walkSeed: UInt64

    init(seed: UInt64, participant index: Int) {
        var random = SeededGenerator(seed: seed &* 1_000_003 &+ UInt64(index) &* 7_919 &+ 17)
        func drawn(_ mean: Double, _ sigma: Double, _ range: ClosedRange<Double>) -> Double {
            min(range.upperBound, max(range.lowerBound, mean + random.gaussian(standardDeviation: sigma)))
        }
        self.behaviour.speedMetersPerSecond = drawn(1.3, 0.15, 0.9...1.7)
        self.behaviour.pauseSeconds = drawn(0.6, 0.25, 0.2...1.5)
        self.behaviour.turnRateDegreesPerSecond = drawn(90, 20, 45...150)
        self.behaviour.pocketOffsetDegrees = drawn(70, 30, 0...180)
        self.walkSeed = seed &* 100 &+ UInt64(index) &+ 1
    }

    var description: String {
        "pace \(fixedDecimal(self.behaviour.speedMetersPerSecond, digits: 2)) m/s, reaction \(fixedDecimal(self.behaviour.pauseSeconds, digits: 2)) s, turns \(fixedDecimal(self.behaviour.turnRateDegreesPerSecond, digits: 0))°/s"
    }
}
