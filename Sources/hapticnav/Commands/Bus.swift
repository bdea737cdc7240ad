import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

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
            let context = ZMQContext()
            let publisher = try BusPublisher(context: context, bind: [self.bind], stage: self.stage)
            SystemThread.sleep(seconds: self.warmup)
            let interval = 1 / max(self.rate, 0.001)
            let start = Date()
            var index = 0
            while self.count == 0 || index < self.count {
                let due = start.addingTimeInterval(Double(index) * interval)
                let wait = due.timeIntervalSinceNow
                if wait > 0 { SystemThread.sleep(seconds: wait) }
                let message =
                    self.examples
                    ? BusMessage.examples[index % BusMessage.examples.count]
                    : .heading(
                        HeadingSample(
                            timeSeconds: Date().timeIntervalSince1970,
                            headingDegrees: Double(index % 3600) / 10))
                try publisher.send(message)
                index += 1
            }
            SystemThread.sleep(seconds: self.linger)
            publisher.close(lingerMilliseconds: 500)
            context.terminate()
        }
    }
}
