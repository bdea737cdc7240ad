#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import NavCore
import Parsers

/// Reads sensor logs into heading and attitude samples.
public enum SensorLog {
    /// A numeric CSV: a header row, then rows of numbers. Problems are (line, reason).
    struct Table {
        var header: [String]
        var rows: [(line: Int, values: [Double])]
        var problems: [(line: Int, reason: String)]
    }

    static func table(_ text: String) -> Table {
        var lines = text.split(whereSeparator: \.isNewline).enumerated().makeIterator()
        var header: [String] = []
        while let (index, line) = lines.next() {
            let trimmed = line.trimmed()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            header = Self.fields(trimmed).map { $0.lowercased() }
            _ = index
            break
        }
        var rows: [(Int, [Double])] = []
        var problems: [(Int, String)] = []
        while let (index, line) = lines.next() {
            let trimmed = line.trimmed()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = Self.fields(trimmed)
            let values = fields.map { Double($0) }
            if values.count < header.count || values.contains(where: { $0 == nil || !$0!.isFinite }) {
                problems.append((index + 1, "expected \(header.count) numbers, got '\(trimmed.prefix(80))'"))
                continue
            }
            rows.append((index + 1, values.map { $0! }))
        }
        return Table(header: header, rows: rows, problems: problems)
    }

    private static func fields(_ line: String) -> [String] {
        let separator: Character =
            line.contains(",") ? "," : (line.contains(";") ? ";" : (line.contains("\t") ? "\t" : " "))
        return line.split(separator: separator, omittingEmptySubsequences: separator == " ")
            .map { $0.trimming { $0 == "\"" || $0 == " " } }
    }

    private static func column(_ header: [String], _ names: [String]) -> Int? {
        header.firstIndex { field in
            names.contains { field == $0 || field.hasPrefix($0 + " ") || field.hasPrefix($0 + "(") }
        }
    }

    /// A CSV of `time, heading[, pitch, roll]` (column names: time/timestamp/t; heading/yaw/azimuth; pitch;
    /// roll). Times above 1e9 are seconds since 1970, above 1e12 milliseconds; smaller ones count from
    /// `startTime`.
    static func orientationCSV(
        _ text: String, startTime: Double, reference: HeadingReference
    )
        -> (messages: [(line: Int, message: BusMessage)], problems: [(line: Int, reason: String)])?
    {
        let table = self.table(text)
        guard let timeColumn = self.column(table.header, ["time", "timestamp", "t", "seconds"]),
            let headingColumn = self.column(table.header, ["heading", "yaw", "azimuth"])
        else { return nil }
        let pitchColumn = self.column(table.header, ["pitch"]), rollColumn = self.column(table.header, ["roll"])
        var out: [(Int, BusMessage)] = []
        for (line, values) in table.rows {
            var time = values[timeColumn]
            time = time > 1e12 ? time / 1000 : (time > 1e9 ? time : startTime + time)
            out.append(
                (
                    line,
                    .heading(
                        HeadingSample(
                            timeSeconds: time, headingDegrees: Angle.normalized(values[headingColumn]),
                            reference: reference))
                ))
            if let pitchColumn, let rollColumn {
                out.append(
                    (
                        line,
                        .attitude(
                            Attitude(
                                timeSeconds: time, pitchDegrees: values[pitchColumn],
                                rollDegrees: values[rollColumn]))
                    ))
            }
        }
        return (out, table.problems)
    }

    /// The steps in a phyphox recording's `Accelerometer.csv` (``StepDetection``), on the recording's clock plus
    /// `startTime` [seconds].
    public static func phyphoxSteps(
        folder: String, startTime: Double, options: StepDetection.Options = .init()
    ) throws -> [Double] {
        let accel = self.table(try String(contentsOfFile: folder + "/Accelerometer.csv", encoding: .utf8))
        guard accel.header.count >= 4 else {
            throw LogError.unreadable(reason: "\(folder): Accelerometer.csv needs time, x, y, z columns")
        }
        let samples = accel.rows.filter { $0.values.count >= 4 }.map { row in
            (
                timeSeconds: startTime + row.values[0],
                magnitude:
                    (row.values[1] * row.values[1] + row.values[2] * row.values[2] + row.values[3] * row.values[3])
                    .squareRoot()
            )
        }
        return StepDetection(options: options).steps(samples)
    }

    /// A phyphox recording (a folder with `Accelerometer.csv` and `Magnetometer.csv`): tilt-compensated
    /// heading, pitch and roll every `interval` seconds, each from the mean of the samples in that interval.
    static func phyphox(
        folder: String, startTime: Double, interval: Double
    )
        throws -> (messages: [(line: Int, message: BusMessage)], problems: [(line: Int, reason: String)])
    {
        let accel = self.table(try String(contentsOfFile: folder + "/Accelerometer.csv", encoding: .utf8))
        let mag = self.table(try String(contentsOfFile: folder + "/Magnetometer.csv", encoding: .utf8))
        guard accel.header.count >= 4, mag.header.count >= 4 else {
            throw LogError.unreadable(
                reason: "\(folder): Accelerometer.csv and Magnetometer.csv need time, x, y, z columns")
        }
        func means(_ rows: [(line: Int, values: [Double])]) -> [Int: (x: Double, y: Double, z: Double, line: Int)] {
            var sums: [Int: (x: Double, y: Double, z: Double, n: Double, line: Int)] = [:]
            for (line, v) in rows {
                let bin = Int((v[0] / interval).rounded(.down))
                let s = sums[bin] ?? (0, 0, 0, 0, line)
                sums[bin] = (s.x + v[1], s.y + v[2], s.z + v[3], s.n + 1, s.line)
            }
            return sums.mapValues { ($0.x / $0.n, $0.y / $0.n, $0.z / $0.n, $0.line) }
        }
        let a = means(accel.rows), m = means(mag.rows)
        var out: [(Int, BusMessage)] = []
        var problems =
            accel.problems.map { ($0.line, "Accelerometer.csv: \($0.reason)") }
            + mag.problems.map { ($0.line, "Magnetometer.csv: \($0.reason)") }
        for bin in Set(a.keys).intersection(m.keys).sorted() {
            let av = a[bin]!, mv = m[bin]!
            let time = startTime + (Double(bin) + 0.5) * interval
            guard
                let o = TiltCompensation.orientation(
                    accelerometer: (av.x, av.y, av.z), magnetometer: (mv.x, mv.y, mv.z))
            else {
                problems.append((mv.line, "Magnetometer.csv: field parallel to gravity, no heading"))
                continue
            }
            out.append(
                (
                    mv.line,
                    .heading(
                        HeadingSample(
                            timeSeconds: time, headingDegrees: o.headingDegrees,
                            reference: .magneticNorth))
                ))
            out.append(
                (
                    mv.line,
                    .attitude(Attitude(timeSeconds: time, pitchDegrees: o.pitchDegrees, rollDegrees: o.rollDegrees))
                ))
        }
        return (out, problems)
    }
}
