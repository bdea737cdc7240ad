import SessionFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
public import NavCore
import Parsers
import SystemIO

/// The `replay` source: plays back a session (a folder of MCAP parts as the `mcap` recorder writes it, one .mcap file,
/// or a JSON Lines recording of the `jsonl` recorder) at the pace it was received (scaled, or as fast as possible),
/// optionally only some topics — for example the route controller's targets and the source's headings, to test a
/// haptic sink without Group 1 running. A record that cannot be read is counted, logged once with its place, and
/// skipped. (`hapticnav replay` does the same from the command line, without a config.)
public struct RecordingReplaySource: MessageSource {
    public static let id = "replay"

    /// The recording.
    public let file: String
    /// Playback rate: 1 real time, k times faster, 0 as fast as possible.
    public let pace: Double
    /// Topics to play; empty for all.
    public let topics: Set<String>
    private let problems: ProblemCounter

    /// Creates a replay.
    public init(file: String, pace: Double, topics: Set<String> = [], logger: Logger) {
        self.file = file
        self.pace = pace
        self.topics = topics
        self.problems = ProblemCounter(logger: logger, source: file)
    }

    /// Reads a config's settings: `file`, `pace`, `topics`.
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        guard let file = try settings.inputFile(Setting.file) else {
            throw ConfigError.missingKey(path: settings.path, key: Setting.file.key)
        }
        let pace = try settings.value(Setting.pace)
        let topics = try settings.value(Setting.topics)
        for topic in topics where BusMessage.Kind(topic: topic) == nil {
            throw ConfigError.invalidValue(
                path: "\(settings.path).topics", expected: "message topics", found: "'\(topic)'")
        }
        try settings.finish()
        guard FileManager.default.fileExists(atPath: file) else {
            throw ConfigError.invalidValue(
                path: "\(settings.path).file", expected: "a recording", found: "\(file): no such file")
        }
        self.init(file: file, pace: pace, topics: Set(topics), logger: logger)
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        var records: [RecordedMessage] = []
        let summary: SessionReader.Summary
        do {
            summary = try SessionReader.read(self.file) { record in
                if self.topics.isEmpty || self.topics.contains(record.message.kind.topic) { records.append(record) }
            }
        } catch let failure as SessionReader.Failure {
            throw LogError.unreadable(reason: failure.description)
        }
        for _ in 0..<summary.badRecords {
            self.problems.report(
                LogProblem(line: 0, reason: "unreadable record (the first: \(summary.firstBad ?? "?"))"))
        }
        var pacer = Pacer(pace: self.pace)
        for record in records {
            try await pacer.wait(until: record.recordedClockSeconds)
            try await emit(record.message)
            self.problems.read()
        }
    }

    public func statusCounters() async -> [StatusCounter] { self.problems.counters }
}

extension RecordingReplaySource {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let pace = SettingSpec<Double>(
            "pace", default: 1, in: 0...100_000,
            "Replay speed: 1 at the pace it was recorded, 0 as fast as the readers take it.")
        public static let file = ValueSpec<String>(
            "file", accepts: "a file", "A session: an mcap recorder's folder, an .mcap file, or a jsonl recording.")
        public static let topics = ValueSpec<[String]>(
            "topics", default: [], "Replay only these topics (all when empty).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [pace.doc, file.doc, topics.doc]
    }
}
