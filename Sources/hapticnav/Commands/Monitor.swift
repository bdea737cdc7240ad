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

    @Option(help: "Stop after this many messages.")
    var count: Int?

    @Option(help: "Stop after this many seconds.")
    var seconds: Double?

    @Option(help: "The key pair (in the config's keys folder) to read encrypted stages with; one of its readers.")
    var key = "monitor"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        var endpoints = self.endpoints
        var options = SubscriberOptions()
        if let config = self.config {
            let pipeline = try loadConfig(config, calibrationMayBeMissing: true)
            endpoints += pipeline.allAdvertisedEndpoints
            options = pipeline.bus.subscriber
            options.curve = try LinkSecurity.subscriberOptions(reading: endpoints, as: self.key, in: pipeline)
        }
        guard !endpoints.isEmpty else { throw ValidationError("give --config or at least one --connect endpoint") }
        for topic in self.topic where BusMessage.Kind(topic: topic) == nil {
            throw ValidationError(
                "unknown topic '\(topic)'; topics: \(BusMessage.Kind.allCases.map(\.topic).joined(separator: ", "))")
        }
        options.topics = self.topic
        let context = ZMQContext()
        let subscriber = try BusSubscriber(context: context, connect: endpoints, options: options, logger: logger)
        let format = MonitorFormat(json: self.json)
        let limit = self.count
        let stop = SubscriberStop(subscriber, seconds: self.seconds)
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
}
