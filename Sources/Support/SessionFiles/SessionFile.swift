#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
import SystemIO

/// A HapticNav session in MCAP (`docs/RECORDING.md`): one channel per sending stage and topic (`/source/fix`), each
/// message the bus frames as they came with the receiver's clocks: log time the wall-clock receive time, publish time
/// the sender's send time, and the data `[u64 monotonic receive ns][u16 header length][header frame][payload frame]`.
public struct SessionWriter: Sendable {
    /// The schema every channel names: HapticNav's wire format, version 1.
    public static let schemaName = "hapticnav.bus.v1"
    /// The message encoding of every channel.
    public static let messageEncoding = "hapticnav-bus-v1"

    private var mcap: MCAPWriter
    private let schema: UInt16
    private var channels: [ChannelKey: UInt16] = [:]

    private struct ChannelKey: Hashable, Sendable {
        var stage: String
        var topic: String
    }

    /// Starts a session file, with the session's own description as its first metadata record.
    public init(library: String, metadata: [(String, String)]) {
        self.mcap = MCAPWriter(profile: "hapticnav", library: library)
        self.schema = self.mcap.addSchema(
            name: Self.schemaName, encoding: "hapticnav-wire",
            data: Array(
                "HapticNav bus schema v1: see docs/PROTOCOL.md (frames) and docs/RECORDING.md (this file).".utf8))
        self.mcap.addMetadata(name: "hapticnav.session", values: metadata)
    }

    /// The largest chunk before it is written by itself [bytes].
    public var chunkBytes: Int {
        get { self.mcap.chunkBytes }
        set { self.mcap.chunkBytes = newValue }
    }

    /// Adds one received message.
    public mutating func add(_ record: RecordedMessage) {
        let topic = record.message.kind.topic
        let key = ChannelKey(stage: record.stage, topic: topic)
        let channel: UInt16
        if let known = self.channels[key] {
            channel = known
        } else {
            channel = self.mcap.addChannel(
                topic: "/\(record.stage)/\(topic)", messageEncoding: Self.messageEncoding, schemaID: self.schema,
                metadata: [("stage", record.stage), ("topic", topic)])
            self.channels[key] = channel
        }
        let frames = record.frames ?? Self.frames(of: record.message)
        var data = [UInt8]()
        data.reserveCapacity(10 + frames.header.count + frames.payload.count)
        let monotonic = UInt64(max(0, (record.receiveMonotonicSeconds ?? 0) * 1e9).rounded())
        withUnsafeBytes(of: monotonic.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(clamping: frames.header.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: frames.header.prefix(Int(UInt16.max)))
        data.append(contentsOf: frames.payload)
        self.mcap.addMessage(
            channel: channel, sequence: UInt32(truncatingIfNeeded: record.sequence),
            logTime: MCAP.nanoseconds(record.receiveTimeSeconds),
            publishTime: MCAP.nanoseconds(record.sendTimeSeconds ?? record.receiveTimeSeconds), data: data)
    }

    /// Adds a metadata record (the recorder's counts at the end, for example).
    public mutating func addMetadata(name: String, values: [(String, String)]) {
        self.mcap.addMetadata(name: name, values: values)
    }

    /// Writes the open chunk, so that what was added so far survives a crash once written.
    public mutating func closeChunk() { self.mcap.closeChunk() }

    /// Closes the file (summary and footer).
    public mutating func finish() { self.mcap.finish() }

    /// The bytes produced since the last call.
    public mutating func takeOutput() -> [UInt8] { self.mcap.takeOutput() }

    /// Bytes in the open chunk [bytes].
    public var openChunkBytes: Int { self.mcap.openChunkBytes }

    /// The file's size so far, taken or not [bytes].
    public var offset: UInt64 { self.mcap.offset }

    /// A message's payload frame, and no header (a record that did not come off the bus).
    static func frames(of message: BusMessage) -> RecordedMessage.Frames {
        var payload = WireWriter()
        message.encodePayload(to: &payload)
        return .init(header: [], payload: payload.bytes)
    }
}

/// Reads a session: a folder of MCAP parts (read in name order), one MCAP file, or a JSON Lines recording.
public enum SessionReader {
    /// What reading found besides the records.
    public struct Summary: Sendable {
        /// The files read, in order.
        public var files: [String] = []
        /// Records given to the caller [count].
        public var records = 0
        /// Records that could not be read (a payload that does not decode, a JSON line that is not a record) [count].
        public var badRecords = 0
        /// The first bad record's place, for the message.
        public var firstBad: String?
        /// Files that end without being closed (a recorder killed), with the byte their last complete record ends at.
        public var cutFiles: [(file: String, atByte: Int)] = []
        /// Metadata records, by name, in order.
        public var metadata: [(name: String, values: [String: String])] = []

        /// An empty summary.
        public init() {}
    }

    /// Thrown by a caller's body to stop reading: ``read(_:_:)`` returns what it found so far.
    public struct Stop: Error {
        /// Creates the signal.
        public init() {}
    }

