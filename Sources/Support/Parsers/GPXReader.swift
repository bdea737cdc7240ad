#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import NavCore

/// A point of a GPX track or route.
public struct GPXPoint: Equatable, Sendable {
    /// Where.
    public var coordinate: Coordinate
    /// Height [metres], as the file gives it.
    public var elevation: Double?
    /// When [seconds since 1970-01-01T00:00:00Z], if the file says.
    public var time: Double?
    /// Speed [metres per second], if the file says (GPX 1.0 `<speed>` or a Garmin extension).
    public var speed: Double?
    /// Course [degrees, true north, clockwise], if the file says (GPX 1.0 `<course>`).
    public var course: Double?
    /// Horizontal dilution of precision, if the file says.
    public var hdop: Double?
    /// The point's line in the file.
    public var line: Int
}

/// Reads the track points (`trkpt`) and route points (`rtept`) of a GPX 1.0 or 1.1 file, in file order.
/// A point with a missing or non-finite coordinate, or an unreadable time, is reported and skipped. Any bytes are
/// safe (libxml2 through ``XMLEventReader``): broken XML ends the points read so far with a problem naming its line.
public final class GPXReader {
    /// A point that was skipped, with its line and why.
    public struct Problem: Equatable, Sendable {
        /// The line in the file.
        public var line: Int
        /// What was wrong.
        public var reason: String
    }

    /// The points read.
    public private(set) var points: [GPXPoint] = []
    /// The points skipped.
    public private(set) var problems: [Problem] = []
    private var current: GPXPoint?
    private var currentValid = true
    private var text = ""

    /// Reads `data`; throws when the XML itself is broken before any point was read.
    public static func read(_ data: Data) throws -> GPXReader {
        let reader = GPXReader()
        let events = XMLEventReader(
            start: { name, attributes, line in reader.start(name, attributes, line) },
            end: { name, line in reader.end(name, line) },
            characters: { text in reader.text += text })
        do {
            try events.read(data: data)
        } catch {
            guard !reader.points.isEmpty else {
                throw LogError.unreadable(reason: "not GPX: broken XML at \(error)")
            }
            // A logger that died mid-write: keep what was read, report the rest.
            reader.problems.append(
                Problem(line: error.line, reason: "broken XML (\(error.reason)): the rest of the file is ignored"))
        }
        return reader
    }

    private func start(_ local: String, _ attributes: [String: String], _ line: Int) {
        self.text = ""
        guard local == "trkpt" || local == "rtept" else { return }
        guard let latText = attributes["lat"], let lonText = attributes["lon"],
            let lat = Double(latText.trimmed()),
            let lon = Double(lonText.trimmed()),
            lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180
        else {
            self.problems.append(
                Problem(
                    line: line,
                    reason: "\(local) with lat '\(attributes["lat"] ?? "")' lon '\(attributes["lon"] ?? "")'"))
            self.current = nil
            return
        }
        self.current = GPXPoint(coordinate: Coordinate(latitude: lat, longitude: lon), line: line)
        self.currentValid = true
    }

    private func end(_ local: String, _ line: Int) {
        let value = self.text.trimmed()
        defer { self.text = "" }
        guard var point = self.current else { return }
        func number() -> Double? {
            guard let number = Double(value), number.isFinite else {
                self.problems.append(Problem(line: line, reason: "<\(local)> is '\(value)'"))
                self.currentValid = false
                return nil
            }
            return number
        }
        switch local {
        case "ele": point.elevation = number()
        case "time":
            guard let time = CivilTime.parseISO8601(Substring(value)) else {
                self.problems.append(Problem(line: line, reason: "<time> is '\(value)'"))
                self.currentValid = false
                break
            }
            point.time = time
        case "speed": point.speed = number().flatMap { $0 >= 0 ? $0 : nil }
        case "course": point.course = number().map(Angle.normalized)
        case "hdop": point.hdop = number().flatMap { $0 > 0 ? $0 : nil }
        case "trkpt", "rtept":
            if self.currentValid { self.points.append(point) }
            self.current = nil
            return
        default: return
        }
        self.current = point
    }
}

/// Turns GPX points into fixes: times for untimed points (interpolated along the path between timed ones,
/// or at walking speed when the file has none), and speed and course from neighbours where the file has none.
public enum GPXFixes {
    /// The fixes of `points`.
    public static func fixes(
        _ points: [GPXPoint], walkingSpeed: Double = 1.4, uereMeters: Double = 4,
        assumedAccuracyMeters: Double = 10, epoch: Double = 0
    ) -> [LocationFix] {
        guard !points.isEmpty else { return [] }
        var along = [0.0]
        for index in points.indices.dropFirst() {
            along.append(
                along[index - 1]
                    + Geodesic.wgs84.inverse(points[index - 1].coordinate, points[index].coordinate).distanceMeters)
        }
        let timedIndices = points.indices.filter { points[$0].time != nil }
        var times = [Double](repeating: 0, count: points.count)
        if timedIndices.isEmpty {
            for index in points.indices { times[index] = epoch + along[index] / walkingSpeed }
        } else {
            for index in points.indices {
                if let time = points[index].time {
                    times[index] = time
                    continue
                }
                let before = timedIndices.last { $0 < index }, after = timedIndices.first { $0 > index }
                switch (before, after) {
                case let (b?, a?):
                    let span = along[a] - along[b]
                    let fraction = span > 0 ? (along[index] - along[b]) / span : 0
                    times[index] = points[b].time! + fraction * (points[a].time! - points[b].time!)
                case let (b?, nil):
                    times[index] = points[b].time! + (along[index] - along[b]) / walkingSpeed
                case let (nil, a?):
                    times[index] = points[a].time! - (along[a] - along[index]) / walkingSpeed
                default: break
                }
            }
        }
        return points.indices.map { index in
            let point = points[index]
            var speed = point.speed, course = point.course
            if speed == nil || course == nil {
                // Derive from the neighbours: the segment into this point, or out of the first one.
                let from = index > 0 ? index - 1 : index, to = index > 0 ? index : min(index + 1, points.count - 1)
                let dt = times[to] - times[from]
                let inverse = Geodesic.wgs84.inverse(points[from].coordinate, points[to].coordinate)
                if speed == nil, dt > 0 { speed = inverse.distanceMeters / dt }
                if course == nil, inverse.distanceMeters > 0.5 {
                    course = Angle.normalized(inverse.initialAzimuthDegrees)
                }
            }
            let accuracy = point.hdop.map { $0 * uereMeters } ?? assumedAccuracyMeters
            return LocationFix(
                timeSeconds: times[index], latitude: point.coordinate.latitude,
                longitude: point.coordinate.longitude, altitudeMeters: point.elevation,
                horizontalAccuracyMeters: accuracy, speedMetersPerSecond: speed, courseDegrees: course)
        }
    }
}

/// The points of a GPX file's tracks and routes, for using one as a path (a route file).
public enum GPXPath {
    /// Loads the points; throws when there are fewer than two.
    public static func load(file: String) throws -> [Coordinate] {
        let reader = try GPXReader.read(try Data(contentsOf: URL(fileURLWithPath: file)))
        guard reader.points.count >= 2 else {
            throw LogError.unreadable(reason: "\(file): fewer than two usable points")
        }
        return reader.points.map(\.coordinate)
    }
}
