public import NavCore

/// Why one line was skipped.
public struct LineProblem: Error, Sendable {
    /// What was wrong.
    public let reason: String
    /// Creates a problem.
    public init(_ reason: String) { self.reason = reason }
}

/// GnssLogger's own records: `Fix,Provider,Lat,Lon,Alt,Speed,Accuracy,Bearing,UnixMillis,…` and
/// `OrientationDeg,UnixMillis,ElapsedNanos,yaw,roll,pitch`.
public enum GnssLoggerLine {
    /// Decodes one `Fix` or `OrientationDeg` line; fixes of other providers than `providers` (all when empty) are
    /// skipped without a problem.
    public static func decode(_ line: Substring, providers: Set<String>) -> Swift.Result<[BusMessage], LineProblem> {
        let fields = line.split(separator: ",", omittingEmptySubsequences: false)
        func number(_ index: Int) -> Double? {
            guard index < fields.count, let value = Double(fields[index].trimmed()),
                value.isFinite
            else { return nil }
            return value
        }
        if fields[0] == "Fix" {
            guard fields.count > 8 else { return .failure(LineProblem("Fix with \(fields.count) fields")) }
            guard providers.isEmpty || providers.contains(String(fields[1])) else { return .success([]) }
            guard let lat = number(2), let lon = number(3), let millis = number(8), abs(lat) <= 90, abs(lon) <= 180
            else {
                return .failure(LineProblem("Fix without a valid latitude, longitude and time"))
            }
            let accuracy = number(6) ?? 0
            return .success([
                .fix(
                    LocationFix(
                        timeSeconds: millis / 1000, latitude: lat, longitude: lon, altitudeMeters: number(4),
                        horizontalAccuracyMeters: accuracy, speedMetersPerSecond: number(5),
                        courseDegrees: number(7).map(Angle.normalized)))
            ])
        }
        guard fields.count > 5, let millis = number(1), let yaw = number(3), let roll = number(4), let pitch = number(5)
        else {
            return .failure(LineProblem("OrientationDeg needs time, yaw, roll and pitch"))
        }
        let time = millis / 1000
        // Android's pitch is negative when the top tilts up; HapticNav's is positive.
        return .success([
            .heading(
                HeadingSample(timeSeconds: time, headingDegrees: Angle.normalized(yaw), reference: .magneticNorth)),
            .attitude(Attitude(timeSeconds: time, pitchDegrees: -pitch, rollDegrees: roll)),
        ])
    }
}
