import Synchronization

/// A clock that moves only when a test says so: stages take it instead of the real clock, and a test drives time
/// by hand (`advance(by:)`) instead of sleeping.
public final class ManualClock: Clock, Sendable {
    /// A point in manual time: the time advanced since the clock was made.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock was made.
        public var offset: Duration

        public func advanced(by duration: Duration) -> Instant { Instant(offset: self.offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - self.offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID = 0
    }

    private let state = Mutex(State())

    /// A clock at time zero.
    public init() {}

    public var now: Instant { self.state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// Sleepers waiting right now [count]: a test can wait for a stage to be asleep before advancing.
    public var sleeperCount: Int { self.state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = self.state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Cancelled after the check above but before this sleeper was listed, its handler found nothing to
                // cancel: looked at again under the lock that the handler takes.
                let resumeNow = self.state.withLock { state -> Bool? in
                    if Task.isCancelled { return nil }
                    if deadline <= state.now { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                switch resumeNow {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume()
                case false?: break
                }
            }
        } onCancel: {
            let cancelled = self.state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on by `duration`, waking every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due = self.state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
