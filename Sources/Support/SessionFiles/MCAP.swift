import NavCore
import CZlib

// MCAP (https://mcap.dev/spec), the container of HapticNav's recordings and of `export --format mcap`: magic, header,
// a data section of schemas, channels and chunks of messages (each chunk followed by its message indexes), then on a
// clean close the data end, a summary (schemas, channels, chunk indexes, statistics, metadata indexes), the summary
// offsets, the footer and the magic again. Chunks are not compressed: a chunk is written whole or not at all, so a file
// cut short by a crash reads up to its last complete chunk.

/// The bytes of an MCAP file, produced record by record; the caller writes ``takeOutput()`` wherever it likes.
public struct MCAPWriter: Sendable {
    /// A channel's number in this file.
    public typealias ChannelID = UInt16

    private var output: [UInt8] = []
    /// Bytes produced so far, taken or not [bytes].
    public private(set) var offset: UInt64 = 0
    private var schemas: [[UInt8]] = []
    private var channels: [[UInt8]] = []
    private var channelCount: UInt16 = 0
    private var chunk = ChunkBuilder()
    private var chunkIndexes: [[UInt8]] = []
    private var metadataIndexes: [[UInt8]] = []
    private var messageCount: UInt64 = 0
    private var channelMessageCounts: [UInt16: UInt64] = [:]
    private var firstTime: UInt64?
    private var lastTime: UInt64 = 0
    private var finished = false

    /// The largest chunk before it is closed by itself [bytes of records].
    public var chunkBytes = 256 * 1024

    /// Starts a file: the magic and the header.
    public init(profile: String, library: String) {
        self.emit(MCAP.magic)
        var header = MCAPBytes()
        header.string(profile)
        header.string(library)
        self.emit(record: MCAP.Opcode.header, header.bytes)
    }

    /// Declares a schema; returns its id (from 1).
    public mutating func addSchema(name: String, encoding: String, data: [UInt8]) -> UInt16 {
        let id = UInt16(self.schemas.count + 1)
        var record = MCAPBytes()
        record.u16(id)
        record.string(name)
        record.string(encoding)
        record.u32(UInt32(data.count))
        record.append(data)
        let bytes = MCAP.record(MCAP.Opcode.schema, record.bytes)
        self.schemas.append(bytes)
        self.emit(bytes)
        return id
    }

    /// Declares a channel; returns its id (from 0).
    public mutating func addChannel(
        topic: String, messageEncoding: String, schemaID: UInt16, metadata: [(String, String)] = []
    ) -> ChannelID {
        let id = self.channelCount
        self.channelCount += 1
        var record = MCAPBytes()
        record.u16(id)
        record.u16(schemaID)
        record.string(topic)
        record.string(messageEncoding)
        record.stringMap(metadata)
        let bytes = MCAP.record(MCAP.Opcode.channel, record.bytes)
        self.channels.append(bytes)
        self.emit(bytes)
        return id
    }

    /// Adds a message to the open chunk, closing the chunk when it is full.
    /// - Parameters:
    ///   - logTime: when it was received [nanoseconds since 1970-01-01T00:00:00Z].
    ///   - publishTime: when it was sent [nanoseconds since 1970-01-01T00:00:00Z].
    public mutating func addMessage(
        channel: ChannelID, sequence: UInt32, logTime: UInt64, publishTime: UInt64, data: [UInt8]
    ) {
        self.chunk.add(channel: channel, sequence: sequence, logTime: logTime, publishTime: publishTime, data: data)
        self.messageCount += 1
        self.channelMessageCounts[channel, default: 0] += 1
        self.firstTime = min(self.firstTime ?? logTime, logTime)
        self.lastTime = max(self.lastTime, logTime)
        if self.chunk.records.count >= self.chunkBytes { self.closeChunk() }
    }

