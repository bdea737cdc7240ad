import Foundation
import Links
@testable import LocationSources
import Logging
import NavCore
import Synchronization
import TestSupport
import Testing

/// The bundled real phyphox recording (a phone carried round an indoor loop, 105 s).
private let recording = repositoryRoot.appendingPathComponent("data/walks/phyphox-indoor-loop-116m").path

/// Messages a source emitted, collected from its task.
private final class Collected: Sendable {
    let messages = Mutex<[BusMessage]>([])
    func add(_ message: BusMessage) { self.messages.withLock { $0.append(message) } }
    var all: [BusMessage] { self.messages.withLock { $0 } }
    var fixes: [LocationFix] {
        self.all.compactMap {
            if case let .fix(fix) = $0 { return fix }
            return nil
        }
    }
    var headings: [HeadingSample] {
        self.all.compactMap {
            if case let .heading(heading) = $0 { return heading }
            return nil
        }
    }
}

/// Runs `source` until the test ends (the returned task is cancelled by the caller).
private func start(_ source: PhyphoxSource, into collected: Collected) -> Task<Void, Never> {
    Task { try? await source.run { collected.add($0) } }
}

private func phyphox(_ url: String, timeout: Double = 0.5) throws -> PhyphoxSource {
    var options = PhyphoxSource.Options(url: url)
    options.timeoutSeconds = timeout
    return try PhyphoxSource(options: options, logger: Logger(label: "test"))
}

@Suite(.serialized) struct PhyphoxTests {
    @Test func numbersAreWrittenAsTheAppWritesThem() {
        #expect(PhyphoxProtocol.format(43.565153) == "4.3565153E1")
        #expect(PhyphoxProtocol.format(-9.81) == "-9.81E0")
        #expect(PhyphoxProtocol.format(0) == "0E0")
        #expect(PhyphoxProtocol.format(1) == "1E0")
        #expect(PhyphoxProtocol.format(0.003446083327) == "3.4460833E-3")
        #expect(PhyphoxProtocol.format(104.5509558) == "1.0455096E2")
        #expect(PhyphoxStandIn.java(1_764_496_800.123) == "1.764496800123E9")
        #expect(PhyphoxStandIn.java(0) == "0")
        #expect(PhyphoxStandIn.java(12.5) == "12.5")
        // Experiment time to UTC: the start that covers it, pauses left out.
        let events = [
            PhyphoxProtocol.TimeEvent(isStart: true, experimentTime: 0, systemTime: 1000),
            PhyphoxProtocol.TimeEvent(isStart: false, experimentTime: 10, systemTime: 1010),
            PhyphoxProtocol.TimeEvent(isStart: true, experimentTime: 10, systemTime: 1100),
        ]
        #expect(PhyphoxProtocol.utc(experimentTime: 5, events: events) == 1005)
        #expect(PhyphoxProtocol.utc(experimentTime: 12, events: events) == 1102)
        #expect(PhyphoxProtocol.utc(experimentTime: 12, events: []) == nil)
    }

