import SessionFiles
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import Parsers
public import NavCore

/// `export --format mcap`: the session for Foxglove and other MCAP tools, in JSON. Fixes and smoothed fixes are
/// Foxglove `LocationFix` messages on `/fix` and `/smoothed` (the Map panel draws them as they are), each route a
/// Foxglove `GeoJSON` message on `/route`; every other message keeps its own JSON on `/<topic>` (the payloads of
/// `docs/PROTOCOL.md`). Log time is the receive time, publish time the send time.
extension SessionExport {
    /// Foxglove's LocationFix as a JSON Schema (https://docs.foxglove.dev/docs/visualization/message-schemas/location-fix).
    static let locationFixSchema = """
        {"title":"foxglove.LocationFix","description":"A navigation satellite fix","type":"object","properties":{\
        "timestamp":{"type":"object","properties":{"sec":{"type":"integer","minimum":0},"nsec":{"type":"integer","minimum":0,"maximum":999999999}}},\
        "frame_id":{"type":"string"},"latitude":{"type":"number"},"longitude":{"type":"number"},"altitude":{"type":"number"},\
        "position_covariance":{"type":"array","items":{"type":"number"},"minItems":9,"maxItems":9},\
        "position_covariance_type":{"type":"integer","enum":[0,1,2,3]}}}
        """

    /// Foxglove's GeoJSON message as a JSON Schema: one field holding a GeoJSON document as text.
    static let geoJSONSchema = """
        {"title":"foxglove.GeoJSON","type":"object","properties":{"geojson":{"type":"string"}}}
        """

    static func mcap(_ session: Session) -> [UInt8] {
        var writer = MCAPWriter(profile: "", library: "hapticnav export")
        var schemas: [String: UInt16] = [:]
        var channels: [String: UInt16] = [:]
        var sequences: [String: UInt32] = [:]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for record in session.records {
            guard let (channel, data) = FoxgloveChannels.encode(record.message, encoder: encoder) else { continue }
            let schema =
                schemas[channel.schemaName]
                ?? writer.addSchema(name: channel.schemaName, encoding: "jsonschema", data: Array(channel.schema.utf8))
            schemas[channel.schemaName] = schema
            let id =
                channels[channel.topic]
                ?? writer.addChannel(topic: channel.topic, messageEncoding: "json", schemaID: schema)
            channels[channel.topic] = id
            let sequence = sequences[channel.topic, default: 0]
            sequences[channel.topic] = sequence &+ 1
            writer.addMessage(
                channel: id, sequence: sequence, logTime: MCAP.nanoseconds(record.receiveTimeSeconds),
                publishTime: MCAP.nanoseconds(record.sendTimeSeconds ?? record.receiveTimeSeconds), data: data)
        }
        writer.finish()
        return writer.takeOutput()
    }
}

/// The channels HapticNav's messages take for Foxglove, the same in an exported MCAP file and on the live
/// WebSocket (`hapticnav foxglove`), so that one layout serves both: fixes and smoothed fixes as `foxglove.LocationFix`
/// on `/fix` and `/smoothed`, routes as `foxglove.GeoJSON` on `/route`, every other message its own JSON (the
/// payloads of `docs/PROTOCOL.md`) on `/<topic>`.
public enum FoxgloveChannels {
    /// A channel: its topic, and its schema's name and JSON Schema text.
    public struct Channel: Sendable, Equatable {
        public var topic: String
        public var schemaName: String
        public var schema: String
    }

    /// Every channel, in a fixed order.
    public static let all: [Channel] = BusMessage.Kind.allCases.map(Self.channel)

    /// The channel of a kind of message.
    public static func channel(_ kind: BusMessage.Kind) -> Channel {
        switch kind {
        case .fix: Channel(topic: "/fix", schemaName: "foxglove.LocationFix", schema: SessionExport.locationFixSchema)
        case .smoothed:
            Channel(topic: "/smoothed", schemaName: "foxglove.LocationFix", schema: SessionExport.locationFixSchema)
        case .route: Channel(topic: "/route", schemaName: "foxglove.GeoJSON", schema: SessionExport.geoJSONSchema)
        default:
            Channel(
                topic: "/\(kind.topic)", schemaName: "hapticnav.\(kind.topic)",
                schema: "{\"title\":\"hapticnav \(kind.topic), docs/PROTOCOL.md\",\"type\":\"object\"}")
        }
    }

    /// A message as its channel's JSON; nil when it cannot be encoded.
    public static func encode(_ message: BusMessage, encoder: JSONEncoder) -> (Channel, [UInt8])? {
        let json: JSONValue
        switch message {
        case let .fix(fix):
            json = SessionExport.locationFix(
                fix.timeSeconds, fix.latitude, fix.longitude, fix.altitudeMeters,
                accuracy: fix.horizontalAccuracyMeters, frame: "gps")
        case let .smoothed(fix):
            json = SessionExport.locationFix(
                fix.timeSeconds, fix.latitude, fix.longitude, nil, accuracy: fix.horizontalAccuracyMeters,
                frame: "smoothed")
        case let .route(route):
            let geometry: JSONValue = [
                "type": "Feature",
                "properties": [
                    "routeID": .number(Double(route.routeID)), "provider": .string(route.provider),
                    "lengthMeters": .number(route.lengthMeters),
                ],
                "geometry": [
                    "type": "LineString",
                    "coordinates": .array(route.points.map { [.number($0.longitude), .number($0.latitude)] }),
                ],
            ]
            let text = (try? encoder.encode(geometry)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            json = ["geojson": .string(text)]
        default:
            guard let payload = try? encoder.encode(message.payload),
                let value = try? JSONDecoder().decode(JSONValue.self, from: payload)
            else { return nil }
            json = value
        }
        guard let data = try? encoder.encode(json) else { return nil }
        return (Self.channel(message.kind), [UInt8](data))
    }
}

extension SessionExport {
    static func locationFix(
        _ time: Double, _ latitude: Double, _ longitude: Double, _ altitude: Double?, accuracy: Double, frame: String
    ) -> JSONValue {
        let seconds = time.rounded(.down)
        let variance = accuracy * accuracy
        return [
            "timestamp": ["sec": .number(seconds), "nsec": .number(((time - seconds) * 1e9).rounded())],
            "frame_id": .string(frame),
            "latitude": .number(latitude), "longitude": .number(longitude), "altitude": .number(altitude ?? 0),
            // The horizontal accuracy as the east and north variances; height unknown.
            "position_covariance": .array([variance, 0, 0, 0, variance, 0, 0, 0, 0].map { .number($0) }),
            "position_covariance_type": .number(1),
        ]
    }
}
