public import NavCore

/// The band's framed protocol, modelled on a Bluetooth LE UART link (docs/BAND-PROTOCOL.md).
///
/// Every frame: 0xAA 0x55, type, sequence, payload length, payload, then the XOR of type, sequence,
/// length and payload bytes.
public enum BandProtocol {
    /// Frame types. 0x0_ go to the band (TX), 0x8_ come from it (RX).
    public enum FrameType: UInt8, Sendable, CaseIterable {
        /// Set each motor's intensity: payload [left 0–255, right 0–255].
        case setMotors = 0x01
        /// Play a pulse pattern: payload [pattern, intensity 0–255, repeats].
        case pulse = 0x02
        /// Stop every motor: no payload.
        case stopAll = 0x03
        /// Keep-alive: no payload; the band acknowledges it.
        case ping = 0x04
        /// Sets the watchdog: payload [limit in milliseconds, u16 little-endian, 50–5000]. With no frame for the
        /// limit the band stops every motor by itself; it is armed from the connection, at 500 ms until set.
        case watchdog = 0x05
        /// The band accepted the frame with sequence payload[0].
        case ack = 0x81
        /// Battery level: payload [percent].
        case battery = 0x82
        /// A button: payload [button, 1 pressed / 0 released].
        case button = 0x83
        /// The band refused a frame: payload [sequence, reason].
        case nack = 0x84

        /// The name used in logs.
        public var name: String { "\(self)" }
    }

    /// The watchdog's limit until the host sets another [milliseconds].
    public static let defaultWatchdogMilliseconds = 500
    /// The limits a host may set [milliseconds]; the watchdog cannot be switched off.
    public static let watchdogRange = 50...5000

    /// The payload of a ``FrameType/watchdog`` frame for `milliseconds`, clamped to ``watchdogRange``.
    public static func watchdogPayload(milliseconds: Int) -> [UInt8] {
        let limit = UInt16(min(max(milliseconds, self.watchdogRange.lowerBound), self.watchdogRange.upperBound))
        return [UInt8(limit & 0xFF), UInt8(limit >> 8)]
    }

    /// The limit a ``FrameType/watchdog`` payload asks for, or nil when it is malformed or out of range.
    public static func watchdogLimit(payload: [UInt8]) -> Int? {
        guard payload.count == 2 else { return nil }
        let limit = Int(payload[0]) | Int(payload[1]) << 8
        return self.watchdogRange.contains(limit) ? limit : nil
    }

    /// Pulse patterns the band knows.
    public enum Pattern: UInt8, Sendable, CaseIterable {
        /// Both motors, long-short-long: turn around.
        case turnAround = 1
        /// Both motors, three short: arrived.
        case arrival = 2
        /// Both motors, one long, once: signal lost.
        case signalLost = 3
        /// A short tick: calibration feedback.
        case tick = 4
        /// The left motor alone, one short pulse per repeat: a turn to the left announced, the count by pulses.
        case countLeft = 5
        /// The right motor alone, the same: a turn to the right announced.
        case countRight = 6
        /// The left motor alone, long-long: turn left now.
        case nowLeft = 7
        /// The right motor alone, long-long: turn right now.
        case nowRight = 8
        /// Both motors, short-short: straight on at this junction.
        case straightOn = 9
        /// The left motor alone, long-short: bear left now (a turn of less than 45°).
        case bearLeft = 10
        /// The right motor alone, long-short: bear right now.
        case bearRight = 11
        /// The left motor alone, long-long-long: sharp left now (a turn of 135° or more).
        case sharpLeft = 12
        /// The right motor alone, long-long-long: sharp right now.
        case sharpRight = 13
        /// The left motor alone, long-long-long-long: turn back left now (170° or more: a way that leaves nearly back
        /// along the way the walker came).
        case backLeft = 14
        /// The right motor alone, long-long-long-long: turn back right now.
        case backRight = 15
    }

