public import ArgumentParser
import Bus
import Foundation
import Devices
import LocationSources
import Routers
public import Logging
import NavCore
import Runtime

@main
struct HapticNav: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hapticnav",
        abstract: "Guidance for blind and low-vision walkers, as a pipeline of processes on a ZeroMQ bus.",
        subcommands: [Run.self, StageCommand.self, Monitor.self, Calibrate.self, Fixes.self, RouteCommand.self, BandEmulatorCommand.self, ConfigCommand.self, BusCommand.self, Bench.self, Eval.self])
}

/// Options every command that logs shares.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func bootstrap() -> Logger {
        // A peer that hangs up is an error to handle (EPIPE), not a reason to die.
        signal(SIGPIPE, SIG_IGN)
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

func loadConfig(_ file: String) throws -> PipelineConfig {
    do {
        return try PipelineConfig.load(file: file)
    } catch let error as ConfigError {
        throw CommandFailure("\(error)")
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start every stage of a pipeline config as its own process; stop them all on SIGTERM or SIGINT.")

    @Option(name: .shortAndLong, help: "The pipeline config (JSON or JSON5).")
    var config: String

    @Option(help: "Start only the stages of this host group (for example 1 for the map logic, 2 for the haptic logic).")
    var group: String?

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let logger = self.logging.bootstrap()
        let pipeline = try loadConfig(self.config)
        let stages = pipeline.stages.filter { self.group == nil || $0.group == self.group }
        guard !stages.isEmpty else {
            let groups = Set(pipeline.stages.compactMap(\.group)).sorted()
            throw ValidationError("no stage is in group '\(self.group ?? "")'; groups: \(groups.joined(separator: ", "))")
        }
        var launcher = Launcher(configFile: self.config, stages: stages.map(\.name), logger: logger)
        launcher.childArguments = ["--log-level", "\(self.logging.logLevel)"]
        logger.info("pipeline '\(pipeline.name)': starting \(stages.map(\.name).joined(separator: ", "))")
        let status = try launcher.run()
        throw ExitCode(status)
    }
}

struct StageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stage", abstract: "Run one stage of a pipeline config in this process.")

    @Argument(help: "The stage's name in the config.")
    var name: String

    @Option(name: .shortAndLong, help: "The pipeline config (JSON or JSON5).")
    var config: String

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let pipeline = try loadConfig(self.config)
        let stage: StageConfig
        do {
            stage = try pipeline.stage(named: self.name)
        } catch {
            throw ValidationError("\(error)")
        }
        try await StageHost.run(stage: stage, bus: pipeline.bus, logger: logger)
    }
}

struct Monitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every message on a pipeline's bus, one line each (or JSON Lines with --json).")

    @Option(name: .shortAndLong, help: "The pipeline config whose stages to listen to.")
    var config: String?

    @Option(name: .customLong("connect"), help: "An endpoint to listen to (repeatable), instead of or besides --config.")
    var endpoints: [String] = []

    @Option(help: "Only these topics (repeatable).")
    var topic: [String] = []

    @Flag(help: "Print JSON Lines.")
    var json = false

    @Option(help: "Stop after this many messages.")
    var count: Int?

    @Option(help: "Stop after this many seconds.")
    var seconds: Double?

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        var endpoints = self.endpoints
        var options = SubscriberOptions()
        if let config = self.config {
            let pipeline = try loadConfig(config)
            endpoints += pipeline.allAdvertisedEndpoints
            options = pipeline.bus.subscriber
        }
        guard !endpoints.isEmpty else { throw ValidationError("give --config or at least one --connect endpoint") }
        for topic in self.topic where BusMessage.Kind(topic: topic) == nil {
            throw ValidationError("unknown topic '\(topic)'; topics: \(BusMessage.Kind.allCases.map(\.topic).joined(separator: ", "))")
        }
        options.topics = self.topic
        let context = ZMQContext()
        let subscriber = try BusSubscriber(context: context, connect: endpoints, options: options, logger: logger)
        let format = MonitorFormat(json: self.json)
        let limit = self.count
        let deadline = self.seconds.map { ContinuousClock.now + .seconds($0) }
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let stopSources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { subscriber.close() }
            source.resume()
            return source
        }
        let timer = deadline.map { deadline in
            Thread {
                while ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
                subscriber.close()
            }
        }
        timer?.start()
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
        stopSources.forEach { $0.cancel() }
        let counters = subscriber.snapshot
        if counters.droppedTotal > 0 || counters.sequenceGaps > 0 {
            logger.warning("dropped \(counters.droppedTotal) bad frame(s), \(counters.sequenceGaps) message(s) missing in sequence")
        }
        context.terminate()
    }
}

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check pipeline configs.", subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a config and print its stages and endpoints.")

        @Argument(help: "The config files to check.")
        var files: [String]

        func run() throws {
            for file in self.files {
                let pipeline = try loadConfig(file)
                print("\(file): pipeline '\(pipeline.name)', \(pipeline.stages.count) stage(s)")
                for stage in pipeline.stages {
                    let group = stage.group.map { " group \($0)" } ?? ""
                    print("  \(stage.name): \(stage.role.rawValue)/\(stage.plugin)\(group)"
                          + (stage.publish.isEmpty ? "" : " publish \(stage.publish.joined(separator: ","))")
                          + (stage.inputs.isEmpty ? "" : " inputs \(stage.inputs.joined(separator: ","))"))
                }
            }
        }
    }
}

