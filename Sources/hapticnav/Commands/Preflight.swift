import ArgumentParser
import Runtime
import Lab

struct PreflightCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preflight",
        abstract: "Before a walk: check every live part of a config and print a go/no-go table (exit 0 only on go).",
        discussion: """
            The phone (or receiver) runs for --seconds: it must answer and send fixes and headings at their rates, with
            its clock within a second of the host's, a GPS accuracy fit for walking, a compass that agrees with the
            World Magnetic Model and (once the person walks a few steps) headings that agree with the GPS course.
            Each output device of the haptic stage must answer (the band acknowledging its watchdog) and say
            "preflight"; the keys, the run folders and the recording's disk are checked. See docs/FIELD.md.
            """)

    @Option(help: "The config of the walk.")
    var config: String

    @Option(help: "How long to listen to the source [seconds].")
    var seconds: Double = 10

    @Option(help: "The worst median GPS accuracy that is a go [metres].")
    var maximumAccuracy: Double = 20

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        guard self.seconds >= 1, self.seconds <= 600 else { throw ValidationError("--seconds: 1 to 600") }
        let logger = self.logging.bootstrap()
        let pipeline = try loadConfig(self.config, calibrationMayBeMissing: true)
        var limits = Preflight.Limits()
        limits.maximumAccuracyMeters = self.maximumAccuracy
        print("preflight of \(self.config): listening to the source for \(Int(self.seconds)) s…")
        let rows: [Preflight.Row]
        do {
            rows = try await Preflight.run(config: pipeline, seconds: self.seconds, limits: limits, logger: logger)
        } catch {
            throw CommandFailure("\(error)")
        }
        print(Preflight.table(rows))
        if !Preflight.isGo(rows) { throw ExitCode(1) }
    }
}
