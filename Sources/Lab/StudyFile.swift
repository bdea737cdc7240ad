public import Evaluation
public import NavCore
import SystemIO
import Runtime

/// A study's plan, `DIR/study.json5`: the pipeline each trial runs, the participants, the routes (each a
/// destination or a route file) and the conditions (each a set of stage overrides on that pipeline).
///
///     {
///       name: "band against speaker",
///       config: "../../configs/lab-two-hosts.json5",
///       participants: 8,                         // or ["P01", "P02", …]
///       routes: {
///         harbour: { destination: [43.7347, 7.4206], start: [43.7310, 7.4195] },   // start: for `study simulate`
///         casino: { file: "routes/casino.geojson" },
///       },
///       conditions: {
///         band: { haptic: { plugin: "band", options: { fallback: [] } } },
///         speaker: { haptic: { plugin: "speaker", options: { fallback: [] } } },
///       },
///     }
public struct StudyFile: Sendable {
    /// A route of the study.
    public enum RouteSource: Sendable, Equatable {
        case destination(Coordinate)
        case file(String)
    }

    public var name: String
    /// The pipeline config each trial runs (resolved against the study folder).
    public var config: String
    public var participants: [String]
    /// Routes by name, in name order.
    public var routes: [(name: String, source: RouteSource)]
    /// Where a simulated participant starts each route given by destination (`start: [lat, lon]`); a route file
    /// starts at its first point.
    public var starts: [String: Coordinate] = [:]
    /// The study folder.
    public var folder = "."
    /// The study file's tree as written (kept in each trial's metadata).
    public var tree: SettingValue = .null
    /// Conditions by name, in name order: each a tree of stage overrides.
    public var conditions: [(name: String, overrides: SettingValue)]

    /// Reads `folder/study.json5`; every mistake names its key.
    public static func load(folder: String) throws -> StudyFile {
        let file = "\(folder)/study.json5"
        let root = try PipelineConfig.readTree(file: file)
        var top = try Settings(root, path: "study", baseDirectory: folder)
        let name = try top.string("name", default: Paths.lastComponent(of: folder))
        guard let config = try top.path("config") else {
            throw ConfigError.missingKey(path: "study", key: "config (the pipeline config each trial runs)")
        }
        var participants: [String]
        switch top.value("participants") {
        case let .number(count)?:
            guard count >= 1, count <= 999, count == count.rounded() else {
                throw ConfigError.invalidValue(
                    path: "study.participants", expected: "a count of 1…999 or a list of ids", found: "\(count)")
            }
            let width = max(2, String(Int(count)).count)
            participants = (1...Int(count)).map {
                "P" + String(repeating: "0", count: width - String($0).count) + String($0)
            }
        case let .array(items)?:
            participants = try items.enumerated().map { index, item throws(ConfigError) -> String in
                guard case let .string(id) = item, Self.isName(id) else {
                    throw ConfigError.invalidValue(
                        path: "study.participants[\(index)]", expected: "an id of letters, digits, - and _",
                        found: "\(item)")
                }
                return id
            }
        default:
            throw ConfigError.missingKey(path: "study", key: "participants (a count, or a list of ids)")
        }
        guard case let .object(routeValues)? = top.value("routes"), !routeValues.isEmpty else {
            throw ConfigError.missingKey(
                path: "study", key: "routes ({ NAME: { destination: [lat, lon] } or { file } })")
        }
        var routes: [(String, RouteSource)] = []
        var starts: [String: Coordinate] = [:]
        for routeName in routeValues.keys.sorted() {
            guard Self.isName(routeName) else {
                throw ConfigError.invalidValue(
                    path: "study.routes", expected: "names of letters, digits, - and _", found: "'\(routeName)'")
            }
            var route = try Settings(routeValues[routeName], path: "study.routes.\(routeName)", baseDirectory: folder)
            let destination = try route.coordinate("destination")
            let file = try route.path("file")
            if let start = try route.coordinate("start") { starts[routeName] = start }
            try route.finish()
            switch (destination, file) {
            case let (coordinate?, nil): routes.append((routeName, .destination(coordinate)))
            case let (nil, path?): routes.append((routeName, .file(path)))
            default:
                throw ConfigError.invalidValue(
                    path: "study.routes.\(routeName)", expected: "destination or file, one of them",
                    found: "\(route.keys)")
            }
        }
        guard case let .object(conditionValues)? = top.value("conditions"), !conditionValues.isEmpty else {
            throw ConfigError.missingKey(path: "study", key: "conditions ({ NAME: { STAGE: { overrides } } })")
        }
        var conditions: [(String, SettingValue)] = []
        for conditionName in conditionValues.keys.sorted() {
            guard Self.isName(conditionName), case .object? = conditionValues[conditionName] else {
                throw ConfigError.invalidValue(
                    path: "study.conditions.\(conditionName)", expected: "an object of stage overrides",
                    found: "\(conditionValues[conditionName].map { "\($0)" } ?? "nothing")")
            }
            conditions.append((conditionName, conditionValues[conditionName]!))
        }
        try top.finish()
        var study = StudyFile(
            name: name, config: config, participants: participants, routes: routes, conditions: conditions)
        study.starts = starts
        study.folder = folder
        study.tree = root
        return study
    }

    /// The counterbalanced schedule of this plan.
    public func schedule() throws -> StudySchedule {
        do {
            return try StudySchedule(
                participants: self.participants, conditions: self.conditions.map(\.name),
                routes: self.routes.map(\.name))
        } catch {
            throw ConfigError.invalidValue(path: "study", expected: "a study that can be scheduled", found: "\(error)")
        }
    }

    /// The schedule trials are run by: the plan, which must be what `study init` wrote into `schedule.csv` (a study
    /// file changed since, a condition or route added or renamed, would give trial N another condition or route).
    public func writtenSchedule() throws -> StudySchedule {
        let schedule = try self.schedule()
        let file = "\(self.folder)/schedule.csv"
        guard let written = try? InputFile.contents(of: file) else {
            throw ConfigError.missingFile(
                path: "study", file: file, reason: "is not there: run `hapticnav study init \(self.folder)` first")
        }
        guard written == Array(schedule.csv.utf8) else {
            throw ConfigError.invalidValue(
                path: file, expected: "the schedule of study.json5 as it is now",
                found:
                    "a schedule written before study.json5 changed (trials may have been run by it); put study.json5 back, or plan again with `hapticnav study init --force`"
            )
        }
        return schedule
    }

    /// Names used in folder names: letters, digits, - and _, 1–40 of them.
    static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 40
            && text.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" }
    }
}
