/// A value in a config file: the JSON data model.
public enum SettingValue: Equatable, Sendable {
    case number(Double)
    case string(String)
    case bool(Bool)
    case array([SettingValue])
    case object([String: SettingValue])
    case null

    /// A short name of the value's type, for error messages.
    public var typeName: String {
        switch self {
        case .number: return "number"
        case .string: return "string"
        case .bool: return "boolean"
        case .array: return "array"
        case .object: return "object"
        case .null: return "null"
        }
    }
}

/// A config mistake, naming the key and what would have been valid.
public enum ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key that is not one of the valid ones at `path`.
    case unknownKey(path: String, key: String, valid: [String])
    /// A plugin id that is not registered for the role.
    case unknownPlugin(path: String, id: String, known: [String])
    /// A stage role that does not exist.
    case unknownRole(path: String, role: String, known: [String])
    /// A required key that is missing.
    case missingKey(path: String, key: String)
    /// A value of the wrong type or out of range.
    case invalidValue(path: String, expected: String, found: String)
    /// A reference to a stage that is not in the config.
    case unknownStage(path: String, name: String, known: [String])
    /// The file could not be read or parsed.
    case unreadable(file: String, reason: String)
    /// A key given twice in one object [line numbers].
    case duplicateKey(path: String, key: String, firstLine: Int, line: Int)
    /// A file a setting names is missing or cannot be read (the reason says which).
    case missingFile(path: String, file: String, reason: String)

    public var description: String {
        switch self {
        case let .unknownKey(path, key, valid):
            guard !valid.isEmpty else { return "unknown key '\(key)' in \(path), which takes no keys" }
            return "unknown key '\(key)' in \(path); valid keys: \(valid.sorted().joined(separator: ", "))"
        case let .unknownPlugin(path, id, known):
            return "unknown plugin '\(id)' at \(path); known plugins: \(known.sorted().joined(separator: ", "))"
        case let .unknownRole(path, role, known):
            return "unknown role '\(role)' at \(path); known roles: \(known.joined(separator: ", "))"
        case let .missingKey(path, key):
            return "missing key '\(key)' in \(path)"
        case let .invalidValue(path, expected, found):
            return "\(path): expected \(expected), found \(found)"
        case let .unknownStage(path, name, known):
            return
                "\(path) names stage '\(name)', which is not in the config; stages: \(known.sorted().joined(separator: ", "))"
        case let .unreadable(file, reason):
            return "cannot read config \(file): \(reason)"
        case let .duplicateKey(path, key, firstLine, line):
            return
                "\(path): key '\(key)' given twice (lines \(firstLine) and \(line)); the second would silently replace the first"
        case let .missingFile(path, file, reason):
            return "\(path): \(file) \(reason)"
        }
    }
}

/// A config object read key by key: every read marks the key as known, and ``finish()`` rejects the rest.
///
/// Plugins read their settings through this, so a misspelt key is an error that lists the valid ones.
public struct Settings: Sendable {
    /// Where this object sits in the config, for messages (for example "stages.source.settings").
    public let path: String
    /// Folder that relative file paths are resolved against (the config file's folder).
    public let baseDirectory: String
    private let values: [String: SettingValue]
    private var known: [String] = []

    /// Wraps an object; anything else is an error naming `path`.
    public init(_ value: SettingValue?, path: String, baseDirectory: String) throws(ConfigError) {
        switch value {
        case nil, .null?: self.values = [:]
        case let .object(values)?: self.values = values
        case let other?: throw .invalidValue(path: path, expected: "an object", found: other.typeName)
        }
        self.path = path
        self.baseDirectory = baseDirectory
    }

    /// The raw value of `key`, marking it known.
    public mutating func value(_ key: String) -> SettingValue? {
        self.known.append(key)
        if case .null? = self.values[key] { return nil }
        return self.values[key]
    }

    /// True when the object has `key`.
    public func contains(_ key: String) -> Bool { self.values[key] != nil }

    /// A number, or `defaultValue` when absent; `range` bounds it.
    public mutating func double(
        _ key: String, default defaultValue: Double,
        in range: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
    )
        throws(ConfigError) -> Double
    {
        guard let value = self.value(key) else { return defaultValue }
        guard case let .number(number) = value, number.isFinite else {
            throw .invalidValue(path: "\(self.path).\(key)", expected: "a number", found: value.typeName)
        }
        guard range.contains(number) else {
            throw .invalidValue(
                path: "\(self.path).\(key)", expected: "a number in \(range.lowerBound)...\(range.upperBound)",
                found: "\(number)")
        }
        return number
    }

    /// An optional number; nil when absent.
    public mutating func optionalDouble(_ key: String) throws(ConfigError) -> Double? {
        guard self.values[key] != nil, self.values[key] != .null else {
            self.known.append(key)
            return nil
        }
        return try self.double(key, default: 0)
    }

