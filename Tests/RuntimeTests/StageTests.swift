import Foundation
import NavCore
import Parsers
import ServiceLifecycle
import Routers
import SimSource
import Sinks
import Stages
import Synchronization
import SystemIO
import Testing
import TestSupport
import Logging
import MapLogic
import StageRecorder
import StageSmoother
import StageSource

@Suite struct StageTests {
    private let path = [
        Coordinate(latitude: 43.7319471, longitude: 7.4216106),
        Coordinate(latitude: 43.7321, longitude: 7.4205),
        Coordinate(latitude: 43.7312, longitude: 7.4199),
    ]

    private func walker(seed: UInt64 = 1) throws -> SimulatedWalker {
        var options = SimulatedWalker.Options(path: self.path)
        options.pace = 0
        options.seed = seed
        return try SimulatedWalker(options: options)
    }

    @Test func theSourceStagePublishesTheWalkThenEndOfStream() async throws {
        let output = MemoryPublisher()
        let walker = try self.walker()
        let stage = SourceStage(name: "source", source: walker, output: output, logger: Logger(label: "test"))
        try await stage.run()
        let messages = await output.messages
        let fixes = messages.compactMap { if case let .fix(fix) = $0 { fix } else { nil } }
        let duration = walker.lengthMeters / 1.4
        #expect(fixes.count == Int(duration) + 1)
        #expect(zip(fixes, fixes.dropFirst()).allSatisfy { $1.timeSeconds - $0.timeSeconds == 1 })
        let headings = messages.filter { $0.kind == .heading }.count
        #expect(abs(headings - Int(duration * 10)) <= 1)
        guard case let .status(first)? = messages.first, case let .status(last)? = messages.last else {
            Issue.record("status first and last")
            return
        }
        #expect(first.health == .running)
        #expect(last.health == .endOfStream)
        #expect(last.counters.first { $0.name == "published.fix" }?.value == UInt64(fixes.count))
    }

    @Test func theSameSeedRepeatsTheSameWalkAndAnotherDoesNot() async throws {
        func fixes(seed: UInt64) async throws -> [BusMessage] {
            let output = MemoryPublisher()
            try await self.walker(seed: seed).run { await output.publish($0) }
            return await output.messages
        }
        let a = try await fixes(seed: 5), b = try await fixes(seed: 5), c = try await fixes(seed: 6)
        #expect(a == b)
        #expect(a != c)
    }

    @Test func theWalkerFollowsItsPathWithinItsNoise() async throws {
        let output = MemoryPublisher()
        var options = SimulatedWalker.Options(path: self.path)
        options.pace = 0
        options.gpsNoiseMeters = 0
        let walker = try SimulatedWalker(options: options)
        try await walker.run { await output.publish($0) }
        let fixes = await output.messages.compactMap { if case let .fix(fix) = $0 { fix } else { nil } }
        let first = try #require(fixes.first), last = try #require(fixes.last)
        #expect(
            FlatProjection.distance(Coordinate(latitude: first.latitude, longitude: first.longitude), self.path[0])
                < 0.01)
        #expect(
            FlatProjection.distance(Coordinate(latitude: last.latitude, longitude: last.longitude), self.path[2]) < 1.5)
    }

    @Test func theRecorderStageWritesLinesThatDecodeBack() async throws {
        let file = try scratchPath("recording.jsonl")
        let records = BusMessage.examples.enumerated().map { index, message in
            RecordedMessage(
                receiveTimeSeconds: 1000 + Double(index), stage: "s", sequence: UInt64(index), message: message)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: RecordedMessage.self)
        for record in records { continuation.yield(record) }
        continuation.finish()
        let stage = RecorderStage(
            name: "rec", input: stream, sink: try JSONLinesRecorder(file: file),
            logger: Logger(label: "test"))
        try await stage.run()
        let decoder = JSONDecoder()
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(try lines.map { try decoder.decode(RecordedMessage.self, from: Data($0.utf8)) } == records)
    }

    /// A recorder stopped while messages wait in its input records them before it closes: the last messages of a
    /// session (the arrival, a stop) are not lost to a recorder a few messages behind.
    @Test func aRecorderAskedToStopRecordsWhatHadReachedItFirst() async throws {
        actor SlowSink: MessageSink {
            static let id = "slow"
            var kept: [UInt64] = []
            var finished = false
            func record(_ message: RecordedMessage) async throws {
                try? await Task.sleep(for: .milliseconds(2))
                self.kept.append(message.sequence)
            }
            func finish() { self.finished = true }
        }
        let (stream, continuation) = AsyncStream.makeStream(of: RecordedMessage.self)
        let sink = SlowSink()
        // A quiet second (the default is a quarter), so that a loaded machine's late test thread still counts.
        let stage = RecorderStage(
            name: "rec", input: stream, sink: sink, logger: Logger(label: "test"), quietSeconds: 1, drainSeconds: 3)
        let running = Task { try await stage.run() }
        for index in 0..<100 {
            continuation.yield(
                RecordedMessage(
                    receiveTimeSeconds: Double(index), stage: "s", sequence: UInt64(index),
                    message: BusMessage.examples[0]))
        }
        // Stopped with (nearly) all of them still queued; the input stays open, as a bus subscriber's does, and one
        // more message comes 50 ms after the stop (it was on its way).
        running.cancel()
        try await Task.sleep(for: .milliseconds(50))
        continuation.yield(
            RecordedMessage(receiveTimeSeconds: 100, stage: "s", sequence: 100, message: BusMessage.examples[0]))
        try await running.value
        #expect(await sink.kept == Array(0...100))
        #expect(await sink.finished)
        continuation.finish()
    }

    @Test func aGeoJSONFileWithABadCoordinateIsAClearError() throws {
        let file = try scratchPath("bad.geojson")
        try #"{"type":"LineString","coordinates":[[7.4,43.7],[7.5,"north"]]}"#.write(
            toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: RoutingError.self) { try RouteFile.load(file: file) }
        do {
            _ = try RouteFile.load(file: file)
        } catch {
            #expect("\(error)".contains("coordinate 1"))
        }
    }
}

