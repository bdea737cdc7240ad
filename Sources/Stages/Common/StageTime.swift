import SystemIO

/// The time a stage reads, injected (one for every stage, its status included): the monotonic clock its timeouts, waits and arrivals' receive times are on, the
/// wall clock its messages and status reports are dated with (the core never reads a clock: its time arrives inside
/// the messages), and a wait on the monotonic clock. `.system` in a pipeline; a test passes a manual clock's and
/// steps time itself, so that a stage's waits take no real time.
public struct StageTime: Sendable {
    /// Now on the monotonic clock [seconds since an arbitrary start]: it never jumps when the wall clock is set.
    public let monotonicSeconds: @Sendable () -> Double
    /// Now on the wall clock [seconds since 1970-01-01T00:00:00Z, UTC].
    public let wallSeconds: @Sendable () -> Double
    /// Waits this long on the monotonic clock (throws when cancelled).
    public let sleep: @Sendable (Duration) async throws -> Void

    public init(
        monotonicSeconds: @escaping @Sendable () -> Double, wallSeconds: @escaping @Sendable () -> Double,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.monotonicSeconds = monotonicSeconds
        self.wallSeconds = wallSeconds
        self.sleep = sleep
    }

    /// The system's clocks (CLOCK_MONOTONIC, CLOCK_REALTIME) and Swift's task sleep.
    public static let system = StageTime(
        monotonicSeconds: SystemClock.monotonicSeconds, wallSeconds: SystemClock.wallSeconds,
        sleep: { try await Task.sleep(for: $0) })
}

extension StageTime {
    /// Time driven by `clock` (a test's manual clock): monotonic seconds from when this was made, the wall clock
    /// `wallEpochSeconds` then and moving with it, and waits on it.
    public init<C: Clock>(clock: C, wallEpochSeconds: Double = 1_700_000_000) where C.Duration == Duration {
        let epoch = clock.now
        let seconds: @Sendable () -> Double = {
            let elapsed = epoch.duration(to: clock.now).components
            return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        }
        self.init(
            monotonicSeconds: seconds, wallSeconds: { wallEpochSeconds + seconds() },
            sleep: { try await clock.sleep(for: $0) })
    }
}
