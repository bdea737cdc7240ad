#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
import SystemIO
import Parsers

/// One decoded item of a log, with where it came from.
public struct LogEntry: Sendable {
    /// The message.
    public var message: BusMessage
    /// Its line in the file (for a folder, in the file that gave it).
    public var line: Int
    /// When to play it relative to the others [seconds]: the message's own time. (A logger's wall clock, as in
    /// GnssLogger's `NMEA,…,<unix ms>`, is not used: an epoch's fix is complete only at a later line.)
    public var playbackTime: Double
}

/// A line, record or point that was counted and skipped.
public struct LogProblem: Sendable, Equatable, CustomStringConvertible {
    /// Its line in the file.
    public var line: Int
    /// What was wrong.
    public var reason: String
    public var description: String { "line \(self.line): \(self.reason)" }
}

/// The formats `LogReader` knows.
public enum LogFormat: String, CaseIterable, Sendable {
    /// NMEA 0183, plain or as GnssLogger's `NMEA,…` lines, with GnssLogger's `Fix,` and `OrientationDeg,` lines.
    case nmea
    /// GPX tracks and routes.
    case gpx
    /// A CSV of time, heading, pitch, roll.
    case orientationCSV = "csv"
    /// A phyphox recording folder with Accelerometer.csv and Magnetometer.csv.
    case phyphox
}

/// Reads any supported log into messages, in time order, with the problems it skipped.
public struct LogReader: Sendable {
    /// Settings for the readers.
    public struct Options: Sendable {
        /// NMEA decoding settings.
        public var nmea = NMEADecoder.Options()
        /// Time zero of logs whose times are relative (phyphox, CSV with small times) [seconds since 1970].
        public var startTime = 0.0
        /// Interval of samples made from raw sensor data [seconds].
        public var sensorInterval = 0.1
        /// GnssLogger `Fix` providers to use (GPS, FLP, NLP); empty for all.
        public var fixProviders: Set<String> = ["GPS"]
        /// Walking speed for timing GPX points that have no time [metres per second].
        public var walkingSpeed = 1.4

        /// The defaults.
        public init() {}
    }

    /// What was read.
    public struct Result: Sendable {
        /// The format detected.
        public var format: LogFormat
        /// Messages in time order.
        public var entries: [LogEntry]
        /// What was skipped, with line numbers.
        public var problems: [LogProblem]
    }

    /// The options in use.
    public var options: Options

