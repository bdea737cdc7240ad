import Foundation
public import NavCore

/// `hapticnav route`'s output formats.
public enum RouteOutput {
    /// The route as text, JSON (with `lengthMeters`, `coordinates` as [lat, lon] and the waypoints), GeoJSON or GPX.
    public static func render(_ route: Route, format: String) -> String {
        switch format {
        case "json":
            let object: [String: Any] = [
                "provider": route.provider,
                "lengthMeters": route.lengthMeters,
                "coordinates": route.points.map { [$0.latitude, $0.longitude] },
                "waypoints": route.waypoints.map { waypoint -> [String: Any] in
                    [
                        "latitude": waypoint.coordinate.latitude, "longitude": waypoint.coordinate.longitude,
                        "distanceAlongMeters": waypoint.distanceAlongMeters,
                        "bearingDegrees": waypoint.outgoingBearingDegrees,
                        "turnDegrees": waypoint.turnDegrees, "kind": waypoint.kind.name,
                        "instruction": waypoint.instruction,
                    ]
                },
            ]
            return Self.json(object)
        case "geojson":
            let features: [[String: Any]] =
                [
                    [
                        "type": "Feature",
                        "properties": ["provider": route.provider, "lengthMeters": route.lengthMeters],
                        "geometry": [
                            "type": "LineString", "coordinates": route.points.map { [$0.longitude, $0.latitude] },
                        ],
                    ]
                ]
                + route.waypoints.map { waypoint in
                    [
                        "type": "Feature",
                        "properties": [
                            "instruction": waypoint.instruction, "kind": waypoint.kind.name,
                            "distanceAlongMeters": waypoint.distanceAlongMeters,
                        ],
                        "geometry": [
                            "type": "Point",
                            "coordinates": [waypoint.coordinate.longitude, waypoint.coordinate.latitude],
                        ],
                    ]
                }
            return Self.json(["type": "FeatureCollection", "features": features])
        case "gpx":
            var gpx =
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"hapticnav\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n<rte><name>\(route.provider) route, \(Int(route.lengthMeters.rounded())) m</name>\n"
            let waypointAt = Dictionary(
                route.waypoints.map { ($0.coordinate, $0.instruction) }, uniquingKeysWith: { a, _ in a })
            for point in route.points {
                gpx += "<rtept lat=\"\(point.latitude)\" lon=\"\(point.longitude)\">"
                if let instruction = waypointAt[point] { gpx += "<desc>\(Self.escape(instruction))</desc>" }
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
                text += String(format: "%6.0f m  ", waypoint.distanceAlongMeters) + waypoint.instruction + leg + "\n"
            }
            return text.trimmingCharacters(in: .newlines)
        }
    }

    private static func json(_ object: Any) -> String {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map {
            String(decoding: $0, as: UTF8.self)
        } ?? "{}"
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
