@testable import Bus
import Foundation
import NavCore
import Synchronization
import TestSupport
import Testing

/// Publishes hand-made envelopes (any sequence number, any time) on an endpoint the stages under test read.
private final class CraftingPublisher: @unchecked Sendable {
    private let socket: ZMQSocket
    private let lock = Mutex(())
    private var sequences: [UInt8: UInt64] = [:]

    init(context: ZMQContext, bind endpoint: String) throws {
        self.socket = try ZMQSocket(context: context, type: ZMQSocketType.publisher)
        try prepareEndpoint(endpoint)
        try self.socket.bind(endpoint)
    }

    /// Starts every topic's numbering at `first`, so that it wraps past 2^64 − 1 to 1 after a few messages.
    func numberFrom(_ first: UInt64) {
        for kind in BusMessage.Kind.allCases { self.sequences[kind.rawValue] = first }
    }

    func send(_ message: BusMessage, sentSeconds: Double = Date().timeIntervalSince1970) throws {
        try self.lock.withLock { _ in
            let sequence = self.sequences[message.kind.rawValue, default: 0]
            // 2^64 − 1 is followed by 1, as a hostile or broken sender might: the case that used to trap.
            let next = sequence == .max ? 1 : sequence &+ 1
            self.sequences[message.kind.rawValue] = next
            let frames = Envelope.frames(
                for: message, sequence: sequence, stage: "source",
                sendTimeNanoseconds: Int64(sentSeconds * 1e9))
            for (index, frame) in frames.enumerated() {
                try frame.withUnsafeBytes { try self.socket.send($0, more: index < frames.count - 1) }
            }
        }
    }

    /// Sends frames as they are, however broken.
    func sendRaw(_ frames: [[UInt8]]) throws {
        try self.lock.withLock { _ in
            for (index, frame) in frames.enumerated() {
                try frame.withUnsafeBytes { try self.socket.send($0, more: index < frames.count - 1) }
            }
        }
    }

    func close() { self.socket.close() }
}

extension ProcessSuites.Data {
    /// Crafted and corrupt input sent into running stage processes: each keeps running and keeps working.
    @Suite(.serialized) struct CraftedInputTests {
        private let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path

        private func routePoints() throws -> [Coordinate] {
            let data = try Data(contentsOf: URL(fileURLWithPath: self.route))
            let feature = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
            let geometry = try #require(feature["geometry"] as? [String: Any])
            let coordinates = try #require(geometry["coordinates"] as? [[Double]])
            return coordinates.map { Coordinate(latitude: $0[1], longitude: $0[0]) }
        }

        /// Every stage kind reads what the test publishes as "source".
        private func writeConfig(folder: String, bandPort: Int) throws -> String {
            let end = try #require(try self.routePoints().last)
            let config = """
                {
                  bus: { joinGraceSeconds: 0.3 },
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(folder)/source.sock", settings: { route: "\(self.route)" } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock" },
                    route: { plugin: "file", inputs: ["source"], topics: ["smoothed"], publish: "ipc://\(folder)/route.sock",
                             settings: { file: "\(self.route)" }, options: { destination: [\(end.latitude), \(end.longitude)] } },
                    haptic: { plugin: "band", inputs: ["source"], topics: ["heading", "target", "progress"],
                              publish: "ipc://\(folder)/haptic.sock", settings: { tcp: "127.0.0.1:\(bandPort)" },
                              options: { offsetDegrees: 0, staleAfterSeconds: 2.5 } },
                    recorder: { role: "recorder", plugin: "jsonl", inputs: ["source"], topics: ["heading"],
                                settings: { file: "\(folder)/recording.jsonl" } },
                  },
                }
                """
            let file = "\(folder)/pipeline.json5"
            try config.store(toFile: file)
            return file
        }

        /// What the test sends every 100 ms of its script: a walker on the route, 1 Hz fixes, 10 Hz headings and targets.
        private struct Walk {
            let points: [Coordinate]
            var tick = 0
            var start = Date().timeIntervalSince1970

            /// The walker's position after `seconds` at 1.3 m/s, from the route's start.
            func position(_ seconds: Double) -> Coordinate {
                var left = seconds * 1.3
                for index in 1..<self.points.count {
                    let leg = Geodesic.wgs84.inverse(self.points[index - 1], self.points[index]).distanceMeters
                    if left <= leg {
                        let fraction = leg > 0 ? left / leg : 0
                        return Coordinate(
                            latitude: self.points[index - 1].latitude + fraction
                                * (self.points[index].latitude - self.points[index - 1].latitude),
                            longitude: self.points[index - 1].longitude + fraction
                                * (self.points[index].longitude - self.points[index - 1].longitude))
                    }
                    left -= leg
                }
                return self.points.last!
            }
        }

        private struct Stages {
            let band: ChildProcess
            let stages: [String: ChildProcess]
            let log: String
            let folder: String
            let context = ZMQContext()
            let publisher: CraftingPublisher
            let outputs: BusSubscriber