    /// How sharp a turn is, as the band says it at the junction: the speaker's classes (``TurnWords/Sharpness``), a
    /// turn nearly straight on felt as a bear.
    public enum Sharpness: Sendable, Equatable, CaseIterable {
        case bear, turn, sharp, back

        /// The class of a turn of `turnDegrees` (either side).
        public init(turnDegrees: Double) {
            switch TurnWords.Sharpness(turnDegrees: turnDegrees) {
            case .straight, .bear: self = .bear
            case .turn: self = .turn
            case .sharp: self = .sharp
            case .back: self = .back
            }
        }

        /// The *now* pattern for this sharpness on one side.
        public func pattern(left: Bool) -> Pattern {
            switch self {
            case .bear: left ? .bearLeft : .bearRight
            case .turn: left ? .nowLeft : .nowRight
            case .sharp: left ? .sharpLeft : .sharpRight
            case .back: left ? .backLeft : .backRight
            }
        }

        /// The side and sharpness a *now* pattern says; nil for the other patterns.
        public static func of(_ pattern: Pattern) -> (left: Bool, sharpness: Sharpness)? {
            switch pattern {
            case .bearLeft: (true, .bear)
            case .bearRight: (false, .bear)
            case .nowLeft: (true, .turn)
            case .nowRight: (false, .turn)
            case .sharpLeft: (true, .sharp)
            case .sharpRight: (false, .sharp)
            case .backLeft: (true, .back)
            case .backRight: (false, .back)
            default: nil
            }
        }
    }

    /// One decoded frame.
    public struct Frame: Equatable, Sendable {
        /// Its type.
        public var type: FrameType
        /// The sender's sequence number [0–255, wrapping].
        public var sequence: UInt8
        /// Its payload.
        public var payload: [UInt8]

        /// Creates a frame.
        public init(type: FrameType, sequence: UInt8, payload: [UInt8] = []) {
            self.type = type
            self.sequence = sequence
            self.payload = payload
        }

        /// The frame's bytes.
        public var bytes: [UInt8] {
            var out: [UInt8] = [0xAA, 0x55, self.type.rawValue, self.sequence, UInt8(self.payload.count)]
            out += self.payload
            out.append(out[2...].reduce(0, ^))
            return out
        }
    }

    /// What a byte stream held that was not a frame.
    public enum Problem: Equatable, Sendable {
        /// A frame whose checksum is wrong.
        case badChecksum
        /// A frame of an unknown type.
        case unknownType(UInt8)
        /// Bytes before a frame's start, skipped.
        case junk(count: Int)
    }

    /// Splits a byte stream into frames, resynchronising on 0xAA 0x55 after junk or a bad frame.
    public struct Decoder: Sendable {
        private var buffer: [UInt8] = []

        /// Creates a decoder.
        public init() {}

        /// Feeds bytes; returns the frames and problems found so far, in order.
        public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Result<Frame, ProblemError>] {
            self.buffer += bytes
            var out: [Result<Frame, ProblemError>] = []
            while true {
                guard let start = self.findStart() else {
                    // Keep a trailing 0xAA: it may start a frame.
                    let keep = self.buffer.last == 0xAA ? 1 : 0
                    if self.buffer.count > keep {
                        out.append(.failure(ProblemError(problem: .junk(count: self.buffer.count - keep))))
                    }
                    self.buffer = Array(self.buffer.suffix(keep))
                    return out
                }
                if start > 0 {
                    out.append(.failure(ProblemError(problem: .junk(count: start))))
                    self.buffer.removeFirst(start)
                }
                guard self.buffer.count >= 5 else { return out }
                let length = Int(self.buffer[4])
                guard self.buffer.count >= 6 + length else { return out }
                let frame = Array(self.buffer[0..<(6 + length)])
                let checksum = frame[2..<(5 + length)].reduce(0, ^)
                if checksum != frame[5 + length] {
                    out.append(.failure(ProblemError(problem: .badChecksum)))
                    self.buffer.removeFirst(2)  // resynchronise after this start
                    continue
                }
                self.buffer.removeFirst(6 + length)
                guard let type = FrameType(rawValue: frame[2]) else {
                    out.append(.failure(ProblemError(problem: .unknownType(frame[2]))))
                    continue
                }
                out.append(.success(Frame(type: type, sequence: frame[3], payload: Array(frame[5..<(5 + length)]))))
            }
        }

