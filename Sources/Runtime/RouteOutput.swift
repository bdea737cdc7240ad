import SessionTools
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
public import NavCore

/// `hapticnav route`'s output formats.
public enum RouteOutput {
    /// The route as text, JSON (with `lengthMeters`, `coordinates` as [lat, lon] and the waypoints), GeoJSON or GPX.
    public static func render(_ route: Route, format: String) -> String {
        switch format {
        case "json":
            let object: JSONValue = [
                "provider": .string(route.provider),
                "lengthMeters": .number(route.lengthMeters),
                "coordinates": .array(route.points.map { [.number($0.latitude), .number($0.longitude)] }),
                "waypoints": .array(
                    route.waypoints.map { waypoint in
                        [
                            "latitude": .number(waypoint.coordinate.latitude),
                            "longitude": .number(waypoint.coordinate.longitude),
                            "distanceAlongMeters": .number(waypoint.distanceAlongMeters),
                            "bearingDegrees": .number(waypoint.outgoingBearingDegrees),
                            "turnDegrees": .number(waypoint.turnDegrees), "kind": .string(waypoint.kind.name),
                            "instruction": .string(waypoint.instruction),
                        ]
                    }),
            ]
            return Self.json(object)
        case "geojson":
            let line: JSONValue = [
                "type": "Feature",
                "properties": ["provider": .string(route.provider), "lengthMeters": .number(route.lengthMeters)],
                "geometry": [
                    "type": "LineString",
                    "coordinates": .array(route.points.map { [.number($0.longitude), .number($0.latitude)] }),
                ],
            ]
            let points: [JSONValue] = route.waypoints.map { waypoint in
                [
                    "type": "Feature",
                    "properties": [
                        "instruction": .string(waypoint.instruction), "kind": .string(waypoint.kind.name),
                        "distanceAlongMeters": .number(waypoint.distanceAlongMeters),
                    ],
                    "geometry": [
                        "type": "Point",
                        "coordinates": [.number(waypoint.coordinate.longitude), .number(waypoint.coordinate.latitude)],
                    ],
                ]
            }
            return Self.json(["type": "FeatureCollection", "features": .array([line] + points)])
        case "gpx":
            var gpx =
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"hapticnav\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n<rte><name>\(route.provider) route, \(Int(route.lengthMeters.rounded())) m</name>\n"
            let waypointAt = Dictionary(
                route.waypoints.map { ($0.coordinate, $0.instruction) }, uniquingKeysWith: { a, _ in a })
            for point in route.points {
                gpx += "<rtept lat=\"\(point.latitude)\" lon=\"\(point.longitude)\">"
                if let instruction = waypointAt[point] { gpx += "<desc>\(xmlEscaped(instruction))</desc>" }
                gpx += "</rtept>\n"
            }
            return gpx + "</rte>\n</gpx>"
        default:
            var text =
                "\(route.provider) route: \(Int(route.lengthMeters.rounded())) m, \(route.points.count) points, \(route.waypoints.count) waypoints\n"
            for (index, waypoint) in route.waypoints.enumerated() {
                let leg =
                    index + 1 < route.waypoints.count
                    ? " — then \(Int((route.waypoints[index + 1].distanceAlongMeters - waypoint.distanceAlongMeters).rounded())) m heading \(Int(waypoint.outgoingBearingDegrees.rounded()))°"
                    : ""
                text += String(cFormat: "%6.0f m  ", waypoint.distanceAlongMeters) + waypoint.instruction + leg + "\n"
            }
            return text.trimming(where: \.isNewline)
        }
    }

    private static func json(_ object: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
