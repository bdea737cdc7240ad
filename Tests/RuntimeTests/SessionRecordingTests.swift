import SessionFiles
import Foundation
import Logging
import NavCore
import Parsers
import Sinks
import Bus
@testable import Runtime
import Synchronization
import Testing
import TestSupport

@Suite struct SessionRecordingTests {
    /// `count` records as a recorder receives them: fixes, headings and a cue, from two stages, with both clocks.
    static func records(_ count: Int) -> [RecordedMessage] {
        (0..<count).map { index in
            let time = 1_767_225_600 + Double(index) * 0.1
            let message: BusMessage
            switch index % 3 {
            case 0:
                message = .fix(
                    LocationFix(
                        timeSeconds: time, latitude: 43.73 + Double(index) * 1e-6, longitude: 7.42,
                        horizontalAccuracyMeters: 5))
            case 1: message = .heading(HeadingSample(timeSeconds: time, headingDegrees: Double(index % 360)))
            default:
                message = .cue(
                    HapticCue(timeSeconds: time, kind: .turnLeft, intensity: 0.5, deviationDegrees: -40))
            }
            var payload = WireWriter()
            message.encodePayload(to: &payload)
            return RecordedMessage(
                receiveTimeSeconds: time + 0.002, receiveMonotonicSeconds: 1000 + Double(index) * 0.1,
                sendTimeSeconds: time + 0.001, stage: index % 3 == 2 ? "haptic" : "source", sequence: UInt64(index / 3),
                message: message, frames: .init(header: [1, message.kind.rawValue, 0, 0], payload: payload.bytes))
        }
    }

    private func record(_ records: [RecordedMessage], options: MCAPRecorder.Options) async throws {
        let recorder = try MCAPRecorder(options: options, logger: Logger(label: "test"))
        for record in records { try recorder.record(record) }
        try await recorder.finish()
    }

    /// A recorder started again in its folder (a stage restarted after a crash) goes on in a new part: nothing
    /// recorded before is overwritten, and the session reads back whole.
    @Test func aRecorderStartedAgainGoesOnAfterThePartsAlreadyThere() async throws {
        let folder = try scratchFolder()
        let written = Self.records(600)
        try await self.record(Array(written[0..<300]), options: .init(folder: folder))
        try await self.record(Array(written[300...]), options: .init(folder: folder))
        let (read, summary) = try SessionReader.records(folder)
        #expect(summary.files == ["\(folder)/part-0001.mcap", "\(folder)/part-0002.mcap"])
        #expect(read.map(\.message) == written.map(\.message))
    }

    @Test func aSessionReadsBackRecordForRecordWithBothClocksAndItsFrames() async throws {
        let folder = try scratchFolder()
        let written = Self.records(3000)
        try await self.record(written, options: .init(folder: folder))
        let (read, summary) = try SessionReader.records(folder)
        #expect(summary.files == ["\(folder)/part-0001.mcap"])
        #expect(summary.cutFiles.isEmpty && summary.badRecords == 0)
        #expect(read.count == written.count)
        for (a, b) in zip(read, written) {
            #expect(a.message == b.message && a.stage == b.stage && a.sequence == b.sequence && a.frames == b.frames)
            #expect(abs(a.receiveTimeSeconds - b.receiveTimeSeconds) < 1e-6)
            #expect(abs((a.receiveMonotonicSeconds ?? 0) - (b.receiveMonotonicSeconds ?? 0)) < 1e-9)
            #expect(abs((a.sendTimeSeconds ?? 0) - (b.sendTimeSeconds ?? 0)) < 1e-6)
        }
        #expect(summary.metadata.map(\.name) == ["hapticnav.session", "hapticnav.recorder"])
        #expect(summary.metadata.last?.values["dropped"] == "0")
    }

