import SystemIO
import Testing

@Suite struct PacingExecutorTests {
    /// A task preferring the executor sleeps to five deadlines 20 ms apart: it wakes at each, not before, and goes on
    /// on the executor's own thread (where the walker's ticks run), not on a thread of the pool.
    @Test func aTaskPreferringItWakesAtEachDeadlineOnItsThread() async throws {
        let executor = PacingExecutor(name: "pacing-test")
        defer { executor.shutdown() }
        let wakes = try await withTaskExecutorPreference(executor) {
            var wakes: [(late: Int64, thread: String)] = []
            let start = SystemClock.monotonicNanoseconds()
            for tick in 1...5 {
                let due = start + Int64(tick) * 20_000_000
                try await executor.sleep(untilMonotonicNanoseconds: due)
                wakes.append((SystemClock.monotonicNanoseconds() - due, SystemThread.currentName))
            }
            return wakes
        }
        #expect(wakes.count == 5)
        for wake in wakes {
            #expect(wake.late >= 0, "woke \(-wake.late) ns before its deadline")
            #expect(wake.thread == "pacing-test")
        }
    }

    /// A sleep whose deadline has passed returns, without an error, on the executor's thread.
    @Test func aDeadlineAlreadyPastReturns() async throws {
        let executor = PacingExecutor(name: "pacing-test")
        defer { executor.shutdown() }
        let thread = try await withTaskExecutorPreference(executor) {
            try await executor.sleep(untilMonotonicNanoseconds: SystemClock.monotonicNanoseconds() - 1_000_000_000)
            return SystemThread.currentName
        }
        #expect(thread == "pacing-test")
    }

    /// Cancelling a task that sleeps for an hour ends its sleep with `CancellationError`, whenever the cancellation
    /// comes: before the sleep is listed, while it is listed, or before it began. 64 tasks, each cancelled after a
    /// different number of yields; none is left asleep (each would sleep an hour: the time limit ends the test).
    @Test(.timeLimit(.minutes(2))) func aCancelledSleepThrowsWheneverTheCancellationComes() async throws {
        let executor = PacingExecutor(name: "pacing-test")
        defer { executor.shutdown() }
        for round in 0..<64 {
            let sleeper = Task {
                try await withTaskExecutorPreference(executor) {
                    try await executor.sleep(
                        untilMonotonicNanoseconds: SystemClock.monotonicNanoseconds() + 3_600_000_000_000)
                }
            }
            for _ in 0..<(round % 8) { await Task.yield() }
            sleeper.cancel()
            await #expect(throws: CancellationError.self) { try await sleeper.value }
        }
    }

    /// Once shut down, the executor's thread ends: a sleep that was waiting throws, a task preferring the executor
    /// still runs (on the pool), and a later sleep throws.
    @Test(.timeLimit(.minutes(1))) func afterShutdownTasksStillRunAndSleepsThrow() async throws {
        let executor = PacingExecutor(name: "pacing-test")
        let (listing, willList) = AsyncStream.makeStream(of: Void.self)
        let waiting = Task {
            try await withTaskExecutorPreference(executor) {
                // Said from the job that goes on to list the sleep: the executor's thread, which alone can end, is
                // busy with that job until the sleep is listed.
                willList.yield()
                try await executor.sleep(
                    untilMonotonicNanoseconds: SystemClock.monotonicNanoseconds() + 3_600_000_000_000)
            }
        }
        for await _ in listing { break }
        executor.shutdown()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        let ran = await withTaskExecutorPreference(executor) { () async -> Bool in
            await Task.yield()
            return true
        }
        #expect(ran)
        await #expect(throws: CancellationError.self) {
            try await executor.sleep(untilMonotonicNanoseconds: SystemClock.monotonicNanoseconds() + 3_600_000_000_000)
        }
    }
}
