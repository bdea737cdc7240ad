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
        // Which file, when the message does not say (a command may be given several).
        let text = "\(error)"
        throw CommandFailure(text.contains(file) ? text : "\(file): \(text)")
    }
}

/// SIGTERM and SIGINT for a command that finishes cleanly: they no longer kill the process; each runs `action` and sets
/// ``isSet``, which a command working in a loop of its own checks at each step.
final class StopSignals: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private var sources: [any DispatchSourceSignal] = []

    init(_ action: @escaping @Sendable () -> Void = {}) {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        self.sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                self?.flag.store(true, ordering: .relaxed)
                action()
            }
            source.resume()
            return source
        }
    }

    var isSet: Bool { self.flag.load(ordering: .relaxed) }

    func cancel() { self.sources.forEach { $0.cancel() } }
}

/// Closes a command's subscriber on SIGTERM or SIGINT, or after `seconds`, so that its receive loop ends and the
/// command finishes what it was doing (prints its counts, closes its file).
final class SubscriberStop {
    private let signals: StopSignals

    init(_ subscriber: BusSubscriber, seconds: Double?) {
        self.signals = StopSignals { subscriber.close() }
        if let seconds {
            let deadline = ContinuousClock.now + .seconds(seconds)
            SystemThread.start(name: "stop-deadline") {
                while ContinuousClock.now < deadline { SystemThread.sleep(seconds: 0.02) }
                subscriber.close()
            }
        }
    }

    func cancel() { self.signals.cancel() }
}

/// Reads a session for a command; says on standard error what reading skipped (records that could not be read, parts
/// left unclosed); a session that cannot be read is the command's failure.
func readSession(_ path: String) throws -> SessionExport.Session {
    let session: SessionExport.Session
    do {
        session = try SessionExport.read(path)
    } catch {
        throw CommandFailure("\(error)")
    }
    reportSessionProblems(path, badRecords: session.badLines, firstBad: session.firstBad, cutFiles: session.cutFiles)
    return session
}

/// Says on standard error what reading a session skipped: records that could not be read, parts left unclosed.
func reportSessionProblems(_ path: String, badRecords: Int, firstBad: String?, cutFiles: [(file: String, atByte: Int)])
{
    if badRecords > 0 {
        StandardStreams.writeError(
            "\(path): \(badRecords) record(s) could not be read and were skipped (the first: \(firstBad ?? "?"))\n")
    }
    for (file, byte) in cutFiles {
        StandardStreams.writeError(
            "\(file): not closed (its recorder stopped first); read to its last complete record at byte \(byte)\n")
    }
}

/// Writes a command's output file (made, or emptied first); a failure names the file.
func writeFile(_ bytes: [UInt8], to path: String) throws {
    do {
        let file = try OutputFile(path: path, mode: .truncate)
        defer { file.close() }
        guard file.write(bytes) else { throw CommandFailure("\(path): cannot be written") }
    } catch let error as SystemError {
        throw CommandFailure("\(error)")
    }
}

/// What a command that listens to a pipeline's bus connects to: the config's advertised endpoints and any given, with
/// the config's subscriber options and the keys to read its encrypted stages; only `topics`.
func busListening(
    config: String?, endpoints given: [String], key: String, topics: [String]
) throws -> (endpoints: [String], options: SubscriberOptions, pipeline: PipelineConfig?) {
    var endpoints = given
    var options = SubscriberOptions()
    var pipeline: PipelineConfig?
    if let config {
        let loaded = try loadConfig(config, calibrationMayBeMissing: true)
        endpoints += loaded.allAdvertisedEndpoints
        options = loaded.bus.subscriber
        options.curve = try LinkSecurity.subscriberOptions(reading: endpoints, as: key, in: loaded)
        pipeline = loaded
    }
    guard !endpoints.isEmpty else { throw ValidationError("give --config or at least one --connect endpoint") }
    for topic in topics where BusMessage.Kind(topic: topic) == nil {
        throw ValidationError(
            "unknown topic '\(topic)'; topics: \(BusMessage.Kind.allCases.map(\.topic).joined(separator: ", "))")
    }
    options.topics = topics
    return (endpoints, options, pipeline)
}
