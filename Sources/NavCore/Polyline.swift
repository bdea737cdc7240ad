/// Where a point lies with respect to a polyline.
public struct PolylineProjection: Equatable, Sendable {
    /// The closest point on the polyline.
    public var closestPoint: Coordinate
    /// Distance from the point to the closest point [metres, ≥ 0].
    public var distanceMeters: Double
    /// Signed distance to the polyline [metres, positive when the point is right of it, facing along it].
    public var crossTrackMeters: Double
    /// Distance from the polyline's start to the closest point, along the polyline [metres].
    public var distanceAlongMeters: Double
    /// Index of the segment holding the closest point (segment i joins points i and i + 1).
    public var segmentIndex: Int
    /// Where on that segment [0...1].
    public var fraction: Double
}

/// A path of coordinates with its geodesic lengths, for point-to-path queries near the walker.
public struct Polyline: Sendable {
    /// The vertices, start first.
    public let points: [Coordinate]
    /// Distance from the start to each vertex along the path [metres, geodesic].
    public let cumulativeMeters: [Double]
    /// Each segment's geodesic from its first vertex (segment i joins points i and i + 1): its length and its initial
    /// azimuth, found once here rather than for each point asked along it.
    private let segments: [GeodesicInverse]

    /// Creates a polyline; lengths are geodesics on WGS84.
    public init(_ points: [Coordinate]) {
        self.points = points
        let segments = zip(points, points.dropFirst()).map { Geodesic.wgs84.inverse($0, $1) }
        var cumulative: [Double] = points.isEmpty ? [] : [0]
        for segment in segments {
            cumulative.append(cumulative[cumulative.count - 1] + segment.distanceMeters)
        }
        self.cumulativeMeters = cumulative
        self.segments = segments
    }

    /// Total length [metres].
    public var lengthMeters: Double { self.cumulativeMeters.last ?? 0 }

    /// The closest point of the polyline to `point`, measured on a plane tangent at `point`
    /// (``FlatProjection``: within 0.1 % while the polyline passes within 20 km).
    public func project(_ point: Coordinate) -> PolylineProjection? {
        self.project(point, alongRange: nil)
    }

    /// The closest point among the segments that overlap `alongRange` [metres along the polyline], or all
    /// segments when nil: tracking a walker, this keeps the projection from jumping to another part of a
    /// route that passes nearby.
    public func project(_ point: Coordinate, alongRange: ClosedRange<Double>?) -> PolylineProjection? {
        self.project(point, alongRange: alongRange, course: nil)
    }

    /// As ``project(_:alongRange:)``, but when the walker's direction of travel is known, a segment that runs
    /// against it counts as farther: `weightMeters` × (1 − cos Δ) / 2 is added to its distance in the choice, Δ being
    /// the angle between the segment and the course (the full weight for a segment walked the opposite way). Where
    /// a route passes itself (a hairpin bend, the two sides of a square), the walker is placed on the part they walk
    /// along; the projection returned still gives the true distance.
    public func project(
        _ point: Coordinate, alongRange: ClosedRange<Double>?, course: (degrees: Double, weightMeters: Double)?
    ) -> PolylineProjection? {
        guard let first = self.points.first else { return nil }
        let plane = FlatProjection(origin: point)
        guard self.points.count > 1 else {
            let local = plane.project(first)
            return PolylineProjection(
                closestPoint: first, distanceMeters: local.horizontalDistance, crossTrackMeters: 0,
                distanceAlongMeters: 0, segmentIndex: 0, fraction: 0)
        }
        var best: PolylineProjection?
        var bestScore = Double.infinity
        var previous = plane.project(first)
        for index in 0..<(self.points.count - 1) {
            if let range = alongRange,
                self.cumulativeMeters[index + 1] < range.lowerBound || self.cumulativeMeters[index] > range.upperBound
            {
                previous = plane.project(self.points[index + 1])
                continue
            }
            let next = plane.project(self.points[index + 1])
            let de = next.east - previous.east, dn = next.north - previous.north
            let lengthSquared = de * de + dn * dn
            // The walker is at the plane's origin.
            let t = lengthSquared > 0 ? min(1, max(0, -(previous.east * de + previous.north * dn) / lengthSquared)) : 0
            let ce = previous.east + t * de, cn = previous.north + t * dn
            let distance = (ce * ce + cn * cn).squareRoot()
            var score = distance
            if let course, lengthSquared > 0 {
                let mismatch = (course.degrees - _atan2(de, dn) * 180 / .pi) * .pi / 180
                score += course.weightMeters * (1 - _cos(mismatch)) / 2
            }
            if best == nil || score < bestScore {
                bestScore = score
                // Cross product of the segment's direction and segment → walker: positive when right.
                let cross =
                    lengthSquared > 0
                    ? (dn * (0 - previous.east) - de * (0 - previous.north)) / lengthSquared.squareRoot() : 0
                let segmentLength = self.cumulativeMeters[index + 1] - self.cumulativeMeters[index]
                best = PolylineProjection(
                    closestPoint: plane.unproject(ENU(east: ce, north: cn)), distanceMeters: distance,
                    crossTrackMeters: cross > 0 ? distance : -distance,
                    distanceAlongMeters: self.cumulativeMeters[index] + t * segmentLength,
                    segmentIndex: index, fraction: t)
            }
            previous = next
        }
        return best
    }

