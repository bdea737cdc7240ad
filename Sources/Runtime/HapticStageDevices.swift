package import Logging
package import HapticLogic
package import StageHaptic
import NavCore

/// A haptic stage as the runtime makes it: its options read beside the stage (``HapticStageOptions``), then its
/// devices from the plugin registry (the stage's own `plugin`, then each fallback) and the experimenter's stop store.
package enum HapticStageDevices {
    package static func make(
        _ stage: StageConfig, logger: Logger, check: Bool, calibrationMayBeMissing: Bool = false
    ) throws -> ([any OutputDevice], HapticSinkOptions) {
        let parsed = try HapticStageOptions.parse(
            stage.options, logger: logger, check: check, calibrationMayBeMissing: calibrationMayBeMissing)
        var options = parsed.sink
        if let control = try ControlConfig.parse(stage, calibrationFile: parsed.calibrationFile) {
            options.stopStore = FileStopStateStore(path: control.stateFile)
        }
        var devices = [
            try PluginRegistry.makeDevice(
                id: stage.plugin, settings: stage.settings, path: "stages.\(stage.name).plugin", logger: logger)
        ]
        for fallback in parsed.fallbacks {
            devices.append(
                try PluginRegistry.makeDevice(
                    id: fallback.plugin, settings: fallback.settings, path: fallback.path + ".plugin", logger: logger))
        }
        return (devices, options)
    }
}
