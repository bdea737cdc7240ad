/// A source of bus messages: a simulated walker, a log replay, a live receiver.
///
/// The stage calls ``run(emit:)`` once; the plugin emits what it produces and returns at the end of
/// its input (a finite log), or runs until its task is cancelled (a live source).
public protocol MessageSource: Sendable {
    /// The id that configs use to choose this plugin, for example "sim".
    static var id: String { get }
    /// Produces messages until the input ends or the task is cancelled.
    func run(emit: @Sendable (BusMessage) async throws -> Void) async throws
    /// True for live inputs (a receiver, a serial device), whose silence the stage reports as stale.
    var isLive: Bool { get }
    /// What the source has counted (lines read, records skipped), for the stage's status reports.
    func statusCounters() async -> [StatusCounter]
    /// How long between two messages of each kind, at the source's pace [seconds]; empty where it is not known
    /// before running (a log played as fast as possible). `hapticnav config check` holds stale limits against it.
    var nominalPeriods: [BusMessage.Kind: Double] { get }
    /// What is wrong with the input now, for the stage's status ("compass disturbed: …", "phone unreachable: …");
    /// nil while all is well.
    func condition() async -> SourceCondition?
}

/// A live source's own word on its input, carried into the stage's status.
public struct SourceCondition: Sendable, Equatable {
    /// How the stage should report itself: `.degraded` (data flows, with a problem) or `.stale` (no data).
    public var health: StageHealth
    /// One line: what is wrong.
    public var message: String

    /// Creates a condition.
    public init(health: StageHealth, message: String) {
        self.health = health
        self.message = message
    }
}

extension MessageSource {
    public func condition() async -> SourceCondition? { nil }
    public var isLive: Bool { false }
    public var nominalPeriods: [BusMessage.Kind: Double] { [:] }
    public func statusCounters() async -> [StatusCounter] { [] }
}

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

/// A filter that turns raw fixes into smoothed ones (the smoother stage's swappable part).
public protocol SmoothingFilter: Sendable {
    /// The id that configs use to choose this plugin, for example "kalman".
    static var id: String { get }
    /// Takes one fix; returns the estimate, or why the fix was not used.
    mutating func update(with fix: LocationFix) -> Result<SmoothedFix, FixRejection>
    /// Forgets the track: the next fix starts a new one (its stream's time line started again).
    mutating func reset()
    /// What the filter has counted, for the stage's status reports.
    var statusCounters: [StatusCounter] { get }
}

extension KalmanSmoother: SmoothingFilter {
    public static let id = "kalman"

    public var statusCounters: [StatusCounter] {
        [
            StatusCounter(name: "accepted", value: UInt64(self.counters.accepted)),
            StatusCounter(name: "resets", value: UInt64(self.counters.resets)),
        ]
            + FixRejection.allCases.map {
                StatusCounter(name: "rejected.\($0.rawValue)", value: UInt64(self.counters.rejected[$0, default: 0]))
            }
    }
}

/// Something that renders haptic cues: a band, a speaker, a console (the haptic sink's swappable part).
///
/// No requirement has a default: devices are actors, and a default in a protocol extension would win over an
/// actor's own method when called on the concrete type from outside it.
public protocol OutputDevice: Sendable {
    /// The id that configs use to choose this plugin, for example "band".
    static var id: String { get }
    /// A short name for logs and status, for example "band".
    var name: String { get }
    /// Keeps the device going (connects, reconnects, reads acknowledgements) until cancelled.
    func run() async throws
    /// True when the device can render now: connected and acknowledging.
    func isAvailable() async -> Bool
    /// Renders a cue; a silent cue stops whatever plays.
    func render(_ cue: HapticCue) async throws
    /// Stops every motor and sound at once.
    func stopAll() async throws
    /// Says or shows a short prompt ("Recalculating route").
    func announce(_ text: String) async throws
    /// What the device did, in one line, for the status and the demo's summary.
    func summary() async -> String
    /// Sees the route, progress and position messages the sink receives (for devices that place things in
    /// space, like ``ar``); most devices ignore them.
    func observe(_ message: BusMessage) async
}

/// What the haptic sink reads from the bus.
public enum SinkInput: Sendable {
    /// A raw compass heading from the source.
    case heading(HeadingSample)
    /// The phone's tilt.
    case attitude(Attitude)
    /// Where to steer, from the route controller.
    case target(GuidanceTarget)
    /// Progress along the route (for spoken events: rerouting, arrived).
    case progress(RouteProgress)
    /// A publisher went silent (the transport noticed its heartbeats stop).
    case publisherLost(stage: String)
    /// The route, or the walker's smoothed position: passed on to devices that place waypoints in space.
    case context(BusMessage)
}