struct BusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bus", abstract: "Tools for the bus itself.", subcommands: [Publish.self])

    struct Publish: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish test traffic: numbered heading samples, or one example of every message type.")

        @Option(help: "Endpoint to bind, for example ipc:///tmp/hn/test.sock or tcp://127.0.0.1:5700.")
        var bind: String

        @Option(help: "Sender stage id in the headers.")
        var stage = "bus-publish"

        @Option(help: "Messages to send (0: until stopped).")
        var count = 1000

        @Option(help: "Messages per second.")
        var rate = 1000.0

        @Option(help: "Seconds of heartbeats only before the first message, so that subscribers can join.")
        var warmup = 1.0

        @Option(help: "Seconds to keep heartbeating after the last message.")
        var linger = 0.5

        @Flag(help: "Cycle through one example of every message type instead of heading samples.")
        var examples = false

        func run() throws {
            signal(SIGPIPE, SIG_IGN)
            let context = ZMQContext()
            let publisher = try BusPublisher(context: context, bind: [self.bind], stage: self.stage)
            Thread.sleep(forTimeInterval: self.warmup)
            let interval = 1 / max(self.rate, 0.001)
            let start = Date()
            var index = 0
            while self.count == 0 || index < self.count {
                let due = start.addingTimeInterval(Double(index) * interval)
                let wait = due.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                let message = self.examples
                    ? BusMessage.examples[index % BusMessage.examples.count]
                    : .heading(HeadingSample(timeSeconds: Date().timeIntervalSince1970,
                                             headingDegrees: Double(index % 3600) / 10))
                try publisher.send(message)
                index += 1
            }
            Thread.sleep(forTimeInterval: self.linger)
            publisher.close(lingerMilliseconds: 500)
            context.terminate()
        }
    }
}

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks that print their figures.", subcommands: [BusBench.self, RoutesBench.self])

    struct BusBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bus",
            abstract: "One hop's latency over ipc:// through the transport and through raw libzmq, in the same run.")

        @Option(help: "Messages per series.")
        var messages = 10_000

        @Option(help: "Messages per second.")
        var rate = 1000.0

        @Option(help: "Alternating blocks of raw and transport hops.")
        var rounds = 20

        @Flag(help: "Print the figures as JSON.")
        var json = false

        func run() async throws {
            let folder = NSTemporaryDirectory() + "hapticnav-bench-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let report = try await BusBenchmark.run(messages: self.messages, rateHz: self.rate, rounds: self.rounds,
                                                    folder: folder)
            if self.json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
                return
            }
            func row(_ name: String, _ s: LatencySummary) -> String {
                name.padding(toLength: 22, withPad: " ", startingAt: 0)
                    + String(format: "%8d %10.1f %10.1f %10.1f", s.count, s.p50, s.p99, s.max)
            }
            print("bus latency, one hop over ipc:// at \(Int(self.rate)) Hz, libzmq \(zmqVersion()), "
                  + "payload \(report.payloadBytes) bytes, \(self.rounds) alternating rounds")
            print("series                    count    p50 µs     p99 µs     max µs")
            print(row("raw libzmq PUB→SUB", report.raw))
            print(row("hapticnav transport", report.transport))
            print(row("  of which to decode", report.receiveThread))
            print(String(format: "ratio transport/raw p50: %.2f over all samples; median of the %d paired rounds: %.2f (target ≤ 1.50)",
                         report.ratioP50, self.rounds, report.medianRoundRatioP50))
        }
    }
}

struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluations that print their figures.", subcommands: [SmootherEval.self, GuidanceEval.self, TargetsEval.self])

    struct SmootherEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "smoother",
            abstract: "RMS error of raw and smoothed fixes and the mean lag, on simulated walks and a real one.")

        @Option(help: "A GnssLogger log whose GPS fixes are the truth of a real walk ('' to skip).")
        var realWalk = "data/walks/gnsslogger-pixel7-stanford-walk.txt"

        @Option(help: "Walks (or noise seeds on the real walk) per noise level.")
        var walks = 20

        @Option(help: "The smoother's acceleration noise [m/s²].")
        var accelerationNoise = KalmanSmoother.Options().accelerationNoise

        func run() throws {
            var options = KalmanSmoother.Options()
            options.accelerationNoise = self.accelerationNoise
            let rows = try SmootherReport.run(realWalk: self.realWalk.isEmpty ? nil : self.realWalk, walks: self.walks,
                                              options: options)
            print("smoother: Kalman, constant velocity, acceleration noise \(options.accelerationNoise) m/s²; "
                  + "walks at 1.4 m/s (real walk: its own pace), a fix every second, Gaussian noise per axis")
            print("walk                                   σ m  runs  fixes  raw RMS m  smoothed RMS m  below raw  mean lag m")
            var pass = true
            for row in rows {
                let m = row.metrics
                print(row.walk.padding(toLength: 37, withPad: " ", startingAt: 0)
                      + String(format: "%5.0f %5d %6d %10.2f %15.2f %9.0f %% %11.2f", row.sigma, row.runs, m.fixes,
                               m.rawRMSMeters, m.smoothedRMSMeters, m.improvement * 100, m.meanLagMeters))
                pass = pass && m.improvement >= 0.3 && (row.sigma < 10 || abs(m.meanLagMeters) <= 2)
            }
            print("targets: RMS at least 30 % below raw at σ 5 and 10 m; |mean lag| at most 2 m at σ 10 m: "
                  + (pass ? "met" : "NOT met"))
        }
    }
}

extension Eval {
    struct GuidanceEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "guidance",
            abstract: "Cue changes a minute for simulated walkers who obey cues: the plain rule against the debounced one.")

        @Option(help: "Minutes walked per seed.")
        var minutes = 10.0

        @Option(help: "Seeds.")
        var seeds = 5

        func run() {
            let walker = GuidanceSimulation.Walker()
            print("walkers who obey cues: compass noise \(walker.compassNoiseDegrees)°, drift \(walker.driftDegreesPerRootSecond)°/√s, "
                  + "turn \(walker.turnRateDegreesPerSecond)°/s at full intensity, reaction \(walker.reactionSeconds) s, "
                  + "\(Int(walker.sampleRateHz)) Hz; tolerance 15°, debounce 0.3 s, release band 5°")
            print("seed   plain rule /min   debounced /min")
            var plain: [Double] = [], debounced: [Double] = []
            for seed in 1...max(1, self.seeds) {
                plain.append(GuidanceSimulation.cueChangesPerMinute(debounced: false, minutes: self.minutes, seed: UInt64(seed)))
                debounced.append(GuidanceSimulation.cueChangesPerMinute(debounced: true, minutes: self.minutes, seed: UInt64(seed)))
                print(String(format: "%4d %17.1f %16.1f", seed, plain.last!, debounced.last!))
            }
            let median = { (values: [Double]) in values.sorted()[values.count / 2] }
            print(String(format: "median %15.1f %16.1f", median(plain), median(debounced)))
        }
    }
}

