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
    var config: String

    @Option(help: "The haptic stage (default: the config's only one).")
    var stage: String?

    @Option(help: "Where to save the offset (default: the stage's calibrationFile, else calibration.json).")
    var output: String?

    @Option(help: "Give up after this many seconds.")
    var timeout = 300.0

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let pipeline = try loadConfig(self.config, calibrationMayBeMissing: true)
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
}
