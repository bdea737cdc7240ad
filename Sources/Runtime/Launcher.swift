#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import CSpawn
import SystemIO
import Glibc
#endif
import Dispatch
public import Logging

/// Starts each stage of a pipeline as its own child process (`hapticnav stage NAME --config FILE`),
/// forwards SIGTERM and SIGINT to them, and stops them all when one ends cleanly or a signal arrives. A stage that
/// fails (a non-zero exit, a crash) is started again after 1, 2, 4 … 30 s; after `restartLimit` failures in a row
/// (each within `healthySeconds` of its start) the launcher gives up and stops everything.
///
/// No orphans: children get SIGTERM, then SIGKILL after the stop timeout; and each child's
/// ``ParentWatchdog`` stops it should this process die without a chance to clean up.
public struct Launcher: Sendable {
    /// The config file passed on to children.
    public let configFile: String
    /// The stages to start, in order.
    public let stages: [String]
    /// The executable to start children from (this program).
    public let executable: String
    /// Time after a stage ends on its own before the others are asked to stop, so that they can
    /// receive its last messages [seconds].
    public var drainSeconds = 0.5
    /// Time from SIGTERM to SIGKILL for a child that does not stop [seconds].
    public var stopTimeoutSeconds = 1.5
    /// Extra arguments for every child, before the stage name (for example a log level).
    public var childArguments: [String] = []
    /// Failures in a row after which a stage is not started again and the pipeline stops.
    public var restartLimit = 5
    /// Longest wait before a restart [seconds]; the waits double from 1 s up to it.
    public var maximumBackoffSeconds = 30.0
    /// A stage that ran this long before it failed starts its count of failures afresh [seconds].
    public var healthySeconds = 30.0
    /// Asked every 10 ms: true stops the pipeline as SIGTERM would (a caller that ends a run itself).
    public var stopRequested: (@Sendable () -> Bool)?
    private let logger: Logger

    /// Creates a launcher.
    public init(
        configFile: String, stages: [String], executable: String = Launcher.currentExecutable(),
        logger: Logger
    ) {
        self.configFile = configFile
        self.stages = stages
        self.executable = executable
        self.logger = logger
    }

    /// The path of the running program.
    public static func currentExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    private struct Child {
        var name: String
        var pid: pid_t
        var exitStatus: Int32?
        /// On the monotonic clock [seconds], as every deadline here: a step of the wall clock moves none of them.
        var startedAt = SystemClock.monotonicSeconds()
        /// When a failed stage is due to start again.
        var restartAt: Double?
        var failuresInARow = 0
        var restarts = 0
    }

    /// Runs the pipeline to its end; returns 0 when every stage ended cleanly.
    public func run() throws -> Int32 {
        let signals = SignalWatch(signals: [SIGTERM, SIGINT, SIGHUP])
        var children: [Child] = []
        for name in self.stages {
            do {
                let pid = try self.spawn(stage: name)
                self.logger.info("started stage '\(name)' (pid \(pid))")
                children.append(Child(name: name, pid: pid))
            } catch {
                self.logger.error("cannot start stage '\(name)': \(error)")
                self.stop(&children, reason: "a stage failed to start")
                return 1
            }
        }

        var stopDeadline: Double?
        var drainDeadline: Double?
        var failed = false
        while children.contains(where: { $0.exitStatus == nil || ($0.restartAt != nil && stopDeadline == nil) }) {
            if let signal = signals.take(), stopDeadline == nil {
                self.logger.info("received signal \(signal); stopping \(children.count) stage(s)")
                stopDeadline = self.signalAll(&children, SIGTERM)
            }
            if stopDeadline == nil, self.stopRequested?() == true {
                self.logger.info("stopping \(children.count) stage(s)")
                stopDeadline = self.signalAll(&children, SIGTERM)
            }
            for index in children.indices {
                guard stopDeadline == nil, drainDeadline == nil, let due = children[index].restartAt,
                    SystemClock.monotonicSeconds() >= due
                else { continue }
                children[index].restartAt = nil
                do {
                    children[index].pid = try self.spawn(stage: children[index].name)
                    children[index].exitStatus = nil
                    children[index].startedAt = SystemClock.monotonicSeconds()
                    children[index].restarts += 1
                    self.logger.warning(
                        "restarted stage '\(children[index].name)' (pid \(children[index].pid), restart \(children[index].restarts))"
                    )
                } catch {
                    self.logger.error("cannot restart stage '\(children[index].name)': \(error); stopping the pipeline")
                    failed = true
                    stopDeadline = self.signalAll(&children, SIGTERM)
                }
            }
            for index in children.indices where children[index].exitStatus == nil {
                var status: Int32 = 0
                let result = waitpid(children[index].pid, &status, WNOHANG)
                guard result == children[index].pid else { continue }
                let code = Self.exitCode(status)
                children[index].exitStatus = code
                let name = children[index].name
                if stopDeadline != nil {
                    self.logger.info("stage '\(name)' stopped (status \(code))")
                } else if code == 0 {
                    self.logger.info("stage '\(name)' finished; stopping the pipeline in \(self.drainSeconds) s")
                    drainDeadline = drainDeadline ?? SystemClock.monotonicSeconds() + self.drainSeconds
                } else {
                    if SystemClock.monotonicSeconds() - children[index].startedAt >= self.healthySeconds {
                        children[index].failuresInARow = 0
                    }
                    children[index].failuresInARow += 1
                    let failures = children[index].failuresInARow
                    if failures > self.restartLimit {
                        self.logger.error(
                            "stage '\(name)' failed \(failures) times in a row (status \(code)); giving up: stopping the pipeline"
                        )
                        failed = true
                        stopDeadline = self.signalAll(&children, SIGTERM)
                    } else {
                        let wait = min(self.maximumBackoffSeconds, pow(2, Double(failures - 1)))
                        self.logger.error(
                            "stage '\(name)' failed (status \(code)); starting it again in \(wait) s (failure \(failures) of at most \(self.restartLimit) in a row)"
                        )
                        children[index].restartAt = SystemClock.monotonicSeconds() + wait
                    }
                }
            }
            if let drain = drainDeadline, stopDeadline == nil, SystemClock.monotonicSeconds() >= drain {
                stopDeadline = self.signalAll(&children, SIGTERM)
            }
            if let deadline = stopDeadline, SystemClock.monotonicSeconds() >= deadline {
                for child in children where child.exitStatus == nil {
                    self.logger.warning("stage '\(child.name)' (pid \(child.pid)) ignored SIGTERM; killing it")
                    kill(child.pid, SIGKILL)
                }
                stopDeadline = .infinity
            }
            usleep(10_000)
        }
        signals.stop()
        let clean = !failed && children.allSatisfy { $0.exitStatus == 0 || $0.exitStatus == 128 + SIGTERM }
        return clean ? 0 : 1
    }

