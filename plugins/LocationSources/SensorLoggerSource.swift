#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
package import Links
public import Logging
public import NavCore
import Synchronization
import SystemIO

/// The participant's phone, live, by Sensor Logger's HTTP push (free on iOS and Android; Settings → Data Streaming →
/// HTTP Push, the push URL `http://HOST:PORT/PATH?token=TOKEN`). Each push is a JSON batch, `{"messageId", "sessionId",
/// "deviceId", "payload": [{"name", "time" (nanoseconds since 1970 UTC), "values": {…}}]}`; the source takes
/// `location`, `magnetometer` with `gravity` (or `totalacceleration`) for the tilt-compensated compass
/// (``PhoneMotion``, checked against the World Magnetic Model), and `compass` (`magneticBearing`) when the phone sends
/// no magnetometer. Only POSTs to the path with the secret token are taken; bodies are bounded; a batch that does not
/// read is counted and dropped. Sensor Logger's frames must be Android's ("Standardise Units & Frames" on, on iOS).
public final class SensorLoggerSource: MessageSource, PhoneReporting {
    public static let id = "sensorlogger"

    /// Where to listen and what to accept.
    public struct Options: Sendable, Equatable {
        public var host = "0.0.0.0"
        public var port: UInt16 = 8000
        /// The push URL's path.
        public var path = SensorLoggerSource.Setting.path.defaultValue ?? ""
        /// The secret the push URL carries (`?token=`), or an `Authorization: Bearer` header.
        public var token: String
        /// One heading per this interval [seconds].
        public var headingIntervalSeconds = SensorLoggerSource.Setting.headingIntervalSeconds.defaultValue
        /// The largest batch taken [bytes].
        public var maximumBodyBytes = SensorLoggerSource.Setting.maximumBodyBytes.defaultValue

        public init(token: String) { self.token = token }
    }

    public let options: Options
    private let logger: Logger
    private let state = Mutex(PhoneState())
    private let motion: Mutex<PhoneMotion>
    private let server = Mutex<HTTPServer?>(nil)
    private let bound = Mutex<UInt16?>(nil)

    /// Creates the source (it listens once run).
    public init(options: Options, logger: Logger) throws {
        guard options.token.count >= 8 else {
            throw ConfigError.invalidValue(
                path: "sensorlogger.token", expected: "a secret of at least 8 characters", found: "a shorter one")
        }
        guard options.path.hasPrefix("/") else {
            throw ConfigError.invalidValue(
                path: "sensorlogger.path", expected: "a path such as /hapticnav", found: options.path)
        }
        self.options = options
        self.logger = logger
        self.motion = Mutex(PhoneMotion(interval: options.headingIntervalSeconds))
    }

