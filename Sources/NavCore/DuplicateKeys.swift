/// A key given twice in one object of a JSON or JSON5 text: JSON decoders keep the last silently, so a config that
/// names a stage twice would lose the first without a word.
public struct DuplicateKey: Sendable, Equatable {
    /// The object's path ("the config", "stages", "stages.route.options.fallback[0]").
    public var path: String
    /// The key.
    public var key: String
    /// Where it first appeared, and where again [line numbers, from 1].
    public var firstLine: Int
    public var line: Int

    /// Creates a finding.
    public init(path: String, key: String, firstLine: Int, line: Int) {
        self.path = path
        self.key = key
        self.firstLine = firstLine
        self.line = line
    }
}

extension TextChecks {
    /// The first key that appears twice in one object, or nil. Reads JSON5: comments, single- or double-quoted
    /// strings, unquoted keys; a text that is not well formed is left to the decoder to report.
    public static func firstDuplicateKey(_ bytes: [UInt8]) -> DuplicateKey? {
        enum Frame {
            case object(keys: [String: Int], current: String?, expectingKey: Bool)
            case array(index: Int)
        }
        var stack: [Frame] = []
        var line = 1
        var index = 0
        func path() -> String {
            var parts: [String] = []
            // Every enclosing frame's key; the innermost object is the one the duplicate is in.
            for frame in stack.dropLast() {
                switch frame {
                case let .object(_, current, _): if let current { parts.append(current) }
                case let .array(position): parts[parts.count - 1] += "[\(position)]"
                }
            }
            return parts.isEmpty ? "the config" : parts.joined(separator: ".")
        }
        /// Reads a quoted string starting at `index` (the quote); returns its content.
        func quoted() -> String {
            let quote = bytes[index]
            var content: [UInt8] = []
            index += 1
            while index < bytes.count, bytes[index] != quote {
                if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
                    index += 1
                    if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                }
                if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                content.append(bytes[index])
                index += 1
            }
            index += 1
            return String(decoding: content, as: UTF8.self)
        }
        func isWord(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".") || byte >= 0x80
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
                index += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ":"):
                index += 1
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index + 1 < bytes.count,
                    !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/"))
                {
                    if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                    index += 1
                }
                index += 2
            case UInt8(ascii: "{"):
                stack.append(.object(keys: [:], current: nil, expectingKey: true))
                index += 1
            case UInt8(ascii: "["):
                stack.append(.array(index: 0))
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !stack.isEmpty { stack.removeLast() }
                index += 1
            case UInt8(ascii: ","):
                switch stack.last {
                case let .object(keys, current, _)?:
                    stack[stack.count - 1] = .object(keys: keys, current: current, expectingKey: true)
                case let .array(position)?: stack[stack.count - 1] = .array(index: position + 1)
                case nil: break
                }
                index += 1
            default:
                let startLine = line
                let token: String
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    token = quoted()
                } else if isWord(byte) {
                    let start = index
                    while index < bytes.count, isWord(bytes[index]) { index += 1 }
                    token = String(decoding: bytes[start..<index], as: UTF8.self)
                } else {
                    index += 1
                    continue
                }
                // A key where an object expects one; anything else is a value.
                if case let .object(keys, _, true)? = stack.last {
                    if let first = keys[token] {
                        return DuplicateKey(path: path(), key: token, firstLine: first, line: startLine)
                    }
                    var seen = keys
                    seen[token] = startLine
                    stack[stack.count - 1] = .object(keys: seen, current: token, expectingKey: false)
                }
            }
        }
        return nil
    }
}
