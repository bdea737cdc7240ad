@testable import Bus
import Foundation
import NavCore
import Testing
import TestSupport

@Suite(.serialized) struct TransportTests {
    /// Waits for the publisher's first heartbeat: from then on the subscription is in place.
    private func join(_ publisher: BusPublisher, _ subscriber: BusSubscriber) async throws {
        var iterator = subscriber.makeAsyncIterator()
        while let event = await nextEvent(&iterator, within: 3) {
            if case .publisherUp = event { return }
        }
        Issue.record("the subscriber never joined")
    }

    @Test(arguments: ["inproc", "ipc", "tcp"])
    func everyMessageTypeCrossesEachTransport(_ transport: String) async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint(transport)
        let publisher = try BusPublisher(context: context, bind: [endpoint], stage: "tester")
        let subscriber = try BusSubscriber(context: context, connect: [endpoint])
        defer {
            publisher.close()
            subscriber.close()
        }
        try await self.join(publisher, subscriber)
        for message in BusMessage.examples { try publisher.send(message) }
        let received = await collectMessages(subscriber, count: BusMessage.examples.count, within: 5)
        #expect(received.map(\.message) == BusMessage.examples)
        #expect(received.allSatisfy { $0.header.stage == "tester" && $0.header.schemaVersion == 1 })
        #expect(subscriber.snapshot.sequenceGaps == 0)
    }

    @Test func malformedFramesOfEveryKindAreCountedAndDroppedWhileValidOnesFlow() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("ipc")
        let sender = try RawSender(context: context, bind: endpoint)
        var options = SubscriberOptions()
        options.maximumFrameBytes = 4096
        let subscriber = try BusSubscriber(context: context, connect: [endpoint], options: options)
        defer {
            sender.close()
            subscriber.close()
        }
        let valid = BusMessage.heading(HeadingSample(timeSeconds: 5, headingDegrees: 12))
        var sequence: UInt64 = 0
        func validFrames() -> [[UInt8]] {
            defer { sequence += 1 }
            return Envelope.frames(for: valid, sequence: sequence, stage: "raw", sendTimeNanoseconds: 1)
        }
        // Join: send valid messages until one arrives.
        var iterator = subscriber.makeAsyncIterator()
        joining: for _ in 0..<100 {
            try sender.send(validFrames())
            while let event = await nextEvent(&iterator, within: 0.05) {
                if case .message = event { break joining }
            }
        }
        let good = Envelope.frames(for: valid, sequence: 0, stage: "raw", sendTimeNanoseconds: 1)
        var header = good[1]
        var badVersion = header
        badVersion[0] = 9
        var badType = header
        badType[1] = 99
        header.removeLast()
        let bad: [(DropReason, [[UInt8]])] = [
            (.malformed, [good[0], good[1]]),  // two frames
            (.malformed, good + [[1, 2, 3]]),  // four frames
            (.truncated, [good[0], Array(good[1].prefix(7)), good[2]]),  // short header
            (.truncated, [good[0], header, good[2]]),  // stage id cut short
            (.unknownVersion, [good[0], badVersion, good[2]]),  // schema version 9
            (.malformed, [good[0], badType, good[2]]),  // unknown type id
            (.malformed, [Array("fix".utf8), good[1], good[2]]),  // heading on the fix topic
            (.truncated, [good[0], good[1], Array(good[2].prefix(5))]),  // payload cut short
            (.malformed, [good[0], good[1], good[2] + [0]]),  // trailing payload byte
            (.oversized, [good[0], good[1], [UInt8](repeating: 0, count: 5000)]),
        ]
        let before = subscriber.snapshot
        var expected: [DropReason: UInt64] = [:]
        for (reason, frames) in bad {
            try sender.send(frames)
            try sender.send(validFrames())
            expected[reason, default: 0] += 1
        }
        var arrived = 0
        while arrived < bad.count, let event = await nextEvent(&iterator, within: 2) {
            if case let .message(received) = event, received.message == valid { arrived += 1 }
        }
        #expect(arrived == bad.count, "every valid message after a bad one arrived")
        let after = subscriber.snapshot
        for reason in DropReason.allCases {
            #expect(
                after.dropped[reason, default: 0] - before.dropped[reason, default: 0] == expected[reason, default: 0],
                "\(reason)")
        }
        #expect(after.sequenceGaps == 0)
    }

    @Test func sequenceGapsAreCounted() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("inproc")
        let sender = try RawSender(context: context, bind: endpoint)
        let subscriber = try BusSubscriber(context: context, connect: [endpoint])
        defer {
            sender.close()
            subscriber.close()
        }
        let message = BusMessage.fix(
            LocationFix(timeSeconds: 1, latitude: 43.7, longitude: 7.4, horizontalAccuracyMeters: 5))
        var iterator = subscriber.makeAsyncIterator()
        for sequence: UInt64 in [0, 1, 2, 6, 7, 10] {
            try sender.send(Envelope.frames(for: message, sequence: sequence, stage: "gappy", sendTimeNanoseconds: 1))
        }
        var count = 0
        while count < 6, let event = await nextEvent(&iterator, within: 2) {
            if case .message = event { count += 1 }
        }
        #expect(count == 6)
        #expect(subscriber.snapshot.sequenceGaps == 3 + 2)
    }

    @Test func aConflatedTopicKeepsOnlyTheLatestWhileOthersQueue() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("inproc")
        let publisher = try BusPublisher(context: context, bind: [endpoint], stage: "p")
        var options = SubscriberOptions()
        options.topicOptions = ["heading": TopicOptions(conflate: true), "fix": TopicOptions(highWaterMark: 3)]
        let subscriber = try BusSubscriber(context: context, connect: [endpoint], options: options)
        defer {
            publisher.close()
            subscriber.close()
        }
        try await self.join(publisher, subscriber)
        // Nobody reads while these arrive.
        for index in 0..<50 {
            try publisher.send(.heading(HeadingSample(timeSeconds: Double(index), headingDegrees: Double(index))))
        }
        for index in 0..<10 {
            try publisher.send(
                .fix(
                    LocationFix(
                        timeSeconds: Double(index), latitude: 0, longitude: 0,
                        horizontalAccuracyMeters: 1)))
        }
        // Wait (bounded) until all sixty have reached the subscriber's queues, so that conflation has happened.
        #expect(await eventually(within: 5) { subscriber.snapshot.received >= 60 })
        let received = await collectMessages(subscriber, count: 4, within: 2)
        let headings = received.compactMap { if case let .heading(h) = $0.message { h.timeSeconds } else { nil } }
        let fixes = received.compactMap { if case let .fix(f) = $0.message { f.timeSeconds } else { nil } }
        #expect(headings == [49])
        #expect(fixes == [7, 8, 9])
        #expect(subscriber.snapshot.conflated == 49)
        #expect(subscriber.snapshot.queueOverflows == 7)
        #expect(subscriber.snapshot.sequenceGaps == 0, "local drops are not sequence gaps")
    }

    @Test func aClosedPublisherIsNoticedSoonAfterItsLivenessTimeout() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("ipc")
        let publisher = try BusPublisher(context: context, bind: [endpoint], stage: "mortal")
        let subscriber = try BusSubscriber(context: context, connect: [endpoint])
        defer { subscriber.close() }
        var iterator = subscriber.makeAsyncIterator()
        var up = false
        while let event = await nextEvent(&iterator, within: 3) {
            if case let .publisherUp(_, stage) = event, stage == "mortal" {
                up = true
                break
            }
        }
        #expect(up)
        let closedAt = ContinuousClock.now
        publisher.close()
        var lostAfter: Duration?
        while let event = await nextEvent(&iterator, within: 3) {
            if case .publisherLost = event {
                lostAfter = ContinuousClock.now - closedAt
                break
            }
        }
        let elapsed = try #require(lostAfter)
        // Lost once silent for the liveness timeout (0.75 s by default) after its last heartbeat; the bound leaves a
        // second for scheduling on a loaded machine (the suite runs in parallel on two cores: 1.22 s was seen once).
        #expect(elapsed < .seconds(0.75 + 1))
    }

    /// A publisher gone silent with its connection up (a hung process: no disconnection for the monitor to report, no
    /// heartbeat from anyone else) is said lost to a consumer on the receive thread, as a stage consumes, soon after
    /// the liveness timeout: the receive thread runs the consumer it resumed itself, not at its next input.
    @Test func aSilentPublisherIsSaidLostToAConsumerOnTheReceiveThreadWithNothingElseArriving() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("ipc")
        let sender = try RawSender(context: context, bind: endpoint)
        let subscriber = try BusSubscriber(context: context, connect: [endpoint])
        defer {
            sender.close()
            subscriber.close()
        }
        let message = BusMessage.heading(HeadingSample(timeSeconds: 5, headingDegrees: 12))
        let lostAfter: Duration? = try await withTaskExecutorPreference(subscriber.executor) {
            var iterator = subscriber.makeAsyncIterator()
            var up = false
            joining: for sequence: UInt64 in 0..<100 {
                try sender.send(
                    Envelope.frames(for: message, sequence: sequence, stage: "hung", sendTimeNanoseconds: 1))
                while let event = await nextEvent(&iterator, within: 0.05) {
                    if case .message = event {
                        up = true
                        break joining
                    }
                }
            }
            #expect(up, "the raw sender's messages never came through")
            let silentFrom = ContinuousClock.now
            while let event = await nextEvent(&iterator, within: 5) {
                if case .publisherLost = event { return ContinuousClock.now - silentFrom }
            }
            return nil
        }
        let elapsed = try #require(lostAfter, "never said lost within 5 s")
        // The liveness timeout is 0.75 s; the bound leaves a second for a loaded machine.
        #expect(elapsed < .seconds(0.75 + 1))
    }

    @Test func closingASubscriberEndsItsSequencePromptly() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let subscriber = try BusSubscriber(context: context, connect: [uniqueEndpoint("ipc")])
        let started = ContinuousClock.now
        let drained = Task {
            var count = 0
            for await _ in subscriber { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(50))
        let closing = ContinuousClock.now
        subscriber.close()
        // Closing wakes the receive thread at once; the bound is against a hang, not a judgement of a loaded
        // machine's scheduling (the time is printed).
        let ended = await withDeadline(seconds: 10) { await drained.value }
        #expect(ended != nil, "the sequence did not end within 10 s of close()")
        print(
            "subscriber: the sequence ended \(ContinuousClock.now - closing) after close(), \(closing - started) after its start"
        )
    }

    @Test func aConsumerOnTheReceiveExecutorGetsMessagesAndTimers() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("inproc")
        let publisher = try BusPublisher(context: context, bind: [endpoint], stage: "p")
        let subscriber = try BusSubscriber(context: context, connect: [endpoint])
        defer {
            publisher.close()
            subscriber.close()
        }
        try await self.join(publisher, subscriber)
        let count = try await withTaskExecutorPreference(subscriber.executor) {
            // A timer resumes on this executor too: it must be woken from another thread.
            try await Task.sleep(for: .milliseconds(30))
            for index in 0..<20 {
                try publisher.send(.heading(HeadingSample(timeSeconds: Double(index), headingDegrees: 1)))
            }
            var seen = 0
            for await message in subscriber.messages {
                if case .heading = message.message { seen += 1 }
                if seen == 20 { break }
            }
            return seen
        }
        #expect(count == 20)
    }
}
