public import ArgumentParser
public import Logging
import Runtime

/// Options every command that logs shares.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    /// Logs to standard error, or, under systemd with standard error in the journal, to the journal with each
    /// metadata field a field of its own (``JournalLogHandler``).
    func bootstrap() -> Logger {
        let level = self.logLevel
        let journal = JournalLogHandler.stderrIsJournal()
        LoggingSystem.bootstrap { label in
            if journal {
                var handler = JournalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "hapticnav")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
