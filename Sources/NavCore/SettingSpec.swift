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
