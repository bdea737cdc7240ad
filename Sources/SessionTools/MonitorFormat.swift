public import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
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
                line = JSONLine(
                    event: "message", receiveTimeSeconds: Double(received.receiveTimeNanoseconds) / 1e9,
                    endpoint: received.endpoint, stage: received.header.stage,
                    topic: received.message.kind.topic, sequence: received.header.sequence,
                    sendTimeSeconds: Double(received.header.sendTimeNanoseconds) / 1e9,
                    schemaVersion: received.header.schemaVersion, payload: received.message)
            case let .publisherUp(endpoint, stage):
                line = JSONLine(event: "publisherUp", receiveTimeSeconds: now, endpoint: endpoint, stage: stage)
            case let .publisherLost(endpoint, stage, silence):
                line = JSONLine(
                    event: "publisherLost", receiveTimeSeconds: now, endpoint: endpoint, stage: stage,
                    silenceSeconds: silence)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? String(decoding: encoder.encode(line), as: UTF8.self)) ?? "{}"
        }
        switch event {
        case let .message(received):
            let time = Self.clock(Double(received.receiveTimeNanoseconds) / 1e9)
            let topic = received.message.kind.topic.padded(to: 9)
            let stage = received.header.stage.padded(to: 10)
            return "\(time) \(stage) \(topic) #\(received.header.sequence) \(received.message.summary)"
        case let .publisherUp(endpoint, stage):
            return
                "\(Self.clock(now)) \(stage.padded(to: 10)) -- publisher up at \(endpoint)"
        case let .publisherLost(endpoint, stage, silence):
            return
                "\(Self.clock(now)) \(stage.padded(to: 10)) -- publisher LOST at \(endpoint) (silent \(fixedDecimal(silence, digits: 2)) s)"
        }
    }

    private static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        let millis = Int((seconds - Double(whole)) * 1000)
        let day = whole % 86_400
        return String(cFormat: "%02d:%02d:%02d.%03d", day / 3600, day / 60 % 60, day % 60, millis)
    }
}
