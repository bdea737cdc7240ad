extension StringProtocol {
    /// The text cut or padded with spaces to `width` characters, for columns.
    public func padded(to width: Int) -> String {
        self.count >= width
            ? String(self.prefix(width)) : String(self) + String(repeating: " ", count: width - self.count)
    }

    /// The text without the leading and trailing characters that match `isTrimmed`.
    public func trimming(where isTrimmed: (Character) -> Bool) -> String {
        guard let first = self.firstIndex(where: { !isTrimmed($0) }),
            let last = self.lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        return String(self[first...last])
    }

    /// The text without leading and trailing white space (spaces, tabs, line breaks).
    public func trimmed() -> String {
        self.trimming { $0.isWhitespace || $0.isNewline }
    }
}
