#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Devices
public import NavCore

/// What a participant wearing the band feels of it, read from the band's own frames (the emulator's log lines, as the
/// band received them; never the bus): the motors running now as a turn cue by side, the turn-around and arrival
/// patterns, the calibration's ticks, and the turn-event patterns (docs/BAND-PROTOCOL.md) as the events a walker takes
/// from them: a count of pulses on one side is an announcement (the pulses the junctions to its turn), a long pulse
/// pattern on one side is *now* (of the turn last announced on that side, as a walker pairs them; long-short to bear,
/// long-long to turn, long-long-long to turn sharply, four long to turn back, taken as turns of 30°, 90°, 150° and
/// 175°), a short double on both *straight on*. What a band cannot say (the street's name, the distance, the exact angle, the route's number) the
/// events lack.
public struct FeltBand: Sendable {
    /// The motors now [0–255].
    public private(set) var left = 0
    public private(set) var right = 0
    /// The latest tick (a calibration cue, or a prompt said elsewhere): when, and its strength [0–255].
    public private(set) var lastTick: (time: Double, level: Int)?
    /// The arrival pattern was felt.
    public private(set) var arrived = false
    /// Frames felt, of every kind [count].
    public private(set) var frames = 0
    private var turnAroundAt: Double?
    private var events: [TurnEvent] = []
    /// The turn last announced on each side (left: true), not yet said *now*: its number and count of pulses.
    private var announced: [Bool: (manoeuvre: UInt32, count: Int)] = [:]
    private var nextManoeuvre: UInt32 = 1
    /// How long a turn-around pattern is acted on once felt [seconds].
    static let turnAroundSeconds = 1.5

    public init() {}

    /// One line of the emulator's log as felt: when, the frame's type (nil: a stop the band made by itself), and the
    /// motors after it.
    public typealias Frame = (time: Double, type: String?, left: Int, right: Int)

    /// Takes one of the emulator's log lines (frames; its own stops set the motors to what it says); the frame, or nil
    /// for a line that is none.
    @discardableResult
    public mutating func take(line: String) -> Frame? {
        guard let object = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)),
            let motors = object["motors"]
        else { return nil }
        let frame: Frame = (
            object["receiveTimeSeconds"]?.doubleValue ?? object["timeSeconds"]?.doubleValue ?? 0,
            object["type"]?.stringValue, Int(motors["left"]?.doubleValue ?? 0), Int(motors["right"]?.doubleValue ?? 0)
        )
        let payload = object["payload"]?.arrayValue?.compactMap { $0.doubleValue.map { Int($0) } } ?? []
        self.take(type: frame.type, payload: payload, left: frame.left, right: frame.right, time: frame.time)
        return frame
    }

    /// Takes a frame of `type` (nil: a stop the band made by itself) with the motors after it.
    public mutating func take(type: String?, payload: [Int], left: Int, right: Int, time: Double) {
        self.frames += 1
        self.left = left
        self.right = right
        if left > 0 || right > 0 { self.turnAroundAt = nil }
        guard type == "pulse", payload.count >= 3, let pattern = BandProtocol.Pattern(rawValue: UInt8(payload[0]))
        else { return }
        let level = payload[1], repeats = payload[2]
        func event(
            _ phase: TurnPhase, left: Bool, manoeuvre: UInt32, junctionsBefore: Int, degrees: Double = 90
        ) -> TurnEvent {
            TurnEvent(
                timeSeconds: time, routeID: 1, manoeuvre: manoeuvre, phase: phase,
                turnDegrees: left ? -degrees : degrees,
                junctionsBefore: UInt32(max(0, junctionsBefore)), distanceMeters: 0, outgoingBearingDegrees: 0,
                street: "")
        }
        switch pattern {
        case .turnAround: self.turnAroundAt = time
        case .arrival: self.arrived = true
        case .tick: self.lastTick = (time, level)
        case .countLeft, .countRight:
            let onLeft = pattern == .countLeft
            // The route stage says a turn again with its count after each junction passed: a count on the same side
            // no greater than the last is that turn, told again (a wearer takes the newest count); a greater one is
            // a turn farther on.
            let manoeuvre: UInt32
            if let last = self.announced[onLeft], repeats <= last.count {
                manoeuvre = last.manoeuvre
            } else {
                manoeuvre = self.nextManoeuvre
                self.nextManoeuvre += 1
            }
            self.announced[onLeft] = (manoeuvre, repeats)
            self.events.append(event(.announce, left: onLeft, manoeuvre: manoeuvre, junctionsBefore: repeats - 1))
        case .nowLeft, .nowRight, .bearLeft, .bearRight, .sharpLeft, .sharpRight, .backLeft, .backRight:
            guard let (onLeft, sharpness) = BandProtocol.Sharpness.of(pattern) else { return }
            let degrees: Double =
                switch sharpness {
                case .bear: 30
                case .turn: 90
                case .sharp: 150
                case .back: 175
                }
            let manoeuvre: UInt32
            if let told = self.announced.removeValue(forKey: onLeft) {
                manoeuvre = told.manoeuvre
            } else {
                manoeuvre = self.nextManoeuvre
                self.nextManoeuvre += 1
            }
            self.events.append(event(.now, left: onLeft, manoeuvre: manoeuvre, junctionsBefore: 0, degrees: degrees))
        case .straightOn:
            let manoeuvre = self.nextManoeuvre
            self.nextManoeuvre += 1
            self.events.append(event(.straightOn, left: false, manoeuvre: manoeuvre, junctionsBefore: 0, degrees: 0))
        case .signalLost: break
        }
    }

    /// The cue felt at `time`: the arrival once felt, a turn-around pattern for a moment after it, else the side of the
    /// motor running (the stronger), else nothing.
    public func cue(at time: Double) -> CueKind {
        if self.arrived { return .arrival }
        if let at = self.turnAroundAt, time - at < Self.turnAroundSeconds { return .turnAround }
        if self.left > self.right { return .turnLeft }
        if self.right > self.left { return .turnRight }
        return .silent
    }

    /// The turn events felt since the last call.
    public mutating func drainEvents() -> [TurnEvent] {
        defer { self.events.removeAll() }
        return self.events
    }
}