    /// A whole number, or `defaultValue` when absent.
    public mutating func int(
        _ key: String, default defaultValue: Int,
        in range: ClosedRange<Int> = Int.min...Int.max
    ) throws(ConfigError) -> Int {
        guard let value = self.value(key) else { return defaultValue }
        guard case let .number(number) = value, number.isFinite, number.rounded() == number,
            let whole = Int(exactly: number)
        else {
            throw .invalidValue(path: "\(self.path).\(key)", expected: "a whole number", found: "\(value)")
        }
        guard range.contains(whole) else {
            throw .invalidValue(
                path: "\(self.path).\(key)",
                expected: "a whole number in \(range.lowerBound)...\(range.upperBound)", found: "\(whole)")
        }
        return whole
    }

    /// A boolean, or `defaultValue` when absent.
    public mutating func bool(_ key: String, default defaultValue: Bool) throws(ConfigError) -> Bool {
        guard let value = self.value(key) else { return defaultValue }
        guard case let .bool(flag) = value else {
            throw .invalidValue(path: "\(self.path).\(key)", expected: "true or false", found: value.typeName)
        }
        return flag
    }

    /// A string, or `defaultValue` when absent; with `oneOf`, it must be one of those.
    public mutating func string(
        _ key: String, default defaultValue: String? = nil,
        oneOf choices: [String]? = nil
    ) throws(ConfigError) -> String {
        guard let value = self.value(key) else {
            if let defaultValue { return defaultValue }
            throw .missingKey(path: self.path, key: key)
        }
        guard case let .string(string) = value else {
            throw .invalidValue(path: "\(self.path).\(key)", expected: "a string", found: value.typeName)
        }
        if let choices, !choices.contains(string) {
            throw .invalidValue(
                path: "\(self.path).\(key)", expected: "one of \(choices.joined(separator: ", "))",
                found: "'\(string)'")
        }
        return string
    }

    /// An optional string; nil when absent.
    public mutating func optionalString(_ key: String) throws(ConfigError) -> String? {
        guard self.values[key] != nil, self.values[key] != .null else {
            self.known.append(key)
            return nil
        }
        return try self.string(key)
    }

    /// A file path, resolved against the config file's folder when relative; nil when absent.
    public mutating func path(_ key: String) throws(ConfigError) -> String? {
        guard self.values[key] != nil else {
            self.known.append(key)
            return nil
        }
        let raw = try self.string(key)
        return Settings.resolve(raw, against: self.baseDirectory)
    }

    /// A list of strings, or `defaultValue` when absent.
    public mutating func strings(_ key: String, default defaultValue: [String] = []) throws(ConfigError) -> [String] {
        guard let value = self.value(key) else { return defaultValue }
        guard case let .array(items) = value else {
            throw .invalidValue(path: "\(self.path).\(key)", expected: "a list of strings", found: value.typeName)
        }
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            guard case let .string(string) = item else {
                throw .invalidValue(path: "\(self.path).\(key)[\(index)]", expected: "a string", found: item.typeName)
            }
            strings.append(string)
        }
        return strings
    }

    /// A coordinate written as [latitude, longitude]; nil when absent.
    public mutating func coordinate(_ key: String) throws(ConfigError) -> Coordinate? {
        guard let value = self.value(key) else { return nil }
        guard case let .array(pair) = value, pair.count == 2, case let .number(latitude) = pair[0],
            case let .number(longitude) = pair[1], abs(latitude) <= 90, abs(longitude) <= 180
        else {
            throw .invalidValue(path: "\(self.path).\(key)", expected: "[latitude, longitude]", found: "\(value)")
        }
        return Coordinate(latitude: latitude, longitude: longitude)
    }

    /// A nested object as settings of its own (empty when absent).
    public mutating func object(_ key: String) throws(ConfigError) -> Settings {
        try Settings(self.value(key), path: "\(self.path).\(key)", baseDirectory: self.baseDirectory)
    }

    /// A plugin chosen in a list (a stage's `fallback`): its id, its settings, and where it sits in the config.
    public struct PluginChoice: Sendable {
        public var plugin: String
        public var settings: Settings
        public var path: String
    }

    /// A list of plugins, `[{ plugin, settings }, …]` (empty when absent): a stage's fallbacks.
    public mutating func pluginList(_ key: String) throws(ConfigError) -> [PluginChoice] {
        guard let list = self.value(key) else { return [] }
        guard case let .array(items) = list else {
            throw .invalidValue(
                path: "\(self.path).\(key)", expected: "a list of { plugin, settings }", found: "\(list)")
        }
        var choices: [PluginChoice] = []
        for (index, item) in items.enumerated() {
            var entry = try Settings(item, path: "\(self.path).\(key)[\(index)]", baseDirectory: self.baseDirectory)
            let plugin = try entry.string("plugin")
            let settings = try entry.object("settings")
            try entry.finish()
            choices.append(PluginChoice(plugin: plugin, settings: settings, path: entry.path))
        }
        return choices
    }

    /// The keys present, in sorted order.
    public var keys: [String] { self.values.keys.sorted() }

    /// Fails on the first key that nothing read, listing the keys that were read (the valid ones).
    public func finish() throws(ConfigError) {
        let valid = Set(self.known)
        if let unknown = self.values.keys.sorted().first(where: { !valid.contains($0) }) {
            throw .unknownKey(path: self.path, key: unknown, valid: valid.sorted())
        }
    }

    /// Joins a relative path to a base folder; absolute paths and "~/" stay as they are.
    public static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") || path.hasPrefix("~") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }
}
