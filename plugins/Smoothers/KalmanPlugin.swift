public import NavCore

/// The `kalman` smoother: ``KalmanSmoother`` with its options read from a config.
public enum KalmanPlugin {
    public static let id = "kalman"

    /// Reads `accelerationNoise` [m/s²], `maximumAccuracyMeters`, `maximumGapSeconds`, `minimumCourseSpeed`.
    public static func make(settings: Settings) throws -> KalmanSmoother {
        var settings = settings
        var options = KalmanSmoother.Options()
        options.accelerationNoise = try settings.double(
            "accelerationNoise", default: options.accelerationNoise, in: 0.01...20)
        options.maximumAccuracyMeters = try settings.double(
            "maximumAccuracyMeters", default: options.maximumAccuracyMeters,
            in: 1...10_000)
        options.maximumGapSeconds = try settings.double(
            "maximumGapSeconds", default: options.maximumGapSeconds, in: 0.5...3600)
        options.minimumCourseSpeed = try settings.double(
            "minimumCourseSpeed", default: options.minimumCourseSpeed, in: 0...10)
        try settings.finish()
        return KalmanSmoother(options: options)
    }
}
