#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
import SystemIO

/// A parameter sweep over a config: `--set stages.haptic.options.toleranceDegrees=10,15,20` (repeatable), each
/// setting given one or more values; every combination of the values is a config of its own.
public struct ConfigSweep: Sendable {
    /// One `--set`: where in the config, and the values to try.
    public struct Setting: Sendable {
        /// The keys from the config's root, "stages.haptic.options.toleranceDegrees" as four.
        public let path: [String]
        public let values: [SettingValue]
        /// The values as given, for labels.
        public let texts: [String]
    }

    public let settings: [Setting]

    /// Parses `PATH=V1,V2,…` arguments. Each value is read as JSON5 (a number, true, false, null, a quoted
    /// string), and as a plain string when it is none of those ("band").
    public init(_ arguments: [String]) throws(ConfigError) {
        var settings: [Setting] = []
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "=") else {
                throw ConfigError.invalidValue(path: "--set", expected: "PATH=VALUE[,VALUE…]", found: "'\(argument)'")
            }
            let path = argument[..<equals].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            let texts = argument[argument.index(after: equals)...].split(
                separator: ",", omittingEmptySubsequences: false
            ).map(String.init)
            guard path.count >= 2, !path.contains(where: \.isEmpty), path[0] == "stages" || path[0] == "bus" else {
                throw ConfigError.invalidValue(
                    path: "--set", expected: "a path from the config's root (stages.NAME.… or bus.…)",
                    found: "'\(argument[..<equals])'")
            }
            guard !texts.contains(where: \.isEmpty) else {
                throw ConfigError.invalidValue(
                    path: "--set \(path.joined(separator: "."))", expected: "values separated by commas",
                    found: "an empty value")
            }
            if let repeated = texts.first(where: { text in texts.filter { $0 == text }.count > 1 }) {
                throw ConfigError.invalidValue(
                    path: "--set \(path.joined(separator: "."))", expected: "each value once",
                    found: "'\(repeated)' twice")
            }
            guard !settings.contains(where: { $0.path == path }) else {
                throw ConfigError.invalidValue(
                    path: "--set", expected: "each path once", found: "'\(path.joined(separator: "."))' twice")
            }
            settings.append(Setting(path: path, values: texts.map(Self.value), texts: texts))
        }
        self.settings = settings
    }

    private static func value(_ text: String) -> SettingValue {
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        return (try? decoder.decode(SettingValue.self, from: Data(text.utf8))) ?? .string(text)
    }

    /// Every combination of the values, the first setting varying slowest: its label ("toleranceDegrees=10
    /// lookAheadMeters=15": each setting by its last key, or its whole path when two share that key) and what it
    /// sets. One empty combination when nothing is swept.
    public var combinations: [(label: String, values: [(path: [String], value: SettingValue)])] {
        let lasts = self.settings.map { $0.path.last! }
        let names = self.settings.map { setting in
            lasts.filter { $0 == setting.path.last! }.count > 1
                ? setting.path.joined(separator: ".") : setting.path.last!
        }
        var result: [(label: String, values: [(path: [String], value: SettingValue)])] = [("", [])]
        for (index, setting) in self.settings.enumerated() {
            result = result.flatMap { combination in
                zip(setting.values, setting.texts).map { value, text in
                    (
                        combination.label.isEmpty
                            ? "\(names[index])=\(text)" : "\(combination.label) \(names[index])=\(text)",
                        combination.values + [(setting.path, value)]
                    )
                }
            }
        }
        return result
    }

    /// The config in `file` with `values` set, and its `directory` made absolute so that its relative paths hold
    /// wherever it is written. A path through a stage the config does not have is an error naming its stages; a
    /// key the stage does not know is left for the config's own check to name.
    public static func config(
        file: String, setting values: [(path: [String], value: SettingValue)]
    ) throws
        -> SettingValue
    {
        guard case var .object(root) = try PipelineConfig.readTree(file: file) else {
            throw ConfigError.invalidValue(path: file, expected: "a config object", found: "something else")
        }
        root["directory"] = .string(Paths.absolute(PipelineConfig.baseDirectory(of: .object(root), file: file)))
        if case let .object(stages)? = root["stages"] {
            for (path, _) in values where path[0] == "stages" && stages[path[1]] == nil {
                throw ConfigError.unknownStage(
                    path: "--set \(path.joined(separator: "."))", name: path[1], known: Array(stages.keys))
            }
        }
        var tree = SettingValue.object(root)
        for (path, value) in values {
            tree = try Self.set(value, at: path[...], in: tree, whole: path)
        }
        return tree
    }

    private static func set(
        _ value: SettingValue, at path: ArraySlice<String>, in tree: SettingValue, whole: [String]
    ) throws(ConfigError) -> SettingValue {
        guard let key = path.first else { return value }
        var object: [String: SettingValue]
        switch tree {
        case let .object(existing): object = existing
        case .null: object = [:]
        default:
            throw ConfigError.invalidValue(
                path: "--set \(whole.joined(separator: "."))",
                expected: "an object at \(whole[..<(whole.count - path.count)].joined(separator: "."))",
                found: "a value")
        }
        object[key] = try Self.set(value, at: path.dropFirst(), in: object[key] ?? .null, whole: whole)
        return .object(object)
    }
}
