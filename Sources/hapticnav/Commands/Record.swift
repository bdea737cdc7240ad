import ArgumentParser
import Bus
import Logging
import NavCore
import Runtime
import Sinks

struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record every message on a pipeline's bus into a session folder of MCAP parts (docs/RECORDING.md).",
        discussion: """
            Listens to every stage the config publishes (or the --connect endpoints) until SIGINT or SIGTERM, --seconds \
            or --count, keeping each message's frames with its receive times. A part is closed and the next begun past \
            --max-file-megabytes or --max-file-minutes. A killed recorder's last part reads to its last complete chunk.
            """)

    @Option(name: .shortAndLong, help: "The pipeline config whose stages to record.")
    var config: String?

    @Option(
        name: .customLong("connect"), help: "An endpoint to record (repeatable), instead of or besides --config.")
    var endpoints: [String] = []

    @Option(help: "The session folder to write (made if missing).")
    var out: String

    @Option(help: "Only these topics (repeatable).")
    var topic: [String] = []

    @Option(help: "Stop after this many messages.")
    var count: Int?

    @Option(help: "Stop after this many seconds.")
    var seconds: Double?

    @Option(help: "Begin a new part past this size [MB].")
    var maxFileMegabytes: Double = 512

    @Option(help: "Begin a new part past this age [minutes].")
    var maxFileMinutes: Double = 60

    @Option(help: "The key pair (in the config's keys folder) to read encrypted stages with; one of its readers.")
    var key = "monitor"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        let (endpoints, listening, pipeline) = try busListening(
            config: self.config, endpoints: self.endpoints, key: self.key, topics: self.topic)
        let options = listening.recording()
        var metadata: [(String, String)] = [("recorder", "hapticnav record")]
        if let config = self.config, let pipeline {
            metadata.append(("config", config))
            metadata.append(("pipeline", pipeline.name))
        }
        metadata.append(("endpoints", endpoints.joined(separator: " ")))
        var recorderOptions = MCAPRecorder.Options(folder: self.out)
        recorderOptions.maxFileBytes = UInt64(max(0.01, self.maxFileMegabytes) * 1_048_576)
        recorderOptions.maxFileSeconds = max(0.01, self.maxFileMinutes) * 60
        recorderOptions.metadata = metadata
        let recorder: MCAPRecorder
        do {
            recorder = try MCAPRecorder(options: recorderOptions, logger: logger)
        } catch {
            throw CommandFailure("\(error)")
        }
        let context = ZMQContext()
        let subscriber = try BusSubscriber(context: context, connect: endpoints, options: options, logger: logger)
        let stop = SubscriberStop(subscriber, seconds: self.seconds)
        logger.info("recording \(endpoints.count) endpoint(s) into \(self.out)")
        var recorded = 0
        for await event in subscriber {
            guard case let .message(received) = event else { continue }
            try recorder.record(received.recorded)
            recorded += 1
            if let limit = self.count, recorded >= limit { break }
        }
        subscriber.close()
        stop.cancel()
        try await recorder.finish()
        let counts = recorder.counts
        let bus = subscriber.snapshot
        print(
            "recorded \(counts.received - counts.dropped) message(s) into \(self.out)"
                + (counts.dropped > 0 ? ", \(counts.dropped) dropped (the disk was behind)" : "")
                + (bus.sequenceGaps > 0 ? ", \(bus.sequenceGaps) missing in sequence on the bus" : ""))
        context.terminate()
    }
}
