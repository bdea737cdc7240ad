public import ArgumentParser
import Bus
import Devices
import LocationSources
import Routers
public import Logging
import NavCore
import Runtime

/// Options every command that logs shares.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func bootstrap() -> Logger {
        let level = self.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "hapticnav")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// A command that failed at run time (a file that cannot be read, a config that is wrong): its message is printed
/// and the process exits 1. Only a usage error (a bad option) prints usage and exits 64.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func loadConfig(_ file: String, calibrationMayBeMissing: Bool = false) throws -> PipelineConfig {
    do {
        return try PipelineConfig.load(file: file, calibrationMayBeMissing: calibrationMayBeMissing)
    } catch let error as ConfigError {
        throw CommandFailure("\(error)")
    }
}
