public import Foundation
import Synchronization
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

/// The folders this test process made for its tests: removed when it exits, so that a run of the suite leaves
/// nothing behind (a run's walking-graph caches, routing-engine builds, recordings and child processes' output came
/// to some 140 MB a run, never removed). Set `HAPTICNAV_KEEP_TEST_FILES=1` to keep them and look into a failure.
private let madeFolders = Mutex<[String]>([])

private let removeFoldersAtExit: Void = {
    atexit {
        if let keep = getenv("HAPTICNAV_KEEP_TEST_FILES"), String(cString: keep) != "0", keep.pointee != 0 { return }
        for folder in madeFolders.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
    }
}()

/// A fresh folder for a test's sockets and files, short enough for ipc:// paths (108 bytes at most), removed when
/// the test process exits.
public func scratchFolder(_ prefix: String = "hn-test") throws -> String {
    _ = removeFoldersAtExit
    let path = "/tmp/\(prefix)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    madeFolders.withLock { $0.append(path) }
    return path
}

/// A path named `name` in a scratch folder of its own (nothing there yet).
public func scratchPath(_ name: String) throws -> String {
    try scratchFolder() + "/" + name
}
