public import ArgumentParser
public import Logging

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
