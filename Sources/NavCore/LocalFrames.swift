/// WGS84 constants for the local frames.
enum WGS84 {
    static let a = 6_378_137.0
    static let f = 1 / 298.257_223_563
    static let e2 = f * (2 - f)
}

/// A position in a local east-north-up frame [metres].
public struct ENU: Equatable, Sendable {
    /// East of the origin [metres].
    public var east: Double
    /// North (true north) of the origin [metres].
    public var north: Double
    /// Up, along the ellipsoid normal at the origin [metres].
    public var up: Double

    /// Creates a local position.
    public init(east: Double, north: Double, up: Double = 0) {
        self.east = east
        self.north = north
        self.up = up
    }

    /// Horizontal distance from the origin [metres].
    public var horizontalDistance: Double { (self.east * self.east + self.north * self.north).squareRoot() }

    /// Bearing from the origin [degrees, true north, clockwise, 0..<360].
    public var bearingDegrees: Double { Angle.normalized(_atan2(self.east, self.north) * 180 / .pi) }
}

/// The exact local tangent frame around a point (the walker): east, north (true north, so the frame is
/// compass-aligned) and up along the ellipsoid normal, through Earth-centred Earth-fixed coordinates.
///
/// This is the AR placement of waypoints: each waypoint as metres east, north and up of the user.
public struct LocalFrame: Sendable {
    /// The origin.
    public let origin: Coordinate
    /// The origin's height above the ellipsoid [metres].
    public let originHeight: Double
    private let originECEF: (x: Double, y: Double, z: Double)
    private let sinLat, cosLat, sinLon, cosLon: Double

    /// Creates the frame around `origin` at `height` above the ellipsoid.
    public init(origin: Coordinate, height: Double = 0) {
        self.origin = origin
        self.originHeight = height
        let lat = origin.latitude * .pi / 180, lon = origin.longitude * .pi / 180
        self.sinLat = _sin(lat)
        self.cosLat = _cos(lat)
        self.sinLon = _sin(lon)
        self.cosLon = _cos(lon)
        self.originECEF = Self.ecef(origin, height: height)
    }

    static func ecef(_ point: Coordinate, height: Double) -> (x: Double, y: Double, z: Double) {
        let lat = point.latitude * .pi / 180, lon = point.longitude * .pi / 180
        let s = _sin(lat), c = _cos(lat)
        let n = WGS84.a / (1 - WGS84.e2 * s * s).squareRoot()
        return ((n + height) * c * _cos(lon), (n + height) * c * _sin(lon), (n * (1 - WGS84.e2) + height) * s)
    }

    /// A point's position in this frame.
    public func enu(of point: Coordinate, height: Double = 0) -> ENU {
        let p = Self.ecef(point, height: height)
        let dx = p.x - self.originECEF.x, dy = p.y - self.originECEF.y, dz = p.z - self.originECEF.z
        return ENU(
            east: -self.sinLon * dx + self.cosLon * dy,
            north: -self.sinLat * self.cosLon * dx - self.sinLat * self.sinLon * dy + self.cosLat * dz,
            up: self.cosLat * self.cosLon * dx + self.cosLat * self.sinLon * dy + self.sinLat * dz)
    }

    /// The point at a position in this frame, and its height above the ellipsoid [metres].
    public func coordinate(of local: ENU) -> (coordinate: Coordinate, height: Double) {
        let x =
            self.originECEF.x - self.sinLon * local.east - self.sinLat * self.cosLon * local.north
            + self.cosLat * self.cosLon * local.up
        let y =
            self.originECEF.y + self.cosLon * local.east - self.sinLat * self.sinLon * local.north
            + self.cosLat * self.sinLon * local.up
        let z = self.originECEF.z + self.cosLat * local.north + self.sinLat * local.up
        let lon = _atan2(y, x)
        let p = (x * x + y * y).squareRoot()
        var lat = _atan2(z, p * (1 - WGS84.e2))
        var height = 0.0
        for _ in 0..<5 {
            let s = _sin(lat)
            let n = WGS84.a / (1 - WGS84.e2 * s * s).squareRoot()
            height = p / _cos(lat) - n
            lat = _atan2(z, p * (1 - WGS84.e2 * n / (n + height)))
        }
        return (Coordinate(latitude: lat * 180 / .pi, longitude: lon * 180 / .pi), height)
    }
}

/// The fast local approximation for hot paths (every fix): an equirectangular plane around an origin,
/// scaled by the ellipsoid's meridional and prime-vertical radii there, with longitudes scaled at the
/// mid-latitude of origin and point. Distances from the origin, and ``distance(_:_:)`` between any two
/// points, are within 0.1 % of the geodesic below 20 km between latitudes ±80° (tested against
/// ``Geodesic``); use ``Geodesic`` beyond that.
public struct FlatProjection: Sendable {
    /// The origin.
    public let origin: Coordinate
    /// Metres per degree of latitude at the origin.
    public let metersPerDegreeLatitude: Double
    /// Metres per degree of longitude on the equator of a sphere of the origin's prime-vertical radius.
    private let primeVerticalMetersPerDegree: Double

    /// Creates the projection around `origin`.
    public init(origin: Coordinate) {
        self.origin = origin
        let lat = origin.latitude * .pi / 180
        let s = _sin(lat)
        let w = 1 - WGS84.e2 * s * s
        let meridional = WGS84.a * (1 - WGS84.e2) / (w * w.squareRoot())
        let primeVertical = WGS84.a / w.squareRoot()
        self.metersPerDegreeLatitude = meridional * .pi / 180
        self.primeVerticalMetersPerDegree = primeVertical * .pi / 180
    }

    private func longitudeScale(atLatitude latitude: Double) -> Double {
        self.primeVerticalMetersPerDegree * _cos((self.origin.latitude + latitude) / 2 * .pi / 180)
    }

    /// A point's position on the plane [metres east and north of the origin].
    public func project(_ point: Coordinate) -> ENU {
        var dLon = point.longitude - self.origin.longitude
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        return ENU(
            east: dLon * self.longitudeScale(atLatitude: point.latitude),
            north: (point.latitude - self.origin.latitude) * self.metersPerDegreeLatitude)
    }

    /// The point at a position on the plane.
    public func unproject(_ local: ENU) -> Coordinate {
        let latitude = self.origin.latitude + local.north / self.metersPerDegreeLatitude
        let longitude = self.origin.longitude + local.east / self.longitudeScale(atLatitude: latitude)
        return Coordinate(latitude: latitude, longitude: Angle.normalized(longitude + 180) - 180)
    }

    /// Approximate distance between two nearby points [metres].
    public static func distance(_ a: Coordinate, _ b: Coordinate) -> Double {
        FlatProjection(origin: a).project(b).horizontalDistance
    }

    /// Approximate initial bearing from `a` to `b` [degrees, true north, clockwise, 0..<360].
    public static func bearing(from a: Coordinate, to b: Coordinate) -> Double {
        FlatProjection(origin: a).project(b).bearingDegrees
    }
}
