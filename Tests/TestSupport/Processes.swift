public import Foundation
import Synchronization

public struct TestProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A child process whose output goes to files, so that a full pipe can never block it.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    public let stdoutFile: URL
    public let stderrFile: URL

    /// Starts `executable`; its standard input is `input` when given (the caller holds its writing end: the child
    /// sees the end when the caller closes it or goes), else this process's.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: Pipe? = nil
    ) throws {
        let output = try Output()
        self.stdoutFile = output.stdout
        self.stderrFile = output.stderr
        self.process.executableURL = URL(fileURLWithPath: executable)
        self.process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        self.process.environment = env
        self.process.standardOutput = try FileHandle(forWritingTo: self.stdoutFile)
        self.process.standardError = try FileHandle(forWritingTo: self.stderrFile)
        if let input { self.process.standardInput = input }
        try self.process.run()
    }

    public var pid: pid_t { self.process.processIdentifier }

    public var stdout: String { (try? String(contentsOf: self.stdoutFile, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOf: self.stderrFile, encoding: .utf8)) ?? "" }

    /// Waits up to `seconds` for the process to end; returns its status, or nil if it is still running.
    public func wait(seconds: Double) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while self.process.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return self.process.terminationStatus
    }

    public func signal(_ number: Int32) {
        kill(self.pid, number)
    }

    /// Ends the process whatever it is doing (for cleanup).
    public func ensureStopped() {
        if self.process.isRunning {
            kill(self.pid, SIGKILL)
            self.process.waitUntilExit()
        }
    }
}

/// The pids whose parent is `parent`, read from /proc.
public func childPIDs(of parent: pid_t) -> [pid_t] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    return entries.compactMap { entry -> pid_t? in
        guard let pid = pid_t(entry),
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, let ppid = pid_t(fields[1]) else { return nil }
        return ppid == parent ? pid : nil
    }
}

/// A process's resident memory [kB], from /proc (0 when it is gone).
public func residentKilobytes(of pid: pid_t) -> Int {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

/// True when `pid` names a live process (a zombie counts as gone).
public func isAlive(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state != "Z" && state != "X"
}

/// `pid` and all its descendants, children first found breadth-first from /proc.
public func processTree(of pid: pid_t) -> [pid_t] {
    var all = [pid]
    var index = 0
    while index < all.count {
        all += childPIDs(of: all[index])
        index += 1
    }
    return all
}

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds`; returns whether it held.
/// The one way tests wait: for a condition, with a bound, never a fixed sleep.
public func eventually(within seconds: Double, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// A value several tests share (a city's walking graph), computed once on a thread of its own: a test that asks while
/// it is computed waits suspended. A global `let` would instead hold each asking test's pool thread in the runtime's
/// one-time initialisation until it is done; the pool has a thread per core (two here), so at the suite's start,
/// when every suite asks at once, every other suite's stages waited with them (a stage's first fix once waited more
/// than 30 s).
public final class SharedOffThePool<T: Sendable>: Sendable {
    private let compute: @Sendable () throws -> T
    /// The one computation, started by the first asker (``offThePool``); every asker awaits it.
    private let task = Mutex<Task<T, any Error>?>(nil)

    public init(_ compute: @escaping @Sendable () throws -> T) { self.compute = compute }

    public var value: T {
        get async throws {
            let task = self.task.withLock { task in
                if let task { return task }
                let started = Task { [compute] in try await offThePool(compute) }
                task = started
                return started
            }
            return try await task.value
        }
    }
}

/// Runs `body` (synchronous work that takes a while: parsing a recording, building test data) on a thread of its own,
/// so that it does not hold one of the cooperative pool's few threads while other suites' stages wait to run.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

extension ChildProcess {
    /// A pair of files for a process's standard output and error.
    public struct Output: Sendable {
        public let stdout: URL
        public let stderr: URL

        public init() throws {
            let folder = URL(fileURLWithPath: try scratchFolder("hn-e2e"))
            self.stdout = folder.appendingPathComponent("stdout")
            self.stderr = folder.appendingPathComponent("stderr")
            _ = FileManager.default.createFile(atPath: self.stdout.path, contents: nil)
            _ = FileManager.default.createFile(atPath: self.stderr.path, contents: nil)
        }
    }
}
