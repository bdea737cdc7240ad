#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
package import Logging
import NavCore
import Parsers
import Stages
package import HapticLogic
package import StageHaptic

/// Reads a haptic stage: its primary device (`plugin`, `settings`), the fallback devices and the guidance options.
package enum HapticStageOptions {
    /// A saved calibration: what `hapticnav calibrate` writes.
    struct SavedCalibration: Codable {
        var offsetDegrees: Double
        var spreadDegrees: Double
        var sampleCount: Int
        var calibratedAt: String
    }

    package static func parse(
        _ stage: StageConfig, logger: Logger, check: Bool, calibrationMayBeMissing: Bool = false
    ) throws -> ([any OutputDevice], HapticSinkOptions) {
        var settings = stage.options
        var options = HapticSinkOptions()
        let calibrationFile = try settings.path("calibrationFile")
        let explicitOffset = try settings.optionalDouble("offsetDegrees")
        switch (calibrationFile, explicitOffset) {
        case let (file?, nil):
            if let reason = Settings.unreadableReason(file) {
                // Missing, it stops a sink from starting, but not a check of the config nor preflight (which comes
                // before the calibration, docs/FIELD.md; the phone is in the hand then, no pocket offset).
                guard calibrationMayBeMissing else {
                    throw ConfigError.missingFile(
                        path: "stages.\(stage.name).options.calibrationFile", file: file,
                        reason: "\(reason): run `hapticnav calibrate --config …` first, or give offsetDegrees")
                }
            } else {
                do {
                    let saved = try JSONDecoder().decode(
                        SavedCalibration.self, from: Data(contentsOf: URL(fileURLWithPath: file)))
                    options.guidance.offsetDegrees = saved.offsetDegrees
                    if !check {
                        logger.info("calibrated offset \(saved.offsetDegrees)° from \(file) (\(saved.calibratedAt))")
                    }
                } catch {
                    throw ConfigError.invalidValue(
                        path: "stages.\(stage.name).options.calibrationFile",
                        expected: "a calibration saved by `hapticnav calibrate`", found: "\(file): \(error)")
                }
            }
        case let (nil, offset?):
            options.guidance.offsetDegrees = Angle.normalized(offset)
            if !check { logger.warning("navigating without a calibration: explicit offset \(offset)° from the config") }
        case (nil, nil):
            throw ConfigError.missingKey(
                path: "stages.\(stage.name).options",
                key: "calibrationFile (from `hapticnav calibrate`) or offsetDegrees (navigating uncalibrated)")
        default:
            throw ConfigError.invalidValue(
                path: "stages.\(stage.name).options", expected: "calibrationFile or offsetDegrees, not both",
                found: "both")
        }
        _ = settings.value("control")
        if let control = try ControlConfig.parse(stage, calibrationFile: calibrationFile) {
            options.stopStore = FileStopStateStore(path: control.stateFile)
        }
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
        var devices = [
            try PluginRegistry.makeDevice(
                id: stage.plugin, settings: stage.settings, path: "stages.\(stage.name).plugin",
                logger: logger)
        ]
        for fallback in try settings.pluginList("fallback") {
            devices.append(
                try PluginRegistry.makeDevice(
                    id: fallback.plugin, settings: fallback.settings, path: fallback.path + ".plugin", logger: logger))
        }
        try settings.finish()
        return (devices, options)
    }
}
