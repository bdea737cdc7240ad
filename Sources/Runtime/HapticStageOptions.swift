import Foundation
import Logging
import NavCore
import Stages

/// Reads a haptic stage: its primary device (`plugin`, `settings`), the fallback devices and the guidance options.
enum HapticStageOptions {
    /// A saved calibration: what `hapticnav calibrate` writes.
    struct SavedCalibration: Codable {
        var offsetDegrees: Double
        var spreadDegrees: Double
        var sampleCount: Int
        var calibratedAt: String
    }

    static func parse(
        _ stage: StageConfig, logger: Logger, check: Bool
    ) throws -> ([any OutputDevice], HapticSinkOptions) {
        var settings = stage.options
        var options = HapticSinkOptions()
        let calibrationFile = try settings.path("calibrationFile")
        let explicitOffset = try settings.optionalDouble("offsetDegrees")
        switch (calibrationFile, explicitOffset) {
        case let (file?, nil):
            if !check || FileManager.default.fileExists(atPath: file) {
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
        options.guidance.toleranceDegrees = try settings.double("toleranceDegrees", default: 15, in: 5...45)
        options.guidance.minimumIntensity = try settings.double("minimumIntensity", default: 0.2, in: 0...1)
        options.guidance.turnAroundDegrees = try settings.double("turnAroundDegrees", default: 120, in: 45...180)
        options.guidance.debounceSeconds = try settings.double("debounceSeconds", default: 0.3, in: 0...5)
        options.guidance.releaseBandDegrees = try settings.double("releaseBandDegrees", default: 5, in: 0...40)
        options.guidance.repeatPeriodSeconds = try settings.double("repeatPeriodSeconds", default: 2, in: 0.1...60)
        options.staleAfterSeconds = try settings.double("staleAfterSeconds", default: 1, in: 0.1...30)
        options.headingStaleAfterSeconds = try settings.optionalDouble("headingStaleAfterSeconds").map { value in
            guard (0.1...30).contains(value) else {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).options.headingStaleAfterSeconds",
                    expected: "0.1 to 30 seconds", found: "\(value)")
            }
            return value
        }
        var devices = [
            try PluginRegistry.makeDevice(
                id: stage.plugin, settings: stage.settings, path: "stages.\(stage.name).plugin",
                logger: logger)
        ]
        if case let .array(items)? = settings.value("fallback") {
            for (index, item) in items.enumerated() {
                var entry = try Settings(
                    item, path: "stages.\(stage.name).options.fallback[\(index)]",
                    baseDirectory: stage.options.baseDirectory)
                let id = try entry.string("plugin")
                let deviceSettings = try entry.object("settings")
                try entry.finish()
                devices.append(
                    try PluginRegistry.makeDevice(
                        id: id, settings: deviceSettings, path: entry.path + ".plugin", logger: logger))
            }
        }
        try settings.finish()
        return (devices, options)
    }
}
