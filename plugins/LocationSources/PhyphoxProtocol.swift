public import NavCore
import SystemIO

/// phyphox's remote-access interface as HapticNav uses it (phyphox's wiki, "Remote-interface communication", and
/// the app's `RemoteServer`): `/config` names the experiment's buffers, `/time` maps experiment time to the phone's
/// clock, `/get?name=threshold|reference` returns a buffer's values at the indices where its reference buffer is above
/// the threshold, `/control?cmd=start` starts measuring.
public enum PhyphoxProtocol {
    /// The buffers of HapticNav's experiment (`configs/phone/hapticnav.phyphox`), time first in each group.
    public static let location = ["locTime", "locLat", "locLon", "locZ", "locV", "locDir", "locAccuracy"]
    public static let accelerometer = ["accTime", "accX", "accY", "accZ"]
    public static let magnetometer = ["magTime", "magX", "magY", "magZ"]
    static let groups = [location, accelerometer, magnetometer]
    /// Every buffer the source needs.
    public static var buffers: [String] { groups.flatMap { $0 } }

    /// A number as phyphox writes it (Java's `DecimalFormat("0.#######E0")`: eight significant digits, "4.3565153E1",
    /// "-9.81E0", "0E0").
    public static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == 0 { return "0E0" }
        let text = String(cFormat: "%.7e", value)  // "-4.3565153e+01"
        guard let e = text.firstIndex(of: "e") else { return text }
        var mantissa = String(text[..<e])
        let exponent = Int(text[text.index(after: e)...]) ?? 0
        if mantissa.contains(".") {
            while mantissa.hasSuffix("0") { mantissa.removeLast() }
            if mantissa.hasSuffix(".") { mantissa.removeLast() }
        }
        return "\(mantissa)E\(exponent)"
    }

    /// One start or pause on the phone: the experiment time it happened at [seconds] and the phone's clock then
    /// [seconds since 1970].
    public struct TimeEvent: Sendable, Equatable {
        public var isStart: Bool
        public var experimentTime: Double
        public var systemTime: Double

        public init(isStart: Bool, experimentTime: Double, systemTime: Double) {
            self.isStart = isStart
            self.experimentTime = experimentTime
            self.systemTime = systemTime
        }
    }

    /// Experiment time [seconds since the first start, pauses left out] to UTC on the phone's clock, from `/time`'s
    /// events; nil before any start.
    public static func utc(experimentTime t: Double, events: [TimeEvent]) -> Double? {
        let starts = events.filter(\.isStart)
        guard let first = starts.first else { return nil }
        let start = starts.last { $0.experimentTime <= t + 1e-9 } ?? first
        return start.systemTime + (t - start.experimentTime)
    }

    /// What one poll gave.
    public struct PollResult: Sendable {
        /// Fixes, headings and attitudes, oldest first.
        public var messages: [BusMessage] = []
        /// Whether the phone is measuring.
        public var measuring = false
        /// Samples read, and samples dropped (not finite, out of range, no time mapping).
        public var samples = 0
        public var dropped = 0
        /// The newest sample's time [seconds since 1970, phone clock].
        public var newestSampleTime: Double?
    }

    /// The polling state machine: which samples have been seen, how experiment time maps to UTC, and the heading
    /// estimator. No I/O: the source does the requests and hands the answers in.
    public struct Poller: Sendable {
        /// Per group of buffers: the reference time above which samples are new; nil: not known yet.
        private var thresholds: [Double?] = Array(repeating: nil, count: PhyphoxProtocol.groups.count)
        /// The next poll asks for the latest value of each buffer only, to start from there.
        private var resume = true
        private var session: String?
        private var events: [TimeEvent] = []
        /// The experiment's title, from `/config`.
        public private(set) var title: String?
        /// True once `/config` listed every buffer.
        public private(set) var configChecked = false
        /// The heading estimator (and its compass check).
        public private(set) var motion: PhoneMotion

        /// A poller producing a heading every `headingInterval` seconds.
        public init(headingInterval: Double = 0.1) {
            self.motion = PhoneMotion(interval: headingInterval)
        }

        /// True once `/time` has a start.
        public var hasStart: Bool { self.events.contains(where: \.isStart) }

        /// Checks `/config`'s buffer list; returns what is wrong (naming the missing buffers), nil when all are there.
        public mutating func check(config: JSONValue) -> String? {
            let names = Set((config["buffers"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
            self.title = config["title"]?.stringValue
            let missing = PhyphoxProtocol.buffers.filter { !names.contains($0) }
            guard missing.isEmpty else {
                let title = self.title.map { "'\($0.prefix(60))'" } ?? "without a title"
                return
                    "wrong phyphox experiment \(title) on the phone: missing buffers \(missing.joined(separator: ", ")); "
                    + "load configs/phone/hapticnav.phyphox"
            }
            self.configChecked = true
            return nil
        }

        /// Takes `/time`'s answer. A start that moved (the experiment was cleared or reloaded) starts over.
        public mutating func take(time: JSONValue) {
            var events: [TimeEvent] = []
            for event in time.arrayValue ?? [] {
                guard let name = event["event"]?.stringValue, name == "START" || name == "PAUSE",
                    let experimentTime = event["experimentTime"]?.doubleValue, experimentTime.isFinite,
                    let systemTime = event["systemTime"]?.doubleValue, systemTime.isFinite
                else { continue }
                events.append(
                    TimeEvent(isStart: name == "START", experimentTime: experimentTime, systemTime: systemTime))
            }
            if let old = self.events.first, let new = events.first, abs(old.systemTime - new.systemTime) > 1e-3 {
                self.thresholds = self.thresholds.map { _ in nil }
            }
            if events.isEmpty, !self.events.isEmpty { self.thresholds = self.thresholds.map { _ in nil } }
            self.events = events
        }

        /// When the last answer to `/get` arrived (host wall clock), nil before the first.
        private var lastAnswer: Double?

        /// After a failed request at `now` (host wall clock): the next poll re-checks `/config`. A gap of at most
        /// `catchUpSeconds` since the last answer (a slow answer, one lost request) carries on from where it was, so
        /// nothing is lost; after a longer one the next poll starts from the phone's latest samples (what was
        /// missed meanwhile is old and is not sent on, so nothing downstream acts on it).
        public mutating func lostConnection(at now: Double, catchUpSeconds: Double = 2) {
            if self.lastAnswer.map({ now - $0 > catchUpSeconds }) ?? true { self.resume = true }
            self.configChecked = false
        }

        /// The `/get` request for the next poll.
        public func request() -> String {
            var items: [String] = []
            for (index, group) in PhyphoxProtocol.groups.enumerated() {
                let time = group[0]
                if self.resume {
                    items += group.map { "\($0)=" }
                } else if let threshold = self.thresholds[index] {
                    let value = "\(threshold)"
                    items.append("\(time)=\(value)")
                    items += group.dropFirst().map { "\($0)=\(value)%7C\(time)" }
                } else {
                    items += group.map { "\($0)=full" }
                }
            }
            return "/get?" + items.joined(separator: "&")
        }

        /// Takes `/get`'s answer: new samples become messages.
        public mutating func take(get answer: JSONValue, receivedAt: Double) -> PollResult {
            var result = PollResult()
            self.lastAnswer = receivedAt
            let status = answer["status"]
            result.measuring = status?["measuring"]?.boolValue ?? false
            if let session = status?["session"]?.stringValue {
                if self.session != nil, session != self.session { self.resume = true }
                self.session = session
            }
            func values(_ name: String) -> [Double?] {
                (answer["buffer"]?[name]?["buffer"]?.arrayValue ?? []).map { value in
                    value.doubleValue.flatMap { $0.isFinite ? $0 : nil }
                }
            }
            if self.resume {
                for (index, group) in PhyphoxProtocol.groups.enumerated() {
                    if let last = values(group[0]).last, let last, last > 0 { self.thresholds[index] = last }
                }
                self.resume = false
                return result
            }
            var messages: [BusMessage] = []
            for (index, group) in PhyphoxProtocol.groups.enumerated() {
                let columns = group.map(values)
                let count = columns.map(\.count).min() ?? 0
                result.dropped += (columns.map(\.count).max() ?? 0) - count
                for row in 0..<count {
                    result.samples += 1
                    guard let t = columns[0][row] else {
                        result.dropped += 1
                        continue
                    }
                    self.thresholds[index] = max(self.thresholds[index] ?? t, t)
                    guard let utc = PhyphoxProtocol.utc(experimentTime: t, events: self.events) else {
                        result.dropped += 1
                        continue
                    }
                    result.newestSampleTime = max(result.newestSampleTime ?? utc, utc)
                    let v = columns.dropFirst().map { $0[row] }
                    if index == 0 {
                        guard let fix = Self.fix(utc, v) else {
                            result.dropped += 1
                            continue
                        }
                        self.motion.observe(fix)
                        messages.append(.fix(fix))
                    } else {
                        guard let x = v[0], let y = v[1], let z = v[2] else {
                            result.dropped += 1
                            continue
                        }
                        let sample = PhoneMotion.Sample(timeSeconds: utc, x: x, y: y, z: z)
                        if index == 1 { self.motion.accelerometer(sample) } else { self.motion.magnetometer(sample) }
                    }
                }
            }
            messages += self.motion.drain()
            result.messages = messages.enumerated().sorted {
                (Self.time($0.element), $0.offset) < (Self.time($1.element), $1.offset)
            }.map(\.element)
            return result
        }

        static func time(_ message: BusMessage) -> Double {
            switch message {
            case let .fix(fix): fix.timeSeconds
            case let .heading(heading): heading.timeSeconds
            case let .attitude(attitude): attitude.timeSeconds
            default: 0
            }
        }

        /// A fix from the location buffers (lat, lon, z, v, dir, accuracy); phyphox writes −1 for an unknown speed
        /// or direction. Nil when the position or its accuracy is missing or out of range.
        static func fix(_ time: Double, _ v: [Double?]) -> LocationFix? {
            guard let lat = v[0], let lon = v[1], abs(lat) <= 90, abs(lon) <= 180, !(lat == 0 && lon == 0),
                let accuracy = v[5], accuracy > 0, accuracy < 100_000
            else { return nil }
            let speed = v[3].flatMap { $0 >= 0 && $0 < 100 ? $0 : nil }
            let course = v[4].flatMap { $0 >= 0 && $0 <= 360 ? Angle.normalized($0) : nil }
            let altitude = v[2].flatMap { abs($0) < 100_000 ? $0 : nil }
            return LocationFix(
                timeSeconds: time, latitude: lat, longitude: lon, altitudeMeters: altitude,
                horizontalAccuracyMeters: accuracy, speedMetersPerSecond: speed, courseDegrees: course)
        }
    }
}
