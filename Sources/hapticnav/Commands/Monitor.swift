import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime
import Stages
import Synchronization

struct Monitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every message on a pipeline's bus, one line each (or JSON Lines with --json).")

    @Option(name: .shortAndLong, help: "The pipeline config whose stages to listen to.")
    var config: String?

    @Option(
        name: .customLong("connect"), help: "An endpoint to listen to (repeatable), instead of or besides --config.")
    var endpoints: [String] = []

    @Option(help: "Only these topics (repeatable).")
    var topic: [String] = []

    @Flag(help: "Print JSON Lines.")
    var json = false

    @Flag(
        help:
            "One screen redrawn in place: each stage's health, rate and status, the bus's losses, position, progress, deviation, cue and device (Ctrl-C quits)."
    )
    var live = false

    @Option(help: "Stop after this many messages.")
    var count: Int?

    @Option(help: "Stop after this many seconds.")
    var seconds: Double?

    @Option(help: "The key pair (in the config's keys folder) to read encrypted stages with; one of its readers.")
    var key = "monitor"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let (endpoints, options, pipeline) = try busListening(
            config: self.config, endpoints: self.endpoints, key: self.key, topics: self.topic)
        let stageNames = pipeline?.stages.filter { !$0.advertise.isEmpty }.map(\.name) ?? []
        let context = ZMQContext()
        let subscriber = try BusSubscriber(context: context, connect: endpoints, options: options, logger: logger)
        let format = MonitorFormat(json: self.json)
        let limit = self.count
        let stop = SubscriberStop(subscriber, seconds: self.seconds)
        if self.live {
            await Self.runLive(
                subscriber, stages: stageNames,
                title: "HapticNav monitor: \(self.config ?? endpoints.joined(separator: ", "))  (Ctrl-C quits)")
            stop.cancel()
            context.terminate()
            return
        }
        var printed = 0
        for await event in subscriber {
            print(format.line(for: event, now: Date().timeIntervalSince1970))
            fflush(nil)
            if case .message = event {
                printed += 1
                if let limit, printed >= limit { break }
            }
        }
        subscriber.close()
        stop.cancel()
        let counters = subscriber.snapshot
        if counters.droppedTotal > 0 || counters.sequenceGaps > 0 {
            logger.warning(
                "dropped \(counters.droppedTotal) bad frame(s), \(counters.sequenceGaps) message(s) missing in sequence"
            )
        }
        context.terminate()
    }

    /// The live screen: the state follows every event; a thread redraws it four times a second.
    static func runLive(_ subscriber: BusSubscriber, stages: [String], title: String) async {
        let state = Mutex(LiveMonitor(stages: stages))
        let running = Atomic<Bool>(true)
        let drawing = Atomic<Bool>(true)
        StandardStreams.writeOutput("\u{1b}[?1049h\u{1b}[?25l")
        SystemThread.start(name: "monitor-screen") {
            while running.load(ordering: .relaxed) {
                let lines = state.withLock {
                    $0.render(now: MonotonicClock.nowSeconds(), title: title, counters: subscriber.snapshot)
                }
                StandardStreams.writeOutput("\u{1b}[H" + lines.map { $0 + "\u{1b}[K\n" }.joined() + "\u{1b}[J")
                SystemThread.sleep(seconds: 0.25)
            }
            drawing.store(false, ordering: .relaxed)
        }
        for await event in subscriber {
            state.withLock { $0.update(event, now: MonotonicClock.nowSeconds()) }
        }
        running.store(false, ordering: .relaxed)
        // The screen is left only once the last frame is drawn.
        while drawing.load(ordering: .relaxed) { SystemThread.sleep(seconds: 0.01) }
        StandardStreams.writeOutput("\u{1b}[?25h\u{1b}[?1049l")
    }
}
