/// Heading and tilt from a phone's accelerometer and magnetometer: the tilt-compensated compass
/// (Android's `getRotationMatrix`/`getOrientation`, in HapticNav's signs): the one place the tilt maths lives, for
/// the live phones' sources and the log readers alike.
public enum TiltCompensation {
    /// Heading of the device's top edge [degrees, magnetic north, clockwise], pitch [degrees, positive = top
    /// up] and roll [degrees, positive = right side down], from gravity's reaction `a` (what an
    /// accelerometer reads at rest, pointing up) and the magnetic field `m`, both in device axes
    /// (x right, y towards the top, z out of the screen). Nil when the two are parallel.
    public static func orientation(
        accelerometer a: (x: Double, y: Double, z: Double),
        magnetometer m: (x: Double, y: Double, z: Double)
    )
        -> (headingDegrees: Double, pitchDegrees: Double, rollDegrees: Double)?
    {
        // East = m × a, north = a × east.
        var hx = m.y * a.z - m.z * a.y, hy = m.z * a.x - m.x * a.z, hz = m.x * a.y - m.y * a.x
        let hNorm = (hx * hx + hy * hy + hz * hz).squareRoot()
        let aNorm = (a.x * a.x + a.y * a.y + a.z * a.z).squareRoot()
        guard hNorm > 1e-6 * max(aNorm, 1), aNorm > 0.1 else { return nil }
        hx /= hNorm
        hy /= hNorm
        hz /= hNorm
        let ax = a.x / aNorm, ay = a.y / aNorm, az = a.z / aNorm
        let my = az * hx - ax * hz  // y component of north = a × east
        let heading = _atan2(hy, my) * 180 / .pi
        let pitch = _asin(max(-1, min(1, ay))) * 180 / .pi
        let roll = _atan2(-ax, az) * 180 / .pi
        return (Angle.normalized(heading), pitch, roll)
    }
}