    /// The file is MCAP as others read it: the Python `mcap` package (the reference reader) finds the channels,
    /// the messages with their log and publish times, and the summary's statistics.
    @Test func pythonsMCAPReaderReadsTheSessionAndItsSummary() async throws {
        let folder = try scratchFolder()
        try await self.record(Self.records(999), options: .init(folder: folder))
        let script = """
            import sys, collections
            from mcap.reader import make_reader
            with open(sys.argv[1], "rb") as f:
                reader = make_reader(f)
                summary = reader.get_summary()
                counts = collections.Counter()
                first = None
                for schema, channel, message in reader.iter_messages():
                    counts[channel.topic] += 1
                    if first is None: first = (message.log_time, message.publish_time, message.sequence)
                print(summary.statistics.message_count, len(summary.chunk_indexes),
                      " ".join("%s=%d" % kv for kv in sorted(counts.items())), first[0], first[1], first[2])
            """
        let output = try await runPython(script, ["\(folder)/part-0001.mcap"])
        let fields = output.split(separator: " ")
        #expect(fields.count == 8)
        #expect(fields[0] == "999")
        #expect(fields[2] == "/haptic/cue=333" && fields[3] == "/source/fix=333" && fields[4] == "/source/heading=333")
        #expect(fields[1] != "0")
        #expect(abs((Double(fields[5]) ?? 0) - 1_767_225_600.002e9) < 1e3)
        #expect(abs((Double(fields[6]) ?? 0) - 1_767_225_600.001e9) < 1e3)
        #expect(fields[7] == "0")
    }