    /// Reads a config's settings: `listen` ("0.0.0.0:8000"), `path`, `token` (required), `headingIntervalSeconds`,
    /// `maximumBodyBytes`.
    public convenience init(settings: Settings, logger: Logger) throws {
        var settings = settings
        guard let token = try settings.optionalValue(Setting.token) else {
            throw ConfigError.invalidValue(
                path: "\(settings.path).token", expected: "the secret in Sensor Logger's push URL", found: "nothing")
        }
        var options = Options(token: token)
        let listen = try settings.value(Setting.listen)
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            throw ConfigError.invalidValue(path: "\(settings.path).listen", expected: "host:port", found: "'\(listen)'")
        }
        options.host = String(listen[..<colon].filter { $0 != "[" && $0 != "]" })
        options.port = port
        options.path = try settings.value(Setting.path)
        options.headingIntervalSeconds = try settings.value(Setting.headingIntervalSeconds)
        options.maximumBodyBytes = try settings.value(Setting.maximumBodyBytes)
        try settings.finish()
        try self.init(options: options, logger: logger)
    }

    public var isLive: Bool { true }
    public var nominalPeriods: [BusMessage.Kind: Double] { [.fix: 1] }
    public func condition() async -> SourceCondition? { self.state.withLock { $0.condition } }
    public func phoneReport() async -> PhoneReport { self.state.withLock { $0.report } }
    public func statusCounters() async -> [StatusCounter] {
        self.state.withLock { $0.counters } + (self.server.withLock { $0 }?.counters ?? [])
            + self.motion.withLock { $0.statusCounters }
    }

    /// Starts the push server: each good batch's messages go to `deliver`, on the connection's thread. `run` listens
    /// through it; the fuzzer, which feeds connections to the server, too.
    package func listen(deliver: @escaping @Sendable ([BusMessage]) -> Void) throws -> HTTPServer {
        var limits = HTTPServer.Limits()
        limits.maximumBodyBytes = self.options.maximumBodyBytes
        let server = try HTTPServer(
            host: self.options.host, port: self.options.port, limits: limits, admit: { [self] in self.refusal($0) }
        ) { [self] request in
            let (response, messages) = self.handle(request)
            if !messages.isEmpty { deliver(messages) }
            return response
        }
        self.server.withLock { $0 = server }
        self.bound.withLock { $0 = server.port }
        return server
    }

    /// The port listened on, once running (the one asked for, or the system's choice for 0).
    public var port: UInt16? { self.bound.withLock { $0 } }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        let (batches, continuation) = AsyncStream.makeStream(
            of: [BusMessage].self, bufferingPolicy: .bufferingNewest(64))
        let server = try self.listen { continuation.yield($0) }
        defer { server.close() }
        try await withTaskCancellationHandler {
            for await batch in batches {
                for message in batch { try await emit(message) }
            }
        } onCancel: {
            continuation.finish()
        }
        try Task.checkCancellation()
    }

    /// The answer to a request refused on its head alone (another path, no or a wrong secret, not a POST), counted;
    /// nil for one whose body may be read. The server asks before it reads a body: a stranger's is never taken.
    func refusal(_ request: HTTPRequest) -> HTTPServerResponse? {
        guard request.path == self.options.path else {
            self.state.withLock { $0.count("sensorlogger.refused.path") }
            return .text(404, "not found")
        }
        let bearer = request.headers["authorization"].flatMap {
            $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil
        }
        guard Self.same(request.query["token"] ?? bearer ?? "", self.options.token) else {
            self.state.withLock {
                $0.count("sensorlogger.refused.token")
                if $0.report.sampleAgeSeconds == nil {
                    $0.set(.stale, "pushes from \(request.peer) refused: wrong or missing token in the push URL")
                }
            }
            return .text(403, "forbidden")
        }
        guard request.method == "POST" else {
            self.state.withLock { $0.count("sensorlogger.refused.method") }
            return .text(405, "POST a batch")
        }
        return nil
    }

    /// Answers one request (refused as ``refusal(_:)`` says, or read); a good batch's messages come back beside the
    /// answer.
    func handle(_ request: HTTPRequest) -> (HTTPServerResponse, [BusMessage]) {
        if let refused = self.refusal(request) { return (refused, []) }
        guard let batch = try? JSONDecoder().decode(JSONValue.self, from: Data(request.body)),
            let payload = batch["payload"]?.arrayValue
        else {
            self.state.withLock { $0.count("sensorlogger.malformedBatches") }
            return (.text(400, "not a Sensor Logger batch"), [])
        }
        let received = SystemClock.wallSeconds()
        let (messages, dropped, newest, compassText) = self.motion.withLock { motion in
            var parser = BatchReader()
            let messages = parser.read(payload, into: &motion)
            return (messages, parser.dropped, parser.newest, motion.compass.statusText)
        }
        self.state.withLock { state in
            state.count("sensorlogger.batches")
            state.count("sensorlogger.readings", UInt64(payload.count))
            state.count("sensorlogger.dropped", UInt64(dropped))
            if let newest { state.age(received - newest) }
            state.report.compass = self.motion.withLock { $0.compass.latest }
            if let compassText { state.set(.degraded, compassText) } else { state.set(nil, nil) }
        }
        return (.text(200, "ok"), messages)
    }

    /// Compares two secrets in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }

    /// Reads one batch's readings.
    struct BatchReader {
        var dropped = 0
        var newest: Double?
        private var sawMagnetometer = false

        mutating func read(_ payload: [JSONValue], into motion: inout PhoneMotion) -> [BusMessage] {
            var out: [BusMessage] = []
            var compass: [HeadingSample] = []
            for reading in payload {
                guard let name = reading["name"]?.stringValue, let nanoseconds = reading["time"]?.doubleValue,
                    nanoseconds.isFinite, nanoseconds > 1e18, nanoseconds < 1e20, let values = reading["values"]
                else {
                    self.dropped += 1
                    continue
                }
                let time = nanoseconds / 1e9
                func number(_ key: String) -> Double? { values[key]?.doubleValue.flatMap { $0.isFinite ? $0 : nil } }
                func vector() -> PhoneMotion.Sample? {
                    guard let x = number("x"), let y = number("y"), let z = number("z") else { return nil }
                    return PhoneMotion.Sample(timeSeconds: time, x: x, y: y, z: z)
                }
                switch name {
                case "location":
                    guard let lat = number("latitude"), let lon = number("longitude"), abs(lat) <= 90,
                        abs(lon) <= 180, let accuracy = number("horizontalAccuracy"), accuracy > 0, accuracy < 100_000
                    else {
                        self.dropped += 1
                        continue
                    }
                    let fix = LocationFix(
                        timeSeconds: time, latitude: lat, longitude: lon,
                        altitudeMeters: number("altitude").flatMap { abs($0) < 100_000 ? $0 : nil },
                        horizontalAccuracyMeters: accuracy,
                        speedMetersPerSecond: number("speed").flatMap { $0 >= 0 && $0 < 100 ? $0 : nil },
                        courseDegrees: number("bearing").flatMap { $0 >= 0 && $0 <= 360 ? Angle.normalized($0) : nil })
                    motion.observe(fix)
                    out.append(.fix(fix))
                case "magnetometer":
                    guard let sample = vector() else {
                        self.dropped += 1
                        continue
                    }
                    self.sawMagnetometer = true
                    motion.magnetometer(sample)
                case "gravity", "totalacceleration":
                    guard let sample = vector() else {
                        self.dropped += 1
                        continue
                    }
                    motion.accelerometer(sample)
                case "compass":
                    guard let bearing = number("magneticBearing"), bearing >= -360, bearing <= 720 else {
                        self.dropped += 1
                        continue
                    }
                    compass.append(
                        HeadingSample(
                            timeSeconds: time, headingDegrees: Angle.normalized(bearing), reference: .magneticNorth))
                default:
                    continue  // other sensors: not used
                }
                self.newest = max(self.newest ?? time, time)
            }
            out += motion.drain()
            // The phone's own compass only when it sends no magnetometer to compute a checked heading from.
            if !self.sawMagnetometer { out += compass.map(BusMessage.heading) }
            return out.enumerated().sorted {
                (PhyphoxProtocol.Poller.time($0.element), $0.offset) < (
                    PhyphoxProtocol.Poller.time($1.element), $1.offset
                )
            }.map(\.element)
        }
    }
}

extension SensorLoggerSource {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let headingIntervalSeconds = SettingSpec<Double>(
            "headingIntervalSeconds", unit: "s", default: 0.1, in: 0.02...1,
            "Time between headings sent (the newest sample of each interval).")
        public static let maximumBodyBytes = SettingSpec<Int>(
            "maximumBodyBytes", unit: "B", default: 2_000_000, in: 10_000...50_000_000, "The largest push body taken.")
        public static let listen = ValueSpec<String>(
            "listen", default: "0.0.0.0:8000", accepts: "host:port", "Where to take pushes.")
        public static let path = ValueSpec<String>("path", default: "/hapticnav", "The path pushes are posted to.")
        public static let token = ValueSpec<String>(
            "token", "The secret a push must carry (?token= in the push URL, or a Bearer header).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [
            headingIntervalSeconds.doc, maximumBodyBytes.doc, listen.doc, path.doc, token.doc,
        ]
    }
}
