/// Reads the protocol-buffer wire format field by field: varints, zigzag, length-delimited fields and packed
/// repeated numbers. Enough for OpenStreetMap's PBF schema (`fileformat.proto`, `osmformat.proto`), whose
/// messages are read in place, without generated types. Malformed input is an error, never a trap.
struct ProtobufReader {
    /// What went wrong, in a few words.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// A field's wire type.
    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, startGroup = 3, endGroup = 4, fixed32 = 5
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var offset: Int
    private let end: Int

    /// Reads `bytes[range]`.
    init(_ bytes: UnsafeBufferPointer<UInt8>, range: Range<Int>? = nil) {
        self.bytes = bytes
        self.offset = range?.lowerBound ?? 0
        self.end = range?.upperBound ?? bytes.count
    }

    var isAtEnd: Bool { self.offset >= self.end }

    mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard self.offset < self.end else { throw Malformed(description: "a number runs past its message") }
            let byte = self.bytes[self.offset]
            self.offset += 1
            guard shift < 64 else { throw Malformed(description: "a number longer than 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// The next field's number and wire type, or nil at the end.
    mutating func field() throws -> (number: Int, type: WireType)? {
        guard !self.isAtEnd else { return nil }
        let key = try self.varint()
        guard let type = WireType(rawValue: key & 7) else {
            throw Malformed(description: "wire type \(key & 7)")
        }
        guard key >> 3 > 0, key >> 3 < 1 << 29 else { throw Malformed(description: "field number \(key >> 3)") }
        return (Int(key >> 3), type)
    }

    /// A length-delimited field's byte range within the buffer.
    mutating func lengthDelimited() throws -> Range<Int> {
        let length = try self.varint()
        guard length <= UInt64(self.end - self.offset) else {
            throw Malformed(description: "a field of \(length) bytes runs past its message")
        }
        let range = self.offset..<(self.offset + Int(length))
        self.offset += Int(length)
        return range
    }

    /// Skips a field of this type.
    mutating func skip(_ type: WireType) throws {
        switch type {
        case .varint: _ = try self.varint()
        case .fixed64: try self.advance(8)
        case .fixed32: try self.advance(4)
        case .lengthDelimited: _ = try self.lengthDelimited()
        case .startGroup, .endGroup: throw Malformed(description: "groups are not used by this format")
        }
    }

    private mutating func advance(_ count: Int) throws {
        guard self.end - self.offset >= count else { throw Malformed(description: "a field runs past its message") }
        self.offset += count
    }

    /// The bytes of `range` as a string (invalid UTF-8 repaired).
    func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: self.bytes[range]), as: UTF8.self)
    }

    /// A packed repeated varint field (or a single varint, which the format also allows), appended to `values`.
    mutating func packedVarints(_ type: WireType, into values: inout [UInt64]) throws {
        if type == .varint {
            values.append(try self.varint())
            return
        }
        guard type == .lengthDelimited else { throw Malformed(description: "a packed field of wire type \(type)") }
        let range = try self.lengthDelimited()
        var inner = ProtobufReader(self.bytes, range: range)
        while !inner.isAtEnd { values.append(try inner.varint()) }
    }

    static func zigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}
