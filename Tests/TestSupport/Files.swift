public import Foundation
import SystemIO

// Tests write their configs and fixtures with these, not Foundation's `write(to:)`, which calls `fsync` (atomically
// or not): on a busy disk that waits seconds, holding one of the test process's few pool threads while other suites'
// timed waits run on the rest.

extension Data {
    /// Writes the bytes as the whole file at `path` (a new file renamed into place), without waiting for the disk.
    public func store(toFile path: String) throws {
        try Paths.writeWhole(Array(self), to: path)
    }
}

extension StringProtocol {
    /// Writes the text as UTF-8, the whole file at `path` (a new file renamed into place), without waiting for the disk.
    public func store(toFile path: String) throws {
        try Paths.writeWhole(Array(self.utf8), to: path)
    }
}