    /// Creates a reader.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// Detects the format of `path` from its name and first bytes.
    public static func format(of path: String) throws -> LogFormat {
        var isFolder = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw LogError.unreadable(reason: "\(path): no such file")
        }
        if isFolder {
            guard FileManager.default.fileExists(atPath: path + "/Magnetometer.csv") else {
                throw LogError.unreadable(
                    reason: "\(path): a folder, but not a phyphox recording (no Magnetometer.csv)")
            }
            return .phyphox
        }
        let lower = path.lowercased()
        if lower.hasSuffix(".gpx") { return .gpx }
        let head: String
        let headBytes: [UInt8]
        do {
            let handle = try InputFile(path: path)
            defer { handle.close() }
            headBytes = try handle.read(upTo: 64 * 1024)
            head = String(decoding: headBytes, as: UTF8.self)
        } catch {
            throw LogError.unreadable(reason: "\(path): cannot be read (\(error.reason))")
        }
        if head.contains("<gpx") { return .gpx }
        // NMEA by what it is (any talker, valid checksums, binary frames skipped), or GnssLogger's records.
        if NMEADetection.isNMEA(headBytes) || head.contains("\nNMEA,") || head.hasPrefix("NMEA,")
            || head.contains("\nFix,") || head.hasPrefix("Fix,")
        {
            return .nmea
        }
        if lower.hasSuffix(".csv") { return .orientationCSV }
        throw LogError.unreadable(reason: "\(path): not NMEA, GPX or a sensor CSV")
    }

    /// Why a file could not be read, in a few words ("Input/output error").
    static func reason(_ error: any Error) -> String {
        if let error = error as? SystemError { return error.reason }
        return "\(error)"
    }

    /// Reads a whole log; anything that goes wrong is a ``LogError`` naming the file.
    public func read(_ path: String) throws -> Result {
        do {
            return try self.readUnchecked(path)
        } catch let LogError.unreadable(reason) {
            throw LogError.unreadable(reason: reason.hasPrefix(path) ? reason : "\(path): \(reason)")
        } catch {
            throw LogError.unreadable(reason: "\(path): cannot be read (\(Self.reason(error)))")
        }
    }

    private func readUnchecked(_ path: String) throws -> Result {
        let format = try Self.format(of: path)
        switch format {
        case .nmea: return try self.readNMEA(path)
        case .gpx:
            let reader = try GPXReader.read(Data(try InputFile.contents(of: path)))
            let fixes = GPXFixes.fixes(
                reader.points, walkingSpeed: self.options.walkingSpeed,
                uereMeters: self.options.nmea.uereMeters,
                assumedAccuracyMeters: self.options.nmea.assumedAccuracyMeters,
                epoch: self.options.startTime)
            let entries = zip(reader.points, fixes).map {
                LogEntry(message: .fix($1), line: $0.line, playbackTime: $1.timeSeconds)
            }
            return Result(
                format: .gpx, entries: Self.sorted(entries),
                problems: reader.problems.map { LogProblem(line: $0.line, reason: $0.reason) })
        case .orientationCSV:
            let text = try String(contentsOfFile: path, encoding: .utf8)
            guard
                let parsed = SensorLog.orientationCSV(
                    text, startTime: self.options.startTime, reference: .magneticNorth)
            else {
                throw LogError.unreadable(reason: "\(path): a CSV without time and heading (or yaw, azimuth) columns")
            }
            return Result(
                format: .orientationCSV,
                entries: Self.sorted(
                    parsed.messages.map {
                        LogEntry(message: $0.message, line: $0.line, playbackTime: Self.time(of: $0.message))
                    }),
                problems: parsed.problems.map { LogProblem(line: $0.line, reason: $0.reason) })
        case .phyphox:
            let parsed = try SensorLog.phyphox(
                folder: path, startTime: self.options.startTime, interval: self.options.sensorInterval)
            return Result(
                format: .phyphox,
                entries: Self.sorted(
                    parsed.messages.map {
                        LogEntry(message: $0.message, line: $0.line, playbackTime: Self.time(of: $0.message))
                    }),
                problems: parsed.problems.map { LogProblem(line: $0.line, reason: $0.reason) })
        }
    }

    private func readNMEA(_ path: String) throws -> Result {
        let text = try String(contentsOfFile: path, encoding: .isoLatin1)
        var decoder = NMEADecoder(options: self.options.nmea)
        var entries: [LogEntry] = []
        var problems: [LogProblem] = []
        for (index, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            if line.hasPrefix("Fix,") || line.hasPrefix("OrientationDeg,") {
                switch GnssLoggerLine.decode(line, providers: self.options.fixProviders) {
                case let .success(messages):
                    entries += messages.map { LogEntry(message: $0, line: number, playbackTime: Self.time(of: $0)) }
                case let .failure(problem):
                    problems.append(LogProblem(line: number, reason: problem.reason))
                }
                continue
            }
            if let first = line.first, first != "$" && first != "!" && !line.hasPrefix("NMEA,") && first != "#" {
                // Other GnssLogger records (Raw, Accel, …) are not navigation messages: not problems either.
                if line.contains(",") && line.prefix(while: { $0 != "," }).allSatisfy(\.isLetter) { continue }
            }
            switch decoder.decode(line: line) {
            case let .success(messages):
                entries += messages.map { LogEntry(message: $0, line: number, playbackTime: Self.time(of: $0)) }
            case let .failure(error):
                problems.append(LogProblem(line: number, reason: "\(error)"))
            }
        }
        entries += decoder.finish().map { LogEntry(message: $0, line: 0, playbackTime: Self.time(of: $0)) }
        if decoder.counters.undated > 0 {
            problems.append(
                LogProblem(
                    line: 0,
                    reason:
                        "\(decoder.counters.undated) fix(es) before any date (RMC or ZDA) were dropped; set a date to keep them"
                ))
        }
        return Result(format: .nmea, entries: Self.sorted(entries), problems: problems)
    }

    /// Time order, keeping file order among equal times (a held fix is released late but belongs early).
    private static func sorted(_ entries: [LogEntry]) -> [LogEntry] {
        entries.enumerated().sorted { ($0.element.playbackTime, $0.offset) < ($1.element.playbackTime, $1.offset) }.map(
            \.element)
    }

    static func time(of message: BusMessage) -> Double {
        switch message {
        case let .fix(fix): return fix.timeSeconds
        case let .heading(heading): return heading.timeSeconds
        case let .attitude(attitude): return attitude.timeSeconds
        default: return 0
        }
    }
}