            init() throws {
                self.folder = try scratchFolder()
                let port = freeTCPPort()
                self.log = "\(self.folder)/band.jsonl"
                let binary = try hapticnavExecutable()
                self.band = try ChildProcess(
                    binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)", "--log", self.log])
                let walk = CraftedInputTests()
                let config = try walk.writeConfig(folder: self.folder, bandPort: port)
                self.publisher = try CraftingPublisher(context: self.context, bind: "ipc://\(self.folder)/source.sock")
                var stages: [String: ChildProcess] = [:]
                for name in ["smoother", "route", "haptic", "recorder"] {
                    stages[name] = try ChildProcess(binary, ["stage", name, "--config", config])
                }
                self.stages = stages
                self.outputs = try BusSubscriber(
                    context: self.context,
                    connect: [
                        "ipc://\(self.folder)/smoother.sock",
                        "ipc://\(self.folder)/route.sock",
                        "ipc://\(self.folder)/haptic.sock",
                    ])
            }

            func stop() {
                self.outputs.close()
                self.publisher.close()
                for stage in self.stages.values { stage.ensureStopped() }
                self.band.ensureStopped()
                self.context.terminate()
            }
        }

        /// Collects what the stages publish, with the test's wall-clock receive time.
        private final class Collected: Sendable {
            let messages = Mutex<[(time: Double, stage: String, message: BusMessage)]>([])
        }

        private func collect(_ subscriber: BusSubscriber) -> (Collected, Task<Void, Never>) {
            let collected = Collected()
            let task = Task.detached {
                for await received in subscriber.messages {
                    collected.messages.withLock {
                        $0.append((Date().timeIntervalSince1970, received.header.stage, received.message))
                    }
                }
            }
            return (collected, task)
        }

        /// Sends one 100 ms step of the walk at walk time `seconds`; `heading` is the compass, `glitch` dates this
        /// step's fix and heading an hour ahead.
        private func step(
            _ publisher: CraftingPublisher, _ walk: Walk, seconds: Double, heading: Double, glitch: Bool = false
        ) throws {
            let now = walk.start + seconds
            let position = walk.position(seconds)
            let ahead = glitch ? 3600.0 : 0
            if Int((seconds * 10).rounded()) % 10 == 0 {
                try publisher.send(
                    .fix(
                        LocationFix(
                            timeSeconds: now + ahead, latitude: position.latitude, longitude: position.longitude,
                            horizontalAccuracyMeters: 4)))
                try publisher.send(
                    .smoothed(
                        SmoothedFix(
                            timeSeconds: now, latitude: position.latitude, longitude: position.longitude,
                            horizontalAccuracyMeters: 3, speedMetersPerSecond: 1.3, courseDegrees: nil,
                            reset: false)))
            }
            try publisher.send(.heading(HeadingSample(timeSeconds: now + ahead, headingDegrees: heading)))
            try publisher.send(
                .target(
                    GuidanceTarget(
                        timeSeconds: now, routeID: 1, coordinate: position, bearingDegrees: 0,
                        distanceMeters: 15, kind: .lookAhead)))
        }

        /// Sends the walk's 100 ms step at `seconds`, then moves on by one step of walk time and of real time (the
        /// walk is paced like a live source, not synchronised).
        private func walkOn(
            _ stages: Stages, _ walk: Walk, _ seconds: inout Double, heading: Double, glitch: Bool = false
        ) async throws {
            try self.step(stages.publisher, walk, seconds: seconds, heading: heading, glitch: glitch)
            seconds += 0.1
            try await Task.sleep(for: .milliseconds(100))
        }

        /// Steps the walk with ordinary messages until the sink drives the right motor and the smoother has smoothed a
        /// few fixes (bounded): what comes next comes mid-stream (the first message a stage sees defines its stream's
        /// time line). Returns the walk time reached.
        private func warmUp(_ stages: Stages, _ walk: Walk, _ collected: Collected) async throws -> Double {
            var seconds = 0.0
            while seconds < 15 {
                try await self.walkOn(stages, walk, &seconds, heading: 300)
                let smoothed = collected.messages.withLock {
                    $0.filter { if case .smoothed = $0.message { true } else { false } }.count
                }
                if smoothed >= 3, bandFrames(stages.log).contains(where: { $0.type == "setMotors" && $0.right > 0 }) {
                    return seconds
                }
            }
            Issue.record("the sink drove no motor, or the smoother smoothed nothing, within 15 s")
            return seconds
        }