struct Fixes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode a log (NMEA, GnssLogger, GPX, sensor CSV or a phyphox folder): one fix or sample per line.")

    @Argument(help: "The log file (or phyphox folder).")
    var file: String

    @Flag(help: "JSON Lines with the field names of docs/PROTOCOL.md.")
    var json = false

    @Option(help: "For logs that never send a date: the date to assume, like 2024-05-01.")
    var date: String?

    @Option(help: "Time zero for logs with relative times, like 2024-05-01T10:00:00Z.")
    var startTime: String?

    @Option(help: "GnssLogger Fix providers to print (GPS, FLP, NLP; repeatable).")
    var provider: [String] = ["GPS"]

    func run() throws {
        var options = LogReader.Options()
        if let date = self.date {
            guard let days = parseDay(date) else { throw ValidationError("--date: expected a date like 2024-05-01") }
            options.nmea.assumedDateDays = days
        }
        if let start = self.startTime {
            guard let seconds = parseTime(start) else { throw ValidationError("--start-time: expected a time like 2024-05-01T10:00:00Z") }
            options.startTime = seconds
        }
        options.fixProviders = Set(self.provider)
        let result: LogReader.Result
        do {
            result = try LogReader(options: options).read(self.file)
        } catch let error as LogError {
            throw CommandFailure("\(error)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var out = ""
        for entry in result.entries {
            if self.json {
                struct Line: Encodable {
                    let line: Int
                    let message: BusMessage
                    enum CodingKeys: String, CodingKey { case line, topic, payload }
                    func encode(to encoder: any Encoder) throws {
                        var container = encoder.container(keyedBy: CodingKeys.self)
                        try container.encode(self.line, forKey: .line)
                        try container.encode(self.message.kind.topic, forKey: .topic)
                        try container.encode(self.message.payload, forKey: .payload)
                    }
                }
                out += String(decoding: try encoder.encode(Line(line: entry.line, message: entry.message)), as: UTF8.self) + "\n"
            } else {
                let time: Double
                switch entry.message {
                case let .fix(fix): time = fix.timeSeconds
                case let .heading(heading): time = heading.timeSeconds
                case let .attitude(attitude): time = attitude.timeSeconds
                default: time = .nan
                }
                out += "\(iso8601(time)) \(entry.message.kind.topic.padding(toLength: 8, withPad: " ", startingAt: 0)) \(entry.message.summary)\n"
            }
            if out.utf8.count > 1 << 16 {
                FileHandle.standardOutput.write(Data(out.utf8))
                out = ""
            }
        }
        FileHandle.standardOutput.write(Data(out.utf8))
        for problem in result.problems.prefix(20) {
            FileHandle.standardError.write(Data("skipped \(problem)\n".utf8))
        }
        let counts = Dictionary(grouping: result.entries, by: { $0.message.kind.topic }).mapValues(\.count)
        FileHandle.standardError.write(Data(("\(self.file): \(result.format.rawValue), "
            + counts.keys.sorted().map { "\(counts[$0]!) \($0)" }.joined(separator: ", ")
            + ", \(result.problems.count) skipped\n").utf8))
    }
}

private func parseDay(_ text: String) -> Int? {
    parseTime(text + "T00:00:00Z").map { Int($0 / 86_400) }
}

private func parseTime(_ text: String) -> Double? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)?.timeIntervalSince1970
}