    private func stop(_ children: inout [Child], reason: String) {
        _ = self.signalAll(&children, SIGTERM)
        let deadline = SystemClock.monotonicSeconds() + self.stopTimeoutSeconds
        while SystemClock.monotonicSeconds() < deadline, children.contains(where: { $0.exitStatus == nil }) {
            for index in children.indices where children[index].exitStatus == nil {
                var status: Int32 = 0
                if waitpid(children[index].pid, &status, WNOHANG) == children[index].pid {
                    children[index].exitStatus = Self.exitCode(status)
                }
            }
            usleep(10_000)
        }
        for child in children where child.exitStatus == nil {
            kill(child.pid, SIGKILL)
            var status: Int32 = 0
            waitpid(child.pid, &status, 0)
        }
    }

    private func signalAll(_ children: inout [Child], _ signal: Int32) -> Double {
        for child in children where child.exitStatus == nil {
            kill(child.pid, signal)
        }
        return SystemClock.monotonicSeconds() + self.stopTimeoutSeconds
    }

    private static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    private func spawn(stage: String) throws -> pid_t {
        let arguments = [self.executable, "stage"] + self.childArguments + [stage, "--config", self.configFile]
        var environment = ProcessInfo.processInfo.environment
        environment[ParentWatchdog.environmentKey] = String(getpid())
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Children start with default signal handling and nothing blocked, whatever this process set.
        ChildProcess.startWithDefaultSignals(&attributes)
        // A stage inherits only its standard streams: a descriptor of this process opened without close-on-exec
        // (a band's port, a library's socket) would otherwise stay open in it for its whole life, and a peer
        // waiting for that descriptor's end would never see it.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        _ = hn_spawn_close_from(&actions, 3)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, self.executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw LauncherError.spawnFailed(stage: stage, errno: result)
        }
        return pid
    }
}

/// Why the launcher could not start a stage.
public enum LauncherError: Error, CustomStringConvertible {
    /// `posix_spawn` failed.
    case spawnFailed(stage: String, errno: Int32)

    public var description: String {
        switch self {
        case let .spawnFailed(stage, code): return "cannot start stage '\(stage)': \(String(cString: strerror(code)))"
        }
    }
}

/// Catches signals without a handler that runs arbitrary code: they are blocked for the process and
/// taken from a dispatch source, then polled from the launcher's loop.
final class SignalWatch: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []
    private let pending = Mutex<[Int32]>([])

    init(signals: [Int32]) {
        for signal in signals {
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { [weak self] in
                guard let self else { return }
                self.pending.withLock { $0.append(signal) }
            }
            source.resume()
            self.sources.append(source)
        }
    }

    func take() -> Int32? {
        self.pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func stop() {
        for source in self.sources { source.cancel() }
    }
}
