public import Bus
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemIO

/// How a simulated walk's stages run.
public enum StageComposition: Sendable {
    /// Each stage its own process (`hapticnav stage NAME --config FILE`) on ipc:// sockets, as a lab runs them.
    case processes
    /// Composed in this process, as ROS 2 composes nodes: `run` runs the named stage of the config file on the
    /// walk's hub until its task is cancelled. The same stage code, message encoding, sequence numbers and time
    /// checks, in memory: no process, no socket, no thread switch between them.
    case inProcess(run: @Sendable (_ stage: String, _ configFile: String, _ hub: DirectHub) async throws -> Void)

    /// Whether the stages share this process.
    public var isComposed: Bool {
        if case .inProcess = self { return true }
        return false
    }
}

/// One walk's stages, started as the composition says and stopped when the walk ends.
final class WalkStages {
    private let processes: [ChildProcess]
    private let tasks: [Task<Void, Never>]
    /// Composed stages that ended before they were stopped, with why.
    private final class Ended: Sendable {
        let list = Mutex<[String]>([])
    }
    private let ended = Ended()
    /// Composed stages whose task has returned [count].
    private final class Done: Sendable {
        let count = Atomic<Int>(0)
    }
    private let done = Done()

    init(
        _ composition: StageComposition, names: [String], configFile: String, executable: String,
        hub: DirectHub?
    ) throws {
        switch composition {
        case .processes:
            var processes: [ChildProcess] = []
            do {
                for name in names {
                    processes.append(
                        try ChildProcess(
                            executable: executable,
                            arguments: ["stage", name, "--config", configFile, "--log-level", "error"],
                            error: .inherit))
                }
            } catch {
                for process in processes {
                    process.signal(SIGTERM)
                    process.wait()
                }
                throw error
            }
            self.processes = processes
            self.tasks = []
        case let .inProcess(run):
            guard let hub else { throw WalkerEvaluation.Failure(description: "composed stages need a hub") }
            self.processes = []
            let ended = self.ended
            let done = self.done
            self.tasks = names.map { name in
                Task(executorPreference: hub.executor) {
                    defer { done.count.add(1, ordering: .relaxed) }
                    do {
                        try await run(name, configFile, hub)
                        ended.list.withLock { $0.append("\(name): ended") }
                    } catch {
                        if !Task.isCancelled {
                            StandardStreams.writeError("stage '\(name)': \(error)\n")
                            ended.list.withLock { $0.append("\(name): \(error)") }
                        }
                    }
                }
            }
        }
    }

    /// Every stage still runs.
    var allRunning: Bool {
        self.processes.allSatisfy(\.isRunning) && self.ended.list.withLock { $0.isEmpty }
    }

    /// Stops every stage: SIGTERM to each process and a wait for it; a composed stage's task is cancelled (it closes
    /// its sockets as it ends; the next walk's endpoints are its own). What a walk that ends well calls through
    /// ``stop(waitingSeconds:)``; a walk that fails stops them here.
    func stop() {
        for process in self.processes where process.isRunning { process.signal(SIGTERM) }
        for process in self.processes { process.wait() }
        for task in self.tasks { task.cancel() }
    }

    /// Stops every stage and waits, at most `seconds`, until each composed one has ended (a recorder has closed its
    /// session); says which did not.
    func stop(waitingSeconds seconds: Double) async {
        self.stop()
        let deadline = SystemClock.monotonicSeconds() + seconds
        while self.done.count.load(ordering: .relaxed) < self.tasks.count, SystemClock.monotonicSeconds() < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let left = self.tasks.count - self.done.count.load(ordering: .relaxed)
        if left > 0 {
            StandardStreams.writeError("\(left) composed stage(s) had not ended \(seconds) s after the walk\n")
        }
    }
}
