/// A message as a sink sees it: the message with where and when it came from.
public struct RecordedMessage: Codable, Equatable, Sendable {
    /// When it arrived [seconds since 1970-01-01T00:00:00Z, receiver's wall clock].
    public var receiveTimeSeconds: Double
    /// When it arrived [seconds, the receiver's monotonic clock, which never jumps]; nil where not kept.
    public var receiveMonotonicSeconds: Double?
    /// When its sender handed it to the bus [seconds since 1970-01-01T00:00:00Z, sender's wall clock]; nil where not kept.
    public var sendTimeSeconds: Double?
    /// The sending stage's name.
    public var stage: String
    /// The sender's sequence number on this topic [count].
    public var sequence: UInt64
    /// The message.
    public var message: BusMessage
    /// The header and payload frames as they came off the bus; nil where not kept (JSON Lines keeps none).
    public var frames: Frames?

    /// A message's header and payload frames, byte for byte (`docs/PROTOCOL.md`).
    public struct Frames: Equatable, Sendable {
        public var header: [UInt8]
        public var payload: [UInt8]

        /// Creates frames.
        public init(header: [UInt8], payload: [UInt8]) {
            self.header = header
            self.payload = payload
        }
    }

    /// The recording's own clock for this message: its monotonic receive time where kept (it never jumps), else its
    /// wall-clock one [seconds]. Replays pace by it.
    public var recordedClockSeconds: Double { self.receiveMonotonicSeconds ?? self.receiveTimeSeconds }

    private enum CodingKeys: String, CodingKey {
        case receiveTimeSeconds, receiveMonotonicSeconds, sendTimeSeconds, stage, sequence, message
    }

    /// Creates a record.
    public init(
        receiveTimeSeconds: Double, receiveMonotonicSeconds: Double? = nil, sendTimeSeconds: Double? = nil,
        stage: String, sequence: UInt64, message: BusMessage, frames: Frames? = nil
    ) {
        self.receiveTimeSeconds = receiveTimeSeconds
        self.receiveMonotonicSeconds = receiveMonotonicSeconds
        self.sendTimeSeconds = sendTimeSeconds
        self.stage = stage
        self.sequence = sequence
        self.message = message
        self.frames = frames
    }
}

/// Somewhere messages go to be kept: a recording file, a database.
public protocol MessageSink: Sendable {
    /// The id that configs use to choose this plugin, for example "jsonl".
    static var id: String { get }
    /// Keeps one message.
    func record(_ message: RecordedMessage) async throws
    /// Flushes and closes; called once at the end.
    func finish() async throws
}