@Suite struct SmootherStageTests {
    @Test func badFixesAreDroppedAndTheStreamGoesOn() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival<LocationFix>.self)
        for (t, lat, accuracy) in [
            (0.0, 43.73, 5.0), (1, .nan, 5), (2, 43.73001, -1), (3, 43.73002, 5), (2.5, 43.73, 5), (4, 43.73003, 5),
        ] {
            let fix = LocationFix(
                timeSeconds: 1000 + t, latitude: lat, longitude: 7.42, horizontalAccuracyMeters: accuracy)
            continuation.yield(Arrival(fix, sender: "gps", receivedSeconds: 50 + t))
        }
        continuation.finish()
        let output = MemoryPublisher()
        let stage = SmootherStage(
            name: "smoother", input: stream, output: output, filter: KalmanSmoother(),
            logger: Logger(label: "test"))
        try await stage.run()
        let messages = await output.messages
        let smoothed = messages.compactMap { if case let .smoothed(s) = $0 { s } else { nil } }
        #expect(smoothed.map(\.timeSeconds) == [1000, 1003, 1004])
        guard case let .status(last)? = messages.last else {
            Issue.record("a final status")
            return
        }
        let counters = Dictionary(uniqueKeysWithValues: last.counters.map { ($0.name, $0.value) })
        #expect(counters["accepted"] == 3)
        #expect(counters["rejected.nonFinite"] == 1)
        #expect(counters["rejected.accuracyNotPositive"] == 1)
        #expect(counters["time.dropped.backwards"] == 1, "a fix dated before the last is dropped before the filter")
        #expect(last.message.contains("dropped 1 dated before the stream"))
    }

    @Test func aFixDatedAnHourAheadIsDroppedAndSmoothingGoesOnWithTheNextFix() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival<LocationFix>.self)
        for index in 0..<20 {
            let glitch = index == 10 ? 3600.0 : 0
            let fix = LocationFix(
                timeSeconds: 1000 + Double(index) + glitch, latitude: 43.73 + Double(index) * 1e-5,
                longitude: 7.42, horizontalAccuracyMeters: 5)
            continuation.yield(
                Arrival(fix, sender: "gps", receivedSeconds: 50 + Double(index), sentSeconds: 1000 + Double(index)))
        }
        continuation.finish()
        let output = MemoryPublisher()
        let stage = SmootherStage(
            name: "smoother", input: stream, output: output, filter: KalmanSmoother(),
            logger: Logger(label: "test"))
        try await stage.run()
        let messages = await output.messages
        let smoothed = messages.compactMap { if case let .smoothed(s) = $0 { s } else { nil } }
        let expected: [Double] = (0..<20).filter { $0 != 10 }.map { 1000 + Double($0) }
        let times: [Double] = smoothed.map(\.timeSeconds)
        #expect(times == expected, "every fix but the hour-ahead one is smoothed")
        let statuses = messages.compactMap { if case let .status(s) = $0 { s } else { nil } }
        #expect(statuses.contains { $0.health == .degraded && $0.message.contains("1 dated ahead of the stream") })
    }
}

@Suite struct SimulatedWalkerTests {
    private let path = [
        Coordinate(latitude: 43.7319471, longitude: 7.4216106), Coordinate(latitude: 43.7329, longitude: 7.4216106),
    ]

