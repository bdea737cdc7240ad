import Foundation
import Logging
@testable import LocationSources
import NavCore
import Parsers
import Testing
import TestSupport

private let walks = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/walks")

/// A sentence with its checksum.
func nmea(_ body: String) -> String {
    var sum: UInt8 = 0
    for byte in body.utf8 { sum ^= byte }
    let hex = String(sum, radix: 16, uppercase: true)
    return "$\(body)*\(hex.count == 1 ? "0" : "")\(hex)"
}

private func temporaryFile(_ name: String, _ contents: String) throws -> String {
    let path = try scratchPath(name)
    try contents.store(toFile: path)
    return path
}

@Suite struct NMEABadInputTests {
    private let good = "$GPRMC,113258,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E*6B"

    @Test func aBadChecksumIsRejectedAndTheStreamGoesOn() throws {
        var decoder = NMEADecoder()
        let bad = "$GPRMC,113259,A,3238.9145,N,10822.4482,W,005.0,246.3,181022,009.3,E*00"
        guard case let .failure(error) = decoder.decode(line: Substring(bad)) else {
            Issue.record("accepted a bad checksum")
            return
        }
        #expect(error == .badChecksum(expected: "00", computed: "6D"))
        _ = decoder.decode(line: Substring(self.good))
        let fixes = decoder.finish()
        #expect(fixes.count == 1)
        #expect(decoder.counters.rejected == 1)
    }

    @Test(arguments: [
        "$GPGGA,1132,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",  // short time
        "$GPGGA,113258,32A8.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",  // letter in latitude
        "$GPGGA,113258,3238.9148,Q,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",  // hemisphere Q
        "$GPGGA,113258,3278.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",  // 78 minutes
        "GPGGA,113258,3238.9148,N",  // no $
        "$\u{1}\u{2}binary*00",
        "$",
    ])
    func corruptSentencesAreRejectedNotCrashed(_ line: String) {
        var decoder = NMEADecoder()
        if case .success(let out) = decoder.decode(line: Substring(line)) {
            #expect(out.isEmpty)
            Issue.record("accepted \(line)")
        }
        #expect(decoder.counters.rejected == 1)
    }

    @Test func aTruncatedLineInTheMiddleOfALogCostsOnlyThatLine() throws {
        let lines = [
            nmea("GPRMC,113258,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E"),
            nmea("GPGGA,113258,3238.9148,N,10822.4466,W,2,08,1.1,1577.4,M,-24.6,M,,"),
            "$GPRMC,113259,A,3238.91",
            nmea("GPRMC,113300,A,3238.9140,N,10822.4500,W,005.0,246.3,181022,009.3,E"),
            nmea("GPGGA,113300,3238.9140,N,10822.4500,W,2,08,1.1,1577.9,M,-24.6,M,,"),
        ]
        let path = try temporaryFile("cut.nmea", lines.joined(separator: "\n"))
        let result = try LogReader().read(path)
        #expect(result.entries.filter { $0.message.kind == .fix }.count == 2)
        #expect(result.problems.count == 1)
        #expect(result.problems.first?.line == 3)
    }

    @Test func gnssLoggerWrappedSentencesAreAccepted() throws {
        let result = try LogReader().read(walks.appendingPathComponent("gnsslogger-pixel7-stanford-walk.nmea").path)
        let fixes = result.entries.compactMap { if case let .fix(fix) = $0.message { fix } else { nil } }
        #expect(fixes.count == 48)
        #expect(result.problems.isEmpty)
        #expect(iso8601(fixes[0].timeSeconds) == "2023-11-07T23:42:57.000Z")
        #expect(result.entries.first?.playbackTime == fixes[0].timeSeconds)
    }

    @Test func anyTalkerIsAccepted() {
        var decoder = NMEADecoder()
        for talker in ["GN", "GL", "GA", "BD", "GB"] {
            let body = "\(talker)GLL,5251.0093,N,00518.8170,E,094736,A,A"
            var sum: UInt8 = 0
            for byte in body.utf8 { sum ^= byte }
            let hex = String(sum, radix: 16, uppercase: true)
            #expect((try? decoder.decode(line: Substring("$\(body)*\(hex.count == 1 ? "0" : "")\(hex)")).get()) != nil)
        }
        #expect(decoder.counters.rejected == 0)
        #expect(decoder.counters.sentences == 5)
    }

