import Links
public import Logging
public import NavCore
import Parsers
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
        guard let file = try settings.inputFile("file") else {
            throw ConfigError.missingKey(path: settings.path, key: "file")
        }
        let pace = try settings.double("pace", default: 1, in: 0...100_000)
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
