import SessionFiles
import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import Parsers
import Runtime
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

extension Bench {
    struct ReplayBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "replay",
            abstract:
                "A one-hour session (216 000 messages, 60 a second) replayed at max from its MCAP file to a subscriber "
                + "over ipc, against the same messages published from memory (the bus alone), run after run.")

        @Option(help: "Measured runs of each (after one warm-up of each).")
        var runs = 5

        @Option(help: "Session length [seconds of recorded time, 60 messages each].")
        var sessionSeconds = 3600

        func run() async throws {
            let folder = "/tmp/hapticnav-bench-replay-\(getpid())"
            try Paths.createFolders(folder)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let session = "\(folder)/session"
            let messages = try Self.writeSession(session, seconds: self.sessionSeconds)
            let size = (try? InputFile.contents(of: "\(session)/part-0001.mcap").count) ?? 0
            print(
                "session: \(messages.count) messages, \(self.sessionSeconds) s recorded, \(size / 1_048_576) MB of MCAP"
            )
            var fromFile: [Double] = []
            var fromMemory: [Double] = []
            for run in 0...self.runs {
                // Alternate, so that both see the same machine.
                let file = try await Self.measure(folder: folder, count: messages.count) { publisher in
                    var options = SessionReplay.Options()
                    options.rate = 0
                    _ = try SessionReplay.run(session: session, publisher: publisher, options: options)
                }
                let memory = try await Self.measure(folder: folder, count: messages.count) { publisher in
                    for message in messages { try publisher.send(message) }
                }
                if run > 0 {
                    fromFile.append(file)
                    fromMemory.append(memory)
                }
            }
            func line(_ label: String, _ seconds: [Double]) -> String {
                let sorted = seconds.sorted()
                let median = sorted[sorted.count / 2]
                let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
                return label + String(repeating: " ", count: max(0, 30 - label.count))
                    + String(
                        cFormat: " %3d runs   median %6.3f s (%7.0f messages/s)   p99 %6.3f s (%7.0f messages/s)",
                        Int32(seconds.count), median, Double(messages.count) / median, p99,
                        Double(messages.count) / p99)
            }
            print(line("bus alone (from memory)", fromMemory))
            print(line("replay (file to subscriber)", fromFile))
        }

        /// A session as a walk records it: per second a fix, a smoothed fix, a target, a progress report, 28 headings
        /// and 28 attitude samples (60 messages).
        static func writeSession(_ folder: String, seconds: Int) throws -> [BusMessage] {
            var writer = SessionWriter(library: "hapticnav bench", metadata: [("bench", "replay")])
            var messages: [BusMessage] = []
            messages.reserveCapacity(seconds * 60)
            let start = 1_767_225_600.0
            func add(_ message: BusMessage, _ time: Double, _ stage: String, _ sequence: Int) {
                messages.append(message)
                writer.add(
                    RecordedMessage(
                        receiveTimeSeconds: time + 0.001, receiveMonotonicSeconds: time - start + 100,
                        sendTimeSeconds: time, stage: stage, sequence: UInt64(sequence), message: message))
            }
            for second in 0..<seconds {
                let t = start + Double(second)
                let latitude = 43.73 + Double(second) * 1e-5
                add(
                    .fix(
                        LocationFix(
                            timeSeconds: t, latitude: latitude, longitude: 7.42, horizontalAccuracyMeters: 5,
                            speedMetersPerSecond: 1.3, courseDegrees: 10)), t, "source", second)
                add(
                    .smoothed(
                        SmoothedFix(
                            timeSeconds: t, latitude: latitude, longitude: 7.42, horizontalAccuracyMeters: 3,
                            speedMetersPerSecond: 1.3, courseDegrees: 10, reset: false)), t + 0.002, "smoother", second)
                add(
                    .target(
                        GuidanceTarget(
                            timeSeconds: t, routeID: 1,
                            coordinate: Coordinate(latitude: latitude + 1e-4, longitude: 7.42),
                            bearingDegrees: 10, distanceMeters: 15, kind: .lookAhead)), t + 0.003, "route", second)
                add(
                    .progress(
                        RouteProgress(
                            timeSeconds: t, routeID: 1, distanceAlongMeters: Double(second),
                            distanceRemainingMeters: 100,
                            crossTrackMeters: 1, nextWaypointIndex: 1, bearingToNextDegrees: 10,
                            distanceToNextMeters: 20,
                            etaSeconds: 60, state: .onRoute)), t + 0.003, "route", second)
                for step in 0..<28 {
                    let time = t + Double(step) / 28
                    add(
                        .heading(HeadingSample(timeSeconds: time, headingDegrees: 10)), time, "source",
                        second * 28 + step)
                    add(
                        .attitude(Attitude(timeSeconds: time, pitchDegrees: 2, rollDegrees: 1)), time, "source",
                        second * 28 + step)
                }
            }
            writer.finish()
            try Paths.createFolders(folder)
            let file = try OutputFile(path: "\(folder)/part-0001.mcap", mode: .truncate)
            defer { file.close() }
            guard file.write(writer.takeOutput()) else { throw CommandFailure("\(folder): cannot be written") }
            return messages
        }

        /// Seconds from `publish` starting to the subscriber holding all `count` messages.
        static func measure(
            folder: String, count: Int, _ publish: @escaping @Sendable (BusPublisher) throws -> Void
        ) async throws -> Double {
            let context = ZMQContext()
            defer { context.terminate() }
            let endpoint = "ipc://\(folder)/bench.sock"
            var publisherOptions = PublisherOptions()
            publisherOptions.lossless = true
            let publisher = try BusPublisher(
                context: context, bind: [endpoint], stage: "replay", options: publisherOptions)
            defer { publisher.close() }
            var options = SubscriberOptions(
                defaultTopicOptions: TopicOptions(highWaterMark: 10_000, waitsWhenFull: true))
            options.livenessTimeoutSeconds = 5
            let subscriber = try BusSubscriber(context: context, connect: [endpoint], options: options)
            defer { subscriber.close() }
            try SessionReplay.waitForSubscribers(1, on: publisher, seconds: 10)
            let clock = ContinuousClock()
            let started = clock.now
            let sender = Task.detached { try publish(publisher) }
            var received = 0
            for await _ in subscriber.messages {
                received += 1
                if received == count { break }
            }
            let elapsed = started.duration(to: clock.now).inSeconds
            try await sender.value
            guard received == count else { throw CommandFailure("received \(received) of \(count) messages") }
            return elapsed
        }
    }
}
