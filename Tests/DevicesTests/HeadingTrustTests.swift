import Logging
import NavCore
import Stages
import Synchronization
import TestSupport
import Testing
import HapticLogic
import StageHaptic

/// The sink on a hand-driven clock: magnetic headings are turned true before they meet a bearing, and headings that
/// say they may be far off are not acted on.
@Suite struct HeadingTrustTests {
    /// A sink whose monotonic clock is `clock`, fed through `handle` and `check`.
    final class Driven: Sendable {
        final class Seconds: Sendable {
            let value = Mutex<Double>(100)
        }
        let clock = Seconds()
        let output = MemoryPublisher()
        let stage: HapticSinkStage<AsyncStream<Arrival<SinkInput>>, MemoryPublisher>
        /// Wall time at clock 100 [seconds since 1970]: 2026-06-01.
        let wallBase = 1_780_272_000.0

        init(maximumAccuracy: Double = 30) {
            var options = HapticSinkOptions()
            options.guidance.offsetDegrees = 0
            options.echoEveryHeading = true
            options.maximumHeadingAccuracyDegrees = maximumAccuracy
            let (clock, wallBase) = (self.clock, self.wallBase)
            // The stage's clocks are the test's: monotonic time and the wall clock move together, by hand.
            let time = StageTime(
                monotonicSeconds: { clock.value.withLock { $0 } },
                wallSeconds: { wallBase + clock.value.withLock { $0 } - 100 }, sleep: { try await Task.sleep(for: $0) })
            self.stage = HapticSinkStage(
                name: "sink", input: AsyncStream { $0.finish() }, output: self.output, devices: [],
                options: options, logger: Logger(label: "test"), time: time)
        }

        var now: Double { self.clock.value.withLock { $0 } }
        var wall: Double { self.wallBase + self.now - 100 }

        func advance(_ seconds: Double) { self.clock.value.withLock { $0 += seconds } }

        func target(at place: Coordinate, bearing: Double) async {
            let target = GuidanceTarget(
                timeSeconds: self.wall, routeID: 1, coordinate: place, bearingDegrees: bearing, distanceMeters: 15,
                kind: .lookAhead)
            await self.stage.handle(
                Arrival(.target(target), sender: "route", receivedSeconds: self.now, sentSeconds: self.wall))
        }

        func heading(_ degrees: Double, _ reference: HeadingReference, accuracy: Double? = nil) async {
            let sample = HeadingSample(
                timeSeconds: self.wall, headingDegrees: degrees, reference: reference, accuracyDegrees: accuracy)
            await self.stage.handle(
                Arrival(.heading(sample), sender: "source", receivedSeconds: self.now, sentSeconds: self.wall))
        }

        var cues: [HapticCue] {
            get async { await self.output.messages.compactMap { if case let .cue(cue) = $0 { cue } else { nil } } }
        }
        var statuses: [StageStatus] {
            get async {
                await self.output.messages.compactMap { if case let .status(status) = $0 { status } else { nil } }
            }
        }
    }

    /// Headings are turned true where they enter (the source stage): a magnetic one that reaches the sink (the source
    /// had no position yet, or a client publishing headings of its own) is never compared with a true bearing, even
    /// with a target to steer to, and the sink says why it is quiet.
    @Test func aMagneticHeadingIsNeverComparedWithATrueBearing() async throws {
        let sink = Driven()
        let seattle = Coordinate(latitude: 47.6062, longitude: -122.3321)
        for _ in 0..<40 {
            await sink.target(at: seattle, bearing: 0)
            await sink.heading(300, .magneticNorth)
            sink.advance(0.05)
            await sink.stage.check()
        }
        #expect(await sink.cues.allSatisfy { $0.kind == .silent || $0.kind == .signalLost })
        let status = try #require(await sink.statuses.last)
        #expect(status.message.contains("magnetic heading"), "\(status.message)")
        #expect(status.counters.contains { $0.name == "heading.magneticRefused" && $0.value >= 10 })
        // The same heading, true, is steered by.
        for _ in 0..<20 {
            await sink.target(at: seattle, bearing: 0)
            await sink.heading(300, .trueNorth)
            sink.advance(0.05)
        }
        #expect(await sink.cues.last { $0.kind != .silent }?.kind == .turnRight)
    }

    @Test func headingsLessAccurateThanTheLimitSilenceTheSinkOnceAndItSaysWhy() async throws {
        let sink = Driven()
        let monaco = Coordinate(latitude: 43.7319, longitude: 7.4216)
        // Guiding: a true heading 60° left of the target.
        for _ in 0..<20 {
            await sink.target(at: monaco, bearing: 0)
            await sink.heading(300, .trueNorth, accuracy: 5)
            sink.advance(0.05)
            await sink.stage.check()
        }
        #expect(await sink.cues.last?.kind == .turnRight)
        // A parked car: the source widens the accuracy to 60°. Within the heading's stale limit (1 s) the sink
        // stops, plays signal-lost once and says the compass is why.
        for _ in 0..<40 {
            await sink.target(at: monaco, bearing: 0)
            await sink.heading(200, .trueNorth, accuracy: 60)
            sink.advance(0.05)
            await sink.stage.check()
        }
        let steered = await sink.cues.contains { $0.kind == .turnLeft || $0.kind == .turnAround }
        #expect(!steered, "a disturbed heading steered")
        #expect(await sink.cues.filter { $0.kind == .signalLost }.count == 1)
        let silent = try #require(await sink.statuses.last { $0.health == .stale })
        #expect(silent.message.contains("compass unreliable (accuracy 60° > 30°)"), "\(silent.message)")
        #expect(silent.counters.contains { $0.name == "heading.inaccurate" && $0.value >= 10 })
        // The compass recovers: guidance resumes.
        for _ in 0..<20 {
            await sink.target(at: monaco, bearing: 0)
            await sink.heading(300, .trueNorth, accuracy: 5)
            sink.advance(0.05)
            await sink.stage.check()
        }
        #expect(await sink.cues.last?.kind == .turnRight)
        #expect(await sink.statuses.last?.health != .stale)
    }
}
