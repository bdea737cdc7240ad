import Foundation
import NavCore
import Testing

/// `docs/PROTOCOL.md` read as a specification and held against the code: its type table, and for every kind a section
/// whose field table decodes that kind's example, byte for byte, with nothing left over. A client written from the page
/// alone (as `tools/hapticnav_listen.py` is) then reads what Swift writes.
@Suite struct ProtocolDocumentTests {
    /// One field of a layout as the page lists it: its name and its type (`f64`, `enum`, `Coordinate[]`, …), and for
    /// an enumeration its cases by number.
    struct Field: Equatable {
        var name: String
        var type: String
        var cases: [UInt8: String] = [:]
    }

    /// The page's layouts: each message's section by its type name (with its topic), and the nested layouts
    /// (`Coordinate`, `Waypoint`, `Counter`).
    struct Document {
        var typeTable: [(id: UInt8, topic: String, payload: String)] = []
        var sections: [String: (topic: String, fields: [Field])] = [:]
        var layouts: [String: [Field]] = [:]
    }

    static let text: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)) ?? ""
    }()

    static func parse(_ text: String) -> Document {
        var document = Document()
        var inTypeTable = false
        // Where field rows go: a message's section or a nested layout named by a line of its own ("Waypoint:").
        var section: String?
        var layout: String?
        func cells(_ line: Substring) -> [String] {
            line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast().map {
                $0.trimmingCharacters(in: .whitespaces)
            }
        }
        func names(_ cell: String) -> [String] {
            cell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["`"]) }
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") {
                inTypeTable = line == "## Topics and types"
                section = nil
                layout = nil
                if let match = line.wholeMatch(of: /### (\w+) \(`(\w+)`\)/) {
                    section = String(match.1)
                    document.sections[String(match.1)] = (String(match.2), [])
                }
                continue
            }
            if inTypeTable, let match = line.wholeMatch(of: /\| (\d+) \| `(\w+)` \| (\w+) \|/),
                let id = UInt8(match.1)
            {
                document.typeTable.append((id, String(match.2), String(match.3)))
                continue
            }
            guard let current = section else { continue }
            if let match = line.wholeMatch(of: /(\w+):/) {
                layout = String(match.1)
                document.layouts[String(match.1)] = []
                continue
            }
            guard line.hasPrefix("| `") else { continue }
            let row = cells(line)
            guard row.count >= 2 else { continue }
            let types = row[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            var cases: [UInt8: String] = [:]
            if row.count >= 3 {
                for match in row[2].matches(of: /(\d+) `(\w+)`/) { cases[UInt8(match.1) ?? 255] = String(match.2) }
            }
            let fields = zip(names(row[0]), types).map { Field(name: $0, type: $1, cases: $1 == "enum" ? cases : [:]) }
            if let layout {
                document.layouts[layout, default: []] += fields
            } else {
                document.sections[current]?.fields += fields
            }
        }
        // Layouts written inline: "Coordinate: `latitude` f64, `longitude` f64", "Counter: `name` string, `value` u64".
        for match in text.matches(of: /([A-Z]\w+): ((?:`\w+` [\w?\[\]]+(?:, )?)+)/) {
            document.layouts[String(match.1)] = match.2.matches(of: /`(\w+)` ([\w?\[\]]+)/).map {
                Field(name: String($0.1), type: String($0.2))
            }
        }
        return document
    }

    /// Reads `bytes` by the page's `fields`, comparing each field with the value's stored property of that name, in
    /// order; records an issue for every difference. Returns false when it cannot go on.
    static func check(
        _ fields: [Field], against value: Any, bytes: [UInt8], at offset: inout Int, document: Document, path: String
    ) -> Bool {
        let children = Array(Mirror(reflecting: value).children)
        #expect(
            children.map(\.label) == fields.map(\.name),
            "\(path): the page lists \(fields.map(\.name)), the code has \(children.map { $0.label ?? "?" })")
        guard children.count == fields.count else { return false }
        func take(_ count: Int) -> [UInt8]? {
            guard offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }
        func integer(_ count: Int) -> UInt64? {
            take(count).map { $0.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        }
        func double() -> Double? { integer(8).map { Double(bitPattern: $0) } }
        for (field, child) in zip(fields, children) {
            let here = "\(path).\(field.name) (\(field.type))"
            var element = field.type
            let isArray = element.hasSuffix("[]")
            if isArray { element.removeLast(2) }
            if isArray {
                let items = Array(Mirror(reflecting: child.value).children).map(\.value)
                guard let count = integer(4), let layout = document.layouts[element] else {
                    Issue.record("\(here): no count or no layout for \(element)")
                    return false
                }
                #expect(count == UInt64(items.count), "\(here): count")
                for (index, item) in items.enumerated() {
                    guard
                        self.check(
                            layout, against: item, bytes: bytes, at: &offset, document: document,
                            path: "\(here)[\(index)]")
                    else { return false }
                }
                continue
            }
            if let layout = document.layouts[element] {
                guard
                    self.check(layout, against: child.value, bytes: bytes, at: &offset, document: document, path: here)
                else { return false }
                continue
            }
            switch element {
            case "f64":
                guard let read = double() else { return false }
                #expect(read.bitPattern == (child.value as? Double)?.bitPattern, "\(here): \(read)")
            case "f64?":
                let wrapped = Mirror(reflecting: child.value).children.first?.value as? Double
                guard let presence = take(1)?.first else { return false }
                #expect(presence == (wrapped == nil ? 0 : 1), "\(here): presence byte \(presence)")
                if presence == 1 {
                    guard let read = double() else { return false }
                    #expect(read.bitPattern == wrapped?.bitPattern, "\(here): \(read)")
                }
            case "u8":
                #expect(integer(1) == (child.value as? UInt8).map(UInt64.init), "\(here)")
            case "u32":
                #expect(integer(4) == (child.value as? UInt32).map(UInt64.init), "\(here)")
            case "u64":
                #expect(integer(8) == (child.value as? UInt64), "\(here)")
            case "bool":
                #expect(integer(1) == (child.value as? Bool).map { $0 ? UInt64(1) : 0 }, "\(here)")
            case "enum":
                guard let raw = take(1)?.first, let value = child.value as? any WireEnum else {
                    Issue.record("\(here): not an enumeration")
                    return false
                }
                #expect(raw == value.rawValue, "\(here): \(raw)")
                #expect(field.cases == Self.cases(of: value), "\(here): the page's cases")
            case "string":
                guard let length = integer(2), let utf8 = take(Int(length)) else { return false }
                #expect(String(decoding: utf8, as: UTF8.self) == child.value as? String, "\(here)")
            default:
                Issue.record("\(here): a type the page does not define")
                return false
            }
        }
        return offset <= bytes.count
    }

    static func cases<E: WireEnum>(of value: E) -> [UInt8: String] {
        Dictionary(uniqueKeysWithValues: E.allCases.map { ($0.rawValue, $0.name) })
    }

    @Test func theTypeTableListsEveryKindWithItsIDTopicAndPayload() throws {
        let document = Self.parse(Self.text)
        let examples = Dictionary(BusMessage.examples.map { ($0.kind, $0) }, uniquingKeysWith: { a, _ in a })
        let expected = try BusMessage.Kind.allCases.map { kind in
            let example = try #require(examples[kind], "an example of \(kind)")
            return "\(kind.rawValue) \(kind.topic) \(type(of: example.payload))"
        }
        #expect(document.typeTable.map { "\($0.id) \($0.topic) \($0.payload)" } == expected)
    }

    @Test(arguments: BusMessage.examples)
    func eachKindsSectionDecodesItsExampleByteForByte(_ message: BusMessage) throws {
        let document = Self.parse(Self.text)
        let name = "\(type(of: message.payload))"
        let section = try #require(document.sections[name], "a section \"### \(name) (`\(message.kind.topic)`)\"")
        #expect(section.topic == message.kind.topic)
        var writer = WireWriter()
        message.encodePayload(to: &writer)
        var offset = 0
        let complete = Self.check(
            section.fields, against: message.payload, bytes: writer.bytes, at: &offset, document: document, path: name)
        #expect(complete && offset == writer.bytes.count, "\(name): read \(offset) of \(writer.bytes.count) bytes")
    }
}
