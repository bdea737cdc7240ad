import SessionFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
import Parsers
public import NavCore

/// `hapticnav export`: a recording made by the `jsonl` recorder, as a map layer or a table: GeoJSON (the raw and the
/// smoothed tracks, each route, the cues where they played, each turn event where the walker was when it was made),
/// GPX (both tracks with their times, each route) or CSV (one row per fix, smoothed fix and cue).
public enum SessionExport {
    /// What a recording holds that the exports use.
    public struct Session: Sendable {
        public var fixes: [LocationFix] = []
        public var smoothed: [SmoothedFix] = []
        /// The newest copy of each route, by id, in the order they first came.
        public var routes: [Route] = []
        public var cues: [HapticCue] = []
        /// Every record, in the order recorded.
        public var records: [RecordedMessage] = []
        /// Records that could not be read [count], and where the first was.
        public var badLines = 0
        public var firstBad: String?
        /// Parts that were not closed (a recorder stopped first), with the byte their last complete record ends at.
        public var cutFiles: [(file: String, atByte: Int)] = []
        /// What the session's first metadata record says (its recorder, config, a study trial's who and what).
        public var metadata: [String: String] = [:]
    }

    /// The formats.
    public static let formats = ["geojson", "gpx", "csv", "mcap"]

    /// Reads a session (a folder of MCAP parts, an .mcap file or a JSON Lines recording); records that cannot be
    /// read are counted, not fatal.
    public static func read(_ path: String) throws -> Session {
        var session = Session()
        var routeIndex: [UInt32: Int] = [:]
        let summary: SessionReader.Summary
        do {
            summary = try SessionReader.read(path) { record in
                session.records.append(record)
                switch record.message {
                case let .fix(fix): session.fixes.append(fix)
                case let .smoothed(fix): session.smoothed.append(fix)
                case let .cue(cue): session.cues.append(cue)
                case let .route(route):
                    if let index = routeIndex[route.routeID] {
                        session.routes[index] = route
                    } else {
                        routeIndex[route.routeID] = session.routes.count
                        session.routes.append(route)
                    }
                default: break
                }
            }
        } catch let failure as SessionReader.Failure {
            throw ExportError(description: failure.description)
        }
        session.badLines = summary.badRecords
        session.firstBad = summary.firstBad
        session.cutFiles = summary.cutFiles
        session.metadata = summary.metadata.first { $0.name == "hapticnav.session" }?.values ?? [:]
        guard !session.fixes.isEmpty || !session.smoothed.isEmpty || !session.routes.isEmpty else {
            throw ExportError(
                description:
                    "\(path): no fixes, smoothed fixes or routes in it (is it a session the recorder wrote?)")
        }
        return session
    }

    /// The session in `format`, as bytes to write.
    public static func render(_ session: Session, format: String) -> [UInt8] {
        switch format {
        case "mcap": return self.mcap(session)
        default: return Array(self.renderText(session, format: format).utf8)
        }
    }

    /// The session in a text format.
    public static func renderText(_ session: Session, format: String) -> String {
        switch format {
        case "gpx": return self.gpx(session)
        case "csv": return self.csv(session)
        default: return self.geojson(session)
        }
    }

