@testable import SessionTools
import SessionFiles
import Foundation
import NavCore
import Parsers
@testable import Runtime
import Testing
import TestSupport
import MapLogic

@Suite struct SessionReportTests {
    /// The turn events of ``session()``, at the second each is for: sent three times each by the route stage
    /// (`route`) and republished by the sink (`test`, the stage that sends the cues) except the one made while the
    /// experimenter had stopped the outputs (50 s to 60 s).
    static let turns: [(second: Int, event: TurnEvent)] = [
        (40, Self.turn(.announce, manoeuvre: 0, degrees: -85, junctionsBefore: 1, meters: 84.6, "Rue Grimaldi")),
        (55, Self.turn(.announce, manoeuvre: 0, degrees: -85, junctionsBefore: 0, meters: 31, "Rue Grimaldi")),
        (62, Self.turn(.now, manoeuvre: 0, degrees: -85, junctionsBefore: 0, meters: 2, "Rue Grimaldi")),
        (80, Self.turn(.straightOn, manoeuvre: 1, degrees: 6, junctionsBefore: 0, meters: 12, "Rue <Caroline>")),
    ]

    /// A turn event on route 1; ``session()`` dates it.
    private static func turn(
        _ phase: TurnPhase, manoeuvre: UInt32, degrees: Double, junctionsBefore: UInt32, meters: Double,
        _ street: String
    ) -> TurnEvent {
        TurnEvent(
            timeSeconds: 0, routeID: 1, manoeuvre: manoeuvre, phase: phase, turnDegrees: degrees,
            junctionsBefore: junctionsBefore, distanceMeters: meters, outgoingBearingDegrees: 20, street: street)
    }

