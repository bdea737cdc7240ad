import Foundation
import Links
public import Logging
public import NavCore
import Synchronization

/// Plays entries at the pace of their times: 1 is real time, 10 ten times faster, 0 as fast as possible.
struct Pacer {
    let pace: Double
    private let clock = ContinuousClock()
    private var start: (wall: ContinuousClock.Instant, log: Double)?

    init(pace: Double) {
        self.pace = pace
    }

    mutating func wait(until logTime: Double) async throws {
        guard self.pace > 0 else {
            try Task.checkCancellation()
            return
        }
        guard let start = self.start else {
            self.start = (self.clock.now, logTime)
            return
        }
        let offset = max(0, logTime - start.log) / self.pace
        try await Task.sleep(until: start.wall + .seconds(offset), clock: self.clock)
    }
}

/// Counts what a source skipped, logging the first problem of each file with its line number.
final class ProblemCounter: Sendable {
    private let state = Mutex<(count: Int, logged: Bool, read: Int)>((0, false, 0))
    private let logger: Logger
    private let source: String

    init(logger: Logger, source: String) {
        self.logger = logger
        self.source = source
    }

    func read(_ count: Int = 1) {
        self.state.withLock { $0.read += count }
    }

    func report(_ problem: LogProblem) {
        let first = self.state.withLock { state -> Bool in
            state.count += 1
            defer { state.logged = true }
            return !state.logged
        }
        if first {
            self.logger.warning("\(self.source): skipped \(problem) (further bad lines are counted in the stage status)")
        }
    }

    var counters: [StatusCounter] {
        let state = self.state.withLock { $0 }
        return [StatusCounter(name: "read", value: UInt64(state.read)), StatusCounter(name: "skipped", value: UInt64(state.count))]
    }
}

/// Reads the settings every log source shares.
enum LogSettings {
    static func readerOptions(_ settings: inout Settings) throws -> LogReader.Options {
        var options = LogReader.Options()
        options.nmea.uereMeters = try settings.double("uereMeters", default: 4, in: 0.1...100)
        options.nmea.assumedAccuracyMeters = try settings.double("assumedAccuracyMeters", default: 10, in: 0.1...1000)
        if let date = try settings.optionalString("date") {
            guard let seconds = CivilTime.parseISO8601(Substring(date + "T00:00:00Z")) else {
                throw ConfigError.invalidValue(path: "\(settings.path).date", expected: "a date like 2024-05-01", found: "'\(date)'")
            }
            options.nmea.assumedDateDays = Int(seconds / 86_400)
        }
        if let start = try settings.optionalString("startTime") {
            guard let seconds = CivilTime.parseISO8601(Substring(start)) else {
                throw ConfigError.invalidValue(path: "\(settings.path).startTime", expected: "a time like 2024-05-01T10:00:00Z",
                                               found: "'\(start)'")
            }
            options.startTime = seconds
        }
        options.sensorInterval = try settings.double("interval", default: 0.1, in: 0.005...10)
        options.fixProviders = Set(try settings.strings("fixProviders", default: ["GPS"]))
        options.walkingSpeed = try settings.double("walkingSpeed", default: 1.4, in: 0.1...10)
        return options
    }
}

/// Replays a recorded log (NMEA, GPX or a sensor CSV/phyphox recording) at its own pace, scaled, or as
/// fast as possible; ends at the end of the file.
public struct LogReplaySource: MessageSource {
    public static let id = "log"

    /// The log.
    public let file: String
    /// Playback rate: 1 real time, k times faster, 0 as fast as possible.
    public let pace: Double
    /// Reader settings.
    public let options: LogReader.Options
    private let problems: ProblemCounter

    /// Creates a replay.
    public init(file: String, pace: Double, options: LogReader.Options = .init(), logger: Logger) {
        self.file = file
        self.pace = pace
        self.options = options
        self.problems = ProblemCounter(logger: logger, source: file)
    }

    /// Reads a config's settings: `file`, `pace`, and the reader settings; with `formats`, the file must be
    /// one of those (the `gpx` and `sensorlog` plugins).
    public init(settings: Settings, logger: Logger, formats: Set<LogFormat> = Set(LogFormat.allCases)) throws {
        var settings = settings
        guard let file = try settings.path("file") else { throw ConfigError.missingKey(path: settings.path, key: "file") }
        let pace = try settings.double("pace", default: 1, in: 0...100_000)
        let options = try LogSettings.readerOptions(&settings)
        try settings.finish()
        let format = try LogReader.format(of: file)
        guard formats.contains(format) else {
            throw ConfigError.invalidValue(path: "\(settings.path).file",
                                           expected: "a \(formats.map(\.rawValue).sorted().joined(separator: " or ")) log",
                                           found: "\(file), a \(format.rawValue) log")
        }
        self.init(file: file, pace: pace, options: options, logger: logger)
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        let result = try LogReader(options: self.options).read(self.file)
        for problem in result.problems { self.problems.report(problem) }
        var pacer = Pacer(pace: self.pace)
        for entry in result.entries {
            try await pacer.wait(until: entry.playbackTime)
            try await emit(entry.message)
            self.problems.read()
        }
    }

