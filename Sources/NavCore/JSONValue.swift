/// A JSON document's value: the same shape configs are read into, so engine answers, gpsd reports and route
/// files are read with one type and one decoder.
public typealias JSONValue = SettingValue

extension SettingValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Numbers first: they are most of what arrives (a phone's samples, a route's coordinates), and each failed
        // attempt costs a thrown error. A number never decodes as a Bool nor a Bool as a number, so the order does
        // not change what a document decodes to.
        if container.decodeNil() {
            self = .null
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let array = try? container.decode([SettingValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: SettingValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .number(value): try container.encode(value)
        case let .string(value): try container.encode(value)
        case let .bool(value): try container.encode(value)
        case let .array(value): try container.encode(value)
        case let .object(value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

extension SettingValue: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByStringLiteral {
    public init(dictionaryLiteral elements: (String, SettingValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    public init(arrayLiteral elements: SettingValue...) {
        self = .array(elements)
    }

    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

extension SettingValue {
    /// The member `key` of an object; nil for anything else or a missing key.
    public subscript(key: String) -> SettingValue? {
        if case let .object(members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array; nil for anything else or an index out of range.
    public subscript(index: Int) -> SettingValue? {
        if case let .array(elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// The number, when this is one.
    public var doubleValue: Double? {
        if case let .number(value) = self { return value }
        return nil
    }

    /// The string, when this is one.
    public var stringValue: String? {
        if case let .string(value) = self { return value }
        return nil
    }

    /// The flag, when this is one.
    public var boolValue: Bool? {
        if case let .bool(value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [SettingValue]? {
        if case let .array(value) = self { return value }
        return nil
    }

    /// The members, when this is an object.
    public var objectValue: [String: SettingValue]? {
        if case let .object(value) = self { return value }
        return nil
    }
}
