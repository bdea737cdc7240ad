import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Parsers
import Runtime

struct Fixes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode a log (NMEA, GnssLogger, GPX, sensor CSV or a phyphox folder): one fix or sample per line.")

    @Argument(help: "The log file (or phyphox folder).")
    var file: String

    @Flag(help: "JSON Lines with the field names of docs/PROTOCOL.md.")
    var json = false

    @Option(help: "For logs that never send a date: the date to assume, like 2024-05-01.")
    var date: String?

    @Option(help: "Time zero for logs with relative times, like 2024-05-01T10:00:00Z.")
    var startTime: String?

    @Option(help: "GnssLogger Fix providers to print (GPS, FLP, NLP; repeatable).")
    var provider: [String] = ["GPS"]

    func run() throws {
        var options = LogReader.Options()
        if let date = self.date {
            guard let days = parseDay(date) else { throw ValidationError("--date: expected a date like 2024-05-01") }
            options.nmea.assumedDateDays = days
        }
        if let start = self.startTime {
            guard let seconds = parseTime(start) else {
                throw ValidationError("--start-time: expected a time like 2024-05-01T10:00:00Z")
            }
            options.startTime = seconds
        }
        options.fixProviders = Set(self.provider)
        let result: LogReader.Result
        do {
            result = try LogReader(options: options).read(self.file)
        } catch let error as LogError {
            throw CommandFailure("\(error)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var out = ""
        for entry in result.entries {
            if self.json {
                struct Line: Encodable {
                    let line: Int
                    let message: BusMessage
                    enum CodingKeys: String, CodingKey { case line, topic, payload }
                    func encode(to encoder: any Encoder) throws {
                        var container = encoder.container(keyedBy: CodingKeys.self)
                        try container.encode(self.line, forKey: .line)
                        try container.encode(self.message.kind.topic, forKey: .topic)
                        try container.encode(self.message.payload, forKey: .payload)
                    }
                }
                out +=
                    String(decoding: try encoder.encode(Line(line: entry.line, message: entry.message)), as: UTF8.self)
                    + "\n"
            } else {
                let time: Double
                switch entry.message {
                case let .fix(fix): time = fix.timeSeconds
                case let .heading(heading): time = heading.timeSeconds
                case let .attitude(attitude): time = attitude.timeSeconds
                default: time = .nan
                }
                out +=
                    "\(iso8601(time)) \(entry.message.kind.topic.padded(to: 8)) \(entry.message.summary)\n"
            }
            if out.utf8.count > 1 << 16 {
                StandardStreams.writeOutput(out)
                out = ""
            }
        }
        StandardStreams.writeOutput(out)
        for problem in result.problems.prefix(20) {
            StandardStreams.writeError("skipped \(problem)\n")
        }
        let counts = Dictionary(grouping: result.entries, by: { $0.message.kind.topic }).mapValues(\.count)
        StandardStreams.writeError(
            "\(self.file): \(result.format.rawValue), "
                + counts.keys.sorted().map { "\(counts[$0]!) \($0)" }.joined(separator: ", ")
                + ", \(result.problems.count) skipped\n")
    }
}

private func parseDay(_ text: String) -> Int? {
    parseTime(text + "T00:00:00Z").map { Int($0 / 86_400) }
}

private func parseTime(_ text: String) -> Double? {
    CivilTime.parseISO8601(Substring(text))
}
