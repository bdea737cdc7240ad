#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
public import NavCore
import HapticLogic
import SystemIO

/// Reads a haptic stage's `options`: the calibration (a saved file, or an explicit offset), the guidance and the
/// fail-safe's limits, and the fallback devices to make after the stage's own. Beside the stage it configures; the
/// runtime's factory makes the devices (plugins) and the experimenter's stop store from what this returns.
public enum HapticStageOptions {
    /// A saved calibration: what `hapticnav calibrate` writes, and the sink reads.
    public struct SavedCalibration: Codable, Sendable {
        public var offsetDegrees: Double
        public var spreadDegrees: Double
        public var sampleCount: Int
        public var calibratedAt: String

        public init(offsetDegrees: Double, spreadDegrees: Double, sampleCount: Int, calibratedAt: String) {
            self.offsetDegrees = offsetDegrees
            self.spreadDegrees = spreadDegrees
            self.sampleCount = sampleCount
            self.calibratedAt = calibratedAt
        }
    }

    /// What a haptic stage's options say.
    public struct Parsed: Sendable {
        /// The sink's options (its stop store is the runtime's to set).
        public var sink: HapticSinkOptions
        /// The devices to fall back to, in order, after the stage's own plugin.
        public var fallbacks: [Settings.PluginChoice]
        /// The calibration file, when the options name one (the experimenter's stop is kept beside it).
        public var calibrationFile: String?
    }

    /// Reads `settings` (a stage's `options`); `check`: a config check, which logs nothing; a missing calibration
    /// file is an error unless `calibrationMayBeMissing` (a check, the preflight: before the calibration).
    /// `control` is left to the runtime (``Settings/value(_:)`` marks it read).
    public static func parse(
        _ settings: Settings, logger: Logger, check: Bool, calibrationMayBeMissing: Bool = false
    ) throws -> Parsed {
        var settings = settings
        var options = HapticSinkOptions()
        let calibrationFile = try settings.path("calibrationFile")
        let explicitOffset = try settings.optionalDouble("offsetDegrees")
        switch (calibrationFile, explicitOffset) {
        case let (file?, nil):
            if let reason = Paths.unreadableReason(file) {
                // Missing, it stops a sink from starting, but not a check of the config nor preflight (which comes
                // before the calibration, docs/FIELD.md; the phone is in the hand then, no pocket offset).
                guard calibrationMayBeMissing else {
                    throw ConfigError.missingFile(
                        path: "\(settings.path).calibrationFile", file: file,
                        reason: "\(reason): run `hapticnav calibrate --config …` first, or give offsetDegrees")
                }
            } else {
                do {
                    let saved = try JSONDecoder().decode(
                        SavedCalibration.self, from: Data(InputFile.contents(of: file)))
                    options.guidance.offsetDegrees = saved.offsetDegrees
                    if !check {
                        logger.info("calibrated offset \(saved.offsetDegrees)° from \(file) (\(saved.calibratedAt))")
                    }
                } catch {
                    throw ConfigError.invalidValue(
                        path: "\(settings.path).calibrationFile",
                        expected: "a calibration saved by `hapticnav calibrate`", found: "\(file): \(error)")
                }
            }
        case let (nil, offset?):
            options.guidance.offsetDegrees = Angle.normalized(offset)
            if !check { logger.warning("navigating without a calibration: explicit offset \(offset)° from the config") }
        case (nil, nil):
            throw ConfigError.missingKey(
                path: settings.path,
                key: "calibrationFile (from `hapticnav calibrate`) or offsetDegrees (navigating uncalibrated)")
        default:
            throw ConfigError.invalidValue(
                path: settings.path, expected: "calibrationFile or offsetDegrees, not both", found: "both")
        }
        _ = settings.value("control")
        typealias Guide = Guidance.Options.Setting
        options.guidance.toleranceDegrees = try settings.value(Guide.toleranceDegrees)
        options.guidance.minimumIntensity = try settings.value(Guide.minimumIntensity)
        options.guidance.turnAroundDegrees = try settings.value(Guide.turnAroundDegrees)
        options.guidance.turnAroundReleaseDegrees = try settings.value(Guide.turnAroundReleaseDegrees)
        options.guidance.debounceSeconds = try settings.value(Guide.debounceSeconds)
        options.guidance.releaseBandDegrees = try settings.value(Guide.releaseBandDegrees)
        options.guidance.repeatPeriodSeconds = try settings.value(Guide.repeatPeriodSeconds)
        options.staleAfterSeconds = try settings.value(HapticSinkOptions.Setting.staleAfterSeconds)
        options.maximumHeadingAccuracyDegrees = try settings.value(
            HapticSinkOptions.Setting.maximumHeadingAccuracyDegrees)
        options.echoEveryHeading = try settings.bool(HapticSinkOptions.Setting.echoEveryHeading.key, default: false)
        options.lockDevice = try settings.bool(HapticSinkOptions.Setting.lockDevice.key, default: false)
        let headingLimit = HapticSinkOptions.Setting.headingStaleAfterSeconds
        options.headingStaleAfterSeconds =
            settings.value(headingLimit.key) == nil ? nil : try settings.value(headingLimit)
        let fallbacks = try settings.pluginList("fallback")
        try settings.finish()
        return Parsed(sink: options, fallbacks: fallbacks, calibrationFile: calibrationFile)
    }
}
