import Links
import NavCore

/// A broken promise the fuzzer found: what was promised, and what happened instead.
public struct FuzzViolation: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The answers a server wrote, read as a client would read them.
enum HTTPAnswers {
    /// The statuses of the complete HTTP/1.1 answers `bytes` holds, in order; a violation when anything in it is
    /// not one (a status line, header fields, Content-Length bytes of body).
    static func statuses(_ bytes: [UInt8]) throws(FuzzViolation) -> [Int] {
        var statuses: [Int] = []
        var rest = bytes[...]
        while !rest.isEmpty {
            guard let end = rest.offset(of: [13, 10, 13, 10]) else {
                throw FuzzViolation("an answer's head never ends: \(Self.show(rest))")
            }
            let head = String(decoding: rest[rest.startIndex..<(rest.startIndex + end)], as: UTF8.self)
            let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
            let statusLine = lines[0].split(separator: " ", maxSplits: 2)
            guard statusLine.count == 3, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]),
                (100...599).contains(status)
            else { throw FuzzViolation("not a status line: \(Self.show(rest))") }
            var length: Int?
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else {
                    throw FuzzViolation("a header line without a colon: '\(line.prefix(80))'")
                }
                if line[..<colon].lowercased() == "content-length" {
                    length = Int(line[line.index(after: colon)...].trimmed())
                }
            }
            guard let length, length >= 0 else { throw FuzzViolation("an answer without a Content-Length: \(head)") }
            let bodyStart = rest.startIndex + end + 4
            guard rest.endIndex - bodyStart >= length else {
                throw FuzzViolation("an answer's body is cut short: \(Self.show(rest))")
            }
            statuses.append(status)
            rest = rest[(bodyStart + length)...]
        }
        return statuses
    }

    static func show(_ bytes: ArraySlice<UInt8>) -> String {
        "'\(String(decoding: bytes.prefix(120), as: UTF8.self).debugDescription.dropFirst().dropLast())'"
    }
}

/// What every source promises of the messages it publishes, whatever it was fed.
enum MessageInvariants {
    /// Nil when `message` keeps the promise: every number finite, a place on the Earth with a positive accuracy,
    /// a heading within [0, 360).
    static func broken(_ message: BusMessage) -> String? {
        func finite(_ values: Double?...) -> Bool { values.allSatisfy { $0?.isFinite ?? true } }
        switch message {
        case let .fix(fix):
            guard
                finite(
                    fix.timeSeconds, fix.latitude, fix.longitude, fix.altitudeMeters, fix.horizontalAccuracyMeters,
                    fix.speedMetersPerSecond, fix.courseDegrees),
                abs(fix.latitude) <= 90, abs(fix.longitude) <= 180, fix.horizontalAccuracyMeters > 0
            else { return "a fix out of range: \(fix)" }
        case let .heading(heading):
            guard finite(heading.timeSeconds, heading.headingDegrees, heading.accuracyDegrees),
                heading.headingDegrees >= 0, heading.headingDegrees < 360
            else { return "a heading out of range: \(heading)" }
        case let .attitude(attitude):
            guard finite(attitude.timeSeconds, attitude.pitchDegrees, attitude.rollDegrees) else {
                return "an attitude not finite: \(attitude)"
            }
        case let .step(step):
            guard finite(step.timeSeconds, step.cadenceHz) else { return "a step not finite: \(step)" }
        default:
            break
        }
        return nil
    }
}

/// The client's text as the server would read it in a URL's query: percent-escapes and `+` decoded.
func percentDecodedLoosely(_ bytes: [UInt8]) -> [UInt8] {
    let hex = HTTPRequest.hexValue
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
        if bytes[index] == 37, index + 2 < bytes.count, let high = hex(bytes[index + 1]),
            let low = hex(bytes[index + 2])
        {
            out.append(high << 4 | low)
            index += 3
        } else {
            out.append(bytes[index] == 43 ? 32 : bytes[index])
            index += 1
        }
    }
    return out
}
