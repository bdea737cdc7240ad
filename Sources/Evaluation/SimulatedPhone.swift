#if canImport(Glibc)
import Glibc
#endif
public import LocationSources
public import NavCore

/// How a phone is held: its heading against the body's, its pitch (positive: the top up) and roll (positive: the
/// right side down).
public struct PhoneHold: Sendable, Equatable {
    public var headingOffsetDegrees: Double
    public var pitchDegrees: Double
    public var rollDegrees: Double

    public init(headingOffsetDegrees: Double, pitchDegrees: Double, rollDegrees: Double) {
        self.headingOffsetDegrees = headingOffsetDegrees
        self.pitchDegrees = pitchDegrees
        self.rollDegrees = rollDegrees
    }

    /// Flat in front of the body, screen up, its top pointing ahead.
    public static let inHand = PhoneHold(headingOffsetDegrees: 0, pitchDegrees: 0, rollDegrees: 0)

    /// In a pocket, turned `offset` degrees from the body and lying fairly flat (a jacket's pocket, as the calibration
    /// asks: nearly upright, the compass flips).
    public static func pocket(offset: Double) -> PhoneHold {
        PhoneHold(headingOffsetDegrees: offset, pitchDegrees: 25, rollDegrees: 10)
    }
}

/// What a phone's accelerometer and magnetometer read, in its own axes (x right, y toward the top, z out of the
/// screen), when it is held at a heading, pitch and roll in a field: the inverse of ``TiltCompensation``.
public enum PhoneSensors {
    /// Gravity's reaction as a unit vector (what an accelerometer reads at rest points up) and the field [µT], in
    /// device axes, for a phone whose top points at `headingDegrees` (true north, clockwise) with `pitchDegrees` and
    /// `rollDegrees`, in a field of `north`, `east` and `down` components [µT].
    public static func deviceVectors(
        headingDegrees: Double, pitchDegrees: Double, rollDegrees: Double, north: Double, east: Double, down: Double
    ) -> (up: (x: Double, y: Double, z: Double), field: (x: Double, y: Double, z: Double)) {
        let pitch = pitchDegrees * .pi / 180, roll = rollDegrees * .pi / 180, heading = headingDegrees * .pi / 180
        // Up in device axes, as TiltCompensation reads pitch (asin of y) and roll (atan2(-x, z)).
        let up = (x: -sin(roll) * cos(pitch), y: sin(pitch), z: cos(roll) * cos(pitch))
        // The direction the top points, made horizontal; its right; then north and east in device axes.
        var forward = (x: -sin(pitch) * up.x, y: 1 - sin(pitch) * up.y, z: -sin(pitch) * up.z)
        let length = (forward.x * forward.x + forward.y * forward.y + forward.z * forward.z).squareRoot()
        forward = (forward.x / length, forward.y / length, forward.z / length)
        // right = forward × up: east of a forward that points north.
        let right = (
            x: forward.y * up.z - forward.z * up.y, y: forward.z * up.x - forward.x * up.z,
            z: forward.x * up.y - forward.y * up.x
        )
        let c = cos(heading), s = sin(heading)
        let northAxis = (x: c * forward.x - s * right.x, y: c * forward.y - s * right.y, z: c * forward.z - s * right.z)
        let eastAxis = (x: s * forward.x + c * right.x, y: s * forward.y + c * right.y, z: s * forward.z + c * right.z)
        let field = (
            x: north * northAxis.x + east * eastAxis.x - down * up.x,
            y: north * northAxis.y + east * eastAxis.y - down * up.y,
            z: north * northAxis.z + east * eastAxis.z - down * up.z
        )
        return (up, field)
    }
}

/// A simulated participant's phone running phyphox with HapticNav's experiment (a live ``PhyphoxStandIn``): as the
/// participant moves, its GPS fixes (a fix a second, with street-canyon error: ``GPSError``, correlated), and its
/// accelerometer and magnetometer at 50 Hz from the phone's true heading, pitch and roll in the World Magnetic Model's
/// field at the place (so the source's compass sees the place's declination), heel strikes on the accelerometer while
/// walking, sensor noise on both.
public struct SimulatedPhone: Sendable {
    public let standIn: PhyphoxStandIn
    private var gps: GPSError
    private var random: SeededGenerator
    private var lastSample: Double?
    private var lastFix: Double?
    private var stridePhase = 0.0
    private var field: (time: Double, north: Double, east: Double, down: Double)?
    static let sampleSeconds = 0.02

