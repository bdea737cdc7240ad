public import NavCore

/// The `kalman` smoother: ``KalmanSmoother`` with its options read from a config.
public enum KalmanPlugin {
    public static let id = KalmanSmoother.id

    /// Reads `accelerationNoise` [m/s²], `maximumAccuracyMeters`, `maximumGapSeconds`, `minimumCourseSpeed`, `velocityNoise`.
    public static func make(settings: Settings) throws -> KalmanSmoother {
        var settings = settings
        var options = KalmanSmoother.Options()
        typealias Setting = KalmanSmoother.Options.Setting
        options.accelerationNoise = try settings.value(Setting.accelerationNoise)
        options.maximumAccuracyMeters = try settings.value(Setting.maximumAccuracyMeters)
        options.maximumGapSeconds = try settings.value(Setting.maximumGapSeconds)
        options.minimumCourseSpeed = try settings.value(Setting.minimumCourseSpeed)
        options.velocityNoise = try settings.value(Setting.velocityNoise)
        try settings.finish()
        return KalmanSmoother(options: options)
    }
}