    @Test func midnightRollsTheDateOver() throws {
        var decoder = NMEADecoder()
        var fixes: [LocationFix] = []
        for line in [
            "$GPRMC,235959,A,3238.9148,N,10822.4466,W,0.0,0.0,311224,,,A",
            "$GPGGA,000001,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
        ] {
            for case let .fix(fix) in try decoder.decode(line: Substring(line)).get() { fixes.append(fix) }
        }
        for case let .fix(fix) in decoder.finish() { fixes.append(fix) }
        #expect(fixes.map { iso8601($0.timeSeconds) } == ["2024-12-31T23:59:59.000Z", "2025-01-01T00:00:01.000Z"])
    }

    @Test func fixesBeforeAnyDateAreHeldUntilOneArrives() throws {
        var decoder = NMEADecoder()
        #expect(
            try decoder.decode(line: "$GPGGA,120000,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,").get().isEmpty
        )
        // The next epoch closes the first one, whose fix has no date yet: held. The second is complete at once
        // (it has every type the first had), and held too.
        #expect(
            try decoder.decode(line: "$GPGGA,120001,3238.9150,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,").get().isEmpty
        )
        let released = try decoder.decode(line: "$GPZDA,120001,05,03,2024,,").get()
        let times = released.compactMap { if case let .fix(fix) = $0 { iso8601(fix.timeSeconds) } else { nil } }
        #expect(times == ["2024-03-05T12:00:00.000Z", "2024-03-05T12:00:01.000Z"])
        #expect(decoder.finish().isEmpty)
    }

    @Test func aLogThatNeverSendsADateDropsItsFixesUnlessOneIsGiven() throws {
        let lines = "$GPGGA,120000,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,\n"
        let path = try temporaryFile("undated.nmea", lines)
        let dropped = try LogReader().read(path)
        #expect(dropped.entries.isEmpty)
        #expect(dropped.problems.first?.reason.contains("before any date") == true)
        var options = LogReader.Options()
        options.nmea.assumedDateDays = 19_000
        let kept = try LogReader(options: options).read(path)
        #expect(kept.entries.count == 1)
    }
}

@Suite struct GPXTests {
    @Test func theRealHikeIsReadWithTimesSpeedsAndCourses() throws {
        let result = try LogReader().read(walks.appendingPathComponent("gpxpy-korita-zbevnica-hike.gpx").path)
        let fixes = result.entries.compactMap { if case let .fix(fix) = $0.message { fix } else { nil } }
        #expect(fixes.count == 871)
        #expect(result.problems.isEmpty)
        #expect(zip(fixes, fixes.dropFirst()).allSatisfy { $0.timeSeconds <= $1.timeSeconds }, "in time order")
        #expect(fixes.allSatisfy { $0.speedMetersPerSecond != nil && $0.speedMetersPerSecond!.isFinite })
        #expect(fixes.dropFirst().filter { $0.courseDegrees != nil }.count > 800)
        // The timed part keeps the file's own times.
        #expect(fixes.contains { iso8601($0.timeSeconds) == "2010-10-03T09:36:30.000Z" })
    }

