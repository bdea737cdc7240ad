/// Every message of schema v1, as one closed type: what the bus carries and what `monitor` prints.
public enum BusMessage: Equatable, Sendable {
    case fix(LocationFix)
    case heading(HeadingSample)
    case attitude(Attitude)
    case smoothed(SmoothedFix)
    case route(Route)
    case progress(RouteProgress)
    case target(GuidanceTarget)
    case cue(HapticCue)
    case calibrationState(CalibrationState)
    case calibrationResult(CalibrationResult)
    case status(StageStatus)
    case control(ControlEvent)
    case turn(TurnEvent)
    case step(StepCount)

    /// The schema version this build writes and reads.
    public static let schemaVersion: UInt8 = 1

    /// The kinds of message, with their wire type ids and default topics.
    public enum Kind: UInt8, CaseIterable, Sendable, Codable {
        case fix = 1
        case heading = 2
        case attitude = 3
        case smoothed = 4
        case route = 5
        case progress = 6
        case target = 7
        case cue = 8
        case calibrationState = 9
        case calibrationResult = 10
        case status = 11
        case control = 12
        case turn = 13
        case step = 14

        /// The ZeroMQ topic the message is published under. No topic is a prefix of another.
        public var topic: String {
            switch self {
            case .fix: return "fix"
            case .heading: return "heading"
            case .attitude: return "attitude"
            case .smoothed: return "smoothed"
            case .route: return "route"
            case .progress: return "progress"
            case .target: return "target"
            case .cue: return "cue"
            case .calibrationState: return "calstate"
            case .calibrationResult: return "calresult"
            case .status: return "status"
            case .control: return "control"
            case .turn: return "turn"
            case .step: return "step"
            }
        }

        /// The kind for a topic name, if any.
        public init?(topic: String) {
            guard let kind = Self.allCases.first(where: { $0.topic == topic }) else { return nil }
            self = kind
        }
    }

    /// This message's kind.
    public var kind: Kind {
        switch self {
        case .fix: return .fix
        case .heading: return .heading
        case .attitude: return .attitude
        case .smoothed: return .smoothed
        case .route: return .route
        case .progress: return .progress
        case .target: return .target
        case .cue: return .cue
        case .calibrationState: return .calibrationState
        case .calibrationResult: return .calibrationResult
        case .status: return .status
        case .control: return .control
        case .turn: return .turn
        case .step: return .step
        }
    }

    /// The payload this message carries.
    public var payload: any WireCodable & Encodable {
        switch self {
        case let .fix(value): return value
        case let .heading(value): return value
        case let .attitude(value): return value
        case let .smoothed(value): return value
        case let .route(value): return value
        case let .progress(value): return value
        case let .target(value): return value
        case let .cue(value): return value
        case let .calibrationState(value): return value
        case let .calibrationResult(value): return value
        case let .status(value): return value
        case let .control(value): return value
        case let .turn(value): return value
        case let .step(value): return value
        }
    }

    /// Appends the payload's v1 encoding.
    public func encodePayload(to writer: inout WireWriter) {
        self.payload.encode(to: &writer)
    }

    /// Decodes a payload of the given kind, rejecting trailing bytes.
    public static func decode(kind: Kind, payload: UnsafeRawBufferPointer) throws(WireDecodingError) -> BusMessage {
        switch kind {
        case .fix: return .fix(try .decode(wire: payload))
        case .heading: return .heading(try .decode(wire: payload))
        case .attitude: return .attitude(try .decode(wire: payload))
        case .smoothed: return .smoothed(try .decode(wire: payload))
        case .route: return .route(try .decode(wire: payload))
        case .progress: return .progress(try .decode(wire: payload))
        case .target: return .target(try .decode(wire: payload))
        case .cue: return .cue(try .decode(wire: payload))
        case .calibrationState: return .calibrationState(try .decode(wire: payload))
        case .calibrationResult: return .calibrationResult(try .decode(wire: payload))
        case .status: return .status(try .decode(wire: payload))
        case .control: return .control(try .decode(wire: payload))
        case .turn: return .turn(try .decode(wire: payload))
        case .step: return .step(try .decode(wire: payload))
        }
    }
}

/// Something a stage writes messages to. Stages see only this, never ZeroMQ.
public protocol MessagePublisher: Sendable {
    /// Sends one message; never blocks on a slow or absent subscriber.
    func publish(_ message: BusMessage) async throws
}

extension BusMessage: Codable {
    private enum CodingKeys: String, CodingKey {
        case topic
        case payload
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let topic = try container.decode(String.self, forKey: .topic)
        guard let kind = Kind(topic: topic) else {
            throw DecodingError.dataCorruptedError(
                forKey: .topic, in: container,
                debugDescription:
                    "unknown topic '\(topic)'; known: \(Kind.allCases.map(\.topic).joined(separator: ", "))")
        }
        switch kind {
        case .fix: self = .fix(try container.decode(LocationFix.self, forKey: .payload))
        case .heading: self = .heading(try container.decode(HeadingSample.self, forKey: .payload))
        case .attitude: self = .attitude(try container.decode(Attitude.self, forKey: .payload))
        case .smoothed: self = .smoothed(try container.decode(SmoothedFix.self, forKey: .payload))
        case .route: self = .route(try container.decode(Route.self, forKey: .payload))
        case .progress: self = .progress(try container.decode(RouteProgress.self, forKey: .payload))
        case .target: self = .target(try container.decode(GuidanceTarget.self, forKey: .payload))
        case .cue: self = .cue(try container.decode(HapticCue.self, forKey: .payload))
        case .calibrationState: self = .calibrationState(try container.decode(CalibrationState.self, forKey: .payload))
        case .calibrationResult:
            self = .calibrationResult(try container.decode(CalibrationResult.self, forKey: .payload))
        case .status: self = .status(try container.decode(StageStatus.self, forKey: .payload))
        case .control: self = .control(try container.decode(ControlEvent.self, forKey: .payload))
        case .turn: self = .turn(try container.decode(TurnEvent.self, forKey: .payload))
        case .step: self = .step(try container.decode(StepCount.self, forKey: .payload))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.kind.topic, forKey: .topic)
        try container.encode(self.payload, forKey: .payload)
    }
}
