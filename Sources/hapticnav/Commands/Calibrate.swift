import ArgumentParser
import Bus
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

struct Calibrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Find the phone-in-pocket heading offset: find north, put the phone away, walk. Saves it for the haptic sink."
    )

    @Option(
        name: .shortAndLong,
        help: "The pipeline config: its source gives heading and tilt, its haptic stage the device.")
    var config: String?

    @Option(
        help:
            "Run the calibration on a recorded phone log instead (a phyphox folder, a sensor CSV, NMEA with headings): prints the steps, the offset and the spread; saves nothing unless --output is given."
    )
    var replay: String?

    @Option(
        help:
            "With --replay: the direction the person faced in the first step, when not north (degrees clockwise from north); the offset is then relative to it."
    )
    var facing = 0.0

    @Option(help: "The haptic stage (default: the config's only one).")
    var stage: String?

    @Option(help: "Where to save the offset (default: the stage's calibrationFile, else calibration.json).")
    var output: String?

    @Option(help: "Give up after this many seconds.")
    var timeout = 300.0

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if (self.config == nil) == (self.replay == nil) {
            throw ValidationError("give --config (a live calibration) or --replay LOG (a recorded one)")
        }
    }

    func run() async throws {
        let logger = self.logging.bootstrap()
        if let log = self.replay {
            try self.replay(log)
            return
        }
        let pipeline = try loadConfig(self.config!, calibrationMayBeMissing: true)
        let outcome = try await CalibrationRunner.run(
            config: pipeline, stageName: self.stage, output: self.output,
            timeoutSeconds: self.timeout,
            print: {
                Swift.print($0); fflush(nil)
            },
            logger: logger)
        let result = outcome.result
        if result.succeeded {
            print(
                String(
                    cFormat: "calibrated: offset %.1f°, spread %.1f° over %d headings; saved to ", result.offsetDegrees,
                    result.spreadDegrees, Int(result.sampleCount)) + (outcome.savedTo ?? "-"))
        } else {
            print("calibration aborted: \(result.reason)")
            throw ExitCode(1)
        }
    }

    private func replay(_ log: String) throws {
        let outcome: CalibrationReplay.Outcome
        do {
            outcome = try CalibrationReplay.run(log: log, facingDegrees: self.facing) { Swift.print($0) }
        } catch {
            throw CommandFailure("\(error)")
        }
        print("\(log): \(outcome.headings) headings; walking from \(outcome.walkingFrom)")
        guard let result = outcome.result else {
            let nearest =
                outcome.step == .findNorth
                ? outcome.nearestToReferenceDegrees.map {
                    String(
                        cFormat: " (the heading came within %.0f° of %.0f°, at %.0f°)",
                        Angle.separation($0, self.facing), self.facing, $0)
                } ?? "" : ""
            print("calibration unfinished: the log ended in step '\(outcome.step.name)'\(nearest)")
            throw ExitCode(1)
        }
        guard result.succeeded else {
            print("calibration aborted: \(result.reason)")
            throw ExitCode(1)
        }
        print(
            String(
                cFormat: "calibrated: offset %.1f°, spread %.1f° over %d headings", result.offsetDegrees,
                result.spreadDegrees, Int(result.sampleCount)))
        if let output = self.output {
            try CalibrationRunner.save(result, to: output)
            print("saved to \(output)")
        }
    }
}