struct RouteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "route",
        abstract: "A walking route between two points: its length, waypoints and instructions.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, geojson, gpx
    }

    @Option(help: "Start, as LAT,LON.")
    var from: String

    @Option(help: "Destination, as LAT,LON.")
    var to: String

    @Option(help: "An OpenStreetMap XML extract to route over offline.")
    var map: String?

    @Option(help: "A routing engine instead of a map: valhalla or osrm.")
    var provider: String?

    @Option(help: "The engine's URL (default http://127.0.0.1:8002 for Valhalla, :5000 for OSRM).")
    var url: String?

    @Flag(help: "Avoid steps (with --map).")
    var avoidSteps = false

    @Option(help: "Output: text, json, geojson or gpx.")
    var format: Format = .text

    @Option(help: "A waypoint where the route turns by more than this [degrees].")
    var turnThreshold = 30.0

    private func coordinate(_ text: String, _ name: String) throws -> Coordinate {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let lat = parts[0], let lon = parts[1], abs(lat) <= 90, abs(lon) <= 180 else {
            throw ValidationError("--\(name): expected LAT,LON, like 43.7319,7.4216")
        }
        return Coordinate(latitude: lat, longitude: lon)
    }

    func run() async throws {
        let start = try self.coordinate(self.from, "from"), destination = try self.coordinate(self.to, "to")
        let logger = Logger(label: "hapticnav.route")
        let provider: any RouteProvider
        switch (self.map, self.provider) {
        case let (map?, nil):
            var options = OSMLoader.Options()
            options.avoidSteps = self.avoidSteps
            provider = try OSMRouteProvider(map: map, options: options, logger: logger)
        case (nil, "valhalla"?):
            guard let url = URL(string: self.url ?? "http://127.0.0.1:8002") else { throw ValidationError("--url: not a URL") }
            provider = ValhallaRouteProvider(url: url)
        case (nil, "osrm"?):
            guard let url = URL(string: self.url ?? "http://127.0.0.1:5000") else { throw ValidationError("--url: not a URL") }
            provider = OSRMRouteProvider(url: url)
        default:
            throw ValidationError("give --map FILE, or --provider valhalla|osrm (with --url)")
        }
        let plan: RoutePlan
        do {
            plan = try await provider.route(from: start, to: destination)
        } catch let error as RoutingError {
            throw CommandFailure("\(error)")
        }
        let route = RouteBuilder.route(from: plan, routeID: 1, timeSeconds: Date().timeIntervalSince1970, provider: provider.name,
                                       turnThresholdDegrees: self.turnThreshold)
        print(RouteOutput.render(route, format: self.format.rawValue))
    }
}

extension Bench {
    struct RoutesBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "routes",
            abstract: "The osm router against the 25 Monaco reference routes, and its query times against a live Valhalla's.")

        @Option(help: "The OSM extract.")
        var map = "data/maps/monaco-highways.osm"

        @Option(help: "The reference routes.")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "A running Valhalla to time in the same run (scripts/valhalla-serve starts one).")
        var valhallaURL: String?

        @Option(help: "Queries per pair and engine.")
        var repeats = 5

        func run() async throws {
            let osm = try OSMRouteProvider(map: self.map, logger: Logger(label: "bench"))
            let valhalla = try self.valhallaURL.map { text -> ValhallaRouteProvider in
                guard let url = URL(string: text) else { throw ValidationError("--valhalla-url: not a URL") }
                return ValhallaRouteProvider(url: url, timeoutSeconds: 10, retries: 0)
            }
            print(try await RouteBenchmark.run(pairs: try RouteBenchmark.pairs(file: self.pairs), osm: osm, valhalla: valhalla,
                                               repeats: self.repeats))
        }
    }
}

struct BandEmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "band-emulator",
        abstract: "The band's side of the band protocol, over TCP or a pseudo-terminal: logs every frame as a JSON line.")

    @Option(help: "Listen on HOST:PORT (for example 127.0.0.1:7800).")
    var tcp: String?

    @Option(help: "Open a pseudo-terminal and link it at this path, for the band plugin's `device` setting.")
    var pty: String?

    @Option(help: "Write the JSON lines to this file instead of standard output.")
    var log: String?

    func run() throws {
        let listen: BandEmulator.Listen
        switch (self.tcp, self.pty) {
        case let (address?, nil):
            guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
                throw ValidationError("--tcp: expected HOST:PORT")
            }
            listen = .tcp(host: String(address[..<colon]), port: port)
        case let (nil, link?): listen = .pty(link: link)
        default: throw ValidationError("give --tcp HOST:PORT or --pty PATH")
        }
        let output: FileHandle
        if let log = self.log {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            guard let handle = FileHandle(forWritingAtPath: log) else { throw ValidationError("--log: cannot write \(log)") }
            output = handle
        } else {
            output = FileHandle.standardOutput
        }
        signal(SIGPIPE, SIG_IGN)
        let emulator = BandEmulator(listen: listen) { line in output.write(Data((line + "\n").utf8)) }
        // SIGUSR1 toggles acknowledgements: a band that hangs, for fallback tests.
        signal(SIGUSR1, SIG_IGN)
        let toggle = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
        toggle.setEventHandler {
            let now = !emulator.muted.load(ordering: .relaxed)
            emulator.muted.store(now, ordering: .relaxed)
            FileHandle.standardError.write(Data("band-emulator: acknowledgements \(now ? "off" : "on")\n".utf8))
        }
        toggle.resume()
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_DFL)
        }
        try emulator.serve { where_ in FileHandle.standardError.write(Data("band-emulator: listening at \(where_)\n".utf8)) }
    }
}

