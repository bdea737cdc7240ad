@testable import SessionTools
import Foundation
import NavCore
import Parsers
@testable import Runtime
import Testing
import TestSupport
import MapLogic

@Suite struct SessionExportTests {
    /// A recording as the jsonl recorder writes it: 20 fixes and smoothed fixes a second apart walking north, a
    /// route, two cues, and a line that is not a record.
    private func recording() throws -> String {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        var lines: [String] = []
        let encoder = JSONEncoder()
        func add(_ message: BusMessage, _ time: Double) throws {
            let record = RecordedMessage(receiveTimeSeconds: time, stage: "test", sequence: 0, message: message)
            lines.append(String(decoding: try encoder.encode(record), as: UTF8.self))
        }
        let end = FlatProjection(origin: start).unproject(ENU(east: 0, north: 26))
        try add(
            .route(
                RouteBuilder.route(from: RoutePlan(points: [start, end]), routeID: 1, timeSeconds: 0, provider: "osm")),
            1_767_225_600)
        for second in 0..<20 {
            let time = 1_767_225_600 + Double(second)
            let here = FlatProjection(origin: start).unproject(ENU(east: 0, north: 1.3 * Double(second)))
            try add(
                .fix(
                    LocationFix(
                        timeSeconds: time, latitude: here.latitude, longitude: here.longitude,
                        horizontalAccuracyMeters: 5, speedMetersPerSecond: 1.3, courseDegrees: 0)), time)
            try add(
                .smoothed(
                    SmoothedFix(
                        timeSeconds: time, latitude: here.latitude, longitude: here.longitude,
                        horizontalAccuracyMeters: 3, speedMetersPerSecond: 1.3, courseDegrees: 0, reset: second == 0)),
                time)
        }
        try add(
            .cue(HapticCue(timeSeconds: 1_767_225_605.5, kind: .turnLeft, intensity: 0.4, deviationDegrees: -30)), 0)
        try add(.cue(HapticCue(timeSeconds: 1_767_225_619, kind: .arrival, intensity: 1, deviationDegrees: 0)), 0)
        lines.insert("not a record {", at: 3)
        let file = try scratchFolder() + "/recording.jsonl"
        try (lines.joined(separator: "\n") + "\n").store(toFile: file)
        return file
    }

    @Test func aRecordingExportsToGPXThatReadsBackWithItsTimes() throws {
        let session = try SessionExport.read(try self.recording())
        #expect(session.badLines == 1 && session.firstBad?.hasSuffix("line 4: not a recorded message") == true)
        let gpx = SessionExport.renderText(session, format: "gpx")
        let reader = try GPXReader.read(Data(gpx.utf8))
        #expect(reader.problems.isEmpty, "\(reader.problems)")
        // The route's two points, then the fixes' and the smoothed fixes' 20 each, with their times.
        #expect(reader.points.count == 2 + 20 + 20)
        let timed = reader.points.compactMap(\.time)
        #expect(timed.count == 40)
        #expect(timed.first == 1_767_225_600 && timed[19] == 1_767_225_619)
        #expect(abs(reader.points[2].coordinate.latitude - 43.73) < 1e-9)
    }