    /// A recorder killed mid-write leaves a file without its summary: whatever byte it was cut at, the reader gives
    /// the complete chunks before it, in order, and says the file was cut.
    @Test func aFileCutAtAnyByteReadsToItsLastCompleteRecord() async throws {
        var writer = SessionWriter(library: "test", metadata: [])
        writer.chunkBytes = 2000
        let written = Self.records(400)
        for record in written { writer.add(record) }
        writer.finish()
        let bytes = writer.takeOutput()
        let folder = try scratchFolder()
        var previous = 0
        for cut in stride(from: 0, to: bytes.count, by: 97) {
            await Task.yield()  // hundreds of files read: the other suites' tasks get the pool's threads between them
            let file = "\(folder)/cut.mcap"
            try Data(bytes[0..<cut]).store(toFile: file)
            let result = Result { try SessionReader.records(file) }
            guard case let .success((records, summary)) = result else {
                #expect(cut < 8, "a cut at byte \(cut) is not read: \(result)")
                continue
            }
            // A cut past the data end (in the summary) loses nothing the reader needs.
            #expect(
                (summary.cutFiles.count == 1 || records.count == written.count) && summary.badRecords == 0,
                "cut at \(cut) of \(bytes.count): \(records.count) records, \(summary.cutFiles.count) cut")
            #expect(records.count >= previous)
            #expect(zip(records, written).allSatisfy { $0.message == $1.message })
            previous = records.count
        }
        #expect(previous > 350)
    }

    /// Damage anywhere in a file (random bytes overwritten, a thousand times): reading never crashes; it gives the
    /// records it can, counts the ones it cannot, or says the file is not a session.
    @Test func aDamagedFileIsReadOrRefusedNeverACrash() async throws {
        var writer = SessionWriter(library: "test", metadata: [("a", "b")])
        writer.chunkBytes = 1500
        Self.records(200).forEach { writer.add($0) }
        writer.finish()
        let original = writer.takeOutput()
        let folder = try scratchFolder()
        var random = SystemRandomNumberGenerator()
        var read = 0
        var refused = 0
        for _ in 0..<1000 {
            await Task.yield()
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            try Data(bytes).store(toFile: "\(folder)/damaged.mcap")
            do {
                let (records, _) = try SessionReader.records("\(folder)/damaged.mcap")
                #expect(records.count <= 200)
                read += 1
            } catch let error as SessionReader.Failure {
                #expect(error.description.hasPrefix("\(folder)/damaged.mcap: "))
                refused += 1
            }
        }
        #expect(read + refused == 1000)
        #expect(read > 500)
    }

    /// A disk that takes 50 ms a write: the recorder's `record` still returns at once; what does not fit in its queue
    /// is dropped and counted, and what was kept reads back in order.
    /// A disk that does not take a write until the test lets it: every `record()` returns all the same (were one to
    /// wait for the disk, the loop would never end and the time limit would fail the test), and what did not fit in
    /// the queue is dropped and counted.
    @Test(.timeLimit(.minutes(1))) func aSlowDiskDropsAndCountsMessagesAndNeverBlocksTheRecorder() async throws {
        final class Gate: Sendable {
            let open = Atomic<Bool>(false)
        }
        final class HeldOutput: MCAPRecorder.Output, @unchecked Sendable {
            let file: FileHandle
            let gate: Gate
            init(_ path: String, gate: Gate) throws {
                _ = FileManager.default.createFile(atPath: path, contents: nil)
                self.file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
                self.gate = gate
            }
            func write(_ bytes: [UInt8]) -> Bool {
                // The disk itself: stuck until the test opens it, then slow.
                while !self.gate.open.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.001) }
                Thread.sleep(forTimeInterval: 0.005)
                self.file.write(Data(bytes))
                return true
            }
            func close() { try? self.file.close() }
        }
        let folder = try scratchFolder()
        var options = MCAPRecorder.Options(folder: folder)
        options.queueBytes = 64 * 1024
        let disk = Gate()
        let recorder = try MCAPRecorder(
            options: options, logger: Logger(label: "test"), output: { try HeldOutput($0, gate: disk) })
        for record in Self.records(20_000) {
            try recorder.record(record)
        }
        // Every record() has returned while the disk took nothing.
        disk.open.store(true, ordering: .releasing)
        try await recorder.finish()
        let counts = recorder.counts
        let (read, summary) = try SessionReader.records(folder)
        print("slow disk: \(counts.received) given, \(counts.dropped) dropped, \(read.count) on disk")
        #expect(counts.received == 20_000)
        #expect(counts.dropped > 0)
        #expect(UInt64(read.count) + counts.dropped == counts.received)
        #expect(summary.metadata.last?.values["dropped"] == String(counts.dropped))
        // What was kept is in order: sequence numbers per channel only rise.
        var last: [String: UInt64] = [:]
        for record in read {
            let key = "\(record.stage)/\(record.message.kind.topic)"
            #expect(record.sequence >= (last[key] ?? 0))
            last[key] = record.sequence
        }
    }

    /// Turn events through the whole recording path (docs/RECORDING.md): published on a bus by the route stage and
    /// republished by the sink, received as `hapticnav record` receives them (frames kept), written by the MCAP
    /// recorder, read back equal with their frames, decoded from the file's bytes by Python (the `mcap` package and
    /// `tools/hapticnav_listen.py`), and played again by `replay` (`--topics turn`) equal and in the recorded order.
    @Test func turnEventsRoundTripThroughARecordedSessionAndItsReplay() async throws {
        let folder = try scratchFolder()
        let events = [
            TurnEvent(
                timeSeconds: 1_767_225_601.25, routeID: 4, manoeuvre: 2, phase: .announce, turnDegrees: -92.5,
                junctionsBefore: 2, distanceMeters: 118.3, outgoingBearingDegrees: 351.5, street: "Rue Grimaldi"),
            TurnEvent(
                timeSeconds: 1_767_225_690.5, routeID: 4, manoeuvre: 2, phase: .now, turnDegrees: -92.5,
                junctionsBefore: 0, distanceMeters: 0, outgoingBearingDegrees: 351.5),
            TurnEvent(
                timeSeconds: 1_767_225_720, routeID: 4, manoeuvre: 3, phase: .straightOn, turnDegrees: 7,
                junctionsBefore: 1, distanceMeters: 40, outgoingBearingDegrees: 0.25,
                street: "Boulevard des Moulins – côté mer"),
        ]
        let context = ZMQContext()
        defer { context.terminate() }
        var publisherOptions = PublisherOptions()
        publisherOptions.lossless = true
        let route = try BusPublisher(
            context: context, bind: ["ipc://\(folder)/route.sock"], stage: "route", options: publisherOptions)
        defer { route.close() }
        let sink = try BusPublisher(
            context: context, bind: ["ipc://\(folder)/haptic.sock"], stage: "haptic", options: publisherOptions)
        defer { sink.close() }
        let subscriber = try BusSubscriber(
            context: context, connect: ["ipc://\(folder)/route.sock", "ipc://\(folder)/haptic.sock"],
            options: SubscriberOptions().recording())
        defer { subscriber.close() }
        try SessionReplay.waitForSubscribers(1, on: route, seconds: 10)
        try SessionReplay.waitForSubscribers(1, on: sink, seconds: 10)
        for event in events {
            try route.send(.turn(event))
            try sink.send(.turn(event))
        }
        let recorder = try MCAPRecorder(options: .init(folder: "\(folder)/session"), logger: Logger(label: "test"))
        let received =
            await withDeadline(seconds: 20, onTimeout: { subscriber.close() }) { () -> [RecordedMessage]? in
                var received: [RecordedMessage] = []
                for await message in subscriber.messages {
                    received.append(message.recorded)
                    if received.count == 2 * events.count { break }
                }
                return received
            } ?? []
        #expect(received.count == 2 * events.count)
        for record in received { try recorder.record(record) }
        try await recorder.finish()

        // Read back: every turn event, from both stages, with its frames as they came off the bus.
        let (read, summary) = try SessionReader.records("\(folder)/session")
        #expect(summary.badRecords == 0 && summary.cutFiles.isEmpty)
        #expect(read.map(\.message) == received.map(\.message))
        #expect(zip(read, received).allSatisfy { $0.stage == $1.stage && $0.frames == $1.frames && $0.frames != nil })
        for stage in ["route", "haptic"] {
            #expect(read.filter { $0.stage == stage }.map(\.message) == events.map { .turn($0) })
        }

        // Python: the channels' topics, and each payload decoded from the file's bytes as docs/RECORDING.md lays
        // them out, by the listener written from docs/PROTOCOL.md.
        let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools").path
        let script = """
            import json, struct, sys
            sys.path.insert(0, sys.argv[2])
            from hapticnav_listen import TYPES, Reader
            from mcap.reader import make_reader
            out = []
            with open(sys.argv[1], "rb") as f:
                for schema, channel, message in make_reader(f).iter_messages(log_time_order=False):
                    data = message.data
                    header_length = struct.unpack("<H", data[8:10])[0]
                    header, payload = data[10:10 + header_length], data[10 + header_length:]
                    type_id = header[1]
                    topic, decoder = TYPES[type_id]
                    assert topic == channel.metadata["topic"] and channel.topic == "/%s/%s" % (channel.metadata["stage"], topic)
                    reader = Reader(payload)
                    decoded = decoder(reader)
                    reader.done()
                    out.append({"stage": channel.metadata["stage"], "topic": topic, "payload": decoded})
            print(json.dumps(out))
            """
        let output = try await runPython(script, ["\(folder)/session/part-0001.mcap", tools])
        let decoded = try #require(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
        #expect(decoded.count == read.count)
        let encoder = JSONEncoder()
        for (python, record) in zip(decoded, read) {
            let swift = try #require(
                JSONSerialization.jsonObject(with: encoder.encode(record.message)) as? [String: Any])
            #expect(python["stage"] as? String == record.stage && python["topic"] as? String == "turn")
            #expect(
                (python["payload"] as? NSDictionary) == (swift["payload"] as? NSDictionary),
                "python decoded \(python) differently from Swift's \(swift)")
        }

        // Replay, only the turn topic, as fast as it goes: the recorded order, each from the replaying stage.
        let replayPublisher = try BusPublisher(
            context: context, bind: ["ipc://\(folder)/replay.sock"], stage: "replay", options: publisherOptions)
        defer { replayPublisher.close() }
        let replaySubscriber = try BusSubscriber(context: context, connect: ["ipc://\(folder)/replay.sock"])
        defer { replaySubscriber.close() }
        try SessionReplay.waitForSubscribers(1, on: replayPublisher, seconds: 10)
        var options = SessionReplay.Options()
        options.rate = 0
        options.topics = [.turn]
        let outcome = try SessionReplay.run(session: "\(folder)/session", publisher: replayPublisher, options: options)
        #expect(outcome.published == read.count)
        let replayed =
            await withDeadline(seconds: 20, onTimeout: { replaySubscriber.close() }) { () -> [RecordedMessage]? in
                var replayed: [RecordedMessage] = []
                for await message in replaySubscriber.messages {
                    replayed.append(message.recorded)
                    if replayed.count == outcome.published { break }
                }
                return replayed
            } ?? []
        #expect(replayed.map(\.message) == read.map(\.message))
        #expect(replayed.allSatisfy { $0.stage == "replay" })
    }

    @Test func partsRotateBySizeAndTheFolderReadsAsOneSession() async throws {
        let folder = try scratchFolder()
        var options = MCAPRecorder.Options(folder: folder)
        options.maxFileBytes = 40_000
        let written = Self.records(3000)
        try await self.record(written, options: options)
        let (read, summary) = try SessionReader.records(folder)
        #expect(summary.files.count >= 3)
        #expect(summary.cutFiles.isEmpty)
        #expect(read.map(\.message) == written.map(\.message))
    }

    @Test func partsRotateByAge() async throws {
        let folder = try scratchFolder()
        let clock = Mutex(0.0)
        var options = MCAPRecorder.Options(folder: folder)
        options.maxFileSeconds = 10
        let recorder = try MCAPRecorder(
            options: options, logger: Logger(label: "test"), now: { clock.withLock { $0 } })
        let written = Self.records(30)
        for (index, record) in written.enumerated() {
            try recorder.record(record)
            clock.withLock { $0 = Double(index) }
        }
        try await recorder.finish()
        let (read, summary) = try SessionReader.records(folder)
        #expect(summary.files.count >= 2)
        #expect(read.map(\.message) == written.map(\.message))
    }
}