        @Test func aSequenceWrapSentToEveryStageKindLeavesEachRunningAndWorking() async throws {
            let stages = try Stages()
            defer { stages.stop() }
            let (collected, task) = self.collect(stages.outputs)
            defer { task.cancel() }
            var walk = Walk(points: try self.routePoints())
            walk.start = Date().timeIntervalSince1970
            var seconds = try await self.warmUp(stages, walk, collected)
            // Every topic's numbering now runs up to 2^64 − 1 and goes on at 1; broken frames come in between.
            stages.publisher.numberFrom(.max - 1)
            for topic in ["heading", "target", "fix", "smoothed"] {
                try stages.publisher.sendRaw([Array(topic.utf8), [1, 2, 0, 0, 0xFF], [0xDE, 0xAD]])
            }
            let wrapped = Date().timeIntervalSince1970
            for _ in 0..<40 {
                try await self.walkOn(stages, walk, &seconds, heading: 60)
            }
            for (name, stage) in stages.stages {
                #expect(stage.process.isRunning, "\(name) still runs after the wrap: \(stage.stderr.suffix(400))")
            }
            let after = collected.messages.withLock { $0.filter { $0.time > wrapped + 1.5 } }
            #expect(
                after.contains { if case .smoothed = $0.message { $0.stage == "smoother" } else { false } },
                "the smoother still smooths")
            #expect(
                after.contains { if case .target = $0.message { $0.stage == "route" } else { false } },
                "the route controller still guides")
            #expect(
                bandFrames(stages.log).contains { $0.time > wrapped + 0.5 && $0.type == "setMotors" && $0.left > 0 },
                "the sink follows the new heading to the left motor")
            let busCounters = collected.messages.withLock { list in
                list.compactMap { entry -> [String: UInt64]? in
                    guard case let .status(status) = entry.message, entry.stage == "haptic" else { return nil }
                    return Dictionary(status.counters.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
                }.last
            }
            #expect(
                (busCounters?["bus.senderRestarts"] ?? 0) >= 1,
                "the sink's status counts the restart: \(busCounters ?? [:])")
            #expect((busCounters?["bus.dropped.truncated"] ?? 0) >= 1, "the sink's status counts the broken frames")
            let recorded = (try? String(contentsOfFile: "\(stages.folder)/recording.jsonl", encoding: .utf8)) ?? ""
            let lines = recorded.split(separator: "\n")
            #expect(
                lines.suffix(20).contains { $0.contains("18446744073709551615") } || lines.count > 40,
                "the recorder kept recording")
            for stage in stages.stages.values { stage.signal(SIGTERM) }
            for (name, stage) in stages.stages {
                #expect(await stage.wait(seconds: 5) == 0, "\(name) exits cleanly after the wrap")
                #expect(
                    stage.stderr.contains("restarted its numbering"),
                    "\(name) logged the restart: \(stage.stderr.suffix(600))")
            }
        }

        @Test func aFixAndAHeadingAnHourAheadAreDroppedAndTheStreamsRecover() async throws {
            let stages = try Stages()
            defer { stages.stop() }
            let (collected, task) = self.collect(stages.outputs)
            defer { task.cancel() }
            var walk = Walk(points: try self.routePoints())
            walk.start = Date().timeIntervalSince1970
            var seconds = try await self.warmUp(stages, walk, collected)
            // Line up on a whole second, so that the glitch step carries a fix as well as a heading.
            while Int((seconds * 10).rounded()) % 10 != 0 {
                try await self.walkOn(stages, walk, &seconds, heading: 300)
            }
            let glitchSent = Date().timeIntervalSince1970
            let glitchAt = walk.start + seconds
            try await self.walkOn(stages, walk, &seconds, heading: 60, glitch: true)
            let firstValid = Date().timeIntervalSince1970
            for _ in 0..<40 {
                try await self.walkOn(stages, walk, &seconds, heading: 60)
            }
            #expect(
                !bandFrames(stages.log).contains { $0.time > glitchSent && $0.time < firstValid && $0.left > 0 },
                "the hour-ahead heading itself moved no motor")
            // Motors follow the next valid headings: the left motor within half a second.
            let left = bandFrames(stages.log).first { $0.time > firstValid && $0.type == "setMotors" && $0.left > 0 }
            let delay = try #require(left, "the left motor ran on the valid headings").time - firstValid
            #expect(delay < 0.5, "motors followed the next valid heading after \(delay) s")
            // Smoothed fixes resume within 3 fixes of the glitch.
            let smoothedTimes = collected.messages.withLock { list in
                list.compactMap { entry -> Double? in
                    if case let .smoothed(fix) = entry.message { fix.timeSeconds } else { nil }
                }
            }
            let resumed = smoothedTimes.filter { $0 > glitchAt + 0.5 && $0 < glitchAt + 3.5 }
            #expect(!resumed.isEmpty, "a smoothed fix within 3 fixes of the glitch: \(smoothedTimes.suffix(6))")
            #expect(!smoothedTimes.contains { $0 > glitchAt + 1000 }, "the hour-ahead fix was never smoothed")
            let statuses = collected.messages.withLock { list in
                list.compactMap { entry -> StageStatus? in
                    if case let .status(status) = entry.message { status } else { nil }
                }
            }
            #expect(
                statuses.contains { $0.stage == "smoother" && $0.message.contains("1 dated ahead of the stream") },
                "\(stages.stages["smoother"]!.stderr.suffix(800))")
            #expect(statuses.contains { $0.stage == "haptic" && $0.message.contains("1 dated ahead of the stream") })
            print(
                "time sanity: motors followed the next valid heading after \(String(format: "%.3f", delay)) s; smoothed fixes at \(resumed.map { String(format: "%.1f", $0 - glitchAt) }) s after the glitch"
            )
        }
    }
}
