/// The experimenter's side channel to a haptic sink (docs/PROTOCOL.md, "Experimenter control"): one request frame
/// from the sender, one reply frame from the sink. Both are the payload encoding of this schema, led by its version.
public enum ControlProtocol {
    /// The version byte that leads every request and reply.
    public static let version: UInt8 = 1
    /// A request or reply longer than this is refused unread [bytes].
    public static let maximumFrameBytes = 1024
    /// The longest mark text [bytes of UTF-8].
    public static let maximumTextBytes = 200
    /// The longest request id [bytes of UTF-8].
    public static let maximumIDBytes = 64
}

/// What a sender asks: stop, resume or mark (with a text), under an id its reply names.
public struct ControlRequest: Equatable, Sendable {
    /// What is asked.
    public var command: ControlCommand
    /// A mark's text; empty for stop and resume.
    public var text: String
    /// The sender's id for this request.
    public var requestID: String
    /// When the sender sent it [seconds since 1970-01-01T00:00:00Z, UTC; the sender's wall clock].
    public var sentSeconds: Double

    /// Creates a request.
    public init(command: ControlCommand, text: String = "", requestID: String, sentSeconds: Double) {
        self.command = command
        self.text = text
        self.requestID = requestID
        self.sentSeconds = sentSeconds
    }

    /// The request's frame.
    public var frame: [UInt8] {
        var writer = WireWriter()
        writer.write(ControlProtocol.version)
        self.encode(to: &writer)
        return writer.bytes
    }

    /// Reads a request frame: the version, then the fields; any other version, an over-long text or id, or
    /// trailing bytes are refused.
    public static func parse(_ frame: [UInt8]) throws(WireDecodingError) -> ControlRequest {
        guard frame.count <= ControlProtocol.maximumFrameBytes else {
            throw .invalidValue(field: "request", detail: "\(frame.count) bytes")
        }
        guard frame.first == ControlProtocol.version else {
            throw .invalidValue(field: "version", detail: "\(frame.first.map { "\($0)" } ?? "none")")
        }
        return try ControlRequest.decode(wire: Array(frame.dropFirst()))
    }
}

extension ControlRequest: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.command)
        writer.write(self.text)
        writer.write(self.requestID)
        writer.write(self.sentSeconds)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.command = try reader.readEnum(ControlCommand.self, "command")
        self.text = try reader.readString("text")
        self.requestID = try reader.readString("requestID")
        self.sentSeconds = try reader.readFinite("sentSeconds")
        guard self.text.utf8.count <= ControlProtocol.maximumTextBytes else {
            throw .invalidValue(field: "text", detail: "\(self.text.utf8.count) bytes")
        }
        guard self.requestID.utf8.count <= ControlProtocol.maximumIDBytes else {
            throw .invalidValue(field: "requestID", detail: "\(self.requestID.utf8.count) bytes")
        }
    }
}

/// The sink's answer to a request.
public struct ControlReply: Equatable, Sendable {
    /// The request it answers.
    public var requestID: String
    /// The sink that answers.
    public var stage: String
    /// True when the request was carried out.
    public var accepted: Bool
    /// True while the outputs are stopped, after the request.
    public var stopped: Bool
    /// What was done, or why nothing was ("stopped by experimenter; band: motors at 0").
    public var message: String

    /// Creates a reply.
    public init(requestID: String, stage: String, accepted: Bool, stopped: Bool, message: String) {
        self.requestID = requestID
        self.stage = stage
        self.accepted = accepted
        self.stopped = stopped
        self.message = message
    }

    /// The reply's frame.
    public var frame: [UInt8] {
        var writer = WireWriter()
        writer.write(ControlProtocol.version)
        self.encode(to: &writer)
        return writer.bytes
    }

    /// Reads a reply frame.
    public static func parse(_ frame: [UInt8]) throws(WireDecodingError) -> ControlReply {
        guard frame.count <= ControlProtocol.maximumFrameBytes * 4 else {
            throw .invalidValue(field: "reply", detail: "\(frame.count) bytes")
        }
        guard frame.first == ControlProtocol.version else {
            throw .invalidValue(field: "version", detail: "\(frame.first.map { "\($0)" } ?? "none")")
        }
        return try ControlReply.decode(wire: Array(frame.dropFirst()))
    }
}

extension ControlReply: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.requestID)
        writer.write(self.stage)
        writer.write(self.accepted)
        writer.write(self.stopped)
        writer.write(self.message)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.requestID = try reader.readString("requestID")
        self.stage = try reader.readString("stage")
        self.accepted = try reader.readBool("accepted")
        self.stopped = try reader.readBool("stopped")
        self.message = try reader.readString("message")
    }
}
