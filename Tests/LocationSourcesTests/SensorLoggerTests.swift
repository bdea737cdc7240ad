import Foundation
import Links
@testable import LocationSources
import Logging
import NavCore
import Synchronization
import TestSupport
import Testing

private let recording = repositoryRoot.appendingPathComponent("data/walks/phyphox-indoor-loop-116m").path

/// The bundled phyphox recording as Sensor Logger's HTTP push would send it: one batch a second, readings named as
/// its documentation names them (`location`, `totalacceleration`, `magnetometer`), times in nanoseconds since 1970.
private func batches(startingAt start: Double) throws -> [[UInt8]] {
    func table(_ file: String) throws -> [[Double]] {
        let text = try String(contentsOfFile: recording + "/" + file, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().map { $0.split(separator: ",").compactMap { Double($0) } }
    }
    // Readings grouped by the second of the recording they fall in, in one pass.
    var seconds: [Int: [(time: Double, json: String)]] = [:]
    func add(_ time: Double, _ json: String) { seconds[Int(time), default: []].append((time, json)) }
    func ns(_ t: Double) -> String { String(Int64(((start + t) * 1e9).rounded())) }
    for row in try table("Location.csv") where row.count >= 7 {
        add(
            row[0],
            "{\"name\":\"location\",\"time\":\(ns(row[0])),\"values\":{\"latitude\":\(row[1]),\"longitude\":\(row[2]),"
                + "\"altitude\":\(row[3]),\"speed\":\(row[4]),\"bearing\":\(row[5]),\"horizontalAccuracy\":\(row[6]),"
                + "\"verticalAccuracy\":-1,\"speedAccuracy\":-1,\"bearingAccuracy\":-1,\"altitudeAboveMeanSeaLevel\":\(row[3])}}"
        )
    }
    for (file, name) in [("Accelerometer.csv", "totalacceleration"), ("Magnetometer.csv", "magnetometer")] {
        for row in try table(file) where row.count >= 4 {
            add(
                row[0],
                "{\"name\":\"\(name)\",\"time\":\(ns(row[0])),\"values\":{\"z\":\(row[3]),\"y\":\(row[2]),\"x\":\(row[1])},\"accuracy\":3}"
            )
        }
    }
    return seconds.keys.sorted().enumerated().map { index, second in
        let readings = seconds[second]!.sorted { $0.time < $1.time }.map(\.json)
        return Array(
            "{\"messageId\":\(index),\"sessionId\":\"5b7a\",\"deviceId\":\"d1\",\"payload\":[\(readings.joined(separator: ","))]}"
                .utf8)
    }
}

private final class Collected: Sendable {
    let messages = Mutex<[BusMessage]>([])
    func add(_ message: BusMessage) { self.messages.withLock { $0.append(message) } }
    var all: [BusMessage] { self.messages.withLock { $0 } }
}

@Suite struct SensorLoggerTests {
    /// Batches pushed over real HTTP give the recording's fixes and the same headings the recorded-file reader
    /// computes from the same samples; strangers, a wrong path, a malformed batch and an oversized body are refused and
    /// counted, and the stream goes on.
    @Test func pushedBatchesGiveTheFixesAndHeadingsAndAnythingElseIsRefused() async throws {
        var options = SensorLoggerSource.Options(token: "s3cret-token-for-the-lab")
        options.host = "127.0.0.1"
        options.port = 0
        options.maximumBodyBytes = 1_000_000
        let source = try SensorLoggerSource(options: options, logger: Logger(label: "test"))
        let collected = Collected()
        let task = Task { try? await source.run { collected.add($0) } }
        defer { task.cancel() }
        #expect(await eventually(within: 30) { source.port != nil })
        let client = HTTPClient(host: "127.0.0.1", port: source.port!)
        // A generous bound: the whole test run starts at once on two cores. An answer that does not come says why.
        func post(_ path: String, _ body: [UInt8], headers method: String = "POST") async -> Int {
            do {
                return try await client.send(
                    method: method, path: path, body: body, contentType: "application/json", timeoutSeconds: 30
                ).status
            } catch {
                Issue.record("\(method) \(path): \(error)")
                return -1
            }
        }
        // Whole seconds, so the tenths of a second fall where the file reader's do.
        let start = (Date().timeIntervalSince1970 - 200).rounded(.down)
        let pushes = try await offThePool { try batches(startingAt: start) }
        let good = "/hapticnav?token=s3cret-token-for-the-lab"
        // Each status said when it is not the one expected, with the server's counters.
        for (path, expected) in [
            ("/hapticnav?token=guess", 403), ("/hapticnav", 403), ("/other?token=s3cret-token-for-the-lab", 404),
        ] {
            let status = await post(path, pushes[0])
            let counters = status == expected ? [] : await source.statusCounters()
            #expect(status == expected, "\(path): \(status); server: \(counters)")
        }
        #expect(await post(good, [], headers: "GET") == 405)
        #expect(await post(good, Array("{\"payload\": 3".utf8)) == 400)
        #expect(await post(good, Array(repeating: 0x20, count: 1_100_000)) == 413)
        for push in pushes { #expect(await post(good, push) == 200) }
        let fixes = { collected.all.compactMap { if case let .fix(f) = $0 { return f } else { return nil } } }
        let headings = { collected.all.compactMap { if case let .heading(h) = $0 { return h } else { return nil } } }
        // The batches' messages come out of the source's own task, which a loaded host may run late.
        #expect(await eventually(within: 30) { headings().count > 1000 && fixes().count == 35 })
        let file = try await offThePool { try SensorLog.phyphox(folder: recording, startTime: start, interval: 0.1) }
            .messages.compactMap {
                if case let .heading(heading) = $0.message { return heading }
                return nil
            }
        var byTime: [Int: Double] = [:]
        for heading in file { byTime[Int((heading.timeSeconds * 10).rounded(.down))] = heading.headingDegrees }
        let compared = headings().compactMap { heading in
            byTime[Int((heading.timeSeconds * 10).rounded(.down))].map {
                abs(Angle.signedDifference(from: $0, to: heading.headingDegrees))
            }
        }
        print(
            "sensorlogger: \(fixes().count) fixes, \(headings().count) headings, \(compared.count) compared with the file reader's, largest difference \(compared.max() ?? -1)°"
        )
        #expect(compared.count > 1000 && compared.max()! < 1e-6)
        let counters = await source.statusCounters()
        func counter(_ name: String) -> UInt64? { counters.first { $0.name == name }?.value }
        #expect(counter("sensorlogger.refused.token") == 2)
        #expect(counter("sensorlogger.refused.path") == 1)
        #expect(counter("sensorlogger.malformedBatches") == 1)
        #expect(counter("http.tooLarge") == 1)
        #expect(counter("sensorlogger.batches") == UInt64(pushes.count))
    }

    /// A phone that sends gravity and its own compass but no magnetometer: the compass's bearings go out (magnetic),
    /// and one stream without the other never stalls or breaks the estimator.
    @Test func aPhoneWithoutAMagnetometerStreamGivesItsCompass() throws {
        var options = SensorLoggerSource.Options(token: "0123456789abcdef")
        options.port = 0
        let source = try SensorLoggerSource(options: options, logger: Logger(label: "test"))
        let t0 = 1_800_000_000_000_000_000.0
        var readings: [String] = []
        for i in 0..<30 {
            let ns = String(Int64(t0 + Double(i) * 1e8))
            readings.append("{\"name\":\"gravity\",\"time\":\(ns),\"values\":{\"x\":0,\"y\":0,\"z\":9.81}}")
            readings.append("{\"name\":\"compass\",\"time\":\(ns),\"values\":{\"magneticBearing\":\(100 + i)}}")
        }
        let body = Array(
            "{\"messageId\":0,\"sessionId\":\"s\",\"deviceId\":\"d\",\"payload\":[\(readings.joined(separator: ","))]}"
                .utf8)
        let request = HTTPRequest(
            method: "POST", target: "/hapticnav?token=0123456789abcdef", headers: [:], body: body, peer: "127.0.0.1")
        let (response, messages) = source.handle(request)
        #expect(response.status == 200)
        let headings = messages.compactMap { if case let .heading(h) = $0 { return h } else { return nil } }
        #expect(headings.count == 30 && headings.allSatisfy { $0.reference == .magneticNorth })
        #expect(headings.first?.headingDegrees == 100 && headings.first?.timeSeconds == 1_800_000_000)
    }

    @Test func settingsNeedAToken() throws {
        let none = try Settings(.object([:]), path: "stages.source.settings", baseDirectory: "/")
        #expect(throws: ConfigError.self) { try SensorLoggerSource(settings: none, logger: Logger(label: "t")) }
        let short = try Settings(.object(["token": .string("abc")]), path: "p", baseDirectory: "/")
        #expect(throws: ConfigError.self) { try SensorLoggerSource(settings: short, logger: Logger(label: "t")) }
        let good = try Settings(
            .object(["token": .string("0123456789abcdef"), "listen": .string("127.0.0.1:8123"), "path": .string("/p")]),
            path: "p", baseDirectory: "/")
        let source = try SensorLoggerSource(settings: good, logger: Logger(label: "t"))
        #expect(source.options.port == 8123 && source.options.host == "127.0.0.1" && source.options.path == "/p")
    }
}
