public import MapLogic
public import NavCore

/// The `kalman` smoother: ``KalmanSmoother`` with its options read from a config.
public enum KalmanPlugin {
    public static let id = KalmanSmoother.id

    /// Reads `accelerationNoise` [m/s²], `maximumAccuracyMeters`, `maximumGapSeconds`, `minimumCourseSpeed`, `velocityNoise`, `biasSigmaMeters`, `biasTimeConstantSeconds`.
    public static func make(settings: Settings) throws -> KalmanSmoother {
        var settings = settings
        var options = KalmanSmoother.Options()
        typealias Setting = KalmanSmoother.Options.Setting
        options.accelerationNoise = try settings.value(Setting.accelerationNoise)
        options.maximumAccuracyMeters = try settings.value(Setting.maximumAccuracyMeters)
        options.maximumGapSeconds = try settings.value(Setting.maximumGapSeconds)
        options.minimumCourseSpeed = try settings.value(Setting.minimumCourseSpeed)
        options.velocityNoise = try settings.value(Setting.velocityNoise)
        options.biasSigmaMeters = try settings.value(Setting.biasSigmaMeters)
        options.biasTimeConstantSeconds = try settings.value(Setting.biasTimeConstantSeconds)
        try settings.finish()
        return KalmanSmoother(options: options)
    }
}
