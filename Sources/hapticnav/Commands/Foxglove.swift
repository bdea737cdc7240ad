import Logging
import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import Runtime
import SystemIO
#if canImport(Glibc)
import Glibc
import Lab
#endif

struct FoxgloveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "foxglove",
        abstract: "Serve a pipeline's live bus to Foxglove over its WebSocket protocol (a live map and plots).",
        discussion: """
            Open Foxglove, choose "Open connection", "Foxglove WebSocket", ws://HOST:PORT, and import \
            configs/foxglove-layout.json: the same channels and schemas as `hapticnav export --format mcap`, so the \
            layout serves a recording too. Reads an encrypted lab with a reader's key (--key, one of the config's \
            readers).
            """)

    @Option(name: .shortAndLong, help: "The pipeline config whose stages to serve.")
    var config: String?

    @Option(name: .customLong("connect"), help: "An endpoint to serve (repeatable), instead of or besides --config.")
    var endpoints: [String] = []

    @Option(help: "The key pair (in the config's keys folder) to read encrypted stages with; one of its readers.")
    var key = "monitor"

    @Option(help: "Where Foxglove connects: HOST:PORT (the default is this host only; 0.0.0.0 for the lab's network).")
    var listen = "127.0.0.1:8765"

    @Option(help: "Stop after this many seconds.")
    var seconds: Double?

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = self.logging.bootstrap()
        guard let colon = self.listen.lastIndex(of: ":"),
            let port = UInt16(self.listen[self.listen.index(after: colon)...])
        else { throw ValidationError("--listen is HOST:PORT, for example 127.0.0.1:8765") }
        let host = String(self.listen[..<colon])
        let (endpoints, options, _) = try busListening(
            config: self.config, endpoints: self.endpoints, key: self.key, topics: [])
        let context = ZMQContext()
        let subscriber = try BusSubscriber(context: context, connect: endpoints, options: options, logger: logger)
        let bridge: FoxgloveBridge
        do {
            bridge = try FoxgloveBridge(host: host, port: port, name: "hapticnav \(self.config ?? "bus")")
        } catch {
            throw CommandFailure("cannot listen on \(self.listen): \(error)")
        }
        logger.info(
            "Foxglove: ws://\(host):\(bridge.port) (\(FoxgloveBridge.subprotocol)), serving \(endpoints.joined(separator: ", "))"
        )
        print("foxglove: listening on ws://\(host):\(bridge.port)")
        fflush(nil)
        let stop = SubscriberStop(subscriber, seconds: self.seconds)
        for await event in subscriber {
            if case let .message(received) = event {
                bridge.publish(received.message, receivedSeconds: SystemClock.wallSeconds())
            }
        }
        stop.cancel()
        bridge.close()
        context.terminate()
        logger.info("Foxglove: \(bridge.counters.map { "\($0.name)=\($0.value)" }.joined(separator: " "))")
    }
}