/// Runs a Python script with arguments; its standard output, trimmed. On a thread of its own: the script may take
/// seconds (decoding a screenshot), which must not hold one of the cooperative pool's two threads.
func runPython(_ script: String, _ arguments: [String]) async throws -> String {
    try await offThePool { try runPythonBlocking(script, arguments) }
}

private func runPythonBlocking(_ script: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script] + arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let errorText = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestProcessError("python3 exited \(process.terminationStatus): \(errorText)")
    }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// `hapticnav replay`'s selection and pacing, through a real publisher and subscriber in this process.
@Suite struct SessionReplayTests {
    /// Plays `options` of a 300-record session (fixes, headings and cues 0.1 s apart) to a subscriber; what it got.
    private func replay(_ options: SessionReplay.Options) async throws -> (received: [RecordedMessage], seconds: Double)
    {
        let folder = try scratchFolder()
        var writer = SessionWriter(library: "test", metadata: [])
        SessionRecordingTests.records(300).forEach { writer.add($0) }
        writer.finish()
        try Data(writer.takeOutput()).store(toFile: "\(folder)/session.mcap")
        let context = ZMQContext()
        defer { context.terminate() }
        var publisherOptions = PublisherOptions()
        publisherOptions.lossless = true
        let publisher = try BusPublisher(
            context: context, bind: ["ipc://\(folder)/replay.sock"], stage: "replay", options: publisherOptions)
        defer { publisher.close() }
        let subscriber = try BusSubscriber(context: context, connect: ["ipc://\(folder)/replay.sock"])
        defer { subscriber.close() }
        try SessionReplay.waitForSubscribers(1, on: publisher, seconds: 10)
        let outcome = try SessionReplay.run(session: "\(folder)/session.mcap", publisher: publisher, options: options)
        var received: [RecordedMessage] = []
        for await message in subscriber.messages {
            received.append(message.recorded)
            if received.count == outcome.published { break }
        }
        return (received, outcome.seconds)
    }

