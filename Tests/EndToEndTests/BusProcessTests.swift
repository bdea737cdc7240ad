import Bus
import Foundation
import NavCore
import Testing

/// Real processes on loopback: a `hapticnav bus publish` child, subscribed to from this test process.
extension ProcessSuites.Data {
    @Suite struct BusProcessTests {
        private func endpoint(_ transport: String, in folder: String) -> String {
            transport == "ipc" ? "ipc://\(folder)/bus.sock" : "tcp://127.0.0.1:\(freeTCPPort())"
        }

        @Test(arguments: ["ipc", "tcp"])
        func tenThousandMessagesAtOneKilohertzArriveInOrderWithoutGaps(_ transport: String) async throws {
            let folder = try scratchFolder()
            let endpoint = self.endpoint(transport, in: folder)
            let context = ZMQContext()
            defer { context.terminate() }
            let subscriber = try BusSubscriber(
                context: context, connect: [endpoint],
                options: SubscriberOptions(topics: ["heading"]))
            defer { subscriber.close() }
            let publisher = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "bus", "publish", "--bind", endpoint, "--count", "10000", "--rate", "1000", "--warmup", "1",
                    "--stage", "e2e-\(transport)",
                ])
            defer { publisher.ensureStopped() }

            // Consumed as a stage consumes, on the subscriber's receive thread: on the test process's cooperative
            // pool, which the suites running beside it share, a loaded machine starved the consumer until its queue
            // overflowed (1350 of 10 000 dropped beside two busy loops).
            let sequences =
                await withTaskExecutorPreference(subscriber.executor) {
                    await withDeadline(seconds: 30, onTimeout: { subscriber.close() }) { () -> [UInt64]? in
                        var sequences: [UInt64] = []
                        sequences.reserveCapacity(10_000)
                        for await received in subscriber.messages {
                            sequences.append(received.header.sequence)
                            if sequences.count == 10_000 { break }
                        }
                        return sequences
                    }
                } ?? []
            let counters = subscriber.snapshot
            #expect(
                sequences.count == 10_000,
                "received \(sequences.count); subscriber counters \(counters); publisher: \(publisher.stderr.suffix(300))"
            )
            #expect(sequences.count != 10_000 || sequences == Array(0..<10_000), "in order, starting from the first")
            #expect(subscriber.snapshot.sequenceGaps == 0)
            #expect(subscriber.snapshot.droppedTotal == 0)
            #expect(await publisher.wait(seconds: 5) == 0)
        }

        @Test(arguments: ["ipc", "tcp"])
        func aPublisherKilledWithSIGKILLIsNoticedSoonAfterItsLivenessTimeout(_ transport: String) async throws {
            let folder = try scratchFolder()
            let endpoint = self.endpoint(transport, in: folder)
            let context = ZMQContext()
            defer { context.terminate() }
            let subscriber = try BusSubscriber(context: context, connect: [endpoint])
            defer { subscriber.close() }
            let publisher = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "bus", "publish", "--bind", endpoint, "--count", "0", "--rate", "100", "--warmup", "0",
                ])
            defer { publisher.ensureStopped() }

            let noticedAfter = await withDeadline(seconds: 15, onTimeout: { subscriber.close() }) { () -> Duration? in
                var killedAt: ContinuousClock.Instant?
                var messages = 0
                for await event in subscriber {
                    switch event {
                    case .message:
                        messages += 1
                        if messages == 20 {
                            publisher.signal(SIGKILL)
                            killedAt = .now
                        }
                    case .publisherLost:
                        if let killedAt { return ContinuousClock.now - killedAt }
                    case .publisherUp:
                        break
                    }
                }
                return nil
            }
            let elapsed = try #require(noticedAfter, "the loss was noticed")
            // The liveness timeout (0.75 s by default) after the last heartbeat, and a second for a loaded machine.
            #expect(elapsed < .seconds(0.75 + 1))
        }

        @Test func thePythonSubscriberDecodesWhatSwiftPublishes() async throws {
            let folder = try scratchFolder()
            let endpoint = "ipc://\(folder)/py.sock"
            let kinds = BusMessage.examples.count
            let publisher = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "bus", "publish", "--bind", endpoint, "--examples", "--count", "\(kinds * 40)", "--rate", "200",
                    "--warmup", "0.5",
                ])
            defer { publisher.ensureStopped() }
            let listener = try ChildProcess(
                "/usr/bin/env",
                [
                    "python3", repositoryRoot.appendingPathComponent("tools/hapticnav_listen.py").path,
                    "--connect", endpoint, "--count", "\(kinds * 2)", "--json", "--seconds", "20",
                ])
            defer { listener.ensureStopped() }
            let status = await listener.wait(seconds: 30)
            #expect(status == 0, "python failed: \(listener.stderr)")

            let encoder = JSONEncoder()
            let expected: [[String: Any]] = try BusMessage.examples.map { message in
                let data = try encoder.encode(message)
                return try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
            }
            let lines = listener.stdout.split(separator: "\n")
            #expect(lines.count == kinds * 2)
            var topicsSeen = Set<String>()
            for line in lines {
                let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let topic = try #require(object["topic"] as? String)
                let payload = try #require(object["payload"] as? NSDictionary)
                topicsSeen.insert(topic)
                let matches = expected.contains {
                    ($0["topic"] as? String) == topic
                        && NSDictionary(dictionary: $0["payload"] as! [String: Any]) == payload
                }
                #expect(matches, "python decoded \(line) differently from Swift's own encoding")
            }
            #expect(topicsSeen == Set(BusMessage.Kind.allCases.map(\.topic)))
        }

        @Test func monitorPrintsEveryMessageAsOneJSONLine() async throws {
            let folder = try scratchFolder()
            let endpoint = "ipc://\(folder)/monitor.sock"
            let kinds = BusMessage.examples.count
            let publisher = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "bus", "publish", "--bind", endpoint, "--examples", "--count", "\(kinds * 40)", "--rate", "200",
                    "--warmup", "0.5",
                ])
            defer { publisher.ensureStopped() }
            let monitor = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "monitor", "--connect", endpoint, "--json", "--count", "\(kinds)", "--seconds", "20",
                ])
            defer { monitor.ensureStopped() }
            #expect(await monitor.wait(seconds: 30) == 0, "monitor failed: \(monitor.stderr)")
            let messages = monitor.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    Issue.record("not JSON: \(line)")
                    return nil
                }
                return object["event"] as? String == "message" ? object : nil
            }
            #expect(messages.count == kinds)
            #expect(Set(messages.compactMap { $0["topic"] as? String }) == Set(BusMessage.Kind.allCases.map(\.topic)))
            #expect(
                messages.allSatisfy {
                    $0["payload"] is [String: Any] && $0["sequence"] is Int && $0["stage"] as? String == "bus-publish"
                })
        }
    }
}
