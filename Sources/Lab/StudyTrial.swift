#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Evaluation
public import NavCore
import Parsers
import SystemIO
import Runtime

/// One trial of a study: where it is kept (`DIR/sessions/P07/T04-band-harbour/`), the pipeline config it runs (the
/// study's, with the trial's route and condition applied and the condition locked) and its record (`trial.json`).
public struct StudyTrial: Sendable {
    public let study: StudyFile
    public let trial: StudySchedule.Trial
    /// The folder of the study its sessions go in: `sessions` for participants, `simulated` for `study simulate`.
    public let kind: String

    /// Participants' sessions.
    public static let participants = "sessions"
    /// Simulated participants' sessions, kept apart so that a pilot never counts as a participant's trial.
    public static let simulated = "simulated"

    public init(study: StudyFile, trial: StudySchedule.Trial, kind: String = StudyTrial.participants) {
        self.study = study
        self.trial = trial
        self.kind = kind
    }

    /// `T04-band-harbour`.
    public static func folderName(_ trial: StudySchedule.Trial) -> String {
        let number = String(trial.number)
        return "T" + String(repeating: "0", count: max(0, 2 - number.count)) + number
            + "-\(trial.condition)-\(trial.route)"
    }

    /// The trial's folder: its session (MCAP parts), its config and its record.
    public var folder: String {
        "\(self.study.folder)/\(self.kind)/\(self.trial.participant)/\(Self.folderName(self.trial))"
    }

    /// The record's path.
    public var recordFile: String { "\(self.folder)/trial.json" }

    /// The trial `number` of `participant`, or with `number` nil the participant's first trial not completed.
    public static func find(
        study: StudyFile, schedule: StudySchedule, participant: String, number: Int?
    ) throws -> StudyTrial {
        let trials = schedule.trials.filter { $0.participant == participant }
        guard !trials.isEmpty else {
            throw ConfigError.invalidValue(
                path: "--participant", expected: "one of \(schedule.participants.joined(separator: ", "))",
                found: "'\(participant)'")
        }
        if let number {
            guard let trial = trials.first(where: { $0.number == number }) else {
                throw ConfigError.invalidValue(
                    path: "--trial", expected: "1…\(trials.count)", found: "\(number)")
            }
            return StudyTrial(study: study, trial: trial)
        }
        for trial in trials {
            let candidate = StudyTrial(study: study, trial: trial)
            if candidate.readRecord()?.status != .completed { return candidate }
        }
        throw ConfigError.invalidValue(
            path: "--next", expected: "a trial not yet completed",
            found: "\(participant) has completed all \(trials.count)")
    }

    /// The route's start (a route file's first point, else the study's `start`, nil when not given) and destination.
    public func endpoints() throws -> (start: Coordinate?, destination: Coordinate) {
        guard let source = self.study.routes.first(where: { $0.name == self.trial.route })?.source else {
            throw ConfigError.invalidValue(
                path: "study.routes", expected: "a route of the study", found: self.trial.route)
        }
        switch source {
        case let .destination(destination):
            return (self.study.starts[self.trial.route], destination)
        case let .file(file):
            let plan = try RouteFile.load(file: file)
            guard let first = plan.points.first, let last = plan.points.last, plan.points.count >= 2 else {
                throw ConfigError.invalidValue(
                    path: "study.routes.\(self.trial.route).file", expected: "a route of two points or more",
                    found: file)
            }
            return (first, last)
        }
    }

