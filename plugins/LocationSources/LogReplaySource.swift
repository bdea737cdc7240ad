import Links
public import Logging
public import NavCore
import Parsers
import SystemIO
import Synchronization

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
        guard let file = try settings.inputFile(Setting.file) else {
            throw ConfigError.missingKey(path: settings.path, key: Setting.file.key)
        }
        let pace = try settings.value(Setting.pace)
        let options = try LogSettings.readerOptions(&settings)
        try settings.finish()
        let format = try LogReader.format(of: file)
        guard formats.contains(format) else {
            throw ConfigError.invalidValue(
                path: "\(settings.path).file",
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

extension LogReplaySource {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let pace = SettingSpec<Double>(
            "pace", default: 1, in: 0...100_000,
            "Replay speed: 1 at the pace it was recorded, 10 ten times faster, 0 as fast as the readers take it.")
        public static let file = ValueSpec<String>(
            "file", accepts: "a file",
            "The log (NMEA, GPX, GnssLogger, a sensor CSV or a phyphox folder; the format is detected).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [pace.doc, file.doc] + LogSettings.Setting.all
    }
}
