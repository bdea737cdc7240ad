import SessionTools
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

    @Option(
        help:
            "With --live: the key pair to send the experimenter's commands with from the keyboard (s stop, r resume, m mark); one of the sink's senders."
    )
    var controlKey = "experimenter"

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
            let takesCommands =
                pipeline.map { pipeline in
                    pipeline.stages.contains { $0.role == .haptic && $0.options.contains("control") }
                } ?? false
            let keys = takesCommands ? ", s stop, r resume, m mark" : ""
            await Self.runLive(
                subscriber, stages: stageNames,
                title: "HapticNav monitor: \(self.config ?? endpoints.joined(separator: ", "))  (Ctrl-C quits\(keys))",
                control: takesCommands ? pipeline.map { ($0, self.controlKey) } : nil)
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
    static func runLive(
        _ subscriber: BusSubscriber, stages: [String], title: String,
        control: (pipeline: PipelineConfig, key: String)? = nil
    ) async {
        let state = Mutex(LiveMonitor(stages: stages))
        let running = Atomic<Bool>(true)
        let drawing = Atomic<Bool>(true)
        let controlLine = SharedText()
        let terminal = control == nil ? nil : RawKeyboard()
        defer { terminal?.restore() }
        if let control, let terminal {
            Self.takeCommands(from: terminal, control: control, into: controlLine)
        }
        StandardStreams.writeOutput("\u{1b}[?1049h\u{1b}[?25l")
        SystemThread.start(name: "monitor-screen") {
            while running.load(ordering: .relaxed) {
                var lines = state.withLock {
                    $0.render(now: StageTime.system.monotonicSeconds(), title: title, counters: subscriber.snapshot)
                }
                let command = controlLine.value
                if !command.isEmpty { lines.insert("control    " + command, at: min(1, lines.count)) }
                StandardStreams.writeOutput("\u{1b}[H" + lines.map { $0 + "\u{1b}[K\n" }.joined() + "\u{1b}[J")
                SystemThread.sleep(seconds: 0.25)
            }
            drawing.store(false, ordering: .relaxed)
        }
        for await event in subscriber {
            state.withLock { $0.update(event, now: StageTime.system.monotonicSeconds()) }
        }
        running.store(false, ordering: .relaxed)
        // The screen is left only once the last frame is drawn.
        while drawing.load(ordering: .relaxed) { SystemThread.sleep(seconds: 0.01) }
        StandardStreams.writeOutput("\u{1b}[?25h\u{1b}[?1049l")
    }

    /// Reads single keys on a thread of its own: s stops, r resumes, m marks (with the time) every haptic stage of
    /// the pipeline; each answer (or what could not be reached) goes to `line` for the screen.
    private static func takeCommands(
        from keyboard: RawKeyboard, control: (pipeline: PipelineConfig, key: String), into line: SharedText
    ) {
        SystemThread.start(name: "monitor-keys") {
            var marks = 0
            while let key = keyboard.next() {
                let command: NavCore.ControlCommand
                var text = ""
                switch key {
                case UInt8(ascii: "s"), UInt8(ascii: "S"): command = .stop
                case UInt8(ascii: "r"), UInt8(ascii: "R"): command = .resume
                case UInt8(ascii: "m"), UInt8(ascii: "M"):
                    command = .mark
                    marks += 1
                    text = "mark \(marks) from the live monitor"
                default: continue
                }
                line.value = "\(command) sent …"
                let request = ControlRequest(
                    command: command, text: text,
                    requestID: "monitor-\(getpid())-\(Int(SystemClock.wallSeconds() * 1000))",
                    sentSeconds: SystemClock.wallSeconds())
                let pipeline = control.pipeline
                let key = control.key
                // One command at a time, in the order typed: "r" then "s" must never end resumed.
                let done = DispatchSemaphore(value: 0)
                Task {
                    defer { done.signal() }
                    let summary: String
                    do {
                        let outcomes = try await ExperimenterControl.send(request, pipeline: pipeline, keyName: key)
                        summary = outcomes.map { outcome in
                            switch outcome.result {
                            case let .success(reply):
                                return
                                    "\(outcome.stage): \(reply.message) (\(fixedDecimal(outcome.seconds, digits: 3)) s)"
                            case let .failure(failure): return "\(outcome.stage): NOT REACHED: \(failure)"
                            }
                        }.joined(separator: "; ")
                    } catch {
                        summary = "\(command) not sent: \(error)"
                    }
                    line.value = summary
                }
                done.wait()
            }
        }
    }
}

/// A line of text shared between threads.
final class SharedText: Sendable {
    private let text = Mutex("")
    var value: String {
        get { self.text.withLock { $0 } }
        set { self.text.withLock { $0 = newValue } }
    }
}

/// The terminal's keys one at a time, unechoed, while the live screen runs (Ctrl-C still interrupts); the terminal's
/// settings are put back by ``restore()``. Nil keys when standard input is not a terminal.
final class RawKeyboard: @unchecked Sendable {
    private var saved = termios()
    private let isTerminal: Bool

    init() {
        self.isTerminal = isatty(0) == 1 && tcgetattr(0, &self.saved) == 0
        guard self.isTerminal else { return }
        var raw = self.saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutablePointer(to: &raw.c_cc) {
            $0.withMemoryRebound(to: cc_t.self, capacity: Int(NCCS)) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
        }
        tcsetattr(0, TCSANOW, &raw)
    }

    /// The next key, nil at the end of input (or when standard input is not a terminal).
    func next() -> UInt8? {
        guard self.isTerminal else { return nil }
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count == 1 { return byte }
            if count < 0, errno == EINTR { continue }
            return nil
        }
    }

    func restore() {
        if self.isTerminal { tcsetattr(0, TCSANOW, &self.saved) }
    }
}
