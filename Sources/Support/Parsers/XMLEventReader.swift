internal import CXMLSAX
import NavCore
import SystemIO
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Why an XML file could not be read to its end.
public struct XMLReadError: Error, CustomStringConvertible, Sendable {
    /// The line the parser stopped at [1-based; 0 before any].
    public let line: Int
    /// What libxml2 said, or why the file could not be read.
    public let reason: String

    public var description: String { "line \(self.line): \(self.reason)" }
}

/// Streams an XML file through libxml2's SAX2 parser, element by element.
///
/// Any bytes are safe: invalid UTF-8 in a name, an attribute or text, a NUL, a truncated or a binary file end the
/// parse with an ``XMLReadError`` naming the line, never a trap (Foundation's `XMLParser` on Linux traps on invalid
/// UTF-8 in element and attribute names). No network access and no external entities; names and values come as
/// Swift strings, any invalid UTF-8 replaced.
public final class XMLEventReader {
    /// An element's start: its local name (without prefix), its attributes by local name, and its line.
    public typealias StartElement = (_ name: String, _ attributes: [String: String], _ line: Int) -> Void
    /// An element's end: its local name and line.
    public typealias EndElement = (_ name: String, _ line: Int) -> Void
    /// Character data inside the current element.
    public typealias Characters = (_ text: String) -> Void

    fileprivate let onStart: StartElement
    fileprivate let onEnd: EndElement
    fileprivate let onCharacters: Characters?

    /// Creates a reader that calls `start`, `end` and (if given) `characters` as the document is read.
    public init(start: @escaping StartElement, end: @escaping EndElement = { _, _ in }, characters: Characters? = nil) {
        self.onStart = start
        self.onEnd = end
        self.onCharacters = characters
    }

    /// Reads the file at `path` in chunks; throws at the first error, after the events before it were delivered.
    public func read(file path: String) throws(XMLReadError) {
        let handle: InputFile
        do {
            handle = try InputFile(path: path)
        } catch {
            throw XMLReadError(line: 0, reason: "cannot be opened: \(error.reason)")
        }
        defer { handle.close() }
        try self.parse { () throws(XMLReadError) -> Data? in
            do {
                let chunk = try handle.read(upTo: 1 << 16)
                return chunk.isEmpty ? nil : Data(chunk)
            } catch {
                throw XMLReadError(line: 0, reason: "read failed: \(error)")
            }
        }
    }

    /// Reads a document held in memory.
    public func read(data: Data) throws(XMLReadError) {
        var done = false
        try self.parse { () throws(XMLReadError) -> Data? in
            defer { done = true }
            return done || data.isEmpty ? nil : data
        }
    }

    private func parse(next: () throws(XMLReadError) -> Data?) throws(XMLReadError) {
        var callbacks = hn_xml_callbacks()
        callbacks.user = Unmanaged.passUnretained(self).toOpaque()
        callbacks.start = { user, name, count, names, values, lengths, line in
            guard let user, let name else { return }
            let reader = Unmanaged<XMLEventReader>.fromOpaque(user).takeUnretainedValue()
            var attributes: [String: String] = [:]
            if let names, let values, let lengths {
                for index in 0..<Int(max(0, count)) {
                    guard let key = names[index], let value = values[index] else { continue }
                    let bytes = UnsafeRawBufferPointer(start: value, count: Int(max(0, lengths[index])))
                    attributes[XMLEventReader.string(key)] = String(decoding: bytes, as: UTF8.self)
                }
            }
            reader.onStart(XMLEventReader.string(name), attributes, Int(line))
        }
        callbacks.end = { user, name, line in
            guard let user, let name else { return }
            Unmanaged<XMLEventReader>.fromOpaque(user).takeUnretainedValue().onEnd(
                XMLEventReader.string(name), Int(line))
        }
        if self.onCharacters != nil {
            callbacks.characters = { user, bytes, count in
                guard let user, let bytes, count > 0 else { return }
                let reader = Unmanaged<XMLEventReader>.fromOpaque(user).takeUnretainedValue()
                reader.onCharacters?(
                    String(decoding: UnsafeRawBufferPointer(start: bytes, count: Int(count)), as: UTF8.self))
            }
        }
        guard let parser = hn_xml_create(&callbacks) else {
            throw XMLReadError(line: 0, reason: "libxml2 could not start a parser")
        }
        defer { hn_xml_free(parser) }
        func failure() -> XMLReadError {
            let message = hn_xml_error(parser).map { XMLEventReader.string($0) }?.trimmed()
            return XMLReadError(line: Int(hn_xml_line(parser)), reason: message ?? "not well-formed XML")
        }
        while let chunk = try next() {
            var offset = 0
            while offset < chunk.count {
                let size = min(chunk.count - offset, 1 << 20)
                let code = chunk.withUnsafeBytes { raw in
                    hn_xml_feed(
                        parser, raw.baseAddress!.advanced(by: offset).assumingMemoryBound(to: CChar.self), Int32(size),
                        0)
                }
                if code != 0 { throw failure() }
                offset += size
            }
        }
        if hn_xml_feed(parser, nil, 0, 1) != 0 { throw failure() }
    }

    /// A C string as Swift text, invalid UTF-8 replaced rather than trapped on.
    fileprivate static func string(_ pointer: UnsafePointer<CChar>) -> String {
        String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
    }
}