    /// Adds a metadata record (closing the open chunk first, so that the order in the file is the order given).
    public mutating func addMetadata(name: String, values: [(String, String)]) {
        self.closeChunk()
        var record = MCAPBytes()
        record.string(name)
        record.stringMap(values)
        let start = self.offset
        let bytes = MCAP.record(MCAP.Opcode.metadata, record.bytes)
        self.emit(bytes)
        var index = MCAPBytes()
        index.u64(start)
        index.u64(UInt64(bytes.count))
        index.string(name)
        self.metadataIndexes.append(MCAP.record(MCAP.Opcode.metadataIndex, index.bytes))
    }

    /// Writes the open chunk and its message indexes; a file cut after this reads to here.
    public mutating func closeChunk() {
        guard !self.chunk.isEmpty else { return }
        let chunkStart = self.offset
        var record = MCAPBytes()
        record.u64(self.chunk.startTime)
        record.u64(self.chunk.endTime)
        record.u64(UInt64(self.chunk.records.count))
        record.u32(self.chunk.records.withUnsafeBufferPointer { MCAP.crc32($0) })
        record.string("")
        record.u64(UInt64(self.chunk.records.count))
        record.append(self.chunk.records)
        let chunkBytes = MCAP.record(MCAP.Opcode.chunk, record.bytes)
        self.emit(chunkBytes)
        var indexOffsets: [(UInt16, UInt64)] = []
        let indexStart = self.offset
        for (channel, entries) in self.chunk.indexes.sorted(by: { $0.key < $1.key }) {
            indexOffsets.append((channel, self.offset))
            var index = MCAPBytes()
            index.u16(channel)
            index.u32(UInt32(entries.count * 16))
            for (time, position) in entries {
                index.u64(time)
                index.u64(position)
            }
            self.emit(record: MCAP.Opcode.messageIndex, index.bytes)
        }
        var chunkIndex = MCAPBytes()
        chunkIndex.u64(self.chunk.startTime)
        chunkIndex.u64(self.chunk.endTime)
        chunkIndex.u64(chunkStart)
        chunkIndex.u64(UInt64(chunkBytes.count))
        chunkIndex.u32(UInt32(indexOffsets.count * 10))
        for (channel, position) in indexOffsets {
            chunkIndex.u16(channel)
            chunkIndex.u64(position)
        }
        chunkIndex.u64(self.offset - indexStart)
        chunkIndex.string("")
        chunkIndex.u64(UInt64(self.chunk.records.count))
        chunkIndex.u64(UInt64(self.chunk.records.count))
        self.chunkIndexes.append(MCAP.record(MCAP.Opcode.chunkIndex, chunkIndex.bytes))
        self.chunk = ChunkBuilder()
    }

    /// Closes the file: the last chunk, the data end, the summary, its offsets, the footer and the magic.
    public mutating func finish() {
        guard !self.finished else { return }
        self.finished = true
        self.closeChunk()
        var dataEnd = MCAPBytes()
        dataEnd.u32(0)
        self.emit(record: MCAP.Opcode.dataEnd, dataEnd.bytes)
        let summaryStart = self.offset
        var groups: [(UInt8, UInt64, UInt64)] = []
        func group(_ opcode: UInt8, _ records: [[UInt8]]) {
            guard !records.isEmpty else { return }
            let start = self.offset
            records.forEach { self.emit($0) }
            groups.append((opcode, start, self.offset - start))
        }
        group(MCAP.Opcode.schema, self.schemas)
        group(MCAP.Opcode.channel, self.channels)
        group(MCAP.Opcode.chunkIndex, self.chunkIndexes)
        group(MCAP.Opcode.metadataIndex, self.metadataIndexes)
        var statistics = MCAPBytes()
        statistics.u64(self.messageCount)
        statistics.u16(UInt16(self.schemas.count))
        statistics.u32(UInt32(self.channels.count))
        statistics.u32(0)
        statistics.u32(UInt32(self.metadataIndexes.count))
        statistics.u32(UInt32(self.chunkIndexes.count))
        statistics.u64(self.firstTime ?? 0)
        statistics.u64(self.lastTime)
        statistics.u32(UInt32(self.channelMessageCounts.count * 10))
        for (channel, count) in self.channelMessageCounts.sorted(by: { $0.key < $1.key }) {
            statistics.u16(channel)
            statistics.u64(count)
        }
        group(MCAP.Opcode.statistics, [MCAP.record(MCAP.Opcode.statistics, statistics.bytes)])
        let offsetsStart = self.offset
        for (opcode, start, length) in groups {
            var summaryOffset = MCAPBytes()
            summaryOffset.u8(opcode)
            summaryOffset.u64(start)
            summaryOffset.u64(length)
            self.emit(record: MCAP.Opcode.summaryOffset, summaryOffset.bytes)
        }
        var footer = MCAPBytes()
        footer.u64(summaryStart)
        footer.u64(offsetsStart)
        footer.u32(0)
        self.emit(record: MCAP.Opcode.footer, footer.bytes)
        self.emit(MCAP.magic)
    }