    /// Why a session cannot be read.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The files a session path stands for: the MCAP parts of a folder, or the file itself.
    public static func files(of path: String) throws(Failure) -> [String] {
        var isFolder = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw Failure(description: "\(path): no such session (a folder of .mcap parts, an .mcap or a .jsonl file)")
        }
        guard isFolder else { return [path] }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [])
            .filter { $0.hasSuffix(".mcap") }.sorted()
        guard !names.isEmpty else { throw Failure(description: "\(path): a folder with no .mcap parts in it") }
        return names.map { "\(path)/\($0)" }
    }

    /// Reads every record of the session in file order (until `body` throws ``Stop``).
    public static func read(_ path: String, _ body: (RecordedMessage) throws -> Void) throws -> Summary {
        var summary = Summary()
        do {
            try self.read(path, into: &summary, body)
        } catch is Stop {}
        return summary
    }

    private static func read(
        _ path: String, into summary: inout Summary, _ body: (RecordedMessage) throws -> Void
    ) throws {
        for file in try self.files(of: path) {
            summary.files.append(file)
            let bytes: [UInt8]
            do {
                bytes = try InputFile.contents(of: file)
            } catch {
                throw Failure(description: "\(file): cannot be read (\(error.reason))")
            }
            if bytes.starts(with: MCAP.magic) || file.hasSuffix(".mcap") {
                try self.readMCAP(bytes, file: file, into: &summary, body)
            } else {
                try self.readJSONLines(bytes, file: file, into: &summary, body)
            }
        }
    }

    /// Reads a whole session into memory.
    public static func records(_ path: String) throws -> (records: [RecordedMessage], summary: Summary) {
        var records: [RecordedMessage] = []
        let summary = try self.read(path) { records.append($0) }
        return (records, summary)
    }

    private static func readMCAP(
        _ bytes: [UInt8], file: String, into summary: inout Summary, _ body: (RecordedMessage) throws -> Void
    ) throws {
        if bytes.count < MCAP.magic.count, MCAP.magic.starts(with: bytes) {
            // Killed before its header was written.
            summary.cutFiles.append((file, 0))
            return
        }
        let reader: MCAPReader
        do {
            reader = try MCAPReader(bytes: bytes)
        } catch {
            throw Failure(description: "\(file): \(error)")
        }
        var channels: [UInt16: (stage: String, kind: BusMessage.Kind)] = [:]
        var index = 0
        func bad(_ reason: String) {
            summary.badRecords += 1
            if summary.firstBad == nil { summary.firstBad = "\(file): message \(index): \(reason)" }
        }
        let ending: MCAPReader.Ending
        do {
            ending = try reader.forEach { record in
                switch record {
                case let .channel(channel) where channel.messageEncoding == SessionWriter.messageEncoding:
                    if let stage = channel.metadata["stage"],
                        let kind = channel.metadata["topic"].flatMap(BusMessage.Kind.init(topic:))
                    {
                        channels[channel.id] = (stage, kind)
                    }
                case let .message(message):
                    index += 1
                    guard let (stage, kind) = channels[message.channel] else { return bad("on an unknown channel") }
                    guard message.data.count >= 10 else { return bad("shorter than its clock and header length") }
                    let start = message.data.lowerBound
                    var monotonic: UInt64 = 0
                    for offset in 0..<8 { monotonic |= UInt64(bytes[start + offset]) << (8 * offset) }
                    let headerLength = Int(bytes[start + 8]) | Int(bytes[start + 9]) << 8
                    guard message.data.count >= 10 + headerLength else { return bad("shorter than its header") }
                    let header = Array(bytes[(start + 10)..<(start + 10 + headerLength)])
                    let payload = Array(bytes[(start + 10 + headerLength)..<message.data.upperBound])
                    let decoded = payload.withUnsafeBytes { raw in
                        Result { () throws(WireDecodingError) in try BusMessage.decode(kind: kind, payload: raw) }
                    }
                    guard case let .success(busMessage) = decoded else {
                        return bad("its \(kind.topic) payload does not decode")
                    }
                    summary.records += 1
                    try body(
                        RecordedMessage(
                            receiveTimeSeconds: Double(message.logTime) / 1e9,
                            receiveMonotonicSeconds: Double(monotonic) / 1e9,
                            sendTimeSeconds: Double(message.publishTime) / 1e9, stage: stage,
                            sequence: UInt64(message.sequence), message: busMessage,
                            frames: .init(header: header, payload: payload)))
                case let .metadata(name, values):
                    summary.metadata.append((name, values))
                default:
                    break
                }
            }
        } catch let failure as MCAPReader.Failure {
            throw Failure(description: "\(file): \(failure)")
        }
        if case let .cut(atByte) = ending { summary.cutFiles.append((file, atByte)) }
    }

    private static func readJSONLines(
        _ bytes: [UInt8], file: String, into summary: inout Summary, _ body: (RecordedMessage) throws -> Void
    ) throws {
        let decoder = JSONDecoder()
        for (number, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
        where !line.isEmpty {
            guard let record = try? decoder.decode(RecordedMessage.self, from: Data(line)) else {
                summary.badRecords += 1
                if summary.firstBad == nil { summary.firstBad = "\(file): line \(number + 1): not a recorded message" }
                continue
            }
            summary.records += 1
            try body(record)
        }
    }
}