    /// The pipeline config of this trial: the study's config with `directory` set to its folder (so that its
    /// relative paths still hold), the route stage given the trial's destination (or its route file), the condition's
    /// overrides merged into the stages (objects key by key, anything else replaced, null removes; a stage given another
    /// plugin drops the settings of the one before), and every haptic
    /// stage locked to its device (`lockDevice`).
    public func config() throws -> SettingValue {
        let base = self.study.config
        guard case var .object(root) = try PipelineConfig.readTree(file: base) else {
            throw ConfigError.invalidValue(path: base, expected: "a config object", found: "something else")
        }
        root["directory"] = .string(Paths.absolute(PipelineConfig.baseDirectory(of: .object(root), file: base)))
        root["name"] = .string("\(self.study.name): \(self.trial.participant) trial \(self.trial.number)")
        guard case var .object(stages)? = root["stages"] else {
            throw ConfigError.missingKey(path: base, key: "stages")
        }
        func names(role: String) -> [String] { PipelineConfig.stageNames(stages, role: role) }
        guard let routeStage = names(role: "route").first else {
            throw ConfigError.invalidValue(path: "\(base): stages", expected: "a route stage", found: "none")
        }
        // The route.
        guard case var .object(route)? = stages[routeStage] else {
            throw ConfigError.invalidValue(path: "stages.\(routeStage)", expected: "an object", found: "other")
        }
        var routeOptions = route["options"]?.objectValue ?? [:]
        let source = self.study.routes.first { $0.name == self.trial.route }?.source
        if case let .file(file)? = source {
            route["plugin"] = .string("file")
            route["settings"] = .object(["file": .string(Paths.absolute(file))])
        }
        let destination = try self.endpoints().destination
        routeOptions["destination"] = .array([.number(destination.latitude), .number(destination.longitude)])
        route["options"] = .object(routeOptions)
        stages[routeStage] = .object(route)
        // A simulated walker (the `sim` source) walks the trial's route: a route file, or from the route's start to its
        // destination over the map it walks (the route stage's, when it has none of its own).
        for stage in names(role: "source") where stages[stage]?["plugin"]?.stringValue == "sim" {
            guard case var .object(sim)? = stages[stage] else { continue }
            var settings = sim["settings"]?.objectValue ?? [:]
            if case let .file(file)? = source {
                settings["route"] = .string(Paths.absolute(file))
                for key in ["map", "from", "to"] { settings[key] = nil }
            } else if let start = self.study.starts[self.trial.route] {
                settings["route"] = nil
                settings["from"] = .array([.number(start.latitude), .number(start.longitude)])
                settings["to"] = .array([.number(destination.latitude), .number(destination.longitude)])
                if settings["map"] == nil { settings["map"] = route["settings"]?["map"] }
            }
            sim["settings"] = .object(settings)
            stages[stage] = .object(sim)
        }
        // The condition.
        guard let overrides = self.study.conditions.first(where: { $0.name == self.trial.condition })?.overrides,
            case let .object(byStage) = overrides
        else {
            throw ConfigError.invalidValue(
                path: "study.conditions", expected: "a condition of the study", found: self.trial.condition)
        }
        for (stage, value) in byStage.sorted(by: { $0.key < $1.key }) {
            guard let existing = stages[stage] else {
                throw ConfigError.invalidValue(
                    path: "study.conditions.\(self.trial.condition).\(stage)",
                    expected: "a stage of \(base): \(stages.keys.sorted().joined(separator: ", "))", found: "'\(stage)'"
                )
            }
            var base = existing
            // Another plugin: the base's settings were the other plugin's.
            if case var .object(object) = base, let plugin = value["plugin"], plugin != object["plugin"] {
                object["settings"] = nil
                base = .object(object)
            }
            stages[stage] = Self.merge(base, value)
        }
        // The lock.
        for stage in names(role: "haptic") {
            guard case var .object(haptic)? = stages[stage] else { continue }
            var options = haptic["options"]?.objectValue ?? [:]
            options["lockDevice"] = .bool(true)
            haptic["options"] = .object(options)
            stages[stage] = .object(haptic)
        }
        // The trial is recorded by the run itself, into its folder: the config's own recorders would write every
        // trial, of every participant, into one place.
        for name in stages.keys where stages[name]?["role"]?.stringValue == "recorder" { stages[name] = nil }
        root["stages"] = .object(stages)
        return .object(root)
    }

    /// `base` with `override` laid over it: objects key by key, null removes a key, anything else replaces.
    static func merge(_ base: SettingValue, _ override: SettingValue) -> SettingValue {
        guard case var .object(object) = base, case let .object(changes) = override else { return override }
        for (key, value) in changes {
            if value == .null {
                object[key] = nil
            } else {
                object[key] = object[key].map { Self.merge($0, value) } ?? value
            }
        }
        return .object(object)
    }

    /// Writes the trial's config as `config.json` in its folder; returns the path.
    public func writeConfig() throws -> String {
        let file = "\(self.folder)/config.json"
        try Paths.createFolders(self.folder)
        let output = try OutputFile(path: file, mode: .truncate)
        defer { output.close() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        output.write(Array(try encoder.encode(try self.config())))
        return file
    }

    /// What the session's metadata says about the trial.
    public var metadata: [(String, String)] {
        [
            ("study", self.study.name), ("participant", self.trial.participant), ("trial", String(self.trial.number)),
            ("condition", self.trial.condition), ("route", self.trial.route),
            ("config", Paths.absolute(self.study.config)), ("software", "hapticnav \(HapticNavVersion.text)"),
        ]
    }

    /// The trial's record, nil when it has none (not run) or it cannot be read.
    public func readRecord() -> StudyTrialRecord? {
        guard let bytes = try? InputFile.contents(of: self.recordFile) else { return nil }
        return try? JSONDecoder().decode(StudyTrialRecord.self, from: Data(bytes))
    }

    /// Writes the record whole to a new file first, then renames it over the old: a crash leaves one or the other.
    public func write(_ record: StudyTrialRecord) throws {
        try Paths.createFolders(self.folder)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try Paths.writeWhole(Array(try encoder.encode(record)), to: self.recordFile)
    }
}

/// A trial's record, `trial.json` beside its session: who, what, when and how it ended. Written `running` at the
/// start and `completed` or `aborted` at the end; a record still `running` after its run is gone was interrupted
/// (a crash, a killed process) and counts as aborted.
public struct StudyTrialRecord: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        case running
        case completed
        case aborted
    }

    public var study: String
    public var participant: String
    public var trial: Int
    public var condition: String
    public var route: String
    /// `run` (a participant) or `simulate`.
    public var mode: String
    public var status: Status
    /// Why it was aborted, or how it ended.
    public var reason: String = ""
    /// When it started and ended [seconds since 1970-01-01T00:00:00Z, UTC; this host's wall clock].
    public var startedSeconds: Double
    public var endedSeconds: Double?
    /// The condition lock stopped the outputs during the trial (its device was lost).
    public var conditionLocked = false
    public var config: String
    public var software: String

    public init(trial: StudyTrial, mode: String, startedSeconds: Double) {
        self.study = trial.study.name
        self.participant = trial.trial.participant
        self.trial = trial.trial.number
        self.condition = trial.trial.condition
        self.route = trial.trial.route
        self.mode = mode
        self.status = .running
        self.startedSeconds = startedSeconds
        self.config = Paths.absolute(trial.study.config)
        self.software = "hapticnav \(HapticNavVersion.text)"
    }
}