    @Test func aRecordingExportsToGeoJSONWithTracksRoutesAndCues() throws {
        let session = try SessionExport.read(try self.recording())
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(SessionExport.renderText(session, format: "geojson").utf8))
                as? [String: Any])
        let features = try #require(object["features"] as? [[String: Any]])
        let layers = features.compactMap { ($0["properties"] as? [String: Any])?["layer"] as? String }
        #expect(layers == ["fixes", "smoothed", "route", "cue", "cue"])
        let track = try #require((features[0]["geometry"] as? [String: Any])?["coordinates"] as? [[Double]])
        #expect(track.count == 20 && abs(track[0][0] - 7.42) < 1e-9, "[longitude, latitude]")
        // The turn cue at 5.5 s sits where the walker was at 5 s.
        let cue = try #require((features[3]["geometry"] as? [String: Any])?["coordinates"] as? [Double])
        #expect(abs(cue[1] - track[5][1]) < 1e-9)
    }

    @Test func aRecordingExportsToCSVInTimeOrder() throws {
        let session = try SessionExport.read(try self.recording())
        let rows = SessionExport.renderText(session, format: "csv").split(separator: "\n")
        #expect(
            rows.first == "time_s,kind,latitude,longitude,accuracy_m,speed_mps,course_deg,cue,intensity,deviation_deg")
        #expect(rows.count == 1 + 20 + 20 + 2)
        let times = rows.dropFirst().compactMap {
            Double($0.split(separator: ",", omittingEmptySubsequences: false)[0])
        }
        #expect(times == times.sorted())
        #expect(rows.contains { $0.hasSuffix(",cue,,,,,,turnLeft,0.4,-30.0") })
    }

    /// The MCAP export as Foxglove reads it: the Python `mcap` package finds LocationFix fixes with their times and
    /// coordinates, the route as GeoJSON, and the cues in JSON.
    @Test func theMCAPExportCarriesFoxgloveLocationFixesThatPythonsMCAPReads() async throws {
        let session = try SessionExport.read(try self.recording())
        let file = try scratchFolder() + "/session.mcap"
        try Data(SessionExport.render(session, format: "mcap")).store(toFile: file)
        let script = """
            import sys, json
            from mcap.reader import make_reader
            with open(sys.argv[1], "rb") as f:
                reader = make_reader(f)
                fixes, routes, cues = [], [], []
                for schema, channel, message in reader.iter_messages():
                    data = json.loads(message.data)
                    if channel.topic == "/fix":
                        assert schema.name == "foxglove.LocationFix" and schema.encoding == "jsonschema"
                        assert channel.message_encoding == "json"
                        fixes.append((data["timestamp"]["sec"] + data["timestamp"]["nsec"] / 1e9, data["latitude"],
                                      data["longitude"], data["position_covariance"][0], data["position_covariance_type"]))
                    elif channel.topic == "/route":
                        assert schema.name == "foxglove.GeoJSON"
                        routes.append(len(json.loads(data["geojson"])["geometry"]["coordinates"]))
                    elif channel.topic == "/cue":
                        cues.append(data["kind"])
                print(len(fixes), "%.1f %.6f %.6f %.1f %d" % fixes[0], "%.1f %.6f" % fixes[-1][:2], routes, ",".join(cues),
                      reader.get_summary().statistics.message_count)
            """
        let output = try await runPython(script, [file])
        #expect(output == "20 1767225600.0 43.730000 7.420000 25.0 1 1767225619.0 43.730222 [2] turnLeft,arrival 43")
    }

    /// Turn events in the exports: in GeoJSON each once, where the walker was at the time of its fix, with its words
    /// and whether the sink rendered it; in the MCAP export for Foxglove every one recorded, on `/turn` as the JSON
    /// of docs/PROTOCOL.md, as Python's `mcap` reads it.
    @Test func turnEventsAreExportedToGeoJSONAndToFoxglovesMCAP() async throws {
        let session = try SessionReportTests.session()
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(SessionExport.renderText(session, format: "geojson").utf8))
                as? [String: Any])
        let features = try #require(object["features"] as? [[String: Any]])
        let turns = features.filter { ($0["properties"] as? [String: Any])?["layer"] as? String == "turn" }
        #expect(turns.count == SessionReportTests.turns.count)
        for (feature, (second, event)) in zip(turns, SessionReportTests.turns) {
            let properties = try #require(feature["properties"] as? [String: Any])
            let point = try #require((feature["geometry"] as? [String: Any])?["coordinates"] as? [Double])
            let walker = session.smoothed[second]
            #expect(point == [walker.longitude, walker.latitude], "at the walker's smoothed place at \(second) s")
            #expect(properties["phase"] as? String == event.phase.name)
            var dated = event
            dated.timeSeconds = walker.timeSeconds
            #expect(properties["words"] as? String == TurnWords.text(dated))
            #expect(properties["rendered"] as? Bool == (second != 55))
        }

        let file = try scratchFolder() + "/session.mcap"
        try Data(SessionExport.render(session, format: "mcap")).store(toFile: file)
        let script = """
            import sys, json
            from mcap.reader import make_reader
            with open(sys.argv[1], "rb") as f:
                turns = []
                for schema, channel, message in make_reader(f).iter_messages(topics=["/turn"]):
                    assert schema.name == "hapticnav.turn" and schema.encoding == "jsonschema", schema
                    assert channel.message_encoding == "json"
                    data = json.loads(message.data)
                    turns.append("%s/%d/%s" % (data["phase"], data["junctionsBefore"], data["street"]))
                print(" ".join(turns))
            """
        let output = try await runPython(script, [file])
        // Every copy recorded (the route stage's three and the sink's one), as Foxglove shows the bus.
        let expected = SessionReportTests.turns.flatMap { second, event in
            Array(
                repeating: "\(event.phase.name)/\(event.junctionsBefore)/\(event.street)", count: second == 55 ? 3 : 4)
        }
        #expect(output == expected.joined(separator: " "))
        // The live bridge advertises the same channel.
        let channel = FoxgloveChannels.channel(.turn)
        #expect(FoxgloveChannels.all.contains(channel))
        #expect(channel.topic == "/turn" && channel.schemaName == "hapticnav.turn")
    }

    @Test func somethingThatIsNoRecordingIsAClearError() throws {
        let file = try scratchFolder() + "/other.jsonl"
        try "{\"a\": 1}\n".store(toFile: file)
        #expect(throws: ExportError.self) { try SessionExport.read(file) }
        #expect(throws: ExportError.self) { try SessionExport.read("/nowhere/recording.jsonl") }
    }
}