    /// The stand-in serves the recording ten times faster than it was made; the source reads it over real HTTP,
    /// asking only for new samples, and gives the recording's fixes and ten headings a second of experiment time,
    /// equal to the headings the recorded-file reader computes from the same CSV files.
    @Test func theRecordingServedOverHTTPGivesItsFixesAndTenHeadingsASecond() async throws {
        var options = PhyphoxStandIn.Options()
        options.rate = 10
        options.loop = false
        // Paused until the source's first poll starts it (as the source does with a phone it finds paused): the whole
        // recording is then read however late a loaded host lets that first poll come (a phone already measuring
        // would have run on without it; CI once started ten seconds in and read too little of it).
        options.measuring = false
        let phone = try await offThePool { [options] in try PhyphoxStandIn(recording: recording, options: options) }
        defer { phone.close() }
        // A generous timeout: this test is about every sample arriving once, and a loaded CI host can hold an answer
        // past the default half second; two such in a row would pass the catch-up window and skip to the newest.
        // For the same reason a failed request must carry on, not skip to the newest: a starved host is not a phone
        // that was away.
        var sourceOptions = PhyphoxSource.Options(url: phone.url)
        sourceOptions.timeoutSeconds = 5
        sourceOptions.catchUpSeconds = 60
        let source = try PhyphoxSource(options: sourceOptions, logger: Logger(label: "test"))
        let collected = Collected()
        let task = start(source, into: collected)
        defer { task.cancel() }
        // 105 s of recording at ten times: all of it within about 11 s of the source starting it, every sample once,
        // at ten headings a second of experiment time (below).
        let done = await eventually(within: 40) {
            (collected.fixes.last?.latitude).map { abs($0 - 43.5651) < 0.001 } == true && collected.fixes.count >= 20
                && collected.headings.count >= 900
        }
        #expect(done, "fixes \(collected.fixes.count), headings \(collected.headings.count)")
        let fixes = collected.fixes, headings = collected.headings
        // Every fix once, in order (a threshold that let a sample through twice would repeat one).
        #expect(Set(fixes.map(\.timeSeconds)).count == fixes.count)
        #expect(zip(fixes, fixes.dropFirst()).allSatisfy { $0.timeSeconds < $1.timeSeconds })
        #expect(fixes.allSatisfy { abs($0.latitude - 43.565) < 0.01 && abs($0.longitude - 1.3925) < 0.01 })
        #expect(fixes.allSatisfy { $0.speedMetersPerSecond == nil || $0.speedMetersPerSecond! >= 0 })
        // Ten headings a second of experiment time (the phone's clock runs at the host's; experiment time ten times).
        let span = (headings.last!.timeSeconds - headings.first!.timeSeconds)
        let rate = Double(headings.count - 1) / span
        print(
            "phyphox over HTTP: \(fixes.count) fixes, \(headings.count) headings, \(fixedDecimal(rate, digits: 2)) a second"
        )
        #expect(rate > 9.5 && rate <= 10.01, "\(rate) headings a second")
        #expect(headings.allSatisfy { $0.reference == .magneticNorth })
        // The same headings as the file reader's (the same maths on the same samples; bins are whole tenths of a
        // second on both clocks, which the phone's start does not align, so compare each with the file's nearest).
        let file = try await offThePool { try SensorLog.phyphox(folder: recording, startTime: 0, interval: 0.1) }
            .messages.compactMap {
                if case let .heading(heading) = $0.message { return heading }
                return nil
            }
        let start = try #require(phone.firstStart)
        var byBin: [Int: Double] = [:]
        for heading in file { byBin[Int((heading.timeSeconds / 0.1).rounded(.down))] = heading.headingDegrees }
        var differences: [Double] = []
        for heading in headings {
            // File headings sit at the middle of each tenth of experiment time.
            let bin = Int(((heading.timeSeconds - start) / 0.1).rounded(.down))
            guard let expected = byBin[bin] else { continue }
            differences.append(abs(Angle.signedDifference(from: expected, to: heading.headingDegrees)))
        }
        #expect(differences.count * 10 >= headings.count * 9, "\(differences.count) of \(headings.count) compared")
        let median = differences.sorted()[differences.count / 2]
        #expect(median < 3, "median difference from the file reader's headings \(median)°")
        // The wearer's steps, counted on the accelerometer as it streams: the recording's 168 (its documentation), once
        // the whole recording is read (the last fix comes some seconds before its end).
        func stepsSoFar() -> [StepCount] {
            collected.all.compactMap {
                if case let .step(step) = $0 { return step }
                return nil
            }
        }
        _ = await eventually(within: 30) { stepsSoFar().count >= 165 }
        let steps = stepsSoFar()
        #expect(abs(steps.count - 168) <= 3, "\(steps.count) steps")
        #expect(steps.last.map { Int($0.count) } == steps.count)
        let counters = await source.statusCounters()
        // Asked again and again as the recording grows (how many times depends on the machine's load: a fresh-clone
        // run on a busy machine made 17 polls where a quiet one makes over 20), each answer only the new samples
        // (every fix once, above).
        let polls = counters.first { $0.name == "phyphox.polls" }?.value ?? 0
        #expect(polls > 3, "\(polls) polls")
        let condition = await source.condition()
        print("phyphox recording's compass: \(condition?.message ?? "within the model's limits")")
        #expect(condition == nil || condition?.message.hasPrefix("compass disturbed") == true)
    }

    /// A paused experiment, a phone that stops answering and one that comes back: each a condition in the status,
    /// never a hang; data flows again after each.
    @Test func aPauseAndAPhoneThatStopsAnsweringAreConditionsAndDataFlowsAgain() async throws {
        var options = PhyphoxStandIn.Options()
        options.measuring = false  // the source starts it
        let phone = try await offThePool { [options] in try PhyphoxStandIn(recording: recording, options: options) }
        defer { phone.close() }
        let source = try phyphox(phone.url, timeout: 0.3)
        let collected = Collected()
        let task = start(source, into: collected)
        defer { task.cancel() }
        // Each change waited for with a generous bound: a loaded host may hold a poll past its 0.3 s deadline (a
        // moment of "phone unreachable" on the way), and how soon a condition shows is not what this test is about.
        #expect(await eventually(within: 15) { collected.headings.count >= 10 }, "started and measuring")
        phone.pause()
        // The paused condition, and its health read with it (a poll in between may have timed out meanwhile).
        var pausedCondition: SourceCondition?
        let paused = await eventually(within: 30) {
            pausedCondition = await source.condition()
            return pausedCondition?.message.contains("paused") == true
        }
        #expect(paused)
        #expect(pausedCondition?.health == .stale)
        let before = collected.headings.count
        phone.resume()
        #expect(await eventually(within: 30) { collected.headings.count > before + 10 })
        // The pause is over: no stale condition (the recording's compass may be out of the model's limits just there,
        // a degraded condition of its own).
        #expect(await eventually(within: 30) { await source.condition()?.health != .stale })
        phone.setAnswering(false)
        let unreachable = await eventually(within: 30) {
            await source.condition()?.message.hasPrefix("phone unreachable") == true
        }
        #expect(unreachable)
        phone.setAnswering(true)
        let again = collected.headings.count
        #expect(await eventually(within: 30) { collected.headings.count > again + 10 }, "data again")
        // Nothing old was sent on after the gap: times only rise.
        let times = collected.headings.map(\.timeSeconds)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        // Cancelled, the source stops at once.
        task.cancel()
        let stopped: Bool? = await withDeadline(seconds: 3) {
            await task.value
            return true
        }
        #expect(stopped == true)
    }

    @Test func aWrongExperimentNamesTheMissingBuffers() async throws {
        var options = PhyphoxStandIn.Options()
        options.title = "Magnetometer"
        options.withoutBuffers = ["locAccuracy", "magX"]
        let phone = try await offThePool { [options] in try PhyphoxStandIn(recording: recording, options: options) }
        defer { phone.close() }
        let source = try phyphox(phone.url)
        let collected = Collected()
        let task = start(source, into: collected)
        defer { task.cancel() }
        // The first condition that names the experiment (a poll a loaded host holds past its half-second deadline says
        // "phone unreachable" meanwhile, which is not the condition this test is about).
        var message = ""
        let named = await eventually(within: 30) {
            message = await source.condition()?.message ?? ""
            return message.contains("'Magnetometer'")
        }
        #expect(named, "\(message)")
        #expect(message.contains("'Magnetometer'") && message.contains("locAccuracy, magX"), "\(message)")
        #expect(message.contains("hapticnav.phyphox"))
        #expect(collected.all.isEmpty)
    }

    /// The experiment file the docs tell the lab to load declares every buffer the source asks for, each filled by a
    /// sensor output, and exports them under the column names the recording readers take.
    @Test func theShippedExperimentHasEveryBufferTheSourceReads() throws {
        let text = try String(
            contentsOf: repositoryRoot.appendingPathComponent("configs/phone/hapticnav.phyphox"), encoding: .utf8)
        for buffer in PhyphoxProtocol.buffers {
            #expect(text.contains(">\(buffer)</container>"), "container \(buffer)")
            #expect(text.contains("\">\(buffer)</output>"), "a sensor output into \(buffer)")
        }
        #expect(text.contains("<sensor type=\"accelerometer\" rate=\"50\">"))
        #expect(text.contains("<sensor type=\"magnetic_field\" rate=\"50\">"))
        #expect(text.contains("<set name=\"Location\">") && text.contains("<set name=\"Magnetometer\">"))
    }

    /// What a hostile or broken phone might answer: wrong types, nulls, columns of different lengths, positions out of
    /// range, a time going backwards. Each bad sample is counted and dropped; the good ones go through.
    @Test func aHostileAnswerIsCountedAndDroppedSampleBySample() throws {
        var poller = PhyphoxProtocol.Poller()
        poller.take(time: [["event": "START", "experimentTime": .number(0), "systemTime": .number(1_800_000_000)]])
        func column(_ values: [JSONValue]) -> JSONValue { ["size": .number(0), "buffer": .array(values)] }
        let resume: JSONValue = [
            "buffer": ["locTime": column([.null]), "accTime": column([.number(1)]), "magTime": column([.number(1)])],
            "status": ["session": "a", "measuring": .bool(true)],
        ]
        _ = poller.take(get: resume, receivedAt: 0)  // the first poll only learns where the buffers stand
        #expect(poller.request().contains("locTime=full") && poller.request().contains("accTime=1.0"))
        let answer: JSONValue = [
            "buffer": [
                "locTime": column([.number(2), .number(3), .string("x"), .number(4)]),
                "locLat": column([.number(43.7), .number(999), .number(43.7), .number(43.7)]),
                "locLon": column([.number(7.4), .number(7.4), .number(7.4), .number(7.4)]),
                "locZ": column([.null, .null, .null, .null]),
                "locV": column([.number(-1), .number(1), .number(1), .string("fast")]),
                "locDir": column([.number(-1), .number(90), .number(90), .number(90)]),
                "locAccuracy": column([.number(5), .number(5), .number(5), .number(-3)]),
                "accTime": column([.number(1.5), .number(1.52)]),
                "accX": column([.number(0), .string("nan")]), "accY": column([.number(0)]),
                "accZ": column([.number(9.8), .number(9.8)]),
                "magTime": column([.number(1.5)]), "magX": column([.object([:])]), "magY": column([.number(20)]),
                "magZ": column([.number(-40)]),
            ],
            "status": ["session": "a", "measuring": .bool(true)],
        ]
        let result = poller.take(get: answer, receivedAt: 1_800_000_010)
        let fixes = result.messages.compactMap { if case let .fix(f) = $0 { return f } else { return nil } }
        #expect(fixes.count == 1 && fixes[0].timeSeconds == 1_800_000_002 && fixes[0].speedMetersPerSecond == nil)
        // lat 999, time "x", accuracy −3; accelerometer row 2's x, y missing; magnetometer x an object.
        #expect(result.dropped >= 5, "\(result.dropped)")
        #expect(result.measuring)
        // A paused phone and an answer that is not the shape expected: nothing, and no crash.
        let nothing = poller.take(get: ["buffer": .array([]), "status": .string("?")], receivedAt: 0)
        #expect(nothing.messages.isEmpty && !nothing.measuring)
    }

    /// One slow or lost answer (the host busy, a Wi-Fi hiccup) carries on from the last sample seen, so nothing is
    /// lost; an outage longer than the catch-up window starts again from the phone's newest samples.
    @Test func aShortGapCarriesOnAndALongOneSkipsToTheNewest() {
        var poller = PhyphoxProtocol.Poller()
        poller.take(time: [["event": "START", "experimentTime": .number(0), "systemTime": .number(1_800_000_000)]])
        func column(_ values: [JSONValue]) -> JSONValue { ["size": .number(0), "buffer": .array(values)] }
        let answer: JSONValue = [
            "buffer": [
                "locTime": column([.number(5)]), "accTime": column([.number(7)]), "magTime": column([.number(7)]),
            ],
            "status": ["session": "a", "measuring": .bool(true)],
        ]
        _ = poller.take(get: answer, receivedAt: 100)
        #expect(poller.request().contains("accTime=7.0"))
        poller.lostConnection(at: 101.5)
        #expect(poller.request().contains("accTime=7.0") && !poller.configChecked)
        poller.lostConnection(at: 102.5)
        #expect(poller.request().contains("accTime=&"), "\(poller.request())")
    }

    @Test func settingsAreReadAndAMissingURLIsNamed() throws {
        let settings = try Settings(
            .object(["url": .string("http://192.168.1.20:8080"), "pollIntervalSeconds": .number(0.2)]),
            path: "stages.source.settings", baseDirectory: "/")
        let source = try PhyphoxSource(settings: settings, logger: Logger(label: "test"))
        #expect(source.options.pollIntervalSeconds == 0.2 && source.options.url == "http://192.168.1.20:8080")
        let missing = try Settings(.object([:]), path: "stages.source.settings", baseDirectory: "/")
        #expect(throws: ConfigError.self) { try PhyphoxSource(settings: missing, logger: Logger(label: "test")) }
        let bad = try Settings(.object(["url": .string("ftp://x")]), path: "p", baseDirectory: "/")
        #expect(throws: ConfigError.self) { try PhyphoxSource(settings: bad, logger: Logger(label: "test")) }
    }
}
