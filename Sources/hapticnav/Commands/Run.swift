import ArgumentParser
import Bus
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start every stage of a pipeline config as its own process; stop them all on SIGTERM or SIGINT.")

    @Option(name: .shortAndLong, help: "The pipeline config (JSON or JSON5).")
    var config: String

    @Option(
        name: [.customLong("host"), .customLong("group")],
        help:
            "Start only the stages of this host (the stages' `group`: for example 1 for the map logic, 2 for the haptic logic)."
    )
    var group: String?

    @Option(help: "Failures in a row after which a stage is not started again and the pipeline stops.")
    var restartLimit = 5

    @Option(help: "Longest wait before starting a failed stage again [seconds]; the waits double from 1 s up to it.")
    var restartBackoffMax = 30.0

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...100).contains(self.restartLimit) else { throw ValidationError("--restart-limit: 0 to 100") }
        guard self.restartBackoffMax > 0, self.restartBackoffMax <= 3600 else {
            throw ValidationError("--restart-backoff-max: more than 0, at most 3600 s")
        }
    }

    func run() throws {
        let logger = self.logging.bootstrap()
        // The calibration file is the haptic stage's: a group without one (the map logic, started before the
        // calibration that needs its fixes, docs/FIELD.md) runs before the file exists.
        var pipeline = try loadConfig(self.config, calibrationMayBeMissing: true)
        let stages = pipeline.stages.filter { self.group == nil || $0.group == self.group }
        if stages.contains(where: { $0.role == .haptic }) { pipeline = try loadConfig(self.config) }
        guard !stages.isEmpty else {
            let groups = Set(pipeline.stages.compactMap(\.group)).sorted()
            throw ValidationError(
                "no stage is in group '\(self.group ?? "")'; groups: \(groups.joined(separator: ", "))")
        }
        var launcher = Launcher(configFile: self.config, stages: stages.map(\.name), logger: logger)
        launcher.childArguments = ["--log-level", "\(self.logging.logLevel)"]
        launcher.restartLimit = self.restartLimit
        launcher.maximumBackoffSeconds = self.restartBackoffMax
        logger.info("pipeline '\(pipeline.name)': starting \(stages.map(\.name).joined(separator: ", "))")
        let status = try launcher.run()
        throw ExitCode(status)
    }
}
