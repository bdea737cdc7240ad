#if canImport(FoundationEssentials)
import Parsers
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NavCore
import Routers
import SystemIO
public import MapLogic
import Runtime

/// The map's walkable ways (the offline router's walking graph) for drawing under a report's tracks, so that a reader
/// sees the streets and crossings where a walker hesitated or turned wrong.
public enum WalkableWays {
    /// The walking graph of `map` (OSM XML or PBF), by the offline router's own rules, through its cache.
    public static func graph(map: String) throws -> WalkingGraph {
        let settings = try Settings(.object(["map": .string(Paths.absolute(map))]), path: "--map", baseDirectory: ".")
        return try OSMRouteProvider(settings: settings, logger: Logger(label: "report")).graph
    }

    /// The ways to draw: those of the map given (an error when it cannot be read), else of the map found (nil, and a
    /// note through `note`, when it cannot be read), else none.
    public static func graph(
        given: String?, found: @autoclosure () -> String?, note: (String) -> Void
    ) throws -> WalkingGraph? {
        if let given {
            if let reason = Paths.unreadableReason(given) {
                throw ConfigError.missingFile(path: "--map", file: given, reason: reason)
            }
            do { return try self.graph(map: given) } catch {
                throw ConfigError.invalidValue(
                    path: "--map", expected: "a map (OSM XML or PBF)", found: "\(given): \(error)")
            }
        }
        guard let map = found() else { return nil }
        do { return try self.graph(map: map) } catch {
            note("no walkable ways drawn: \(map): \(error)")
            return nil
        }
    }

    /// The map a pipeline config walks on: its route stage's (the `osm` router, or an `osm` fallback), else any
    /// stage's `map` setting (a simulated walker's); nil when it has none.
    public static func map(config: String) -> String? {
        guard let root = try? PipelineConfig.readTree(file: config),
            let expanded = try? root.expandingVariables(
                environment: ProcessInfo.processInfo.environment, path: "the config"),
            case let .object(stages)? = expanded["stages"]
        else { return nil }
        let base = PipelineConfig.baseDirectory(of: expanded, file: config)
        func resolved(_ path: String) -> String { path.hasPrefix("/") ? path : base + "/" + path }
        let routes = PipelineConfig.stageNames(stages, role: "route")
        for name in routes + stages.keys.sorted().filter({ !routes.contains($0) }) {
            guard let stage = stages[name] else { continue }
            if case let .string(map)? = stage["settings"]?["map"] { return resolved(map) }
            if case let .array(fallbacks)? = stage["options"]?["fallback"] {
                for fallback in fallbacks {
                    if case let .string(map)? = fallback["settings"]?["map"] { return resolved(map) }
                }
            }
        }
        return nil
    }

    /// The map of a recorded session: the config of its study trial (`trial.json`'s, the study's config, whose map
    /// the trial's route file left out), the config beside it (`config.json`), or the config named in its metadata.
    public static func map(session: String, metadataConfig: String?) -> String? {
        var candidates: [String] = []
        if let bytes = try? InputFile.contents(of: "\(session)/trial.json"),
            let record = try? JSONDecoder().decode(StudyTrialRecord.self, from: Data(bytes))
        {
            candidates.append(record.config)
        }
        candidates.append("\(session)/config.json")
        if let metadataConfig { candidates.append(metadataConfig) }
        for config in candidates {
            if let map = self.map(config: config) { return map }
        }
        return nil
    }
}
