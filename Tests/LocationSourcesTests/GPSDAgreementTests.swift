import Foundation
import LocationSources
import NavCore
import Testing

/// A TPV (or ATT) report from a gpsd `.chk` file.
struct GPSDReport {
    var time: Double?
    var lat: Double?
    var lon: Double?
    var speed: Double?
    var track: Double?
    var mode: Int
    var heading: Double?
    var pitch: Double?
    var roll: Double?
    /// True when the receiver's own velocity (RMC or VTG) for this time came before this report in the
    /// `.chk`; otherwise a speed or track in it is gpsd's estimate from successive positions.
    var receiverVelocity = false
}

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
    "Fixtures/gpsd")

/// One 1024-week GPS rollover [seconds]: gpsd moved one of these logs' dates by exactly that.
private let gpsWeekRollover = 1024.0 * 7 * 86_400

private func logNames() -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? []).filter { $0.hasSuffix(".log") }
        .sorted()
}

private func reports(_ name: String, class className: String) throws -> [GPSDReport] {
    let text = try String(contentsOf: fixtures.appendingPathComponent(name + ".chk"), encoding: .utf8)
    var velocityTimes = Set<String>()  // hhmmss of epochs whose RMC or VTG has been read
    var lastTime = ""
    var result: [GPSDReport] = []
    for line in text.split(whereSeparator: \.isNewline) {
        if line.hasPrefix("$") {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            let type = fields.first.map { String($0.dropFirst(3)) } ?? ""
            if type == "RMC" || type == "GGA" || type == "GNS", fields.count > 1 {
                lastTime = String(fields[1].prefix(6))
            }
            if type == "GLL", fields.count > 5 { lastTime = String(fields[5].prefix(6)) }
            if type == "RMC", fields.count > 7, !fields[7].isEmpty { velocityTimes.insert(lastTime) }
            if type == "VTG", fields.count > 5, !fields[1].isEmpty { velocityTimes.insert(lastTime) }
            continue
        }
        guard line.hasPrefix("{"), line.contains("\"class\":\"\(className)\""),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { continue }
        let timeText = object["time"] as? String
        let time = timeText.flatMap {
            ISO8601DateFormatter.withFraction.date(from: $0) ?? ISO8601DateFormatter().date(from: $0)
        }
        let hhmmss = timeText.map { $0.dropFirst(11).prefix(8).replacingOccurrences(of: ":", with: "") } ?? "-"
        result.append(
            GPSDReport(
                time: time?.timeIntervalSince1970, lat: object["lat"] as? Double, lon: object["lon"] as? Double,
                speed: object["speed"] as? Double, track: object["track"] as? Double,
                mode: object["mode"] as? Int ?? 0, heading: object["heading"] as? Double,
                pitch: object["pitch"] as? Double, roll: object["roll"] as? Double,
                receiverVelocity: velocityTimes.contains(hhmmss)))
    }
    return result
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFraction: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}

private func decodeLog(_ name: String) throws -> (messages: [BusMessage], decoder: NMEADecoder) {
    let text = try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8)
    var decoder = NMEADecoder()
    var messages: [BusMessage] = []
    for line in text.split(whereSeparator: \.isNewline) {
        if case let .success(out) = decoder.decode(line: line) { messages += out }
    }
    messages += decoder.finish()
    return (messages, decoder)
}

/// Times equal, or equal but for whole GPS week rollovers that gpsd applied.
private func sameTime(_ a: Double, _ b: Double) -> Bool {
    let difference = abs(a - b)
    let rollovers = (difference / gpsWeekRollover).rounded()
    return abs(difference - rollovers * gpsWeekRollover) < 0.0005
}

@Suite struct GPSDAgreementTests {
    @Test func everyGPSDLogIsHere() {
        #expect(logNames().count == 7)
    }

    @Test(arguments: logNames())
    func everyFixGPSDReportsIsDecodedTheSame(_ name: String) async throws {
        await Task.yield()  // seven logs at once: each lets the other suites' tasks run between its steps
        let (messages, decoder) = try decodeLog(name)
        await Task.yield()
        let fixes = messages.compactMap { if case let .fix(fix) = $0 { fix } else { nil } }
        let tpvs = try reports(name, class: "TPV").filter { $0.mode >= 2 && $0.lat != nil && $0.lon != nil }
        #expect(!tpvs.isEmpty)
        var matched = 0
        for (index, tpv) in tpvs.enumerated() {
            if index % 200 == 0 { await Task.yield() }
            let lat = tpv.lat!, lon = tpv.lon!
            let candidates = fixes.filter { abs($0.latitude - lat) <= 1e-6 && abs($0.longitude - lon) <= 1e-6 }
            let match: LocationFix?
            if let time = tpv.time {
                match = candidates.first { sameTime($0.timeSeconds, time) }
            } else {
                match = candidates.first  // gpsd had no date yet: position only
            }
            guard let fix = match else {
                Issue.record("\(name): no fix at \(tpv.time.map { "\($0)" } ?? "(no time)") \(lat), \(lon)")
                continue
            }
            matched += 1
            // gpsd prints speed to 3 decimals [m/s] and track to 4 [degrees]. Before the receiver's velocity for
            // an epoch arrives, and in reports without a track, the speed is gpsd's own estimate from
            // successive positions: not compared.
            if let speed = tpv.speed, tpv.receiverVelocity, tpv.track != nil, let ours = fix.speedMetersPerSecond,
                tpv.time != nil
            {
                #expect(abs(ours - speed) <= 0.0005 + 1e-9, "\(name) speed \(ours) vs \(speed) at \(tpv.time!)")
            }
            if let track = tpv.track, tpv.receiverVelocity, let ours = fix.courseDegrees, tpv.time != nil {
                #expect(Angle.separation(ours, track) <= 0.000_05 + 1e-9, "\(name) track \(ours) vs \(track)")
            }
        }
        #expect(matched == tpvs.count)
        #expect(
            tpvs.contains { $0.receiverVelocity && $0.speed != nil } || name.hasPrefix("nokia")
                || name.hasPrefix("bt451"),
            "\(name): speeds were compared")
        #expect(decoder.counters.rejected == 0, "\(name): \(decoder.counters)")
    }

    @Test func pashrHeadingsMatchGPSDsAttitude() throws {
        let (messages, _) = try decodeLog("rst39.log")
        let headings = messages.compactMap { if case let .heading(h) = $0 { h.headingDegrees } else { nil } }
        let attitudes = messages.compactMap { if case let .attitude(a) = $0 { a } else { nil } }
        #expect(headings.count >= 100)
        #expect(attitudes.count == 100)
        // gpsd's ATT reports in the .chk come from the HDT sentences.
        for report in try reports("rst39.log", class: "ATT") {
            let heading = try #require(report.heading)
            #expect(headings.contains { abs($0 - heading) < 1e-9 }, "heading \(heading)")
        }
        // $PASHR,204132.000,010.51,T,+00.39,-00.79,… : heading 10.51°, roll 0.39°, pitch −0.79°.
        let first = try #require(attitudes.first)
        #expect(first.rollDegrees == 0.39 && first.pitchDegrees == -0.79)
    }
}