struct Calibrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find the phone-in-pocket heading offset: find north, put the phone away, walk. Saves it for the haptic sink.")

    @Option(name: .shortAndLong, help: "The pipeline config: its source gives heading and tilt, its haptic stage the device.")
    var config: String

    @Option(help: "The haptic stage (default: the config's only one).")
    var stage: String?

    @Option(help: "Where to save the offset (default: the stage's calibrationFile, else calibration.json).")
    var output: String?

    @Option(help: "Give up after this many seconds.")
    var timeout = 300.0

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let pipeline = try loadConfig(self.config)
        let outcome = try await CalibrationRunner.run(config: pipeline, stageName: self.stage, output: self.output,
                                                      timeoutSeconds: self.timeout, print: { Swift.print($0); fflush(nil) },
                                                      logger: logger)
        let result = outcome.result
        if result.succeeded {
            print(String(format: "calibrated: offset %.1f°, spread %.1f° over %d headings; saved to %@", result.offsetDegrees,
                         result.spreadDegrees, result.sampleCount, outcome.savedTo ?? "-"))
        } else {
            print("calibration aborted: \(result.reason)")
            throw ExitCode(1)
        }
    }
}

extension Eval {
    struct TargetsEval: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "targets",
            abstract: "Cue-obeying walkers on the 25 Monaco routes: how many stay within 10 m of the route, aiming at the next waypoint or at a look-ahead point.")

        @Option(help: "The OSM extract.")
        var map = "data/maps/monaco-highways.osm"

        @Option(help: "The reference pairs.")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "Walkers (seeds) per route and rule.")
        var seeds = 4

        func run() throws {
            let osm = try OSMRouteProvider(map: self.map, logger: Logger(label: "eval"))
            var within: [RouteTracker.TargetMode: Int] = [:], arrived: [RouteTracker.TargetMode: Int] = [:]
            var worst: [RouteTracker.TargetMode: [Double]] = [:]
            var walks = 0
            for pair in try RouteBenchmark.pairs(file: self.pairs) {
                let plan = try osm.graph.shortestRoute(from: pair.origin, to: pair.destination)
                let route = RouteBuilder.route(from: plan, routeID: 1, timeSeconds: 0, provider: "osm")
                for seed in 1...max(1, self.seeds) {
                    walks += 1
                    for mode in RouteTracker.TargetMode.allCases {
                        let walk = TargetModeSimulation.walk(route: route, mode: mode, seed: UInt64(seed))
                        if walk.maximumOffRouteMeters <= 10 { within[mode, default: 0] += 1 }
                        if walk.arrived { arrived[mode, default: 0] += 1 }
                        worst[mode, default: []].append(walk.maximumOffRouteMeters)
                    }
                }
            }
            let walker = GuidanceSimulation.Walker()
            print("cue-obeying walkers on \(walks / max(1, self.seeds)) Monaco routes × \(self.seeds) seeds: compass noise \(walker.compassNoiseDegrees)°, "
                  + "drift \(walker.driftDegreesPerRootSecond)°/√s, turn \(walker.turnRateDegreesPerSecond)°/s, reaction \(walker.reactionSeconds) s, 1.4 m/s; no rerouting")
            print("target rule    within 10 m of the route   arrived   median / max distance from the route")
            for mode in RouteTracker.TargetMode.allCases {
                let sorted = (worst[mode] ?? []).sorted()
                print(mode.rawValue.padding(toLength: 14, withPad: " ", startingAt: 0)
                      + String(format: "%8d of %d (%3.0f %%)   %7d   %6.1f m / %6.1f m", within[mode, default: 0], walks,
                               100 * Double(within[mode, default: 0]) / Double(max(1, walks)), arrived[mode, default: 0],
                               sorted.isEmpty ? 0 : sorted[sorted.count / 2], sorted.last ?? 0))
            }
        }
    }
}