    /// The point `distance` metres along the polyline from its start (clamped to its ends), and the
    /// bearing of the segment there [degrees, true north, clockwise].
    public func point(atDistance distance: Double) -> (coordinate: Coordinate, bearingDegrees: Double)? {
        guard let first = self.points.first else { return nil }
        guard let (index, along) = self.segment(atDistance: distance) else { return (first, 0) }
        let a = self.points[index], inverse = self.segments[index]
        let position =
            inverse.distanceMeters > 0
            ? Geodesic.wgs84.direct(from: a, azimuthDegrees: inverse.initialAzimuthDegrees, distanceMeters: along)
                .coordinate
            : a
        return (position, Angle.normalized(inverse.initialAzimuthDegrees))
    }

    /// The bearing of the segment `distance` metres along the polyline (clamped to its ends), as
    /// ``point(atDistance:)`` gives it, without finding the point [degrees, true north, clockwise]; nil when empty.
    public func bearing(atDistance distance: Double) -> Double? {
        guard !self.points.isEmpty else { return nil }
        guard let (index, _) = self.segment(atDistance: distance) else { return 0 }
        return Angle.normalized(self.segments[index].initialAzimuthDegrees)
    }

    /// The segment holding the point `distance` metres along (clamped to the ends) and how far along that segment
    /// [metres]; nil with fewer than two vertices.
    private func segment(atDistance distance: Double) -> (index: Int, alongMeters: Double)? {
        guard self.points.count > 1 else { return nil }
        let clamped = min(max(distance, 0), self.lengthMeters)
        // The first segment whose end is at or past it (the last, if none): a binary search over the cumulative
        // lengths, which never decrease, so that walking a long route vertex by vertex is not quadratic.
        var low = 0, high = self.points.count - 2
        while low < high {
            let middle = (low + high) / 2
            if self.cumulativeMeters[middle + 1] < clamped { low = middle + 1 } else { high = middle }
        }
        return (low, clamped - self.cumulativeMeters[low])
    }
}

/// Cross-track and along-track distances of a point with respect to the geodesic segment from `start` to
/// `end`, on a plane tangent at the point (for segments within 20 km of it).
public func trackDistances(
    of point: Coordinate, from start: Coordinate, to end: Coordinate
)
    -> (crossTrackMeters: Double, alongTrackMeters: Double)
{
    let plane = FlatProjection(origin: point)
    let a = plane.project(start), b = plane.project(end)
    let de = b.east - a.east, dn = b.north - a.north
    let length = (de * de + dn * dn).squareRoot()
    guard length > 0 else { return (0, 0) }
    let ue = de / length, un = dn / length
    let along = (0 - a.east) * ue + (0 - a.north) * un
    let cross = un * (0 - a.east) - ue * (0 - a.north)
    return (cross, along)
}

/// Google's Encoded Polyline Algorithm Format, at any precision (5 for Google and OSRM, 6 for Valhalla).
public enum EncodedPolyline {
    /// Why a string is not an encoded polyline.
    public enum DecodingError: Error, Equatable, Sendable {
        /// A character outside '?'...'~' at this offset.
        case invalidCharacter(offset: Int)
        /// The string ended inside a number, or with a latitude and no longitude.
        case truncated
        /// A decoded coordinate outside ±90° / ±180°.
        case outOfRange(index: Int)
    }

    /// Encodes coordinates (latitude first, as the format wants) at `precision` decimal digits.
    public static func encode(_ points: [Coordinate], precision: Int = 5) -> String {
        var factor = 1.0
        for _ in 0..<precision { factor *= 10 }
        var output: [UInt8] = []
        var previousLat = 0, previousLon = 0
        for point in points {
            let lat = Int((point.latitude * factor).rounded()), lon = Int((point.longitude * factor).rounded())
            self.append(lat - previousLat, to: &output)
            self.append(lon - previousLon, to: &output)
            previousLat = lat
            previousLon = lon
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func append(_ value: Int, to output: inout [UInt8]) {
        var v = value < 0 ? ~(value << 1) : value << 1
        while v >= 0x20 {
            output.append(UInt8((0x20 | (v & 0x1F)) + 63))
            v >>= 5
        }
        output.append(UInt8(v + 63))
    }

    /// Decodes a string at `precision` decimal digits.
    public static func decode(_ string: String, precision: Int = 5) throws(DecodingError) -> [Coordinate] {
        var factor = 1.0
        for _ in 0..<precision { factor *= 10 }
        let bytes = Array(string.utf8)
        var index = 0
        var lat = 0, lon = 0
        var points: [Coordinate] = []
        func next() throws(DecodingError) -> Int {
            var result = 0, shift = 0
            while true {
                guard index < bytes.count else { throw .truncated }
                let byte = bytes[index]
                guard byte >= 63 && byte <= 126, shift <= 60 else { throw .invalidCharacter(offset: index) }
                let chunk = Int(byte) - 63
                index += 1
                result |= (chunk & 0x1F) << shift
                shift += 5
                if chunk < 0x20 { break }
            }
            return (result & 1) != 0 ? ~(result >> 1) : result >> 1
        }
        while index < bytes.count {
            lat += try next()
            lon += try next()
            let point = Coordinate(latitude: Double(lat) / factor, longitude: Double(lon) / factor)
            guard abs(point.latitude) <= 90 && abs(point.longitude) <= 180 else {
                throw .outOfRange(index: points.count)
            }
            points.append(point)
        }
        return points
    }
}