    /// The bytes produced since the last call.
    public mutating func takeOutput() -> [UInt8] {
        defer { self.output.removeAll(keepingCapacity: true) }
        return self.output
    }

    /// Bytes produced and not yet taken [bytes].
    public var pendingBytes: Int { self.output.count }

    /// Bytes in the open chunk [bytes].
    public var openChunkBytes: Int { self.chunk.records.count }

    private mutating func emit(_ bytes: [UInt8]) {
        self.output.append(contentsOf: bytes)
        self.offset += UInt64(bytes.count)
    }

    private mutating func emit(record opcode: UInt8, _ content: [UInt8]) {
        self.emit(MCAP.record(opcode, content))
    }

    private struct ChunkBuilder: Sendable {
        var records: [UInt8] = []
        var indexes: [UInt16: [(UInt64, UInt64)]] = [:]
        var startTime: UInt64 = .max
        var endTime: UInt64 = 0
        var isEmpty: Bool { self.records.isEmpty }

        mutating func add(channel: UInt16, sequence: UInt32, logTime: UInt64, publishTime: UInt64, data: [UInt8]) {
            self.indexes[channel, default: []].append((logTime, UInt64(self.records.count)))
            self.startTime = min(self.startTime, logTime)
            self.endTime = max(self.endTime, logTime)
            var message = MCAPBytes()
            message.u8(MCAP.Opcode.message)
            message.u64(UInt64(2 + 4 + 8 + 8 + data.count))
            message.u16(channel)
            message.u32(sequence)
            message.u64(logTime)
            message.u64(publishTime)
            self.records.append(contentsOf: message.bytes)
            self.records.append(contentsOf: data)
        }
    }
}

/// Reads an MCAP file's records in order, going into chunks; a file cut short ends at its last complete record.
public struct MCAPReader: Sendable {
    /// A schema record.
    public struct Schema: Sendable, Equatable {
        public var id: UInt16
        public var name: String
        public var encoding: String
        public var data: [UInt8]
    }

    /// A channel record.
    public struct Channel: Sendable, Equatable {
        public var id: UInt16
        public var schemaID: UInt16
        public var topic: String
        public var messageEncoding: String
        public var metadata: [String: String]
    }

    /// A message record; `data` is a range of the file's bytes.
    public struct Message: Sendable {
        public var channel: UInt16
        public var sequence: UInt32
        /// [nanoseconds since 1970-01-01T00:00:00Z]
        public var logTime: UInt64
        /// [nanoseconds since 1970-01-01T00:00:00Z]
        public var publishTime: UInt64
        public var data: Range<Int>
    }

    /// One record as the reader gives it.
    public enum Record: Sendable {
        case schema(Schema)
        case channel(Channel)
        case message(Message)
        case metadata(name: String, values: [String: String])
    }

    /// How the file ended.
    public enum Ending: Sendable, Equatable {
        /// With its data end record (a clean close).
        case closed
        /// Without it, after the last complete record at this offset [bytes]: a recorder stopped before it closed.
        case cut(atByte: Int)
    }

    /// Why a file is not MCAP.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The file's bytes.
    public let bytes: [UInt8]

