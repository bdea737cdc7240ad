import SessionFiles
import Parsers
import ArgumentParser
import Bus
import Logging
import NavCore
import Runtime
import SystemIO

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish a recorded session's messages again, at their recorded pace (scaled) or as fast as they go.",
        discussion: """
            Plays a session (a folder of MCAP parts as `hapticnav record` or the mcap recorder writes it, one .mcap file, \
            or a JSON Lines recording) on one endpoint, as one stage (--as, 'replay' by default): a config whose stages \
            read that stage sees the session as it was recorded, in the recorded order, at any rate. It waits for \
            --subscribers subscribers before the first message, and never drops one: at --rate max it goes as fast as \
            they take them.
            """)

    @Argument(help: "The session: a folder of .mcap parts, an .mcap file or a .jsonl recording.")
    var session: String

    @Option(help: "The endpoint to publish on, for example ipc:///tmp/replay.sock or tcp://127.0.0.1:7700.")
    var publish: String

    @Option(name: .customLong("as"), help: "The stage name the messages go out as.")
    var stage = "replay"

    @Option(help: "1 real time, 10 ten times faster, or max.")
    var rate = "1"

    @Option(help: "Only these topics (comma-separated or repeated).")
    var topics: [String] = []

    @Option(help: "Only what these recorded stages sent (comma-separated or repeated).")
    var stages: [String] = []

    @Option(help: "Start this many seconds after the session's first message.")
    var from: Double?

    @Option(help: "Stop this many seconds after the session's first message.")
    var to: Double?

    @Option(help: "Subscribers to wait for before the first message (0: do not wait).")
    var subscribers = 1

    @Option(help: "How long to wait for them [seconds].")
    var waitSeconds: Double = 30

    @OptionGroup var logging: LoggingOptions

    func options() throws -> SessionReplay.Options {
        var options = SessionReplay.Options()
        if self.rate == "max" {
            options.rate = 0
        } else {
            guard let rate = Double(self.rate), rate > 0, rate.isFinite else {
                throw ValidationError("--rate: expected a positive number or 'max', found '\(self.rate)'")
            }
            options.rate = rate
        }
        for topic in self.topics.flatMap({ $0.split(separator: ",") }).map(String.init) {
            guard let kind = BusMessage.Kind(topic: topic) else {
                throw ValidationError(
                    "--topics: unknown topic '\(topic)'; topics: \(BusMessage.Kind.allCases.map(\.topic).joined(separator: ", "))"
                )
            }
            options.topics.insert(kind)
        }
        options.stages = Set(self.stages.flatMap { $0.split(separator: ",") }.map(String.init))
        options.fromSeconds = self.from
        options.toSeconds = self.to
        if let from, let to, to < from { throw ValidationError("--to \(to) is before --from \(from)") }
        return options
    }

    func validate() throws { _ = try self.options() }

    func run() throws {
        let logger = self.logging.bootstrap()
        let options = try self.options()
        // A session that is not there is said at once, not after waiting for subscribers to a replay that cannot be.
        do { _ = try SessionReader.files(of: self.session) } catch { throw CommandFailure(error.description) }
        let context = ZMQContext()
        var publisherOptions = PublisherOptions()
        publisherOptions.lossless = true
        let publisher: BusPublisher
        do {
            publisher = try BusPublisher(
                context: context, bind: [self.publish], stage: self.stage, options: publisherOptions, logger: logger)
        } catch {
            throw CommandFailure("\(self.publish): \(error)")
        }
        let stop = StopSignals()
        let outcome: SessionReplay.Outcome
        do {
            try SessionReplay.waitForSubscribers(self.subscribers, on: publisher, seconds: self.waitSeconds)
            outcome = try SessionReplay.run(
                session: self.session, publisher: publisher, options: options, shouldStop: { stop.isSet })
        } catch {
            publisher.close()
            context.terminate()
            throw CommandFailure("\(error)")
        }
        // Let every message leave before the socket closes.
        publisher.close(lingerMilliseconds: 10_000)
        context.terminate()
        let summary = outcome.summary
        reportSessionProblems(
            self.session, badRecords: summary.badRecords, firstBad: summary.firstBad, cutFiles: summary.cutFiles)
        let rate = outcome.seconds > 0 ? Double(outcome.published) / outcome.seconds : 0
        print(
            "replayed \(outcome.published) of \(outcome.read) message(s) in \(String(cFormat: "%.3f", outcome.seconds)) s (\(Int(rate.rounded())) a second)"
        )
    }
}