    @Test func aPointWithNaNIsSkippedWithItsLineAndTheRestIsRead() throws {
        let gpx = """
            <?xml version="1.0"?>
            <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
            <trkpt lat="43.7300" lon="7.4200"><time>2024-05-01T10:00:00Z</time></trkpt>
            <trkpt lat="NaN" lon="7.4201"><time>2024-05-01T10:00:01Z</time></trkpt>
            <trkpt lat="43.7302" lon="7.4202"><ele>nan</ele><time>2024-05-01T10:00:02Z</time></trkpt>
            <trkpt lat="43.7303" lon="7.4203"><time>yesterday</time></trkpt>
            <trkpt lat="43.7304" lon="7.4204"><time>2024-05-01T10:00:04Z</time></trkpt>
            </trkseg></trk></gpx>
            """
        let result = try LogReader().read(try temporaryFile("nan.gpx", gpx))
        #expect(result.entries.count == 2)
        #expect(result.problems.map(\.line) == [4, 5, 6])
        #expect(
            result.entries.allSatisfy {
                if case let .fix(fix) = $0.message {
                    return fix.latitude.isFinite && fix.speedMetersPerSecond!.isFinite
                }
                return false
            })
    }

    @Test func aRouteWithoutTimesIsTimedAtWalkingSpeed() throws {
        let gpx = """
            <gpx version="1.1"><rte>
            <rtept lat="43.7300" lon="7.4200"/><rtept lat="43.7310" lon="7.4200"/><rtept lat="43.7310" lon="7.4210"/>
            </rte></gpx>
            """
        let result = try LogReader().read(try temporaryFile("route.gpx", gpx))
        let fixes = result.entries.compactMap { if case let .fix(fix) = $0.message { fix } else { nil } }
        #expect(fixes.count == 3)
        let leg = Geodesic.wgs84.inverse(
            Coordinate(latitude: 43.73, longitude: 7.42), Coordinate(latitude: 43.731, longitude: 7.42)
        ).distanceMeters
        #expect(abs(fixes[1].timeSeconds - fixes[0].timeSeconds - leg / 1.4) < 1e-6)
        #expect(abs(fixes[1].speedMetersPerSecond! - 1.4) < 1e-9)
        #expect(Angle.separation(fixes[1].courseDegrees!, 0) < 0.01)
        #expect(Angle.separation(fixes[2].courseDegrees!, 90) < 0.01)
    }

    @Test func brokenXMLIsAClearError() throws {
        #expect(throws: LogError.self) {
            try LogReader().read(try temporaryFile("bad.gpx", "<gpx><trk><trkseg><trkpt lat="))
        }
    }
}

@Suite struct SensorLogTests {
    /// Gravity's reaction and a field of 20 µT north, 40 µT down, as a device whose top points at
    /// `heading` would read them, tilted top-up by `pitch`.
    private func readings(
        heading: Double, pitch: Double
    ) -> (a: (x: Double, y: Double, z: Double), m: (x: Double, y: Double, z: Double)) {
        let h = heading * .pi / 180, p = pitch * .pi / 180
        // World (east, north, up) → device flat: x = (cos h, −sin h, 0)·, y = (sin h, cos h, 0)·, z = up.
        func flat(_ east: Double, _ north: Double, _ up: Double) -> (Double, Double, Double) {
            (east * cos(h) - north * sin(h), east * sin(h) + north * cos(h), up)
        }
        // Then pitch about the device x axis: top up by p.
        func pitched(_ v: (Double, Double, Double)) -> (x: Double, y: Double, z: Double) {
            (v.0, v.1 * cos(p) + v.2 * sin(p), -v.1 * sin(p) + v.2 * cos(p))
        }
        return (pitched(flat(0, 0, 9.81)), pitched(flat(0, 20, -40)))
    }

    @Test(arguments: [0.0, 45, 90, 200, 359])
    func aFlatPhoneReadsItsHeading(_ heading: Double) throws {
        let r = self.readings(heading: heading, pitch: 0)
        let o = try #require(TiltCompensation.orientation(accelerometer: r.a, magnetometer: r.m))
        #expect(Angle.separation(o.headingDegrees, heading) < 1e-9)
        #expect(abs(o.pitchDegrees) < 1e-9 && abs(o.rollDegrees) < 1e-9)
    }

    @Test(arguments: [(30.0, 120.0), (-40, 300), (60, 10)])
    func aTiltedPhoneStillReadsItsHeading(_ pitch: Double, _ heading: Double) throws {
        let r = self.readings(heading: heading, pitch: pitch)
        let o = try #require(TiltCompensation.orientation(accelerometer: r.a, magnetometer: r.m))
        #expect(Angle.separation(o.headingDegrees, heading) < 1e-6)
        #expect(abs(o.pitchDegrees - pitch) < 1e-6)
    }