    @Test func aTiltEpisodeStandsThePhoneUpAndFlipsTheCompass() async throws {
        var options = SimulatedWalker.Options(path: self.path)
        options.pace = 0
        options.compassNoiseDegrees = 1
        options.pocketOffsetDegrees = 30
        options.tiltEpisodes = [(start: 20, duration: 3)]
        let output = MemoryPublisher()
        try await SimulatedWalker(options: options).run { await output.publish($0) }
        let messages = await output.messages
        let start = 1_767_225_600.0
        let headings = messages.compactMap { if case let .heading(h) = $0 { h } else { nil } }
        let attitudes = messages.compactMap { if case let .attitude(a) = $0 { a } else { nil } }
        let during = headings.filter { $0.timeSeconds >= start + 20.5 && $0.timeSeconds < start + 22.5 }
        let before = headings.filter { $0.timeSeconds >= start + 10 && $0.timeSeconds < start + 19 }
        #expect(!during.isEmpty && !before.isEmpty)
        // Walking north with the phone 30° off: 30° normally, 210° while upright.
        #expect(during.allSatisfy { Angle.separation($0.headingDegrees, 210) < 6 })
        #expect(before.allSatisfy { Angle.separation($0.headingDegrees, 30) < 6 })
        #expect(
            attitudes.filter { $0.timeSeconds >= start + 20.5 && $0.timeSeconds < start + 22.5 }.allSatisfy {
                $0.pitchDegrees > 75
            })
        #expect(attitudes.filter { $0.timeSeconds < start + 19 }.allSatisfy { $0.pitchDegrees < 30 })
    }

    @Test func randomEpisodesComeFromTheSeed() throws {
        let route = try scratchPath("walk.geojson")
        try #"{"type":"LineString","coordinates":[[7.4216,43.7319],[7.4216,43.7419]]}"#.write(
            toFile: route, atomically: true, encoding: .utf8)
        func episodes(seed: Int) throws -> [Double] {
            let settings = try Settings(
                .object([
                    "route": .string(route), "seed": .number(Double(seed)),
                    "tiltEpisodesPerMinute": .number(2),
                ]), path: "sim", baseDirectory: "")
            return try SimulatedWalker(settings: settings).options.tiltEpisodes.map(\.start)
        }
        #expect(try episodes(seed: 4) == episodes(seed: 4))
        #expect(try episodes(seed: 4) != episodes(seed: 5))
        // 1.1 km at 1.4 m/s is 13 minutes: about 26 episodes at 2 a minute.
        #expect(try (10...45).contains(episodes(seed: 4).count))
    }

    /// The walk with its calibration routine (111 m, about 90 s of walk) at 2000 times real time gives, message for
    /// message, the walk given as fast as possible; each of its messages is emitted on the walker's pacing thread.
    @Test(.timeLimit(.minutes(1))) func atAPaceItGivesTheSameWalkOnItsPacingThread() async throws {
        func walk(pace: Double) async throws -> (messages: [BusMessage], threads: Set<String>) {
            var options = SimulatedWalker.Options(path: self.path)
            options.pace = pace
            options.calibrationRoutine = true
            let output = MemoryPublisher()
            let threads = Mutex<Set<String>>([])
            try await SimulatedWalker(options: options).run { message in
                let thread = SystemThread.currentName
                threads.withLock { _ = $0.insert(thread) }
                await output.publish(message)
            }
            return (await output.messages, threads.withLock { $0 })
        }
        let paced = try await walk(pace: 2000)
        let unpaced = try await walk(pace: 0)
        #expect(paced.messages.count > 900)
        #expect(paced.messages == unpaced.messages)
        #expect(paced.threads == ["sim-walker"])
    }

    /// A walk in laps at real time ends as soon as its task is cancelled, wherever it was waiting.
    @Test(.timeLimit(.minutes(1))) func aWalkAtRealTimeEndsWhenCancelled() async throws {
        var options = SimulatedWalker.Options(path: self.path)
        options.pace = 1
        options.loop = true
        let walker = try SimulatedWalker(options: options)
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let walk = Task {
            try await walker.run { _ in starting.yield() }
        }
        for await _ in started { break }
        walk.cancel()
        await #expect(throws: CancellationError.self) { try await walk.value }
    }
}

/// A live source that sends one fix and then goes quiet.
private struct QuietLiveSource: MessageSource {
    static let id = "quiet"
    var isLive: Bool { true }
    func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        try await emit(.fix(LocationFix(timeSeconds: 1, latitude: 43.7, longitude: 7.4, horizontalAccuracyMeters: 5)))
        try await Task.sleep(for: .seconds(30))
    }
}

