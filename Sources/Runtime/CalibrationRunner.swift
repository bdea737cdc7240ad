import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HapticLogic
public import Logging
public import NavCore
import StageHaptic
import SystemIO

/// `hapticnav calibrate`: the three-step calibration on a pipeline's bus, with its prompts printed and spoken
/// and its north-finding cues on the haptic stage's device; saves the offset for the sink to load.
public enum CalibrationRunner {
    /// How a run ended.
    public struct Outcome: Sendable {
        /// The result.
        public let result: CalibrationResult
        /// Where the offset was saved, on success.
        public let savedTo: String?
    }

    /// Runs a calibration for the haptic stage `stageName` of `config`; `output` defaults to the stage's
    /// `options.calibrationFile`, else `calibration.json`.
    public static func run(
        config: PipelineConfig, stageName: String?, output: String?, timeoutSeconds: Double,
        print: @escaping @Sendable (String) -> Void, logger: Logger
    ) async throws -> Outcome {
        guard
            let stage = config.stages.first(where: { $0.role == .haptic && (stageName == nil || $0.name == stageName) })
        else {
            throw ConfigError.unknownStage(
                path: "--stage", name: stageName ?? "(a haptic stage)",
                known: config.stages.filter { $0.role == .haptic }.map(\.name))
        }
        var options = stage.options
        let configured = try options.path("calibrationFile")
        let target = output ?? configured ?? "calibration.json"
        let device = try PluginRegistry.makeDevice(
            id: stage.plugin, settings: stage.settings, path: "stages.\(stage.name).plugin", logger: logger)

        let context = ZMQContext()
        defer { context.terminate() }
        var subscriberOptions = config.bus.subscriber
        subscriberOptions.topics = ["heading", "attitude", "fix", "smoothed"]
        // Calibration runs where the sink runs, and reads as the sink.
        subscriberOptions.curve = try LinkSecurity.subscriberOptions(
            reading: config.allAdvertisedEndpoints, as: stage.key, in: config)
        let subscriber = try BusSubscriber(
            context: context, connect: config.allAdvertisedEndpoints, options: subscriberOptions, logger: logger)
        defer { subscriber.close() }

        var calibration = Calibration()
        // North is true north: the source stage turns headings true once it has a position (or the config's place);
        // a heading still magnetic waits for one.
        var waitingForPosition = false
        var lastPrompt = ""
        var result: CalibrationResult?
        let deadline = ContinuousClock.now + .seconds(timeoutSeconds)
        return try await withThrowingTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                try await device.run(); return nil
            }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                subscriber.close()
                return nil
            }
            for await received in subscriber.messages {
                let inputs: [Calibration.Input]
                switch received.message {
                case let .heading(sample):
                    guard sample.reference == .trueNorth else {
                        if !waitingForPosition {
                            waitingForPosition = true
                            print(
                                "waiting for a GPS fix: the compass gives magnetic north, and true north needs a position"
                            )
                        }
                        continue
                    }
                    inputs = [.heading(sample)]
                case let .attitude(attitude): inputs = [.attitude(attitude)]
                case let .fix(fix):
                    inputs =
                        fix.speedMetersPerSecond.map { [.speed(timeSeconds: fix.timeSeconds, metersPerSecond: $0)] }
                        ?? []
                case let .smoothed(fix):
                    inputs = [.speed(timeSeconds: fix.timeSeconds, metersPerSecond: fix.speedMetersPerSecond)]
                default: inputs = []
                }
                for input in inputs {
                    for message in calibration.update(input) {
                        switch message {
                        case let .calibrationState(state):
                            if state.step == .findNorth {
                                try? await device.render(
                                    HapticCue(
                                        timeSeconds: state.timeSeconds, kind: .calibration,
                                        intensity: state.cueIntensity, deviationDegrees: 0))
                            }
                            if state.prompt != lastPrompt {
                                lastPrompt = state.prompt
                                print("[\(state.step.name)] \(state.prompt)")
                                try? await device.announce(state.prompt)
                            }
                        case let .calibrationResult(done):
                            result = done
                        default: break
                        }
                    }
                }
                if result != nil { break }
            }
            try? await device.stopAll()
            group.cancelAll()
            guard let result else {
                throw ConfigError.invalidValue(
                    path: "calibration", expected: "a finished run within \(Int(timeoutSeconds)) s",
                    found: "no result (is the source running?)")
            }
            var savedTo: String?
            if result.succeeded {
                try Self.save(result, to: target)
                savedTo = target
            }
            return Outcome(result: result, savedTo: savedTo)
        }
    }

    /// Saves a successful run's offset where a haptic stage's `calibrationFile` reads it, making its folder (0750:
    /// the service's state folder, `/var/lib/hapticnav/NAME`, before the service first made it) if needed.
    public static func save(_ result: CalibrationResult, to file: String) throws {
        try Paths.createFolders(Paths.folder(of: file), permissions: 0o750)
        let saved = HapticStageOptions.SavedCalibration(
            offsetDegrees: result.offsetDegrees, spreadDegrees: result.spreadDegrees,
            sampleCount: Int(result.sampleCount), calibratedAt: Date.now.formatted(.iso8601))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(saved).write(to: URL(fileURLWithPath: file))
    }
}
