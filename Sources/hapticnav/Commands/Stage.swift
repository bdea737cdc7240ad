import ArgumentParser
import Bus
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

struct StageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stage", abstract: "Run one stage of a pipeline config in this process.")

    @Argument(help: "The stage's name in the config.")
    var name: String

    @Option(name: .shortAndLong, help: "The pipeline config (JSON or JSON5).")
    var config: String

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        // Another stage's calibration may still be to come (`calibrate` needs the source running); a haptic stage
        // run here still refuses to start without its own.
        let pipeline = try loadConfig(self.config, calibrationMayBeMissing: true)
        let stage: StageConfig
        do {
            stage = try pipeline.stage(named: self.name)
        } catch {
            throw ValidationError("\(error)")
        }
        try await StageHost.run(stage: stage, in: pipeline, logger: logger)
    }
}
