extension SettingValue {
    /// Replaces `${NAME}` and `${NAME:-default}` in every string with the environment's value, so that
    /// one config serves several hosts (`HAPTICNAV_GROUP1_HOST=10.0.0.5 hapticnav run --group 2 …`); a default may
    /// name another variable (`${HAPTICNAV_RECORDING:-${HAPTICNAV_RECORDINGS:-../out}/lab-recording.jsonl}`).
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
            // The closing brace that matches: a default may itself hold `${…}` (`${A:-${B:-out}/a.jsonl}`).
            var depth = 1
            var cursor = open.upperBound
            while cursor < rest.endIndex {
                if rest[cursor...].hasPrefix("${") {
                    depth += 1
                    cursor = rest.index(cursor, offsetBy: 2)
                    continue
                }
                if rest[cursor] == "}" {
                    depth -= 1
                    if depth == 0 { break }
                }
                cursor = rest.index(after: cursor)
            }
            guard cursor < rest.endIndex else {
                throw .invalidValue(path: path, expected: "a closing '}' after '${'", found: "'\(text)'")
            }
            let close = cursor
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
                result += try Self.expand(String(fallback), environment: environment, path: path)
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
