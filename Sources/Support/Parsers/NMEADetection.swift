/// Whether a file's first bytes are NMEA 0183, judged by what NMEA is rather than by a few known talkers:
/// sentences starting with `$` or `!`, any talker (two characters) or a proprietary `$P…` address, fields after
/// a comma, and a valid checksum. Unknown and proprietary sentences count as much as GGA or RMC; binary
/// protocols mixed into the stream (u-blox UBX, SiRF) are skipped over.
public enum NMEADetection {

    /// The number of well-formed sentences in `head`: checksummed ones, or (when a log has no checksums at all)
    /// ones whose address and fields look right.
    public static func sentences(in head: [UInt8]) -> (checksummed: Int, unchecked: Int) {
        var checksummed = 0
        var unchecked = 0
        var index = 0
        while index < head.count {
            // A sentence starts at '$' or '!' anywhere on a line: a binary frame may precede it.
            guard head[index] == UInt8(ascii: "$") || head[index] == UInt8(ascii: "!") else {
                index += 1
                continue
            }
            var end = index + 1
            while end < head.count, head[end] != 10, head[end] != 13, end - index <= 120 { end += 1 }
            switch self.classify(head[index..<end]) {
            case .checksummed: checksummed += 1
            case .unchecked: unchecked += 1
            case .none: break
            }
            index = max(end, index + 1)
        }
        return (checksummed, unchecked)
    }

    /// True when `head` holds NMEA: a sentence with a valid checksum, or (from a logger that drops checksums)
    /// a well-formed sentence without one.
    public static func isNMEA(_ head: [UInt8]) -> Bool {
        let found = self.sentences(in: head)
        return found.checksummed + found.unchecked >= 1
    }

    private enum Kind { case checksummed, unchecked }

    private static func classify(_ line: ArraySlice<UInt8>) -> Kind? {
        // The address: two talker characters and a type (3 or more), or 'P' and a maker's code; then a comma.
        let body = line.dropFirst()
        let address = body.prefix { $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "*") }
        guard (4...8).contains(address.count), body.count > address.count,
            body[body.index(body.startIndex, offsetBy: address.count)] == UInt8(ascii: ","),
            address.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) })
        else { return nil }
        // Printable ASCII only, as NMEA 0183 allows.
        guard line.allSatisfy({ (32...126).contains($0) }) else { return nil }
        guard let star = body.lastIndex(of: UInt8(ascii: "*")) else {
            return address.count >= 5 ? .unchecked : nil
        }
        let digits = body[(star + 1)...]
        guard digits.count == 2, let sum = UInt8(String(decoding: digits, as: UTF8.self), radix: 16) else {
            return nil
        }
        let computed = body[body.startIndex..<star].reduce(UInt8(0), ^)
        return computed == sum ? .checksummed : nil
    }
}
