extension RandomAccessCollection<UInt8> where Index == Int {
    /// Where `pattern` first occurs, counted from the collection's start (0 for its first byte), or nil. The one byte
    /// search of the HTTP and WebSocket code: a head's end (CR LF CR LF), a chunk line's end, a secret in a request.
    package func offset(of pattern: [UInt8]) -> Int? {
        guard let first = pattern.first else { return 0 }
        guard self.count >= pattern.count else { return nil }
        var index = self.startIndex
        while index <= self.endIndex - pattern.count {
            if self[index] == first, self[index..<(index + pattern.count)].elementsEqual(pattern) {
                return index - self.startIndex
            }
            index += 1
        }
        return nil
    }
}
