public import ArgumentParser
import Bus
import Devices
import LocationSources
import Routers
public import Logging
import NavCore
import Runtime
import Dispatch
import Synchronization
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

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

/// Closes a command's subscriber on SIGTERM or SIGINT, or after `seconds`, so that its receive loop ends and the
/// command finishes what it was doing (prints its counts, closes its file).
final class SubscriberStop {
    private let sources: [any DispatchSourceSignal]

    init(_ subscriber: BusSubscriber, seconds: Double?) {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        self.sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { subscriber.close() }
            source.resume()
            return source
        }
        if let seconds {
            let deadline = ContinuousClock.now + .seconds(seconds)
            SystemThread.start(name: "stop-deadline") {
                while ContinuousClock.now < deadline { SystemThread.sleep(seconds: 0.02) }
                subscriber.close()
            }
        }
    }

    func cancel() { self.sources.forEach { $0.cancel() } }
}

/// Set by SIGTERM or SIGINT: a command that works in a loop of its own stops at its next step and finishes cleanly.
final class StopFlag: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private var sources: [any DispatchSourceSignal] = []

    init() {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        self.sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.flag.store(true, ordering: .relaxed) }
            source.resume()
            return source
        }
    }

    var isSet: Bool { self.flag.load(ordering: .relaxed) }
}
