#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
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
        let fixSchema = writer.addSchema(
            name: "foxglove.LocationFix", encoding: "jsonschema", data: Array(Self.locationFixSchema.utf8))
        let geoJSONSchema = writer.addSchema(
            name: "foxglove.GeoJSON", encoding: "jsonschema", data: Array(Self.geoJSONSchema.utf8))
        var channels: [String: UInt16] = [:]
        var sequences: [String: UInt32] = [:]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func channel(_ topic: String, schema: () -> UInt16) -> UInt16 {
            if let id = channels[topic] { return id }
            let id = writer.addChannel(topic: topic, messageEncoding: "json", schemaID: schema())
            channels[topic] = id
            return id
        }
        func add(_ topic: String, _ record: RecordedMessage, _ json: JSONValue, schema: () -> UInt16) {
            let id = channel(topic, schema: schema)
            let sequence = sequences[topic, default: 0]
            sequences[topic] = sequence &+ 1
            let data = (try? encoder.encode(json)).map { [UInt8]($0) } ?? Array("{}".utf8)
            writer.addMessage(
                channel: id, sequence: sequence, logTime: MCAP.nanoseconds(record.receiveTimeSeconds),
                publishTime: MCAP.nanoseconds(record.sendTimeSeconds ?? record.receiveTimeSeconds), data: data)
        }
        for record in session.records {
            switch record.message {
            case let .fix(fix):
                add(
                    "/fix", record,
                    Self.locationFix(
                        fix.timeSeconds, fix.latitude, fix.longitude, fix.altitudeMeters,
                        accuracy: fix.horizontalAccuracyMeters, frame: "gps")
                ) { fixSchema }
            case let .smoothed(fix):
                add(
                    "/smoothed", record,
                    Self.locationFix(
                        fix.timeSeconds, fix.latitude, fix.longitude, nil,
                        accuracy: fix.horizontalAccuracyMeters, frame: "smoothed")
                ) { fixSchema }
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
                add("/route", record, ["geojson": .string(text)]) { geoJSONSchema }
            default:
                let topic = record.message.kind.topic
                guard let payload = try? encoder.encode(record.message.payload),
                    let json = try? JSONDecoder().decode(JSONValue.self, from: payload)
                else { continue }
                add("/\(topic)", record, json) {
                    writer.addSchema(
                        name: "hapticnav.\(topic)", encoding: "jsonschema",
                        data: Array("{\"title\":\"hapticnav \(topic), docs/PROTOCOL.md\",\"type\":\"object\"}".utf8))
                }
            }
        }
        writer.finish()
        return writer.takeOutput()
    }

    private static func locationFix(
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
