#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
public import NavCore
import Parsers

/// The `replay` source: plays back a recording made by the `jsonl` recorder, at the pace it was received
/// (scaled, or as fast as possible), optionally only some topics — for example the route controller's targets
/// and the source's headings, to test a haptic sink without Group 1 running. A broken line is counted,
/// logged once with its number, and skipped.
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
        guard let file = try settings.inputFile("file") else {
            throw ConfigError.missingKey(path: settings.path, key: "file")
        }
        let pace = try settings.double("pace", default: 1, in: 0...100_000)
        let topics = try settings.strings("topics")
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
        let text = try String(contentsOfFile: self.file, encoding: .utf8)
        let decoder = JSONDecoder()
        var pacer = Pacer(pace: self.pace)
        for (index, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            guard let record = try? decoder.decode(RecordedMessage.self, from: Data(line.utf8)) else {
                self.problems.report(LogProblem(line: index + 1, reason: "not a recorded message"))
                continue
            }
            guard self.topics.isEmpty || self.topics.contains(record.message.kind.topic) else { continue }
            try await pacer.wait(until: record.receiveTimeSeconds)
            try await emit(record.message)
            self.problems.read()
        }
    }

    public func statusCounters() async -> [StatusCounter] { self.problems.counters }
}
