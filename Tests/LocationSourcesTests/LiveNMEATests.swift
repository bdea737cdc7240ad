import Foundation
import Links
@testable import LocationSources
import Logging
import NavCore
import Parsers
import TestSupport
import Testing

/// A one-connection TCP server on loopback that sends `lines` and closes.
private func serve(_ lines: [String]) throws -> (port: UInt16, thread: Thread) {
    let (fd, port) = Loopback.boundSocket()
    listen(fd, 1)
    let thread = Thread {
        let client = accept(fd, nil, nil)
        for line in lines {
            let bytes = Array((line + "\r\n").utf8)
            _ = write(client, bytes, bytes.count)
            usleep(2000)
        }
        close(client)
        close(fd)
    }
    thread.start()
    return (port, thread)
}

@Suite struct LiveNMEATests {
    @Test func nmeaOverTCPBecomesFixesAndBadLinesAreSkipped() async throws {
        let lines = [
            nmea("GPRMC,113258,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E"),
            "$GPRMC,garbage*00",
            nmea("GPRMC,113259,A,3238.9145,N,10822.4482,W,005.0,246.3,181022,009.3,E"),
            nmea("GPRMC,113300,A,3238.9140,N,10822.4500,W,005.0,246.3,181022,009.3,E"),
        ]
        let (port, _) = try serve(lines)
        let source = LiveNMEASource(input: .tcp(host: "127.0.0.1", port: port), logger: Logger(label: "test"))
        let collected = await withDeadline(seconds: 10) { () -> [LocationFix]? in
            let box = FixBox()
            try? await source.run { await box.add($0) }
            return await box.fixes
        }
        let fixes = try #require(collected)
        #expect(
            fixes.map { iso8601($0.timeSeconds) } == [
                "2022-10-18T11:32:58.000Z", "2022-10-18T11:32:59.000Z", "2022-10-18T11:33:00.000Z",
            ])
        let counters = await source.statusCounters()
        #expect(counters.first { $0.name == "skipped" }?.value == 1)
        #expect(source.isLive)
    }
}

private actor FixBox {
    var fixes: [LocationFix] = []
    func add(_ message: BusMessage) {
        if case let .fix(fix) = message { self.fixes.append(fix) }
    }
}

/// Sends each datagram from a UDP socket bound to `from` (an address of the loopback range) to 127.0.0.1:`port`.
private func sendDatagrams(_ datagrams: [[UInt8]], from: String, to port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(from)
    _ = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var remote = sockaddr_in()
    remote.sin_family = sa_family_t(AF_INET)
    remote.sin_addr.s_addr = inet_addr("127.0.0.1")
    remote.sin_port = port.bigEndian
    for datagram in datagrams {
        _ = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        usleep(200)
    }
}

extension LiveNMEATests {
    /// A real receiver's log (gpsd's u-blox LEA-4H capture) sent as a phone app forwards it: each epoch's sentences
    /// in datagrams to UDP 10110's stand-in. The source decodes exactly what the same log read from its file gives;
    /// a datagram of invalid UTF-8 is one skipped line; a stranger's datagrams are refused and counted.
    @Test func nmeaOverUDPGivesWhatTheFileGivesAndRefusesStrangers() async throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/gpsd/ublox-lea-4h.log").path
        var options = LogReader.Options()
        options.nmea.assumedDateDays = 13_370  // the log's sentences carry no date before its first RMC
        let expected = try LogReader(options: options).read(file).entries.compactMap {
            if case let .fix(fix) = $0.message { fix } else { nil }
        }
        #expect(expected.count >= 9)
        let sentences = try String(contentsOfFile: file, encoding: .utf8).split(whereSeparator: \.isNewline)
            .filter { $0.hasPrefix("$") }
        // Three sentences a datagram, CR LF between them, as forwarding apps batch an epoch.
        var datagrams: [[UInt8]] = stride(from: 0, to: sentences.count, by: 3).map {
            Array(sentences[$0..<min($0 + 3, sentences.count)].joined(separator: "\r\n").utf8) + [13, 10]
        }
        datagrams.insert([0xff, 0xfe, 0x24, 0x47, 0x50], at: 1)

        let port = UInt16(Loopback.freePort())
        let source = LiveNMEASource(
            input: .udp(host: "127.0.0.1", port: port, from: ["127.0.0.2"]), options: options,
            logger: Logger(label: "test"))
        let box = FixBox()
        let task = Task { try await source.run { await box.add($0) } }
        defer { task.cancel() }
        #expect(
            await eventually(within: 10) { await source.statusCounters().contains { $0.name == "udp.datagrams" } })
        sendDatagrams([Array(sentences[0].utf8)], from: "127.0.0.1", to: port)
        sendDatagrams(datagrams, from: "127.0.0.2", to: port)
        #expect(await eventually(within: 10) { await box.fixes.count >= expected.count })
        task.cancel()
        _ = await task.result
        let fixes = await box.fixes
        #expect(fixes == expected)
        let counters = await source.statusCounters()
        #expect(counters.first { $0.name == "udp.refusedSenders" }?.value == 1)
        #expect(counters.first { $0.name == "udp.datagrams" }?.value == UInt64(datagrams.count))
        #expect((counters.first { $0.name == "skipped" }?.value ?? 0) >= 1)
    }

    @Test func aUDPSettingIsReadAndItsMistakesNamed() throws {
        let good = try Settings(
            .object(["udp": .string("0.0.0.0:10110"), "udpFrom": .array([.string("192.168.1.23")])]),
            path: "stages.phone.settings", baseDirectory: "/")
        let source = try LiveNMEASource(settings: good, logger: Logger(label: "test"))
        #expect(source.input == .udp(host: "0.0.0.0", port: 10110, from: ["192.168.1.23"]))
        #expect(source.isLive)
        let bad = try Settings(.object(["udp": .string("10110")]), path: "stages.phone.settings", baseDirectory: "/")
        #expect(throws: ConfigError.self) { try LiveNMEASource(settings: bad, logger: Logger(label: "test")) }
    }
}
