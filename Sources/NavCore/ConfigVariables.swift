extension SettingValue {
    /// Replaces `${NAME}` and `${NAME:-default}` in every string with the environment's value, so that
    /// one config serves several hosts (`HAPTICNAV_GROUP1_HOST=10.0.0.5 hapticnav run --group 2 …`).
    public func expandingVariables(environment: [String: String], path: String) throws(ConfigError) -> SettingValue {
        switch self {
        case let .string(text):
            return .string(try Self.expand(text, environment: environment, path: path))
        case let .array(items):
            var expanded: [SettingValue] = []
            for (index, item) in items.enumerated() {
                expanded.append(try item.expandingVariables(environment: environment, path: "\(path)[\(index)]"))
            }
            return .array(expanded)
        case let .object(members):
            var expanded: [String: SettingValue] = [:]
            for (key, member) in members {
                expanded[key] = try member.expandingVariables(environment: environment, path: "\(path).\(key)")
            }
            return .object(expanded)
        default:
            return self
        }
    }

    private static func expand(
        _ text: String, environment: [String: String], path: String
    ) throws(ConfigError) -> String {
        guard text.contains("${") else { return text }
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstRange(of: "${") {
            result += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                throw .invalidValue(path: path, expected: "a closing '}' after '${'", found: "'\(text)'")
            }
            let body = rest[open.upperBound..<close]
            let name: Substring
            let fallback: Substring?
            if let separator = body.firstRange(of: ":-") {
                name = body[..<separator.lowerBound]
                fallback = body[separator.upperBound...]
            } else {
                name = body
                fallback = nil
            }
            if let value = environment[String(name)], !value.isEmpty {
                result += value
            } else if let fallback {
                result += fallback
            } else {
                throw .invalidValue(
                    path: path, expected: "environment variable \(name) to be set (or a default: ${\(name):-value})",
                    found: "it unset")
            }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}
