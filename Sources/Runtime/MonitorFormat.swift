public import Bus
import Foundation
import NavCore

/// Turns bus events into `monitor` lines: one short human line each, or one JSON object each.
public struct MonitorFormat: Sendable {
    /// JSON Lines instead of text.
    public var json: Bool

    /// Creates a formatter.
    public init(json: Bool) {
        self.json = json
    }

    private struct JSONLine: Encodable {
        var event: String
        var receiveTimeSeconds: Double
        var endpoint: String
        var stage: String?
        var topic: String?
        var sequence: UInt64?
        var sendTimeSeconds: Double?
        var schemaVersion: UInt8?
        var payload: BusMessage?
        var silenceSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case event, receiveTimeSeconds, endpoint, stage, topic, sequence, sendTimeSeconds, schemaVersion
            case payload, silenceSeconds
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.event, forKey: .event)
            try container.encode(self.receiveTimeSeconds, forKey: .receiveTimeSeconds)
            try container.encode(self.endpoint, forKey: .endpoint)
            try container.encodeIfPresent(self.stage, forKey: .stage)
            try container.encodeIfPresent(self.topic, forKey: .topic)
            try container.encodeIfPresent(self.sequence, forKey: .sequence)
            try container.encodeIfPresent(self.sendTimeSeconds, forKey: .sendTimeSeconds)
            try container.encodeIfPresent(self.schemaVersion, forKey: .schemaVersion)
            if let payload = self.payload?.payload { try container.encode(payload, forKey: .payload) }
            try container.encodeIfPresent(self.silenceSeconds, forKey: .silenceSeconds)
        }
    }

    /// The line for one event.
    public func line(for event: BusEvent, now: Double) -> String {
        if self.json {
            let line: JSONLine
            switch event {
            case let .message(received):
                line = JSONLine(event: "message", receiveTimeSeconds: Double(received.receiveTimeNanoseconds) / 1e9,
                                endpoint: received.endpoint, stage: received.header.stage,
                                topic: received.message.kind.topic, sequence: received.header.sequence,
                                sendTimeSeconds: Double(received.header.sendTimeNanoseconds) / 1e9,
                                schemaVersion: received.header.schemaVersion, payload: received.message)
            case let .publisherUp(endpoint, stage):
                line = JSONLine(event: "publisherUp", receiveTimeSeconds: now, endpoint: endpoint, stage: stage)
            case let .publisherLost(endpoint, stage, silence):
                line = JSONLine(event: "publisherLost", receiveTimeSeconds: now, endpoint: endpoint, stage: stage,
                                silenceSeconds: silence)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? String(decoding: encoder.encode(line), as: UTF8.self)) ?? "{}"
        }
        switch event {
        case let .message(received):
            let time = Self.clock(Double(received.receiveTimeNanoseconds) / 1e9)
            let topic = received.message.kind.topic.padding(toLength: 9, withPad: " ", startingAt: 0)
            let stage = received.header.stage.padding(toLength: 10, withPad: " ", startingAt: 0)
            return "\(time) \(stage) \(topic) #\(received.header.sequence) \(Self.summary(received.message))"
        case let .publisherUp(endpoint, stage):
            return "\(Self.clock(now)) \(stage.padding(toLength: 10, withPad: " ", startingAt: 0)) -- publisher up at \(endpoint)"
        case let .publisherLost(endpoint, stage, silence):
            return "\(Self.clock(now)) \(stage.padding(toLength: 10, withPad: " ", startingAt: 0)) -- publisher LOST at \(endpoint) (silent \(String(format: "%.2f", silence)) s)"
        }
    }

    private static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        let millis = Int((seconds - Double(whole)) * 1000)
        let day = whole % 86_400
        return String(format: "%02d:%02d:%02d.%03d", day / 3600, day / 60 % 60, day % 60, millis)
    }

    private static func f(_ value: Double, _ digits: Int = 1) -> String {
        String(format: "%.\(digits)f", value)
    }

    private static func f(_ value: Double?, _ digits: Int = 1) -> String {
        value.map { String(format: "%.\(digits)f", $0) } ?? "-"
    }

    /// A one-line summary of a message's fields.
    static func summary(_ message: BusMessage) -> String {
        switch message {
        case let .fix(fix):
            return "lat=\(f(fix.latitude, 7)) lon=\(f(fix.longitude, 7)) acc=\(f(fix.horizontalAccuracyMeters))m speed=\(f(fix.speedMetersPerSecond, 2))m/s course=\(f(fix.courseDegrees))°"
        case let .heading(sample):
            return "heading=\(f(sample.headingDegrees))° (\(sample.reference == .trueNorth ? "true" : "magnetic")) acc=\(f(sample.accuracyDegrees))°"
        case let .attitude(attitude):
            return "pitch=\(f(attitude.pitchDegrees))° roll=\(f(attitude.rollDegrees))°"
        case let .smoothed(fix):
            return "lat=\(f(fix.latitude, 7)) lon=\(f(fix.longitude, 7)) acc=\(f(fix.horizontalAccuracyMeters))m speed=\(f(fix.speedMetersPerSecond, 2))m/s course=\(f(fix.courseDegrees))°\(fix.reset ? " reset" : "")"
        case let .route(route):
            return "route \(route.routeID) by \(route.provider): \(f(route.lengthMeters))m, \(route.points.count) points, \(route.waypoints.count) waypoints"
        case let .progress(progress):
            return "\(progress.state) along=\(f(progress.distanceAlongMeters))m left=\(f(progress.distanceRemainingMeters))m xtrack=\(f(progress.crossTrackMeters))m next=#\(progress.nextWaypointIndex) \(f(progress.distanceToNextMeters))m @\(f(progress.bearingToNextDegrees))° eta=\(f(progress.etaSeconds, 0))s"
        case let .target(target):
            return "\(target.kind) bearing=\(f(target.bearingDegrees))° distance=\(f(target.distanceMeters))m"
        case let .cue(cue):
            return "\(cue.kind) intensity=\(f(cue.intensity, 2)) deviation=\(f(cue.deviationDegrees))°"
        case let .calibrationState(state):
            return "\(state.step) progress=\(f(state.progress, 2)) cue=\(f(state.cueIntensity, 2)) \"\(state.prompt)\""
        case let .calibrationResult(result):
            return result.succeeded
                ? "offset=\(f(result.offsetDegrees))° spread=\(f(result.spreadDegrees))° n=\(result.sampleCount)"
                : "aborted: \(result.reason)"
        case let .status(status):
            let counters = status.counters.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            return "\(status.health) \"\(status.message)\"\(counters.isEmpty ? "" : " " + counters)"
        }
    }
}
