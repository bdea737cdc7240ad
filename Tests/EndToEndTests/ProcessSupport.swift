import Foundation
@_exported import TestSupport

/// The repository's root folder.
let repositoryRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The built `hapticnav` executable: `HAPTICNAV_BIN`, or the one beside the test bundle.
func hapticnavExecutable() throws -> String {
    if let path = ProcessInfo.processInfo.environment["HAPTICNAV_BIN"] { return path }
    let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    var folder = URL(fileURLWithPath: bundle).deletingLastPathComponent()
    if folder.lastPathComponent == "MacOS" || folder.pathExtension == "xctest" {
        folder = folder.deletingLastPathComponent()
    }
    let candidate = folder.appendingPathComponent("hapticnav").path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw TestProcessError("no hapticnav at \(candidate); run `swift build` first or set HAPTICNAV_BIN")
    }
    return candidate
}

struct TestProcessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process whose output goes to files, so that a full pipe can never block it.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    let stdoutFile: URL
    let stderrFile: URL

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hapticnav-e2e-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        self.stdoutFile = folder.appendingPathComponent("stdout")
        self.stderrFile = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: self.stdoutFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: self.stderrFile.path, contents: nil)
        self.process.executableURL = URL(fileURLWithPath: executable)
        self.process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        self.process.environment = env
        self.process.standardOutput = try FileHandle(forWritingTo: self.stdoutFile)
        self.process.standardError = try FileHandle(forWritingTo: self.stderrFile)
        try self.process.run()
    }

    var pid: pid_t { self.process.processIdentifier }

    var stdout: String { (try? String(contentsOf: self.stdoutFile, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: self.stderrFile, encoding: .utf8)) ?? "" }

    /// Waits up to `seconds` for the process to end; returns its status, or nil if it is still running.
    func wait(seconds: Double) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while self.process.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return self.process.terminationStatus
    }

    func signal(_ number: Int32) {
        kill(self.pid, number)
    }

    /// Ends the process whatever it is doing (for cleanup).
    func ensureStopped() {
        if self.process.isRunning {
            kill(self.pid, SIGKILL)
            self.process.waitUntilExit()
        }
    }
}

/// The pids whose parent is `parent`, read from /proc.
func childPIDs(of parent: pid_t) -> [pid_t] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    return entries.compactMap { entry -> pid_t? in
        guard let pid = pid_t(entry),
              let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, let ppid = pid_t(fields[1]) else { return nil }
        return ppid == parent ? pid : nil
    }
}

/// True when `pid` names a live process (a zombie counts as gone).
func isAlive(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state != "Z" && state != "X"
}