@Suite struct LiveSourceTests {
    @Test func aLiveSourceThatGoesQuietIsReportedStaleOnTheStagesClock() async throws {
        let output = MemoryPublisher()
        let clock = ManualClock()
        let stage = SourceStage(
            name: "gps", source: QuietLiveSource(), output: output, logger: Logger(label: "test"),
            statusIntervalSeconds: 10, staleAfterSeconds: 0.5, time: StageTime(clock: clock))
        let task = Task { try await stage.run() }
        defer { task.cancel() }
        func stale() async -> StageStatus? {
            await output.messages.compactMap { if case let .status(s) = $0, s.health == .stale { s } else { nil } }
                .first
        }
        // The fix arrives and the stage's checker is asleep on the manual clock.
        // Bounds for a loaded machine (the whole suite runs in parallel on two cores); nothing waits on wall time here.
        #expect(
            await eventually(within: 30) {
                await output.messages.contains { if case .fix = $0 { true } else { false } }
            }
        )
        #expect(await eventually(within: 30) { clock.sleeperCount > 0 })
        // 0.4 s of silence: not stale yet.
        for _ in 0..<3 {
            clock.advance(by: .milliseconds(125))
            _ = await eventually(within: 10) { clock.sleeperCount > 0 }
        }
        #expect(await stale() == nil, "0.375 s of silence is not stale at a 0.5 s limit")
        // Past the limit: stale at the next check, on the stage's clock, without anyone sleeping.
        for _ in 0..<2 {
            clock.advance(by: .milliseconds(125))
            _ = await eventually(within: 10) { clock.sleeperCount > 0 }
        }
        #expect(await eventually(within: 30) { await stale() != nil })
        let report = try #require(await stale())
        #expect(report.message.contains("no data"))
    }
}

@Suite struct SimulatedWalkerOnAMapTests {
    @Test func aWalkerCanFollowARouteComputedOverAMap() async throws {
        let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("data/maps/monaco-highways.osm").path
        let settings = try Settings(
            .object([
                "map": .string(map), "from": .array([.number(43.7319471), .number(7.4216106)]),
                "to": .array([.number(43.7297696), .number(7.4165044)]),
            ]), path: "sim", baseDirectory: "")
        // The map loaded and routed on a thread of its own: seconds of a core in a debug build.
        let length = try await offThePool { try SimulatedWalker(settings: settings).lengthMeters }
        #expect(abs(length - 659) < 7)
    }
}

/// A phone in Seattle (declination about 15° east): a magnetic heading of 300°, then a fix, then the heading again.
private struct MagneticPhone: MessageSource {
    static let id = "magnetic-phone"
    func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        let heading = HeadingSample(timeSeconds: 1_790_000_000, headingDegrees: 300, reference: .magneticNorth)
        try await emit(.heading(heading))
        try await emit(
            .fix(
                LocationFix(
                    timeSeconds: 1_790_000_001, latitude: 47.6062, longitude: -122.3321, horizontalAccuracyMeters: 5)))
        var later = heading
        later.timeSeconds += 2
        try await emit(.heading(later))
    }
}

/// Magnetic headings are turned true where they enter, the source stage: at the latest fix, and before the first at
/// the config's place; with neither they go on magnetic, for the readers to refuse.
@Suite struct TrueNorthAtTheSourceTests {
    private func headings(place: Coordinate?) async throws -> [HeadingSample] {
        let output = MemoryPublisher()
        let stage = SourceStage(
            name: "phone", source: MagneticPhone(), output: output, logger: Logger(label: "test"), place: place)
        try await stage.run()
        return await output.messages.compactMap { if case let .heading(h) = $0 { h } else { nil } }
    }

    @Test func beforeTheFirstFixTheConfigsPlaceServes() async throws {
        let seattle = Coordinate(latitude: 47.6062, longitude: -122.3321)
        let declination = try #require(
            MagneticModel.wmm2025.field(
                latitude: seattle.latitude, longitude: seattle.longitude, timeSeconds: 1_790_000_000)
        ).declinationDegrees
        #expect(declination > 14 && declination < 17)
        // A place 50 km away: the declination there differs by well under a degree.
        let headings = try await self.headings(place: Coordinate(latitude: 47.2, longitude: -122.0))
        #expect(headings.count == 2)
        #expect(headings.allSatisfy { $0.reference == .trueNorth })
        for heading in headings {
            #expect(abs(Angle.signedDifference(from: 300 + declination, to: heading.headingDegrees)) < 1)
        }
    }

    @Test func withoutAPlaceTheFirstGoesOnMagneticAndTheRestTrue() async throws {
        let headings = try await self.headings(place: nil)
        #expect(headings.map(\.reference) == [.magneticNorth, .trueNorth])
        #expect(headings.first?.headingDegrees == 300)
    }
}