    /// Checks the magic and header.
    public init(bytes: [UInt8]) throws(Failure) {
        guard bytes.count >= 8, Array(bytes[0..<8]) == MCAP.magic else {
            throw Failure(description: "not an MCAP file (no MCAP magic at its start)")
        }
        self.bytes = bytes
    }

    /// Calls `body` with each record in file order (chunks opened, indexes and summary skipped); returns the ending.
    @discardableResult
    public func forEach(_ body: (Record) throws -> Void) throws -> Ending {
        try self.bytes.withUnsafeBufferPointer { file throws -> Ending in
            var position = 8
            while true {
                guard let (opcode, content) = Self.record(in: file, at: position, end: file.count) else {
                    return .cut(atByte: position)
                }
                position = content.upperBound
                switch opcode {
                case MCAP.Opcode.dataEnd: return .closed
                case MCAP.Opcode.chunk:
                    var cursor = MCAPCursor(file, content)
                    _ = cursor.u64()
                    _ = cursor.u64()
                    _ = cursor.u64()
                    _ = cursor.u32()
                    let compression = cursor.string()
                    guard let length = cursor.u64(), let compression, length <= UInt64(cursor.remaining) else {
                        return .cut(atByte: content.lowerBound - 9)
                    }
                    guard compression.isEmpty else {
                        throw Failure(
                            description: "a chunk compressed with '\(compression)', which this reader does not read")
                    }
                    var inner = cursor.position
                    let innerEnd = inner + Int(length)
                    while inner < innerEnd {
                        guard let (innerOpcode, innerContent) = Self.record(in: file, at: inner, end: innerEnd) else {
                            break
                        }
                        inner = innerContent.upperBound
                        if let record = Self.decode(innerOpcode, file, innerContent) { try body(record) }
                    }
                default:
                    if let record = Self.decode(opcode, file, content) { try body(record) }
                }
            }
        }
    }

    private static func record(in file: UnsafeBufferPointer<UInt8>, at position: Int, end: Int) -> (UInt8, Range<Int>)?
    {
        guard end - position >= 9 else { return nil }
        var cursor = MCAPCursor(file, (position + 1)..<end)
        guard let length = cursor.u64(), length <= UInt64(end - position - 9) else { return nil }
        return (file[position], (position + 9)..<(position + 9 + Int(length)))
    }

    private static func decode(_ opcode: UInt8, _ file: UnsafeBufferPointer<UInt8>, _ content: Range<Int>) -> Record? {
        var cursor = MCAPCursor(file, content)
        switch opcode {
        case MCAP.Opcode.schema:
            guard let id = cursor.u16(), let name = cursor.string(), let encoding = cursor.string(),
                let data = cursor.bytes32()
            else { return nil }
            return .schema(Schema(id: id, name: name, encoding: encoding, data: Array(file[data])))
        case MCAP.Opcode.channel:
            guard let id = cursor.u16(), let schema = cursor.u16(), let topic = cursor.string(),
                let encoding = cursor.string(), let metadata = cursor.stringMap()
            else { return nil }
            return .channel(
                Channel(id: id, schemaID: schema, topic: topic, messageEncoding: encoding, metadata: metadata))
        case MCAP.Opcode.message:
            guard let channel = cursor.u16(), let sequence = cursor.u32(), let logTime = cursor.u64(),
                let publishTime = cursor.u64()
            else { return nil }
            return .message(
                Message(
                    channel: channel, sequence: sequence, logTime: logTime, publishTime: publishTime,
                    data: cursor.position..<content.upperBound))
        case MCAP.Opcode.metadata:
            guard let name = cursor.string(), let values = cursor.stringMap() else { return nil }
            return .metadata(name: name, values: values)
        default:
            return nil
        }
    }
}

/// MCAP's constants and record framing.
public enum MCAP {
    /// The eight bytes at a file's start and end.
    public static let magic: [UInt8] = [0x89, 0x4D, 0x43, 0x41, 0x50, 0x30, 0x0D, 0x0A]