    @Test func thePhyphoxLoopTurnsAboutOnceAround() throws {
        var options = LogReader.Options()
        options.startTime = 1_700_000_000
        let result = try LogReader(options: options).read(walks.appendingPathComponent("phyphox-indoor-loop-116m").path)
        #expect(result.format == .phyphox)
        let headings = result.entries.compactMap { if case let .heading(h) = $0.message { h } else { nil } }
        #expect(headings.count > 1000)
        #expect(headings.first!.timeSeconds >= 1_700_000_000)
        // One-second circular means, unwrapped: a loop of four hallways turns through most of a circle.
        var means: [Double] = []
        for start in stride(from: 0, to: headings.count, by: 10) {
            means.append(
                Angle.circularStatistics(headings[start..<min(start + 10, headings.count)].map(\.headingDegrees))
                    .meanDegrees ?? 0)
        }
        let turned = zip(means, means.dropFirst()).reduce(0) { $0 + Angle.signedDifference(from: $1.0, to: $1.1) }
        #expect(abs(turned) > 200 && abs(turned) < 450, "turned \(turned)°")
    }

    @Test func anOrientationCSVWithABadRowSkipsThatRow() throws {
        let csv = "time,heading,pitch,roll\n0.0,10,1,2\n0.1,abc,1,2\n0.2,12,1,nan\n0.3,14,2,3\n"
        var options = LogReader.Options()
        options.startTime = 1000
        let result = try LogReader(options: options).read(try temporaryFile("o.csv", csv))
        #expect(result.entries.filter { $0.message.kind == .heading }.count == 2)
        #expect(result.problems.map(\.line) == [3, 4])
    }
}

@Suite struct RecordingReplayTests {
    @Test func aRecordingPlaysBackItsMessagesFilteredByTopicAndSkipsBrokenLines() async throws {
        let encoder = JSONEncoder()
        var lines: [String] = []
        for (index, message) in BusMessage.examples.enumerated() {
            let record = RecordedMessage(
                receiveTimeSeconds: 1000 + Double(index) * 0.01, stage: "x", sequence: UInt64(index), message: message)
            lines.append(String(decoding: try encoder.encode(record), as: UTF8.self))
        }
        lines.insert("{broken", at: 3)
        let file = try temporaryFile("recording.jsonl", lines.joined(separator: "\n"))
        let replay = RecordingReplaySource(
            file: file, pace: 0, topics: ["fix", "target"], logger: Logger(label: "test"))
        let box = MessageBox()
        try await replay.run { await box.add($0) }
        let played = await box.messages
        #expect(played == BusMessage.examples.filter { $0.kind == .fix || $0.kind == .target })
        #expect(await replay.statusCounters().first { $0.name == "skipped" }?.value == 1)
    }
}

private actor MessageBox {
    var messages: [BusMessage] = []
    func add(_ message: BusMessage) { self.messages.append(message) }
}

/// NMEA recognised by what it is: any talker, valid checksums, binary frames skipped.
@Suite struct NMEADetectionTests {
    private let gpsd = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/gpsd")

    @Test func aRealLogThatBeginsWithDepthSounderSentencesIsNMEA() throws {
        // bundg_zeus_9.log (gpsd's test suite) starts with $SDDPT, $SDHDG, $SDMTW from a boat's instruments.
        let path = self.gpsd.appendingPathComponent("bundg_zeus_9.log").path
        #expect(try LogReader.format(of: path) == .nmea)
        #expect(try LogReader().read(path).entries.contains { $0.message.kind == .fix })
    }

    @Test func unknownTalkersAISAndUBXFramesBeforeTheFixesAreSkipped() throws {
        // Sentences this decoder does not know (wind, AIS, a proprietary one) and a u-blox binary frame first; then
        // the fixes of a real receiver log (garmin15x.log, gpsd's test suite).
        let real = try String(
            contentsOf: self.gpsd.appendingPathComponent("garmin15x.log"), encoding: .isoLatin1)
        let ubx = String(decoding: [0xB5, 0x62, 0x01, 0x07, 0x5C, 0x00, 0x24, 0x2A, 0x0A, 0x99, 0x00], as: UTF8.self)
        let head = [
            nmea("WIMWV,214.8,R,0.1,K,A"),
            "!" + String(nmea("AIVDM,1,1,,A,13aEOK?P00PD2wVMdLDRhgvL289?,0").dropFirst()),
            nmea("PGRMZ,1494,f,3"), ubx, nmea("IIXDR,C,19.5,C,AIRTEMP"), nmea("YXMTW,17.2,C"),
        ].joined(separator: "\r\n")
        let path = try temporaryFile("mixed.nmea", head + "\r\n" + real)
        #expect(try LogReader.format(of: path) == .nmea)
        let fixes = try LogReader().read(path).entries.filter { $0.message.kind == .fix }.count
        let alone = try LogReader().read(self.gpsd.appendingPathComponent("garmin15x.log").path).entries
            .filter { $0.message.kind == .fix }.count
        #expect(fixes == alone && fixes > 0, "\(fixes) fixes, \(alone) without the unknown head")
    }

