import Links
public import Logging
public import NavCore
import Synchronization

/// Heading and tilt from sensor logs: a CSV of time, heading, pitch, roll, or a phyphox recording of raw
/// accelerometer and magnetometer samples turned into a tilt-compensated heading (`sensorlog`).
public struct SensorLogSource: MessageSource {
    public static let id = "sensorlog"
    private let replay: LogReplaySource

    /// Reads a config's settings: `file` (a CSV or a phyphox folder), `pace`, `startTime`, `interval`.
    public init(settings: Settings, logger: Logger) throws {
        self.replay = try LogReplaySource(settings: settings, logger: logger, formats: [.orientationCSV, .phyphox])
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        try await self.replay.run(emit: emit)
    }
    public func statusCounters() async -> [StatusCounter] { await self.replay.statusCounters() }
}
