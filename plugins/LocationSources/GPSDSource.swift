#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Links
public import Logging
public import NavCore
import Parsers

/// A client of gpsd's JSON protocol over TCP: TPV reports with a 2D or 3D fix become location fixes,
/// ATT reports become heading and attitude. Reconnects, with backoff, whenever gpsd goes away.
public struct GPSDSource: MessageSource {
    public static let id = "gpsd"

    /// gpsd's host.
    public let host: String
    /// gpsd's port.
    public let port: UInt16
    /// Accuracy assumed for a TPV that reports none [metres].
    public let assumedAccuracyMeters: Double
    /// Longest wait between reconnection attempts [seconds].
    public let maximumBackoffSeconds: Double
    private let logger: Logger
    private let problems: ProblemCounter

    /// Creates a client.
    public init(
        host: String = "127.0.0.1", port: UInt16 = 2947, assumedAccuracyMeters: Double = 10,
        maximumBackoffSeconds: Double = 5, logger: Logger
    ) {
        self.host = host
        self.port = port
        self.assumedAccuracyMeters = assumedAccuracyMeters
        self.maximumBackoffSeconds = maximumBackoffSeconds
        self.logger = logger
        self.problems = ProblemCounter(logger: logger, source: "gpsd \(host):\(port)")
    }

    /// Reads a config's settings: `host` (127.0.0.1), `port` (2947), `assumedAccuracyMeters`, `maximumBackoffSeconds`.
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        let host = try settings.value(Setting.host)
        let port = try settings.value(Setting.port)
        let accuracy = try settings.value(Setting.assumedAccuracyMeters)
        let backoff = try settings.value(Setting.maximumBackoffSeconds)
        try settings.finish()
        self.init(
            host: host, port: UInt16(port), assumedAccuracyMeters: accuracy, maximumBackoffSeconds: backoff,
            logger: logger)
    }

    public var isLive: Bool { true }
    /// Receivers report once a second unless set otherwise.
    public var nominalPeriods: [BusMessage.Kind: Double] { [.fix: 1] }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        var backoff = 0.25
        var decoder = GPSDDecoder(assumedAccuracyMeters: self.assumedAccuracyMeters)
        while !Task.isCancelled {
            let stream: ByteLink
            do {
                stream = try ByteLink.tcp(host: self.host, port: self.port, splitLines: true)
                guard stream.write(Array("?WATCH={\"enable\":true,\"json\":true}\n".utf8)) else {
                    stream.close()
                    throw LinkError.unreachable("gpsd at \(self.host):\(self.port) closed before the WATCH command")
                }
            } catch {
                self.logger.warning(
                    "gpsd at \(self.host):\(self.port) unreachable (\(error)); retrying in \(backoff) s")
                try await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, self.maximumBackoffSeconds)
                continue
            }
            self.logger.info("connected to gpsd at \(self.host):\(self.port)")
            var number = 0
            for await bytes in stream.chunks {
                let line = String(decoding: bytes, as: UTF8.self)
                number += 1
                self.problems.read()
                switch decoder.decode(line) {
                case let .success(messages):
                    if !messages.isEmpty { backoff = 0.25 }
                    for message in messages { try await emit(message) }
                case let .failure(problem):
                    self.problems.report(LogProblem(line: number, reason: problem.reason))
                }
            }
            stream.close()
            try Task.checkCancellation()
            self.logger.warning("gpsd at \(self.host):\(self.port) closed the connection; reconnecting in \(backoff) s")
            try await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, self.maximumBackoffSeconds)
        }
    }

    public func statusCounters() async -> [StatusCounter] { self.problems.counters }
}

/// Decodes gpsd's JSON reports.
public struct GPSDDecoder: Sendable {
    /// Accuracy assumed for a TPV that reports none [metres].
    public let assumedAccuracyMeters: Double
    private var lastFix: LocationFix?
    private var lastTime: Double?

    /// Creates a decoder.
    public init(assumedAccuracyMeters: Double = 10) {
        self.assumedAccuracyMeters = assumedAccuracyMeters
    }

    /// Decodes one line: a TPV with a fix, an ATT, or nothing (other classes, repeats of the same fix).
    mutating func decode(_ line: String) -> Result<[BusMessage], LineProblem> {
        guard let object = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)),
            let className = object["class"]?.stringValue
        else {
            return .failure(LineProblem("not a gpsd JSON report: '\(line.prefix(60))'"))
        }
        func number(_ key: String) -> Double? {
            guard let value = object[key]?.doubleValue, value.isFinite else { return nil }
            return value
        }
        switch className {
        case "TPV":
            guard let mode = number("mode"), mode >= 2, let lat = number("lat"), let lon = number("lon") else {
                return .success([])
            }
            guard let timeText = object["time"]?.stringValue, let time = CivilTime.parseISO8601(Substring(timeText))
            else {
                // gpsd reports a fix without a time until it knows the date: not usable, not an error.
                return .success([])
            }
            let accuracy: Double
            if let eph = number("eph"), eph > 0 {
                accuracy = eph
            } else if let epx = number("epx"), let epy = number("epy"), epx > 0 || epy > 0 {
                accuracy = ((epx * epx + epy * epy) / 2).squareRoot()
            } else {
                accuracy = self.assumedAccuracyMeters
            }
            let fix = LocationFix(
                timeSeconds: time, latitude: lat, longitude: lon,
                altitudeMeters: number("altHAE") ?? number("alt"), horizontalAccuracyMeters: accuracy,
                speedMetersPerSecond: number("speed"), courseDegrees: number("track").map(Angle.normalized))
            self.lastTime = time
            // gpsd reports an epoch several times as sentences arrive: pass on only what changed.
            if let last = self.lastFix, last.timeSeconds == fix.timeSeconds, last.latitude == fix.latitude,
                last.longitude == fix.longitude,
                (last.speedMetersPerSecond != nil) == (fix.speedMetersPerSecond != nil)
            {
                return .success([])
            }
            self.lastFix = fix
            return .success([.fix(fix)])
        case "ATT":
            let time = object["time"]?.stringValue.flatMap { CivilTime.parseISO8601(Substring($0)) } ?? self.lastTime
            guard let time else { return .success([]) }
            var out: [BusMessage] = []
            if let heading = number("heading") {
                out.append(
                    .heading(
                        HeadingSample(
                            timeSeconds: time, headingDegrees: Angle.normalized(heading),
                            reference: .trueNorth)))
            }
            if let pitch = number("pitch"), let roll = number("roll") {
                out.append(.attitude(Attitude(timeSeconds: time, pitchDegrees: pitch, rollDegrees: roll)))
            }
            return .success(out)
        default:
            return .success([])
        }
    }
}

extension GPSDSource {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let port = SettingSpec<Int>("port", default: 2947, in: 1...65_535, "gpsd's port.")
        public static let assumedAccuracyMeters = SettingSpec<Double>(
            "assumedAccuracyMeters", unit: "m", default: 10, in: 0.1...1000,
            "The accuracy given to a fix whose error estimates gpsd does not report.")
        public static let maximumBackoffSeconds = SettingSpec<Double>(
            "maximumBackoffSeconds", unit: "s", default: 5, in: 0.1...300,
            "The longest wait between reconnection attempts.")
        public static let host = ValueSpec<String>("host", default: "127.0.0.1", "Where gpsd listens.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [
            port.doc, assumedAccuracyMeters.doc, maximumBackoffSeconds.doc, host.doc,
        ]
    }
}