    private static func geojson(_ session: Session) -> String {
        func line(_ points: [Coordinate], _ properties: JSONValue) -> JSONValue {
            [
                "type": "Feature", "properties": properties,
                "geometry": [
                    "type": "LineString",
                    "coordinates": .array(points.map { [.number($0.longitude), .number($0.latitude)] }),
                ],
            ]
        }
        var features: [JSONValue] = []
        if !session.fixes.isEmpty {
            features.append(
                line(
                    session.fixes.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) },
                    ["layer": "fixes", "count": .number(Double(session.fixes.count))]))
        }
        if !session.smoothed.isEmpty {
            features.append(
                line(
                    session.smoothed.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) },
                    ["layer": "smoothed", "count": .number(Double(session.smoothed.count))]))
        }
        for route in session.routes {
            features.append(
                line(
                    route.points,
                    [
                        "layer": "route", "routeID": .number(Double(route.routeID)),
                        "provider": .string(route.provider),
                        "lengthMeters": .number(route.lengthMeters),
                    ]))
        }
        // Each cue at the smoothed position of its time (the newest smoothed fix at or before it).
        var index = 0
        for cue in session.cues where cue.kind != .silent {
            while index + 1 < session.smoothed.count && session.smoothed[index + 1].timeSeconds <= cue.timeSeconds {
                index += 1
            }
            guard index < session.smoothed.count else { break }
            let at = session.smoothed[index]
            features.append(
                [
                    "type": "Feature",
                    "properties": [
                        "layer": "cue", "kind": .string(cue.kind.name), "intensity": .number(cue.intensity),
                        "timeSeconds": .number(cue.timeSeconds),
                    ],
                    "geometry": ["type": "Point", "coordinates": [.number(at.longitude), .number(at.latitude)]],
                ])
        }
        // Each turn event once, at the smoothed position of the fix it is for (the newest at or before its time).
        for turn in SessionReport.turns(session) {
            let time = turn.event.timeSeconds
            var low = 0
            var high = session.smoothed.count
            while low < high {
                let middle = (low + high) / 2
                if session.smoothed[middle].timeSeconds <= time { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { continue }
            let at = session.smoothed[low - 1]
            var properties: [String: JSONValue] = [
                "layer": "turn", "phase": .string(turn.event.phase.name), "words": .string(TurnWords.text(turn.event)),
                "routeID": .number(Double(turn.event.routeID)), "manoeuvre": .number(Double(turn.event.manoeuvre)),
                "junctionsBefore": .number(Double(turn.event.junctionsBefore)),
                "distanceMeters": .number(turn.event.distanceMeters), "timeSeconds": .number(time),
            ]
            if let rendered = turn.rendered { properties["rendered"] = .bool(rendered) }
            features.append(
                [
                    "type": "Feature", "properties": .object(properties),
                    "geometry": ["type": "Point", "coordinates": [.number(at.longitude), .number(at.latitude)]],
                ])
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let object: JSONValue = ["type": "FeatureCollection", "features": .array(features)]
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func gpx(_ session: Session) -> String {
        var text =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"hapticnav export\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n"
        for route in session.routes {
            text += "<rte><name>route \(route.routeID) by \(xmlEscaped(route.provider))</name>\n"
            for point in route.points { text += "<rtept lat=\"\(point.latitude)\" lon=\"\(point.longitude)\"/>\n" }
            text += "</rte>\n"
        }
        func track(_ name: String, _ points: [(Double, Double, Double)]) {
            guard !points.isEmpty else { return }
            text += "<trk><name>\(name)</name><trkseg>\n"
            for (time, latitude, longitude) in points {
                text += "<trkpt lat=\"\(latitude)\" lon=\"\(longitude)\"><time>\(iso8601(time))</time></trkpt>\n"
            }
            text += "</trkseg></trk>\n"
        }
        track("fixes", session.fixes.map { ($0.timeSeconds, $0.latitude, $0.longitude) })
        track("smoothed", session.smoothed.map { ($0.timeSeconds, $0.latitude, $0.longitude) })
        return text + "</gpx>\n"
    }

    private static func csv(_ session: Session) -> String {
        var rows: [(Double, String)] = []
        func number(_ value: Double?) -> String { value.map { $0.isFinite ? "\($0)" : "" } ?? "" }
        for fix in session.fixes {
            rows.append(
                (
                    fix.timeSeconds,
                    "\(fix.timeSeconds),fix,\(fix.latitude),\(fix.longitude),\(fix.horizontalAccuracyMeters),\(number(fix.speedMetersPerSecond)),\(number(fix.courseDegrees)),,,"
                ))
        }
        for fix in session.smoothed {
            rows.append(
                (
                    fix.timeSeconds,
                    "\(fix.timeSeconds),smoothed,\(fix.latitude),\(fix.longitude),\(fix.horizontalAccuracyMeters),\(fix.speedMetersPerSecond),\(number(fix.courseDegrees)),,,"
                ))
        }
        for cue in session.cues {
            rows.append(
                (
                    cue.timeSeconds,
                    "\(cue.timeSeconds),cue,,,,,,\(cue.kind.name),\(cue.intensity),\(cue.deviationDegrees)"
                ))
        }
        rows.sort { $0.0 < $1.0 }
        return
            (["time_s,kind,latitude,longitude,accuracy_m,speed_mps,course_deg,cue,intensity,deviation_deg"]
            + rows.map(\.1)).joined(separator: "\n") + "\n"
    }
}

/// Why an export could not be made.
public struct ExportError: Error, CustomStringConvertible {
    public let description: String
}
