#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own that runs the tasks preferring it and wakes them from their sleeps.
///
/// A task that paces itself (a simulated walker publishing 60 messages a second) and sleeps with
/// ``sleep(untilMonotonicNanoseconds:)`` inside `withTaskExecutorPreference(executor)` wakes once per tick, on this
/// thread, and runs there (default actors it calls included). With `Task.sleep` each tick is a timer armed and fired
/// by Dispatch's manager thread, which then wakes a thread of the cooperative pool: two threads woken, and the
/// timer's system calls, for each tick.
///
/// The thread runs until ``shutdown()``; jobs that come after it go to the global concurrent executor, and a sleep
/// asked for after it throws `CancellationError`.
public final class PacingExecutor: TaskExecutor, @unchecked Sendable {
    private struct Sleeper {
        let id: UInt64
        let deadline: Int64
        let continuation: UnsafeContinuation<Void, any Error>
    }

    // Everything below the lock is read and written with `lock` held.
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var sleepers: [Sleeper] = []
    /// Sleeps cancelled before they were listed: listing one of them resumes it at once, with the error.
    private var cancelledEarly: Set<UInt64> = []
    private var lastID: UInt64 = 0
    private var running = true
    private var stopping = false
    /// The thread's id once it runs (0 before).
    private var owner: pthread_t = 0

    /// Starts the thread, named `name` (as `top -H` and `perf` show it).
    public init(name: String) {
        pthread_mutex_init(self.lock, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(self.condition, &attributes)
        pthread_condattr_destroy(&attributes)
        SystemThread.start(name: name) { self.run() }
    }

    deinit {
        pthread_cond_destroy(self.condition)
        pthread_mutex_destroy(self.lock)
        self.condition.deallocate()
        self.lock.deallocate()
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(self.lock)
        defer { pthread_mutex_unlock(self.lock) }
        return try body()
    }

    /// True on the executor's own thread (`lock` held).
    private var onOwnThread: Bool { self.owner != 0 && pthread_equal(self.owner, pthread_self()) != 0 }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let accepted = self.locked { () -> Bool in
            guard self.running else { return false }
            self.jobs.append(unowned)
            if !self.onOwnThread { pthread_cond_signal(self.condition) }
            return true
        }
        if !accepted { globalConcurrentExecutor.enqueue(unowned) }
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Sleeps until the monotonic clock (``SystemClock/monotonicNanoseconds()``) reads `deadline`; the task then goes
    /// on on its preferred executor (this one, inside `withTaskExecutorPreference`). Throws `CancellationError` when
    /// the task is cancelled, at once, or when the executor has shut down.
    public func sleep(untilMonotonicNanoseconds deadline: Int64) async throws {
        let id = self.locked {
            self.lastID &+= 1
            return self.lastID
        }
        defer { _ = self.locked { self.cancelledEarly.remove(id) } }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let listed = self.locked { () -> Bool in
                    guard self.running, self.cancelledEarly.remove(id) == nil else { return false }
                    self.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    if !self.onOwnThread { pthread_cond_signal(self.condition) }
                    return true
                }
                if !listed { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = self.locked { () -> Sleeper? in
                guard let index = self.sleepers.firstIndex(where: { $0.id == id }) else {
                    // Not listed yet (or already woken: then the entry goes when the sleep returns).
                    self.cancelledEarly.insert(id)
                    return nil
                }
                return self.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Ends the thread once the jobs queued so far have run; later jobs go to the global concurrent executor.
    /// Sleeps still waiting throw `CancellationError`. Idempotent; callable from any thread, this one included.
    public func shutdown() {
        self.locked {
            self.stopping = true
            pthread_cond_signal(self.condition)
        }
    }

    private func run() {
        var batch: [UnownedJob] = []
        var woken: [Sleeper] = []
        pthread_mutex_lock(self.lock)
        self.owner = pthread_self()
        while true {
            if !self.jobs.isEmpty {
                swap(&batch, &self.jobs)
                pthread_mutex_unlock(self.lock)
                for job in batch { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
                batch.removeAll(keepingCapacity: true)
                pthread_mutex_lock(self.lock)
                continue
            }
            let now = SystemClock.monotonicNanoseconds()
            if self.sleepers.contains(where: { $0.deadline <= now }) {
                woken = self.sleepers.filter { $0.deadline <= now }
                self.sleepers.removeAll { $0.deadline <= now }
                pthread_mutex_unlock(self.lock)
                // Each resumed task is enqueued here, on this thread: it runs in the next round, without a signal.
                for sleeper in woken { sleeper.continuation.resume() }
                woken.removeAll(keepingCapacity: true)
                pthread_mutex_lock(self.lock)
                continue
            }
            if self.stopping { break }
            if let earliest = self.sleepers.map(\.deadline).min() {
                var until = timespec(
                    tv_sec: Int(earliest / 1_000_000_000), tv_nsec: Int(earliest % 1_000_000_000))
                pthread_cond_timedwait(self.condition, self.lock, &until)
            } else {
                pthread_cond_wait(self.condition, self.lock)
            }
        }
        self.running = false
        let leftoverJobs = self.jobs
        let leftoverSleepers = self.sleepers
        self.jobs = []
        self.sleepers = []
        pthread_mutex_unlock(self.lock)
        for job in leftoverJobs { globalConcurrentExecutor.enqueue(job) }
        for sleeper in leftoverSleepers { sleeper.continuation.resume(throwing: CancellationError()) }
    }
}

/// Waits until each time of a timeline comes, at `pace` times real time from the first: 1 is real time, 10 ten times
/// faster, 0 as fast as the readers take it (no wait at all). With a ``PacingExecutor``, it sleeps on that executor's
/// thread; without one, with `Task.sleep`.
public struct Pacer: Sendable {
    /// Times real time [≥ 0].
    public let pace: Double
    private let executor: PacingExecutor?
    /// The monotonic clock [nanoseconds] and the timeline's time [seconds] at the first wait.
    private var start: (monotonic: Int64, time: Double)?

    /// A pacer whose clock starts at the first wait.
    public init(pace: Double, executor: PacingExecutor? = nil) {
        self.pace = pace
        self.executor = executor
    }

    /// Waits until `time` [seconds, the timeline's] has come. The first time given starts the clock and comes at once;
    /// a time already come (a fix and a heading due together) does not sleep, nor does one earlier than the first.
    /// Throws `CancellationError` when the task is cancelled.
    public mutating func wait(until time: Double) async throws {
        guard self.pace > 0 else { return try Task.checkCancellation() }
        guard let start = self.start else {
            self.start = (SystemClock.monotonicNanoseconds(), time)
            return try Task.checkCancellation()
        }
        let due = start.monotonic + Int64((max(0, time - start.time) / self.pace * 1e9).rounded())
        let now = SystemClock.monotonicNanoseconds()
        guard due > now else { return try Task.checkCancellation() }
        if let executor = self.executor {
            try await executor.sleep(untilMonotonicNanoseconds: due)
        } else {
            try await Task.sleep(for: .nanoseconds(due - now))
        }
    }
}
