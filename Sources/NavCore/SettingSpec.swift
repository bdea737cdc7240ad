/// One documented setting, written once beside the type it configures: its key in a config, its unit, its
/// default and the range a config may give. Parsing (`Settings.value(_:)`), the type's own default and the
/// documentation (`hapticnav config schema`, `docs/CONFIG.md`) all read it from here.
public struct SettingSpec<Value: Sendable & Comparable>: Sendable {
    /// The key in a config.
    public let key: String
    /// The unit, as written in documentation ("m", "s", "°", "m/s²"; "" for none).
    public let unit: String
    /// The value when a config does not give one.
    public let defaultValue: Value
    /// The values a config may give.
    public let range: ClosedRange<Value>
    /// What it does, in one sentence.
    public let summary: String

    /// Declares a setting.
    public init(
        _ key: String, unit: String = "", default defaultValue: Value, in range: ClosedRange<Value>,
        _ summary: String
    ) {
        precondition(range.contains(defaultValue), "the default of \(key) lies outside its range")
        self.key = key
        self.unit = unit
        self.defaultValue = defaultValue
        self.range = range
        self.summary = summary
    }
}

/// A setting as documentation shows it, whatever its type.
public struct SettingDoc: Sendable, Equatable {
    /// The key in a config.
    public let key: String
    /// The unit ("" for none).
    public let unit: String
    /// The default, as written in documentation.
    public let defaultText: String
    /// The range, as written in documentation.
    public let rangeText: String
    /// What it does.
    public let summary: String

    /// Describes a setting that is not a number (a choice, a list, a path).
    public init(key: String, unit: String = "", defaultText: String, rangeText: String, summary: String) {
        self.key = key
        self.unit = unit
        self.defaultText = defaultText
        self.rangeText = rangeText
        self.summary = summary
    }
}

extension SettingSpec {
    /// The setting as documentation shows it.
    public var doc: SettingDoc {
        SettingDoc(
            key: self.key, unit: self.unit, defaultText: Self.text(self.defaultValue),
            rangeText: "\(Self.text(self.range.lowerBound))–\(Self.text(self.range.upperBound))",
            summary: self.summary)
    }

    static func text(_ value: Value) -> String {
        if let double = value as? Double {
            return double.rounded() == double && abs(double) < 1e15 ? String(Int(double)) : "\(double)"
        }
        return "\(value)"
    }
}

extension Settings {
    /// Reads a number setting by its spec: the default when absent, an error naming the key and range when wrong.
    public mutating func value(_ spec: SettingSpec<Double>) throws(ConfigError) -> Double {
        try self.double(spec.key, default: spec.defaultValue, in: spec.range)
    }

    /// Reads a whole-number setting by its spec.
    public mutating func value(_ spec: SettingSpec<Int>) throws(ConfigError) -> Int {
        try self.int(spec.key, default: spec.defaultValue, in: spec.range)
    }
}

/// A setting that is not a number (a flag, a text, a path, a list, a place), declared once like a ``SettingSpec``:
/// its key in a config, its default (nil for none: the plugin says whether it is needed), what a config may give
/// there, and what it does. Parsing (`Settings.value(_:)`) and the documentation read it from here.
public struct ValueSpec<Value: Sendable>: Sendable {
    /// The key in a config.
    public let key: String
    /// The value when a config does not give one; nil for none.
    public let defaultValue: Value?
    /// What a config may give, as documentation says it ("true or false", "a path", …).
    public let accepts: String
    /// What it does, in one sentence.
    public let summary: String

    /// Declares a setting (the typed initializers below say what each kind accepts).
    public init(key: String, defaultValue: Value?, accepts: String, summary: String) {
        self.key = key
        self.defaultValue = defaultValue
        self.accepts = accepts
        self.summary = summary
    }

    /// The setting as documentation shows it.
    public var doc: SettingDoc {
        let defaultText: String
        switch self.defaultValue {
        case nil: defaultText = "–"
        case let list as [String]:
            defaultText = list.isEmpty ? "[]" : "[" + list.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        case let text as String: defaultText = text.isEmpty ? "\"\"" : "\"\(text)\""
        case let value?: defaultText = "\(value)"
        }
        return SettingDoc(key: self.key, defaultText: defaultText, rangeText: self.accepts, summary: self.summary)
    }
}

extension ValueSpec where Value == Bool {
    /// Declares a flag.
    public init(_ key: String, default defaultValue: Bool, _ summary: String) {
        self.init(key: key, defaultValue: defaultValue, accepts: "true or false", summary: summary)
    }
}

extension ValueSpec where Value == String {
    /// Declares a text (a name, a URL, a path: `accepts` says which).
    public init(_ key: String, default defaultValue: String? = nil, accepts: String = "text", _ summary: String) {
        self.init(key: key, defaultValue: defaultValue, accepts: accepts, summary: summary)
    }
}

extension ValueSpec where Value == [String] {
    /// Declares a list of texts.
    public init(
        _ key: String, default defaultValue: [String] = [], accepts: String = "a list of strings", _ summary: String
    ) {
        self.init(key: key, defaultValue: defaultValue, accepts: accepts, summary: summary)
    }
}

extension ValueSpec where Value == Coordinate {
    /// Declares a place.
    public init(_ key: String, _ summary: String) {
        self.init(key: key, defaultValue: nil, accepts: "[latitude, longitude]", summary: summary)
    }
}

extension Settings {
    /// Reads a flag by its spec.
    public mutating func value(_ spec: ValueSpec<Bool>) throws(ConfigError) -> Bool {
        try self.bool(spec.key, default: spec.defaultValue ?? false)
    }

    /// Reads a text by its spec: its default when absent, an error naming the key when it has none.
    public mutating func value(_ spec: ValueSpec<String>) throws(ConfigError) -> String {
        try self.string(spec.key, default: spec.defaultValue)
    }

    /// Reads a text by its spec; nil when absent.
    public mutating func optionalValue(_ spec: ValueSpec<String>) throws(ConfigError) -> String? {
        try self.optionalString(spec.key)
    }

    /// Reads a file path by its spec, resolved against the config's folder; nil when absent.
    public mutating func path(_ spec: ValueSpec<String>) throws(ConfigError) -> String? {
        try self.path(spec.key)
    }

    /// Reads a list of texts by its spec.
    public mutating func value(_ spec: ValueSpec<[String]>) throws(ConfigError) -> [String] {
        try self.strings(spec.key, default: spec.defaultValue ?? [])
    }

    /// Reads a place by its spec; nil when absent.
    public mutating func value(_ spec: ValueSpec<Coordinate>) throws(ConfigError) -> Coordinate? {
        try self.coordinate(spec.key)
    }
}
