/// Little-endian binary writer for the v1 payload encoding described in `docs/PROTOCOL.md`.
public struct WireWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// Creates an empty writer with room for `capacity` bytes.
    public init(capacity: Int = 64) {
        self.bytes = []
        self.bytes.reserveCapacity(capacity)
    }

    /// Empties the writer, keeping its storage for the next message.
    public mutating func reset() {
        self.bytes.removeAll(keepingCapacity: true)
    }

    /// Appends raw bytes.
    public mutating func append<C: Collection>(contentsOf raw: C) where C.Element == UInt8 {
        self.bytes.append(contentsOf: raw)
    }

    /// Writes one unsigned byte.
    public mutating func write(_ value: UInt8) {
        self.bytes.append(value)
    }

    /// Writes a 16-bit unsigned integer, little-endian.
    public mutating func write(_ value: UInt16) {
        withUnsafeBytes(of: value.littleEndian) { self.bytes.append(contentsOf: $0) }
    }

    /// Writes a 32-bit unsigned integer, little-endian.
    public mutating func write(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { self.bytes.append(contentsOf: $0) }
    }

    /// Writes a 64-bit unsigned integer, little-endian.
    public mutating func write(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { self.bytes.append(contentsOf: $0) }
    }

    /// Writes a 64-bit signed integer, little-endian two's complement.
    public mutating func write(_ value: Int64) {
        self.write(UInt64(bitPattern: value))
    }

    /// Writes an IEEE 754 binary64, little-endian.
    public mutating func write(_ value: Double) {
        self.write(value.bitPattern)
    }

    /// Writes a boolean as one byte, 0 or 1.
    public mutating func write(_ value: Bool) {
        self.write(value ? UInt8(1) : UInt8(0))
    }

    /// Writes an optional binary64: a presence byte (0 absent, 1 present) then the value when present.
    public mutating func write(_ value: Double?) {
        if let value {
            self.write(UInt8(1))
            self.write(value)
        } else {
            self.write(UInt8(0))
        }
    }

    /// Writes a UTF-8 string prefixed by its byte length as a 16-bit unsigned integer (truncated to 65,535 bytes).
    public mutating func write(_ value: String) {
        var utf8 = Array(value.utf8)
        if utf8.count > Int(UInt16.max) {
            utf8 = Array(utf8.prefix(Int(UInt16.max)))
        }
        self.write(UInt16(utf8.count))
        self.bytes.append(contentsOf: utf8)
    }

    /// Writes an array count as a 32-bit unsigned integer.
    public mutating func writeCount(_ count: Int) {
        self.write(UInt32(count))
    }

    /// Writes a closed enumeration as its one-byte raw value.
    public mutating func write<E: RawRepresentable>(_ value: E) where E.RawValue == UInt8 {
        self.write(value.rawValue)
    }
}

/// Why a frame could not be decoded.
public enum WireDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The frame ended before the field at `offset` was complete.
    case truncated(offset: Int, needed: Int, available: Int)
    /// Bytes were left over after the last field.
    case trailingBytes(count: Int)
    /// A field held a value outside its domain.
    case invalidValue(field: String, detail: String)

    public var description: String {
        switch self {
        case let .truncated(offset, needed, available):
            return "truncated at byte \(offset): needed \(needed) more, \(available) left"
        case let .trailingBytes(count):
            return "\(count) unexpected trailing bytes"
        case let .invalidValue(field, detail):
            return "invalid \(field): \(detail)"
        }
    }
}

/// Little-endian binary reader for the v1 payload encoding; every read checks the remaining length.
public struct WireReader {
    private let bytes: UnsafeRawBufferPointer
    /// The offset of the next byte to read.
    public private(set) var offset: Int = 0

    /// Creates a reader over bytes that must stay valid while it is used.
    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The number of bytes not read yet.
    public var remaining: Int { self.bytes.count - self.offset }

    private mutating func take(_ count: Int) throws(WireDecodingError) -> UnsafeRawBufferPointer {
        guard count >= 0, self.remaining >= count else {
            throw .truncated(offset: self.offset, needed: count, available: self.remaining)
        }
        let slice = UnsafeRawBufferPointer(rebasing: self.bytes[self.offset..<(self.offset + count)])
        self.offset += count
        return slice
    }

    /// Reads one unsigned byte.
    public mutating func readUInt8() throws(WireDecodingError) -> UInt8 {
        try self.take(1)[0]
    }

    /// Reads a 16-bit unsigned little-endian integer.
    public mutating func readUInt16() throws(WireDecodingError) -> UInt16 {
        let raw = try self.take(2)
        return UInt16(raw[0]) | UInt16(raw[1]) << 8
    }

