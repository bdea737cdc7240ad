#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
        let text = String(decoding: data, as: UTF8.self).trimmed()
        if text.hasPrefix("<") { return RoutePlan(points: try GPXPath.load(file: file)) }
        guard text.hasPrefix("{") else {
            do {
                return RoutePlan(points: try self.decode(text, precision: precision, file: file))
            } catch {
                throw RoutingError.providerFailed(
                    reason: "\(file): not GeoJSON, GPX, a directions response or an encoded polyline (\(error))")
            }
        }
        guard let object = try? JSONDecoder().decode(JSONValue.self, from: data), object.objectValue != nil else {
            throw RoutingError.providerFailed(reason: "\(file): broken JSON")
        }
        return try self.plan(fromJSON: object, file: file, precision: precision)
    }

    /// A plan from a parsed JSON document of any supported kind.
    public static func plan(fromJSON object: JSONValue, file: String, precision: Int) throws -> RoutePlan {
        // Valhalla: trip.legs[].shape (polyline6), maneuvers with street names.
        if let legs = object["trip"]?["legs"]?.arrayValue {
            return try self.valhallaPlan(legs: legs, file: file)
        }
        // Google: routes[0].overview_polyline.points (precision 5).
        if let first = object["routes"]?[0] {
            if let encoded = first["overview_polyline"]?["points"]?.stringValue {
                return RoutePlan(points: try self.decode(encoded, precision: 5, file: file))
            }
            // OSRM / Mapbox: routes[0].geometry, a polyline (precision unknown: the one matching "distance") or GeoJSON.
            if let encoded = first["geometry"]?.stringValue {
                let distance = Self.length(first["distance"])
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
            if let plan = try self.stepsPlan(route: first, file: file) { return plan }
            if let geometry = first["geometry"], let line = self.firstLine(in: geometry) {
                return RoutePlan(
                    points: try self.coordinates(line, file: file), reportedLengthMeters: Self.length(first["distance"])
                )
            }
        }
        if let line = self.firstLine(in: object) {
            return RoutePlan(points: try self.coordinates(line, file: file))
        }
        throw RoutingError.providerFailed(
            reason: "\(file): no route in it (GeoJSON LineString, Valhalla trip, OSRM/Mapbox/Google routes)")
    }

    /// OSRM / Mapbox with `steps=true&geometries=geojson`: the steps' own lines joined, each segment named by its
    /// step (nil where a step has no name); nil when a step lacks a GeoJSON line, so that the overview is used.
    static func stepsPlan(route: JSONValue, file: String) throws -> RoutePlan? {
        var points: [Coordinate] = []
        var names: [String?] = []
        for leg in route["legs"]?.arrayValue ?? [] {
            for step in leg["steps"]?.arrayValue ?? [] {
                guard let geometry = step["geometry"], let line = self.firstLine(in: geometry) else { return nil }
                let name = step["name"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                for point in try self.coordinates(line, file: file) {
                    if let last = points.last {
                        if last == point { continue }
                        names.append(name)
                    }
                    points.append(point)
                }
            }
        }
        guard points.count >= 2 else { return nil }
        return RoutePlan(points: points, segmentNames: names, reportedLengthMeters: Self.length(route["distance"]))
    }

    public static func valhallaPlan(legs: [JSONValue], file: String) throws -> RoutePlan {
        var points: [Coordinate] = []
        var names: [String?] = []
        for leg in legs {
            guard let shape = leg["shape"]?.stringValue else { continue }
            let legPoints = try self.decode(shape, precision: 6, file: file)
            var legNames = [String?](repeating: nil, count: max(0, legPoints.count - 1))
            for maneuver in leg["maneuvers"]?.arrayValue ?? [] {
                guard let beginNumber = maneuver["begin_shape_index"]?.doubleValue,
                    let endNumber = maneuver["end_shape_index"]?.doubleValue,
                    let begin = Int(exactly: beginNumber), let end = Int(exactly: endNumber),
                    let street = maneuver["street_names"]?[0]?.stringValue
                else { continue }
                // An engine's indices, whatever they are: only those inside the leg name its segments.
                let upper = min(end, legNames.count)
                guard max(begin, 0) < upper else { continue }
                for index in max(begin, 0)..<upper { legNames[index] = street }
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

    /// A length an answer reports [metres]: a finite number, zero or more; anything else is no length.
    public static func length(_ value: JSONValue?) -> Double? {
        value?.doubleValue.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
    }

    static func firstLine(in object: JSONValue) -> [JSONValue]? {
        guard let type = object["type"]?.stringValue else { return nil }
        switch type {
        case "LineString": return object["coordinates"]?.arrayValue
        case "MultiLineString": return object["coordinates"]?[0]?.arrayValue
        case "Feature": return object["geometry"].flatMap { self.firstLine(in: $0) }
        case "FeatureCollection":
            for feature in object["features"]?.arrayValue ?? [] {
                if let line = self.firstLine(in: feature) { return line }
            }
            return nil
        default: return nil
        }
    }

    static func coordinates(_ line: [JSONValue], file: String) throws -> [Coordinate] {
        var points: [Coordinate] = []
        for (index, pair) in line.enumerated() {
            guard let numbers = pair.arrayValue, numbers.count >= 2,
                let longitude = numbers[0].doubleValue,
                let latitude = numbers[1].doubleValue,
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
