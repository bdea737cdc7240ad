/// Checks on text read from files, before parsers that trap on bad bytes see it.
public enum TextChecks {
    /// The first line [1-based] that is not valid UTF-8, or nil when all of `bytes` is.
    public static func firstLineNotUTF8(_ bytes: [UInt8]) -> Int? {
        var line = 1
        var start = 0
        var index = 0
        while index <= bytes.count {
            if index == bytes.count || bytes[index] == 10 {
                let ok =
                    bytes[start..<index].withContiguousStorageIfAvailable { buffer in
                        String(validating: buffer, as: UTF8.self) != nil
                    } ?? (String(validating: Array(bytes[start..<index]), as: UTF8.self) != nil)
                if !ok { return line }
                line += 1
                start = index + 1
            }
            index += 1
        }
        return nil
    }
}
