public import NavCore

/// The header frame of every bus message (schema v1, 21 bytes plus the stage id).
public struct EnvelopeHeader: Equatable, Sendable, Codable {
    /// Schema version of header and payload; this build speaks 1.
    public var schemaVersion: UInt8
    /// Payload type id (see ``BusMessage/Kind``); 0 is a heartbeat with an empty payload.
    public var typeID: UInt8
    /// Per sender and per topic, starting at 0 and rising by one per message [count].
    public var sequence: UInt64
    /// When the sender handed it to the bus [nanoseconds since 1970-01-01T00:00:00Z, sender's wall clock].
    public var sendTimeNanoseconds: Int64
    /// The sending stage's name in its pipeline config (at most 255 bytes of UTF-8).
    public var stage: String

    /// The fixed part's size [bytes]: version, type, reserved u16, sequence, send time, stage length.
    public static let fixedSize = 1 + 1 + 2 + 8 + 8 + 1

    /// Type id of heartbeats.
    public static let heartbeatTypeID: UInt8 = 0
    /// Topic of heartbeats. Subscribers always receive it, whatever else they filter.
    public static let heartbeatTopic = "_hb"

    /// Creates a header.
    public init(
        schemaVersion: UInt8 = BusMessage.schemaVersion, typeID: UInt8, sequence: UInt64,
        sendTimeNanoseconds: Int64, stage: String
    ) {
        self.schemaVersion = schemaVersion
        self.typeID = typeID
        self.sequence = sequence
        self.sendTimeNanoseconds = sendTimeNanoseconds
        self.stage = stage
    }

    /// The header's bytes.
    public func encoded() -> [UInt8] {
        var writer = WireWriter(capacity: Self.fixedSize + 16)
        self.encode(to: &writer)
        return writer.bytes
    }

    /// Appends the header's bytes.
    public func encode(to writer: inout WireWriter) {
        writer.write(self.schemaVersion)
        writer.write(self.typeID)
        writer.write(UInt16(0))
        writer.write(self.sequence)
        writer.write(self.sendTimeNanoseconds)
        let stageBytes = self.stage.utf8.prefix(255)
        writer.write(UInt8(stageBytes.count))
        writer.append(contentsOf: stageBytes)
    }
}

/// Why an incoming frame was dropped.
public enum DropReason: String, CaseIterable, Sendable, Codable {
    /// Not three frames, an unknown type id, a topic that does not match the type, or a bad field.
    case malformed
    /// A frame shorter than its layout needs.
    case truncated
    /// A frame larger than the configured maximum.
    case oversized
    /// A schema version this build does not speak.
    case unknownVersion
    /// A message from a stage other than the one expected on that input.
    case unexpectedSender
}

/// A frame that could not be decoded, with enough context to log.
public struct DecodeFailure: Error, Sendable {
    /// The counter it goes to.
    public let reason: DropReason
    /// What exactly was wrong.
    public let detail: String
}

/// The codec between messages and the three frames on the wire: topic, header, payload.
public enum Envelope {
    /// Default largest frame accepted [bytes]. A long route fits many times over.
    public static let defaultMaximumFrameBytes = 4 << 20

    /// Parses a header frame. A stage id equal to `knownStage`'s bytes (the sender seen last on that socket) is that
    /// string, neither validated nor allocated again.
    public static func decodeHeader(
        _ bytes: UnsafeRawBufferPointer, knownStage: String? = nil
    ) throws(DecodeFailure) -> EnvelopeHeader {
        guard bytes.count >= 1 else { throw DecodeFailure(reason: .truncated, detail: "empty header frame") }
        let version = bytes[0]
        guard version == BusMessage.schemaVersion else {
            throw DecodeFailure(
                reason: .unknownVersion,
                detail: "schema version \(version), this build speaks \(BusMessage.schemaVersion)")
        }
        guard bytes.count >= EnvelopeHeader.fixedSize else {
            throw DecodeFailure(
                reason: .truncated, detail: "header of \(bytes.count) bytes, need \(EnvelopeHeader.fixedSize)")
        }
        var reader = WireReader(bytes)
        do {
            _ = try reader.readUInt8()
            let typeID = try reader.readUInt8()
            _ = try reader.readUInt16()
            let sequence = try reader.readUInt64()
            let sendTime = try reader.readInt64()
            let stageLength = Int(try reader.readUInt8())
            guard reader.remaining == stageLength else {
                if reader.remaining < stageLength {
                    throw DecodeFailure(
                        reason: .truncated, detail: "stage id needs \(stageLength) bytes, \(reader.remaining) left")
                }
                throw DecodeFailure(
                    reason: .malformed, detail: "\(reader.remaining - stageLength) trailing header bytes")
            }
            let stageBytes = UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - stageLength)...])
            let stage: String
            if let knownStage, knownStage.utf8.elementsEqual(stageBytes) {
                stage = knownStage
            } else if let valid = String(validating: stageBytes, as: UTF8.self) {
                stage = valid
            } else {
                throw DecodeFailure(reason: .malformed, detail: "stage id is not UTF-8")
            }
            return EnvelopeHeader(
                schemaVersion: version, typeID: typeID, sequence: sequence,
                sendTimeNanoseconds: sendTime, stage: stage)
        } catch let failure as DecodeFailure {
            throw failure
        } catch {
            throw DecodeFailure(reason: .truncated, detail: "\(error)")
        }
    }

    /// Decodes a payload given its already-parsed header and topic.
    public static func decodePayload(
        topic: String, header: EnvelopeHeader,
        payload: UnsafeRawBufferPointer
    ) throws(DecodeFailure) -> BusMessage {
        guard let kind = BusMessage.Kind(rawValue: header.typeID) else {
            throw DecodeFailure(reason: .malformed, detail: "unknown type id \(header.typeID)")
        }
        guard kind.topic == topic else {
            throw DecodeFailure(reason: .malformed, detail: "type \(kind) sent on topic '\(topic)'")
        }
        do {
            return try BusMessage.decode(kind: kind, payload: payload)
        } catch {
            switch error {
            case .truncated: throw DecodeFailure(reason: .truncated, detail: "\(kind) payload \(error)")
            default: throw DecodeFailure(reason: .malformed, detail: "\(kind) payload \(error)")
            }
        }
    }

    /// The three frames for a message, as byte arrays (for tests and for senders that are not a ``BusPublisher``).
    public static func frames(
        for message: BusMessage, sequence: UInt64, stage: String,
        sendTimeNanoseconds: Int64
    ) -> [[UInt8]] {
        let header = EnvelopeHeader(
            typeID: message.kind.rawValue, sequence: sequence,
            sendTimeNanoseconds: sendTimeNanoseconds, stage: stage)
        var payload = WireWriter()
        message.encodePayload(to: &payload)
        return [Array(message.kind.topic.utf8), header.encoded(), payload.bytes]
    }
}