        private func findStart() -> Int? {
            guard self.buffer.count >= 2 else { return nil }
            for index in 0..<(self.buffer.count - 1) where self.buffer[index] == 0xAA && self.buffer[index + 1] == 0x55
            {
                return index
            }
            return nil
        }
    }

    /// A problem as an error value.
    public struct ProblemError: Error, Equatable, Sendable {
        /// What it was.
        public let problem: Problem
    }

    /// Which turn events a band tells. Its pulses cannot say which turn a count is of, so it tells one turn at a time:
    /// of the announcements the route stage makes together (at one fix, in the order of the junctions: every turn
    /// within a few junctions ahead, each time their counts change), only the first, the next turn; a *straight on*
    /// only at the junction it is for (none before it), since its pattern has no count. *Now* always. The speaker,
    /// which says which turn it means in words, tells them all.
    public struct TurnTelling: Sendable {
        private var lastTold: (routeID: UInt32, timeSeconds: Double)?

        public init() {}

        /// Whether the band tells `event` (taken in the order the route stage sent them).
        public mutating func tells(_ event: TurnEvent) -> Bool {
            switch event.phase {
            case .now: return true
            case .straightOn: return event.junctionsBefore == 0
            case .announce:
                if let last = self.lastTold, last.routeID == event.routeID, last.timeSeconds == event.timeSeconds {
                    return false
                }
                self.lastTold = (event.routeID, event.timeSeconds)
                return true
            }
        }
    }

    /// The frames that render a turn event, felt distinctly from a turn cue (a motor held at a level): an announcement
    /// is short pulses on the turn's side, as many as the junction's place ahead (two for the second), *now* is on that
    /// side long-short to bear, long-long to turn, long-long-long to turn sharply, four long to turn back (where two ways
    /// leave to one side, the sharpness tells them apart), and *straight on* short-short on both motors. The motors' set state is kept.
    public static func frames(for event: TurnEvent) -> [(FrameType, [UInt8])] {
        let left = event.turnDegrees < 0
        switch event.phase {
        case .announce:
            let count = UInt8(min(9, Int(min(event.junctionsBefore, 8)) + 1))
            return [(.pulse, [(left ? Pattern.countLeft : Pattern.countRight).rawValue, 200, count])]
        case .now:
            return [(.pulse, [Sharpness(turnDegrees: event.turnDegrees).pattern(left: left).rawValue, 255, 1])]
        case .straightOn:
            return [(.pulse, [Pattern.straightOn.rawValue, 160, 1])]
        }
    }

    /// The frames that render a cue: motors by side and intensity, patterns for the distinct cues.
    public static func frames(for cue: HapticCue) -> [(FrameType, [UInt8])] {
        let scaled = (cue.intensity * 255).rounded()
        let level = scaled.isNaN ? 0 : UInt8(max(0, min(255, scaled)))
        switch cue.kind {
        case .silent: return [(.setMotors, [0, 0])]
        case .turnLeft: return [(.setMotors, [level, 0])]
        case .turnRight: return [(.setMotors, [0, level])]
        case .turnAround: return [(.setMotors, [0, 0]), (.pulse, [Pattern.turnAround.rawValue, 255, 1])]
        case .arrival: return [(.setMotors, [0, 0]), (.pulse, [Pattern.arrival.rawValue, 255, 1])]
        case .signalLost: return [(.stopAll, []), (.pulse, [Pattern.signalLost.rawValue, 255, 1])]
        case .calibration: return [(.pulse, [Pattern.tick.rawValue, level, 1])]
        }
    }
}
