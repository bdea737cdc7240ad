import Links
public import Logging
public import NavCore
import Synchronization

/// GPX tracks and routes replayed by their timestamps (`gpx`).
public struct GPXSource: MessageSource {
    public static let id = "gpx"
    private let replay: LogReplaySource

    /// Reads a config's settings: `file`, `pace`, `walkingSpeed` (for untimed points), `uereMeters`, `assumedAccuracyMeters`.
    public init(settings: Settings, logger: Logger) throws {
        self.replay = try LogReplaySource(settings: settings, logger: logger, formats: [.gpx])
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        try await self.replay.run(emit: emit)
    }
    public func statusCounters() async -> [StatusCounter] { await self.replay.statusCounters() }
}