    public func statusCounters() async -> [StatusCounter] { self.problems.counters }
}

/// NMEA from a live serial device or a TCP stream (for example a phone app or `gpsfake -t`), decoded as it arrives.
public struct LiveNMEASource: MessageSource {
    public static let id = "nmea"

    /// Where the sentences come from.
    public enum Input: Sendable, Equatable {
        /// A serial device at a baud rate.
        case serial(path: String, baud: Int)
        /// A TCP server (host, port).
        case tcp(host: String, port: UInt16)
        /// A file, replayed at a pace.
        case file(path: String, pace: Double)
    }

    /// The input.
    public let input: Input
    /// Decoder settings.
    public let options: LogReader.Options
    private let logger: Logger
    private let problems: ProblemCounter

    /// Creates a source.
    public init(input: Input, options: LogReader.Options = .init(), logger: Logger) {
        self.input = input
        self.options = options
        self.logger = logger
        let name: String
        switch input {
        case let .serial(path, _): name = path
        case let .tcp(host, port): name = "tcp://\(host):\(port)"
        case let .file(path, _): name = path
        }
        self.problems = ProblemCounter(logger: logger, source: name)
    }

    /// Reads a config's settings: one of `file` (with `pace`), `device` (with `baud`) or `tcp` ("host:port").
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        let file = try settings.path("file")
        let device = try settings.optionalString("device")
        let tcp = try settings.optionalString("tcp")
        let pace = try settings.double("pace", default: 1, in: 0...100_000)
        let baud = try settings.int("baud", default: 9600, in: 300...4_000_000)
        let options = try LogSettings.readerOptions(&settings)
        try settings.finish()
        let input: Input
        switch (file, device, tcp) {
        case let (file?, nil, nil): input = .file(path: file, pace: pace)
        case let (nil, device?, nil): input = .serial(path: device, baud: baud)
        case let (nil, nil, address?):
            guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
                throw ConfigError.invalidValue(path: "\(settings.path).tcp", expected: "host:port", found: "'\(address)'")
            }
            input = .tcp(host: String(address[..<colon]), port: port)
        default:
            throw ConfigError.invalidValue(path: settings.path, expected: "exactly one of file, device or tcp", found: "\(settings.keys)")
        }
        self.init(input: input, options: options, logger: logger)
    }

    public var isLive: Bool {
        if case .file = self.input { return false }
        return true
    }

    /// A live receiver reports once a second unless set otherwise; a file's rate is its own.
    public var nominalPeriods: [BusMessage.Kind: Double] { self.isLive ? [.fix: 1] : [:] }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        if case let .file(path, pace) = self.input {
            try await LogReplaySource(file: path, pace: pace, options: self.options, logger: self.logger).run(emit: emit)
            return
        }
        let link: ByteLink
        switch self.input {
        case let .serial(path, baud): link = try ByteLink.serial(path: path, baud: baud, splitLines: true)
        case let .tcp(host, port): link = try ByteLink.tcp(host: host, port: port, splitLines: true)
        case .file: preconditionFailure("files are replayed above")
        }
        defer { link.close() }
        var decoder = NMEADecoder(options: self.options.nmea)
        var number = 0
        for await bytes in link.chunks {
            let line = String(decoding: bytes, as: UTF8.self)
            number += 1
            self.problems.read()
            switch decoder.decode(line: Substring(line)) {
            case let .success(messages):
                for message in messages { try await emit(message) }
            case let .failure(error):
                self.problems.report(LogProblem(line: number, reason: "\(error)"))
            }
        }
        for message in decoder.finish() { try await emit(message) }
        try Task.checkCancellation()
    }

    public func statusCounters() async -> [StatusCounter] { self.problems.counters }
}

/// GPX tracks and routes replayed by their timestamps (`gpx`).
public struct GPXSource: MessageSource {
    public static let id = "gpx"
    private let replay: LogReplaySource

    /// Reads a config's settings: `file`, `pace`, `walkingSpeed` (for untimed points), `uereMeters`, `assumedAccuracyMeters`.
    public init(settings: Settings, logger: Logger) throws {
        self.replay = try LogReplaySource(settings: settings, logger: logger, formats: [.gpx])
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws { try await self.replay.run(emit: emit) }
    public func statusCounters() async -> [StatusCounter] { await self.replay.statusCounters() }
}

/// Heading and tilt from sensor logs: a CSV of time, heading, pitch, roll, or a phyphox recording of raw
/// accelerometer and magnetometer samples turned into a tilt-compensated heading (`sensorlog`).
public struct SensorLogSource: MessageSource {
    public static let id = "sensorlog"
    private let replay: LogReplaySource

    /// Reads a config's settings: `file` (a CSV or a phyphox folder), `pace`, `startTime`, `interval`.
    public init(settings: Settings, logger: Logger) throws {
        self.replay = try LogReplaySource(settings: settings, logger: logger, formats: [.orientationCSV, .phyphox])
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws { try await self.replay.run(emit: emit) }
    public func statusCounters() async -> [StatusCounter] { await self.replay.statusCounters() }
}