    /// A phone on `standIn` whose GPS errs by `gpsSigmaMeters` per axis, correlated over `gpsTimeConstantSeconds`.
    public init(standIn: PhyphoxStandIn, gpsSigmaMeters: Double = 5, gpsTimeConstantSeconds: Double? = 30, seed: UInt64)
    {
        self.standIn = standIn
        self.gps = GPSError(sigmaMeters: gpsSigmaMeters, timeConstantSeconds: gpsTimeConstantSeconds)
        self.random = SeededGenerator(seed: seed)
    }

    /// Records what the phone measured up to `time` [seconds since 1970] of a body at `position` facing
    /// `bodyHeadingDegrees` and moving at `speed` [m/s] that way, the phone held as `hold`.
    public mutating func advance(
        to time: Double, position: Coordinate, bodyHeadingDegrees: Double, speed: Double, hold: PhoneHold
    ) {
        let heading = Angle.normalized(bodyHeadingDegrees + hold.headingOffsetDegrees)
        if self.field == nil || time - (self.field?.time ?? 0) > 10 {
            if let model = MagneticModel.wmm2025.field(
                latitude: position.latitude, longitude: position.longitude, timeSeconds: time)
            {
                self.field = (time, model.northNanoTesla / 1000, model.eastNanoTesla / 1000, model.downNanoTesla / 1000)
            }
        }
        guard let field = self.field else { return }
        var t = (self.lastSample ?? time - Self.sampleSeconds) + Self.sampleSeconds
        while t <= time + 1e-9 {
            // A walker's phone sways a little with each step; a standing one barely.
            let sway =
                speed > 0 ? self.random.gaussian(standardDeviation: 2) : self.random.gaussian(standardDeviation: 0.5)
            let vectors = PhoneSensors.deviceVectors(
                headingDegrees: heading + sway, pitchDegrees: hold.pitchDegrees, rollDegrees: hold.rollDegrees,
                north: field.north, east: field.east, down: field.down)
            let cadence = speed > 0 ? speed / 0.72 : 0
            self.stridePhase += cadence * Self.sampleSeconds
            let cycle = self.stridePhase - self.stridePhase.rounded(.down)
            let bump = cadence > 0 ? 4 * exp(-pow((cycle - 0.5) / 0.12, 2)) : 0
            let magnitude = 9.81 + bump
            let ago = time - t
            self.standIn.record(
                .accelerometer,
                [
                    vectors.up.x * magnitude + self.random.gaussian(standardDeviation: 0.05),
                    vectors.up.y * magnitude + self.random.gaussian(standardDeviation: 0.05),
                    vectors.up.z * magnitude + self.random.gaussian(standardDeviation: 0.05),
                ], secondsAgo: ago)
            self.standIn.record(
                .magnetometer,
                [
                    vectors.field.x + self.random.gaussian(standardDeviation: 0.3),
                    vectors.field.y + self.random.gaussian(standardDeviation: 0.3),
                    vectors.field.z + self.random.gaussian(standardDeviation: 0.3),
                ], secondsAgo: ago)
            self.lastSample = t
            t += Self.sampleSeconds
        }
        if self.lastFix.map({ time - $0 >= 1 }) ?? true {
            self.lastFix = time
            let fix = self.gps.fix(
                time: time, position: position, speed: speed, headingDegrees: bodyHeadingDegrees, velocityNoise: 0.3,
                random: &self.random)
            self.standIn.record(
                .location,
                [
                    fix.latitude, fix.longitude, 10, fix.speedMetersPerSecond ?? 0, fix.courseDegrees ?? 0,
                    fix.horizontalAccuracyMeters,
                ])
        }
    }
}
