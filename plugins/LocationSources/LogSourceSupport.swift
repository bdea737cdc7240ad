import Links
import Logging
import NavCore
import Parsers
import Synchronization

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
            self.logger.warning(
                "\(self.source): skipped \(problem) (further bad lines are counted in the stage status)")
        }
    }

    var counters: [StatusCounter] {
        let state = self.state.withLock { $0 }
        return [
            StatusCounter(name: "read", value: UInt64(state.read)),
            StatusCounter(name: "skipped", value: UInt64(state.count)),
        ]
    }
}

/// Reads the settings every log source shares.
enum LogSettings {
    static func readerOptions(_ settings: inout Settings) throws -> LogReader.Options {
        var options = LogReader.Options()
        options.nmea.uereMeters = try settings.value(Setting.uereMeters)
        options.nmea.assumedAccuracyMeters = try settings.value(Setting.assumedAccuracyMeters)
        if let date = try settings.optionalValue(Setting.date) {
            guard let seconds = CivilTime.parseISO8601(Substring(date + "T00:00:00Z")) else {
                throw ConfigError.invalidValue(
                    path: "\(settings.path).date", expected: "a date like 2024-05-01", found: "'\(date)'")
            }
            options.nmea.assumedDateDays = Int(seconds / 86_400)
        }
        if let start = try settings.optionalValue(Setting.startTime) {
            guard let seconds = CivilTime.parseISO8601(Substring(start)) else {
                throw ConfigError.invalidValue(
                    path: "\(settings.path).startTime", expected: "a time like 2024-05-01T10:00:00Z",
                    found: "'\(start)'")
            }
            options.startTime = seconds
        }
        options.sensorInterval = try settings.value(Setting.interval)
        options.fixProviders = Set(try settings.value(Setting.fixProviders))
        options.walkingSpeed = try settings.value(Setting.walkingSpeed)
        return options
    }
}

extension LogSettings {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    internal enum Setting {
        internal static let uereMeters = SettingSpec<Double>(
            "uereMeters", unit: "m", default: 4, in: 0.1...100,
            "NMEA: the receiver's range error, which times a fix's HDOP is its accuracy when it gives no GST.")
        internal static let assumedAccuracyMeters = SettingSpec<Double>(
            "assumedAccuracyMeters", unit: "m", default: 10, in: 0.1...1000,
            "The accuracy given to a fix that says nothing of its own.")
        internal static let interval = SettingSpec<Double>(
            "interval", unit: "s", default: 0.1, in: 0.005...10,
            "A sensor log: the time between samples without a time of their own.")
        internal static let walkingSpeed = SettingSpec<Double>(
            "walkingSpeed", unit: "m/s", default: 1.4, in: 0.1...10,
            "GPX: the speed that times points without timestamps.")
        internal static let date = ValueSpec<String>(
            "date", accepts: "a date like 2024-05-01",
            "NMEA: the day (2024-05-01) of a log whose sentences carry no date.")
        internal static let startTime = ValueSpec<String>(
            "startTime", accepts: "a time like 2024-05-01T10:00:00Z",
            "A sensor log: the time (2024-05-01T10:00:00Z) of its first sample, when it has none.")
        internal static let fixProviders = ValueSpec<[String]>(
            "fixProviders", default: ["GPS"], "GnssLogger: the location providers whose fixes are taken.")

        /// Every setting, as documentation shows it.
        internal static let all: [SettingDoc] = [
            uereMeters.doc, assumedAccuracyMeters.doc, interval.doc, walkingSpeed.doc, date.doc, startTime.doc,
            fixProviders.doc,
        ]
    }
}