    /// Reads a 32-bit unsigned little-endian integer.
    public mutating func readUInt32() throws(WireDecodingError) -> UInt32 {
        let raw = try self.take(4)
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(raw[index]) << (8 * UInt32(index)) }
        return value
    }

    /// Reads a 64-bit unsigned little-endian integer.
    public mutating func readUInt64() throws(WireDecodingError) -> UInt64 {
        let raw = try self.take(8)
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(raw[index]) << (8 * UInt64(index)) }
        return value
    }

    /// Reads a 64-bit signed little-endian integer.
    public mutating func readInt64() throws(WireDecodingError) -> Int64 {
        Int64(bitPattern: try self.readUInt64())
    }

    /// Reads an IEEE 754 binary64.
    public mutating func readDouble() throws(WireDecodingError) -> Double {
        Double(bitPattern: try self.readUInt64())
    }

    /// Reads a binary64 that must be finite; `field` names it in the error.
    public mutating func readFinite(_ field: String) throws(WireDecodingError) -> Double {
        let value = try self.readDouble()
        guard value.isFinite else { throw .invalidValue(field: field, detail: "\(value) is not finite") }
        return value
    }

    /// Reads an optional binary64 (presence byte, then the value) that must be finite when present.
    public mutating func readOptionalFinite(_ field: String) throws(WireDecodingError) -> Double? {
        switch try self.readUInt8() {
        case 0: return nil
        case 1: return try self.readFinite(field)
        case let other: throw .invalidValue(field: field, detail: "presence byte \(other)")
        }
    }

    /// Reads a boolean byte that must be 0 or 1.
    public mutating func readBool(_ field: String) throws(WireDecodingError) -> Bool {
        switch try self.readUInt8() {
        case 0: return false
        case 1: return true
        case let other: throw .invalidValue(field: field, detail: "boolean byte \(other)")
        }
    }

    /// Reads a length-prefixed UTF-8 string.
    public mutating func readString(_ field: String) throws(WireDecodingError) -> String {
        let count = Int(try self.readUInt16())
        let raw = try self.take(count)
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw .invalidValue(field: field, detail: "not UTF-8")
        }
        return string
    }

    /// Reads an array count and checks that at least `minimumElementSize` bytes per element remain.
    public mutating func readCount(_ field: String, minimumElementSize: Int) throws(WireDecodingError) -> Int {
        let count = Int(try self.readUInt32())
        guard count * max(minimumElementSize, 1) <= self.remaining else {
            throw .truncated(offset: self.offset, needed: count * minimumElementSize, available: self.remaining)
        }
        return count
    }

    /// Reads a closed enumeration from its one-byte raw value.
    public mutating func readEnum<E: RawRepresentable>(_ type: E.Type, _ field: String) throws(WireDecodingError) -> E
    where E.RawValue == UInt8 {
        let raw = try self.readUInt8()
        guard let value = E(rawValue: raw) else {
            throw .invalidValue(field: field, detail: "unknown case \(raw)")
        }
        return value
    }

    /// Fails unless every byte has been read.
    public func finish() throws(WireDecodingError) {
        if self.remaining != 0 { throw .trailingBytes(count: self.remaining) }
    }
}

/// A message with a v1 binary payload encoding.
public protocol WireCodable: Sendable {
    /// Appends the payload encoding of `self`.
    func encode(to writer: inout WireWriter)
    /// Decodes a payload; throws on any malformed, truncated or out-of-domain field.
    init(from reader: inout WireReader) throws(WireDecodingError)
}

extension WireCodable {
    /// Decodes a whole payload, rejecting trailing bytes.
    public static func decode(wire bytes: UnsafeRawBufferPointer) throws(WireDecodingError) -> Self {
        var reader = WireReader(bytes)
        let value = try Self(from: &reader)
        try reader.finish()
        return value
    }

    /// Decodes a whole payload held in an array.
    public static func decode(wire bytes: [UInt8]) throws(WireDecodingError) -> Self {
        var result: Result<Self, WireDecodingError>!
        bytes.withUnsafeBytes { raw in
            result = Result { () throws(WireDecodingError) -> Self in try Self.decode(wire: raw) }
        }
        return try result.get()
    }
}

/// A closed enumeration that travels as one byte on the wire and as its case name in JSON.
public protocol WireEnum: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == UInt8 {}

extension WireEnum {
    /// The case name, as JSON carries it.
    public var name: String { "\(self)" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let value = Self.allCases.first(where: { $0.name == name }) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "unknown value '\(name)'; valid: \(Self.allCases.map(\.name).joined(separator: ", "))"
            )
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.name)
    }
}