    @Test func topicsStagesAndATimeWindowChooseWhatIsPlayedInItsRecordedOrder() async throws {
        var options = SessionReplay.Options()
        options.rate = 0
        options.topics = [.fix, .heading]
        options.stages = ["source"]
        options.fromSeconds = 10
        options.toSeconds = 20
        let (received, _) = try await self.replay(options)
        let expected = SessionRecordingTests.records(300).filter { record in
            let offset = (record.receiveMonotonicSeconds ?? 0) - 1000
            return record.stage == "source" && offset >= 10 - 1e-9 && offset <= 20 + 1e-9
        }
        #expect(received.map(\.message) == expected.map(\.message))
        #expect(received.allSatisfy { $0.stage == "replay" })
    }

    /// At 10×, 5 s of recorded time take at least half a second; as fast as possible, all 300 play.
    @Test func theRateScalesTheRecordedSpacing() async throws {
        var options = SessionReplay.Options()
        options.rate = 10
        options.toSeconds = 5
        let (paced, pacedSeconds) = try await self.replay(options)
        #expect(paced.count == 51)
        #expect(pacedSeconds >= 0.5 - 0.01, "5 s of recorded time at 10× take at least 0.5 s: \(pacedSeconds)")
        options.rate = 0
        options.toSeconds = nil
        let (all, _) = try await self.replay(options)
        #expect(all.count == 300)
    }
}