    @Test func textWithADollarSignIsNotNMEA() {
        let prose = Array("Prices: $5, $12.50, $GPS receivers cost $100\nline two\n$ABCDE no comma\n".utf8)
        #expect(!NMEADetection.isNMEA(prose))
        #expect(NMEADetection.isNMEA(Array((nmea("GNGGA,1,2") + "\n" + nmea("GNRMC,1,2") + "\n").utf8)))
        // A bad checksum does not count; a well-formed sentence without a checksum does.
        #expect(!NMEADetection.isNMEA(Array("$GPGGA,1,2*00\n$GPRMC,1,2*00\n".utf8)))
        #expect(NMEADetection.isNMEA(Array("$GPGGA,1,2\n".utf8)))
    }
}

@Suite struct StepDetectionTests {
    @Test func the168StepsOfARealHallwayLoopAreFound() throws {
        let folder = repositoryRoot.appendingPathComponent("data/walks/phyphox-indoor-loop-116m").path
        let steps = try SensorLog.phyphoxSteps(folder: folder, startTime: 0)
        // The recording's documentation: 168 steps over 116 m.
        #expect(abs(steps.count - 168) <= 3, "\(steps.count) steps")
        let detection = StepDetection()
        let speeds = detection.speeds(steps: steps, at: stride(from: 10.0, to: 100, by: 1).map { $0 })
        let median = speeds.sorted()[speeds.count / 2]
        // 116 m in about 100 s of walking.
        #expect(median > 0.8 && median < 1.6, "\(median) m/s")
        #expect(detection.steps([]).isEmpty)
    }
}

@Suite struct StepCounterTests {
    /// The real hallway loop streamed sample by sample: the steps the whole recording's detector finds, each told once,
    /// in order, at most `settleSeconds` late; a gap in the stream or a sample out of order loses none of the count.
    @Test func streamedSampleBySampleTheLoopGivesItsSteps() throws {
        let folder = repositoryRoot.appendingPathComponent("data/walks/phyphox-indoor-loop-116m").path
        let batch = try SensorLog.phyphoxSteps(folder: folder, startTime: 0)
        let text = try String(contentsOfFile: folder + "/Accelerometer.csv", encoding: .utf8)
        var counter = StepCounter()
        var told: [StepCount] = []
        for line in text.split(separator: "\n").dropFirst() {
            let values = line.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard values.count >= 4 else { continue }
            let magnitude = (values[1] * values[1] + values[2] * values[2] + values[3] * values[3]).squareRoot()
            told += counter.add(timeSeconds: values[0], magnitude: magnitude)
        }
        // The recording's documentation: 168 steps over 116 m.
        #expect(abs(told.count - 168) <= 3, "\(told.count) steps")
        #expect(abs(told.count - batch.count) <= 1, "\(told.count) streamed, \(batch.count) from the whole recording")
        #expect(told.map(\.count) == (1...UInt32(told.count)).map { $0 })
        #expect(zip(told, told.dropFirst()).allSatisfy { $1.timeSeconds - $0.timeSeconds >= 0.3 })
        let walking = told.filter { $0.timeSeconds > 10 && $0.timeSeconds < 90 }.map(\.cadenceHz).sorted()
        #expect(walking[walking.count / 2] > 1.2 && walking[walking.count / 2] < 2.5, "cadence \(walking)")
        // Out of order, or not finite: dropped and counted.
        #expect(counter.add(timeSeconds: 1, magnitude: 9.8).isEmpty)
        #expect(counter.add(timeSeconds: .nan, magnitude: 9.8).isEmpty)
        #expect(counter.dropped == 2)
    }
}