    /// Record opcodes.
    public enum Opcode {
        public static let header: UInt8 = 0x01
        public static let footer: UInt8 = 0x02
        public static let schema: UInt8 = 0x03
        public static let channel: UInt8 = 0x04
        public static let message: UInt8 = 0x05
        public static let chunk: UInt8 = 0x06
        public static let messageIndex: UInt8 = 0x07
        public static let chunkIndex: UInt8 = 0x08
        public static let statistics: UInt8 = 0x0B
        public static let metadata: UInt8 = 0x0C
        public static let metadataIndex: UInt8 = 0x0D
        public static let summaryOffset: UInt8 = 0x0E
        public static let dataEnd: UInt8 = 0x0F
    }

    /// A time as MCAP keeps it [nanoseconds since 1970, 0 for a time that is not a positive finite number].
    public static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return UInt64(min(seconds * 1e9, 1.8e19))
    }

    static func record(_ opcode: UInt8, _ content: [UInt8]) -> [UInt8] {
        var bytes = MCAPBytes()
        bytes.u8(opcode)
        bytes.u64(UInt64(content.count))
        bytes.append(content)
        return bytes.bytes
    }

    static func crc32(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var crc: UInt = CZlib.crc32(0, nil, 0)
        var start = 0
        while start < bytes.count {
            let length = min(bytes.count - start, Int(UInt32.max))
            crc = CZlib.crc32(crc, bytes.baseAddress! + start, UInt32(length))
            start += length
        }
        return UInt32(truncatingIfNeeded: crc)
    }
}

/// MCAP's little-endian fields on the wire format's writer: integers, u32-prefixed strings and byte strings, maps with
/// a u32 byte length.
struct MCAPBytes: Sendable {
    private var writer = WireWriter()
    var bytes: [UInt8] { self.writer.bytes }

    mutating func u8(_ value: UInt8) { self.writer.write(value) }
    mutating func u16(_ value: UInt16) { self.writer.write(value) }
    mutating func u32(_ value: UInt32) { self.writer.write(value) }
    mutating func u64(_ value: UInt64) { self.writer.write(value) }
    mutating func append(_ raw: [UInt8]) { self.writer.append(contentsOf: raw) }

    mutating func string(_ value: String) {
        let utf8 = Array(value.utf8)
        self.u32(UInt32(utf8.count))
        self.append(utf8)
    }

    mutating func stringMap(_ pairs: [(String, String)]) {
        var entries = MCAPBytes()
        for (key, value) in pairs {
            entries.string(key)
            entries.string(value)
        }
        self.u32(UInt32(entries.bytes.count))
        self.append(entries.bytes)
    }
}

/// Reads MCAP fields within a range of a file; every read is bounds-checked and gives nil past the end.
struct MCAPCursor {
    let file: UnsafeBufferPointer<UInt8>
    var position: Int
    let end: Int

    init(_ file: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        self.file = file
        self.position = range.lowerBound
        self.end = range.upperBound
    }

    var remaining: Int { self.end - self.position }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard self.remaining >= size else { return nil }
        var value: T = 0
        for index in 0..<size { value |= T(self.file[self.position + index]) << (8 * index) }
        self.position += size
        return value
    }

    mutating func u16() -> UInt16? { self.integer(UInt16.self) }
    mutating func u32() -> UInt32? { self.integer(UInt32.self) }
    mutating func u64() -> UInt64? { self.integer(UInt64.self) }

    mutating func bytes32() -> Range<Int>? {
        guard let length = self.u32(), Int(length) <= self.remaining else { return nil }
        defer { self.position += Int(length) }
        return self.position..<(self.position + Int(length))
    }

    mutating func string() -> String? {
        guard let range = self.bytes32() else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: self.file[range]), as: UTF8.self)
    }

    mutating func stringMap() -> [String: String]? {
        guard let range = self.bytes32() else { return nil }
        var inner = MCAPCursor(self.file, range)
        var map: [String: String] = [:]
        while inner.remaining > 0 {
            guard let key = inner.string(), let value = inner.string() else { return nil }
            map[key] = value
        }
        return map
    }
}