    /// A session along the demo walk (a real Monaco route): a fix and a smoothed fix every second at 1.3 m/s, the
    /// route, a reroute, 20 s off route, turn cues, a device switch, a signal-lost event and turn events.
    static func session() throws -> SessionExport.Session {
        let data = try Data(
            contentsOf: repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson"))
        let object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let geometry = try #require(object["geometry"] as? [String: Any])
        let coordinates = try #require(geometry["coordinates"] as? [[Double]])
        let points = coordinates.map { Coordinate(latitude: $0[1], longitude: $0[0]) }
        let route = RouteBuilder.route(from: RoutePlan(points: points), routeID: 1, timeSeconds: 0, provider: "osm")
        let start = 1_767_225_600.0
        var records: [RecordedMessage] = []
        func add(_ message: BusMessage, _ time: Double, stage: String = "test") {
            records.append(
                RecordedMessage(
                    receiveTimeSeconds: time, stage: stage, sequence: UInt64(records.count), message: message))
        }
        add(.route(route), start)
        add(
            .status(
                StageStatus(timeSeconds: 5, stage: "haptic", health: .running, message: "output: band", counters: [])),
            start)
        let seconds = Int(route.lengthMeters / 1.3)
        for second in 0...seconds {
            let time = start + Double(second)
            let along = min(route.lengthMeters, 1.3 * Double(second))
            let here = try #require(Polyline(route.points).point(atDistance: along)).coordinate
            add(
                .fix(
                    LocationFix(
                        timeSeconds: time, latitude: here.latitude + 2e-5, longitude: here.longitude,
                        horizontalAccuracyMeters: 5)), time)
            add(
                .smoothed(
                    SmoothedFix(
                        timeSeconds: time, latitude: here.latitude, longitude: here.longitude,
                        horizontalAccuracyMeters: 3, speedMetersPerSecond: 1.3, courseDegrees: nil,
                        reset: second == 0)), time)
            let state: RouteState = (100..<120).contains(second) ? .offRoute : (second == seconds ? .arrived : .onRoute)
            add(
                .progress(
                    RouteProgress(
                        timeSeconds: time, routeID: 1, distanceAlongMeters: along,
                        distanceRemainingMeters: route.lengthMeters - along, crossTrackMeters: 0, nextWaypointIndex: 1,
                        bearingToNextDegrees: 0, distanceToNextMeters: 10,
                        etaSeconds: (route.lengthMeters - along) / 1.3,
                        state: state)), time)
            if second % 60 == 30 {
                add(.cue(HapticCue(timeSeconds: time, kind: .turnLeft, intensity: 0.6, deviationDegrees: -50)), time)
                add(.cue(HapticCue(timeSeconds: time + 0.5, kind: .silent, intensity: 0, deviationDegrees: -5)), time)
            }
            if second == 120 {
                add(
                    .route(
                        RouteBuilder.route(
                            from: RoutePlan(points: Array(route.points.dropFirst(5))), routeID: 2, timeSeconds: time,
                            provider: "osm")), time)
                add(
                    .status(
                        StageStatus(
                            timeSeconds: 9, stage: "haptic", health: .degraded, message: "output: speaker", counters: []
                        )), time)
            }
            if [50, 60, 70].contains(second) {
                let command: ControlCommand = second == 50 ? .stop : (second == 60 ? .resume : .mark)
                add(
                    .control(
                        ControlEvent(
                            timeSeconds: time + 1000, command: command, text: second == 70 ? "kerb <here>" : "",
                            sender: "experimenter", requestID: "\(second)", sentSeconds: time, stopped: second == 50)),
                    time)
            }
            if second == 200 {
                add(.cue(HapticCue(timeSeconds: time, kind: .signalLost, intensity: 1, deviationDegrees: 0)), time)
            }
            for (at, turn) in Self.turns where at == second {
                var event = turn
                event.timeSeconds = time
                for _ in 0..<3 { add(.turn(event), time, stage: "route") }
                if !(50..<60).contains(second) { add(.turn(event), time + 0.01) }
            }
        }
        let folder = try scratchFolder()
        var writer = SessionWriter(library: "test", metadata: [])
        records.forEach { writer.add($0) }
        writer.finish()
        try Data(writer.takeOutput()).store(toFile: "\(folder)/session.mcap")
        return try SessionExport.read("\(folder)/session.mcap")
    }

    @Test func theSummaryCountsWhatTheSessionHolds() throws {
        let session = try Self.session()
        let summary = SessionReport.summary(session)
        let walked = session.routes[0].lengthMeters
        #expect(abs(summary.distanceMeters - walked) < 0.02 * walked)
        #expect(abs(summary.durationSeconds - Double(Int(walked / 1.3))) < 1e-6)
        #expect(abs((summary.routeWalkingSeconds ?? 0) - walked / 1.3) < 1)
        #expect(summary.offCourseSeconds == 20)
        #expect(summary.turnCueOnsets == (Int(walked / 1.3) + 30) / 60)
        #expect(summary.reroutes == 1)
        #expect(summary.failSafeEvents == 1)
        #expect(summary.deviceSwitches == 1)
        #expect(summary.arrived)
        #expect(summary.experimenterStops == 1 && summary.marks == ["kerb <here>"])
        // Each turn event once, however often it was sent; the one made while stopped was not rendered.
        #expect(summary.turnAnnouncements == 2 && summary.turnNows == 1 && summary.turnStraightOns == 1)
        #expect(summary.turnsRendered == 3)
    }

    /// Turn events on the page: the summary's counts, a mark each on the timeline (the one not rendered faint), and
    /// the list in words with their times from the start, each once.
    @Test func theReportDrawsAndListsEachTurnEventOnceInWords() throws {
        let session = try Self.session()
        let turns = SessionReport.turns(session)
        #expect(turns.map(\.event.phase) == Self.turns.map(\.event.phase))
        #expect(turns.map(\.rendered) == [true, false, true, true])
        let html = SessionReport.html(session, title: "turns")
        #expect(
            html.contains(
                "<th>Turn events</th><td>2 announcements, 1 now, 1 straight on; 3 of 4 rendered by the sink</td>"))
        func count(_ text: String) -> Int { html.components(separatedBy: text).count - 1 }
        #expect(count("<path class=\"turn announce\"") == 2)
        #expect(count("<line class=\"turn now\"") == 1)
        #expect(count("<circle class=\"turn straightOn\"") == 1)
        #expect(count("(not rendered)</title>") == 1)
        #expect(count("<tr class=\"turn ") == 4)
        #expect(
            html.contains(
                "<tr class=\"turn announce\"><td>0:40</td><td>announce</td><td>1/0</td><td>Second left onto Rue Grimaldi, in 85 metres</td><td>yes</td></tr>"
            ))
        #expect(
            html.contains(
                "<td>0:55</td><td>announce</td><td>1/0</td><td>Next left onto Rue Grimaldi, in 30 metres</td><td>no</td>"
            ))
        #expect(
            html.contains("<td>1:02</td><td>now</td><td>1/0</td><td>Turn left now onto Rue Grimaldi</td><td>yes</td>"))
        #expect(html.contains("<td>Straight on along Rue &lt;Caroline&gt;</td>"))
    }

    /// A session without turn events says so, and draws and lists none.
    @Test func aSessionWithoutTurnEventsSaysNone() throws {
        var session = try Self.session()
        session.records.removeAll { $0.message.kind == .turn }
        let html = SessionReport.html(session, title: "no turns")
        #expect(html.contains("<th>Turn events</th><td>none</td>"))
        #expect(!html.contains("class=\"turn ") && !html.contains("id=\"turns\""))
    }

    /// The SVG's smoothed track, taken back through the projection the page states, lies on the session's smoothed
    /// fixes (within the drawing's rounding).
    @Test func theMapsTrackIsTheSessionsSmoothedTrack() throws {
        let session = try Self.session()
        let html = SessionReport.html(session, title: "test <session>")
        #expect(html.contains("test &lt;session&gt;"))
        #expect(!html.contains("http://") || !html.contains("src=\"http"), "nothing loaded from a network")
        func attribute(_ name: String) throws -> Double {
            let range = try #require(html.range(of: "\(name)=\""))
            let rest = html[range.upperBound...]
            return try #require(Double(rest[..<rest.firstIndex(of: "\"")!]))
        }
        let projection = FlatProjection(
            origin: Coordinate(
                latitude: try attribute("data-origin-latitude"), longitude: try attribute("data-origin-longitude")))
        let metersPerPixel = try attribute("data-meters-per-pixel")
        let centerEast = try attribute("data-center-east")
        let centerNorth = try attribute("data-center-north")
        let track = try #require(html.range(of: "id=\"smoothed-track\" points=\""))
        let rest = html[track.upperBound...]
        let pairs = rest[..<rest.firstIndex(of: "\"")!].split(separator: " ").map { pair in
            pair.split(separator: ",").compactMap { Double($0) }
        }
        #expect(pairs.count == session.smoothed.count)
        var worst = 0.0
        for (pair, fix) in zip(pairs, session.smoothed) {
            let east = (pair[0] - SessionReport.MapDrawing.width / 2) * metersPerPixel + centerEast
            let north = -(pair[1] - SessionReport.MapDrawing.height / 2) * metersPerPixel + centerNorth
            let back = projection.unproject(ENU(east: east, north: north))
            worst = max(
                worst,
                FlatProjection.distance(back, Coordinate(latitude: fix.latitude, longitude: fix.longitude)))
        }
        #expect(worst < 0.01 * metersPerPixel * 2 + 0.01, "worst \(worst) m at \(metersPerPixel) m a pixel")
        #expect(html.contains("class=\"off-course\"") && html.contains("class=\"reroute\""))
        #expect(html.contains("class=\"device-switch\"") && html.contains("class=\"signal-lost\""))
        // The experimenter's stop as a span of the ten seconds to its resume, the mark as a labelled line.
        #expect(html.contains("class=\"experimenter-stop\"") && html.contains("mark: kerb &lt;here&gt;"))
        #expect(html.contains("Experimenter&#39;s stops") || html.contains("Experimenter's stops"))
    }

    /// The page as a browser draws it: headless Chromium's screenshot shows the smoothed track in its colour and the
    /// fixes in theirs, inside the map.
    @Test func headlessChromiumDrawsTheTrack() async throws {
        let session = try Self.session()
        let folder = try scratchFolder()
        try SessionReport.html(session, title: "screenshot").write(
            toFile: "\(folder)/report.html", atomically: true, encoding: .utf8)
        let chromium = try #require(
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            },
            "chromium is not installed: run scripts/setup")
        // Run and waited for on a thread of its own, not one of the cooperative pool's two.
        let status = try await offThePool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chromium)
            process.arguments = [
                "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1000,1400",
                "--user-data-dir=\(folder)/profile", "--screenshot=\(folder)/report.png",
                "file://\(folder)/report.html",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(status == 0)
        // Count the pixels of each colour with a small PNG decoder (zlib and the five filters of the PNG spec).
        let script = """
            import sys, zlib, struct
            data = open(sys.argv[1], "rb").read()
            assert data[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
            pos, idat = 8, b""
            while pos < len(data):
                length, kind = struct.unpack(">I4s", data[pos:pos + 8])
                body = data[pos + 8:pos + 8 + length]
                if kind == b"IHDR": width, height, depth, color = struct.unpack(">IIBB", body[:10])
                if kind == b"IDAT": idat += body
                pos += 12 + length
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
            raw, stride = zlib.decompress(idat), width * bpp
            rows, prev, i = [], bytearray(stride), 0
            for y in range(height):
                f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
                for x in range(stride):
                    a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
                    if f == 1: line[x] = (line[x] + a) & 255
                    elif f == 2: line[x] = (line[x] + b) & 255
                    elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
                    elif f == 4:
                        p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                        line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
                rows.append(line); prev = line
            def count(rgb):
                return sum(1 for line in rows for x in range(0, stride, bpp)
                           if all(abs(line[x + k] - rgb[k]) <= 24 for k in range(3)))
            print(width, height, count((0x1f, 0x5f, 0xbf)), count((0xf2, 0x9c, 0x38)))
            """
        let output = try await runPython(script, ["\(folder)/report.png"]).split(separator: " ").compactMap { Int($0) }
        #expect(output.count == 4)
        guard output.count == 4 else { return }
        print("screenshot \(output[0])×\(output[1]): \(output[2]) track pixels, \(output[3]) fix pixels")
        #expect(output[2] > 1500, "the smoothed track is drawn")
        #expect(output[3] > 300, "the fixes are drawn")
    }
}
