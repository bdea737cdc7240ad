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
