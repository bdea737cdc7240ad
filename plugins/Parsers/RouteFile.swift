import Foundation
public import NavCore

/// Reads a route from a file: GeoJSON (LineString, MultiLineString, Feature, FeatureCollection), GPX
/// (route or track), a bare encoded polyline, or a saved directions response from Valhalla (`trip`),
/// OSRM or Mapbox (`routes[0].geometry`, as a polyline or GeoJSON) or Google (`overview_polyline`).
public enum RouteFile {
    /// Loads the route in `file`; `precision` is for bare polylines (5 Google/OSRM, 6 Valhalla).
    public static func load(file: String, precision: Int = 5) throws -> RoutePlan {
        if file.lowercased().hasSuffix(".gpx") {
            return RoutePlan(points: try GPXPath.load(file: file))
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw RoutingError.providerFailed(reason: "\(file): cannot be read")
        }
        if let line = TextChecks.firstLineNotUTF8(Array(data)) {
            throw RoutingError.providerFailed(reason: "\(file): line \(line) is not UTF-8 text")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("<") { return RoutePlan(points: try GPXPath.load(file: file)) }
        guard text.hasPrefix("{") else {
            do {
                return RoutePlan(points: try self.decode(text, precision: precision, file: file))
            } catch {
                throw RoutingError.providerFailed(
                    reason: "\(file): not GeoJSON, GPX, a directions response or an encoded polyline (\(error))")
            }
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw RoutingError.providerFailed(reason: "\(file): broken JSON")
        }
        return try self.plan(fromJSON: object, file: file, precision: precision)
    }

    /// A plan from a parsed JSON document of any supported kind.
    public static func plan(fromJSON object: [String: Any], file: String, precision: Int) throws -> RoutePlan {
        // Valhalla: trip.legs[].shape (polyline6), maneuvers with street names.
        if let trip = object["trip"] as? [String: Any], let legs = trip["legs"] as? [[String: Any]] {
            return try self.valhallaPlan(legs: legs, file: file)
        }
        // Google: routes[0].overview_polyline.points (precision 5).
        if let routes = object["routes"] as? [[String: Any]], let first = routes.first {
            if let overview = first["overview_polyline"] as? [String: Any], let encoded = overview["points"] as? String
            {
                return RoutePlan(points: try self.decode(encoded, precision: 5, file: file))
            }
            // OSRM / Mapbox: routes[0].geometry, a polyline (precision unknown: the one matching "distance") or GeoJSON.
            if let encoded = first["geometry"] as? String {
                let distance = first["distance"] as? Double
                guard let distance, distance > 0 else {
                    return RoutePlan(points: try self.decode(encoded, precision: precision, file: file))
                }
                // Decoded at the wrong precision, coordinates are off by ten (or out of range): keep the one whose
                // length matches the response's distance.
                let candidates = [5, 6].compactMap { try? self.decode(encoded, precision: $0, file: file) }
                guard
                    let best = candidates.min(by: {
                        abs(Polyline($0).lengthMeters - distance) < abs(Polyline($1).lengthMeters - distance)
                    })
                else {
                    throw RoutingError.providerFailed(reason: "\(file): routes[0].geometry is not an encoded polyline")
                }
                return RoutePlan(points: best, reportedLengthMeters: distance)
            }
            if let geometry = first["geometry"] as? [String: Any], let line = self.firstLine(in: geometry) {
                return RoutePlan(
                    points: try self.coordinates(line, file: file), reportedLengthMeters: first["distance"] as? Double)
            }
        }
        if let line = self.firstLine(in: object) {
            return RoutePlan(points: try self.coordinates(line, file: file))
        }
        throw RoutingError.providerFailed(
            reason: "\(file): no route in it (GeoJSON LineString, Valhalla trip, OSRM/Mapbox/Google routes)")
    }

    public static func valhallaPlan(legs: [[String: Any]], file: String) throws -> RoutePlan {
        var points: [Coordinate] = []
        var names: [String?] = []
        for leg in legs {
            guard let shape = leg["shape"] as? String else { continue }
            let legPoints = try self.decode(shape, precision: 6, file: file)
            var legNames = [String?](repeating: nil, count: max(0, legPoints.count - 1))
            for maneuver in leg["maneuvers"] as? [[String: Any]] ?? [] {
                guard let begin = maneuver["begin_shape_index"] as? Int, let end = maneuver["end_shape_index"] as? Int,
                    let street = (maneuver["street_names"] as? [String])?.first
                else { continue }
                for index in begin..<min(end, legNames.count) where index >= 0 { legNames[index] = street }
            }
            if !points.isEmpty, let first = legPoints.first, first == points.last {
                points += legPoints.dropFirst()
            } else {
                if !points.isEmpty { names.append(nil) }
                points += legPoints
            }
            names += legNames
        }
        guard points.count >= 2 else { throw RoutingError.providerFailed(reason: "\(file): the trip has no shape") }
        return RoutePlan(points: points, segmentNames: names)
    }

    static func decode(_ encoded: String, precision: Int, file: String) throws -> [Coordinate] {
        do {
            let points = try EncodedPolyline.decode(encoded, precision: precision)
            guard points.count >= 2 else { throw RoutingError.providerFailed(reason: "\(file): fewer than two points") }
            return points
        } catch let error as EncodedPolyline.DecodingError {
            throw RoutingError.providerFailed(reason: "\(file): bad encoded polyline (\(error))")
        }
    }

    static func firstLine(in object: Any) -> [Any]? {
        guard let dictionary = object as? [String: Any], let type = dictionary["type"] as? String else { return nil }
        switch type {
        case "LineString": return dictionary["coordinates"] as? [Any]
        case "MultiLineString": return (dictionary["coordinates"] as? [Any])?.first as? [Any]
        case "Feature": return dictionary["geometry"].flatMap { self.firstLine(in: $0) }
        case "FeatureCollection":
            for feature in dictionary["features"] as? [Any] ?? [] {
                if let line = self.firstLine(in: feature) { return line }
            }
            return nil
        default: return nil
        }
    }

    static func coordinates(_ line: [Any], file: String) throws -> [Coordinate] {
        var points: [Coordinate] = []
        for (index, pair) in line.enumerated() {
            guard let numbers = pair as? [Any], numbers.count >= 2,
                let longitude = (numbers[0] as? NSNumber)?.doubleValue,
                let latitude = (numbers[1] as? NSNumber)?.doubleValue,
                longitude.isFinite, latitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180
            else {
                throw RoutingError.providerFailed(
                    reason: "\(file): coordinate \(index) is not a valid [longitude, latitude]")
            }
            points.append(Coordinate(latitude: latitude, longitude: longitude))
        }
        guard points.count >= 2 else { throw RoutingError.providerFailed(reason: "\(file): fewer than two points") }
        return points
    }
}
