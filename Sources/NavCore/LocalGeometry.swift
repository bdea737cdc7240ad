/// Short-range geometry on a sphere of the WGS84 mean radius, for simulation and display.
///
/// Accurate to about 0.3 % over the few hundred metres between route vertices; the ellipsoidal
/// geodesics that guidance relies on belong elsewhere.
public enum SphericalGeometry {
    /// Mean Earth radius [metres] (IUGG, (2a + b) / 3 of WGS84).
    public static let meanRadiusMeters = 6_371_008.8

    private static func radians(_ degrees: Double) -> Double { degrees * .pi / 180 }
    private static func degrees(_ radians: Double) -> Double { radians * 180 / .pi }

    /// Great-circle distance [metres] (haversine).
    public static func distance(_ a: Coordinate, _ b: Coordinate) -> Double {
        let phi1 = radians(a.latitude), phi2 = radians(b.latitude)
        let dPhi = phi2 - phi1
        let dLambda = radians(b.longitude - a.longitude)
        let h = _sin(dPhi / 2) * _sin(dPhi / 2) + _cos(phi1) * _cos(phi2) * _sin(dLambda / 2) * _sin(dLambda / 2)
        return 2 * meanRadiusMeters * _asin(min(1, h.squareRoot()))
    }

    /// Initial great-circle bearing from `a` to `b` [degrees, true north, clockwise, 0..<360].
    public static func bearing(from a: Coordinate, to b: Coordinate) -> Double {
        let phi1 = radians(a.latitude), phi2 = radians(b.latitude)
        let dLambda = radians(b.longitude - a.longitude)
        let y = _sin(dLambda) * _cos(phi2)
        let x = _cos(phi1) * _sin(phi2) - _sin(phi1) * _cos(phi2) * _cos(dLambda)
        let bearing = degrees(_atan2(y, x))
        let wrapped = _fmod(bearing + 360, 360)
        return wrapped >= 360 ? 0 : wrapped
    }

    /// The point `eastMeters` east and `northMeters` north of `origin` (local flat approximation).
    public static func offset(_ origin: Coordinate, eastMeters: Double, northMeters: Double) -> Coordinate {
        let latitude = origin.latitude + degrees(northMeters / meanRadiusMeters)
        let longitude = origin.longitude + degrees(eastMeters / (meanRadiusMeters * _cos(radians(origin.latitude))))
        return Coordinate(latitude: latitude, longitude: longitude)
    }

    /// The point a fraction `t` (0...1) of the way from `a` to `b`, linear in latitude and longitude.
    public static func interpolate(_ a: Coordinate, _ b: Coordinate, fraction t: Double) -> Coordinate {
        Coordinate(latitude: a.latitude + (b.latitude - a.latitude) * t,
                   longitude: a.longitude + (b.longitude - a.longitude) * t)
    }
}
