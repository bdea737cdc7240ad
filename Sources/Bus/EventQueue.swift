import Synchronization

/// A single-consumer queue between the receive thread and an async consumer, with a bound per topic.
///
/// Each topic keeps at most its high-water mark of waiting messages (the oldest goes first when a
/// new one arrives); a conflated topic keeps only its latest. Liveness events are never dropped.
final class EventQueue: Sendable {
    struct Limits: Sendable {
        var highWaterMark: Int
        var conflate: Bool
        /// At the high-water mark, wait for the consumer instead of dropping the oldest (a replay's subscriber).
        var waitsWhenFull = false
    }

    private struct Entry {
        var topic: String?
        var event: BusEvent
    }

    private struct State {
        var entries: [Entry] = []
        var head = 0
        var countByTopic: [String: Int] = [:]
        /// The consumer's suspension. Unchecked (no allocation per message on the hot path): it is taken out under
        /// the lock by whoever resumes it, so it is resumed exactly once.
        var waiter: UnsafeContinuation<BusEvent?, Never>?
        var finished = false
    }

    private let state = Mutex(State())
    private let limitsByTopic: [String: Limits]
    private let defaultLimits: Limits

    /// Dropped because a topic's queue was full [count].
    let overflowDrops = Atomic<UInt64>(0)
    /// Replaced by a newer message on a conflated topic [count].
    let conflated = Atomic<UInt64>(0)

    /// Some topic waits when full: only then does the receive thread look before it pushes.
    let someTopicWaits: Bool

    init(defaultLimits: Limits, limitsByTopic: [String: Limits]) {
        self.defaultLimits = defaultLimits
        self.limitsByTopic = limitsByTopic
        self.someTopicWaits = ([defaultLimits] + limitsByTopic.values).contains { $0.waitsWhenFull && !$0.conflate }
    }

    /// True when `topic` waits when full and its queue is at the high-water mark (the queue not finished).
    func mustWait(topic: String) -> Bool {
        guard self.someTopicWaits else { return false }
        let limits = self.limitsByTopic[topic] ?? self.defaultLimits
        guard limits.waitsWhenFull, !limits.conflate else { return false }
        return self.state.withLock { !$0.finished && $0.countByTopic[topic, default: 0] >= limits.highWaterMark }
    }

    /// Hands an event to the consumer, or queues it within its topic's limits.
    func push(_ event: BusEvent, topic: String?) {
        let waiter: UnsafeContinuation<BusEvent?, Never>? = self.state.withLock { state in
            if state.finished { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if let topic {
                let limits = self.limitsByTopic[topic] ?? self.defaultLimits
                let count = state.countByTopic[topic, default: 0]
                if count > 0 && (limits.conflate || count >= limits.highWaterMark) {
                    if let index = state.entries[state.head...].firstIndex(where: { $0.topic == topic }) {
                        state.entries.remove(at: index)
                        state.countByTopic[topic] = count - 1
                        if limits.conflate {
                            self.conflated.add(1, ordering: .relaxed)
                        } else {
                            self.overflowDrops.add(1, ordering: .relaxed)
                        }
                    }
                }
                state.countByTopic[topic, default: 0] += 1
            }
            state.entries.append(Entry(topic: topic, event: event))
            return nil
        }
        waiter?.resume(returning: event)
    }

    private static func popLocked(_ state: inout State) -> BusEvent? {
        guard state.head < state.entries.count else { return nil }
        let entry = state.entries[state.head]
        state.head += 1
        if let topic = entry.topic { state.countByTopic[topic, default: 1] -= 1 }
        if state.head == state.entries.count {
            state.entries.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head > 1024 && state.head * 2 > state.entries.count {
            state.entries.removeFirst(state.head)
            state.head = 0
        }
        return entry.event
    }

    /// The next event, waiting for one; nil once finished and drained, or when the task is cancelled.
    func next() async -> BusEvent? {
        if let ready = self.state.withLock({ Self.popLocked(&$0) }) { return ready }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<BusEvent?, Never>) in
                let resumeNow: (Bool, BusEvent?) = self.state.withLock { state in
                    if let ready = Self.popLocked(&state) { return (true, ready) }
                    if state.finished || Task.isCancelled { return (true, nil) }
                    precondition(state.waiter == nil, "a bus subscriber has one consumer at a time")
                    state.waiter = continuation
                    return (false, nil)
                }
                if resumeNow.0 { continuation.resume(returning: resumeNow.1) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> UnsafeContinuation<BusEvent?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Ends the sequence: the consumer drains what is queued, then sees nil.
    func finish() {
        let waiter = self.state.withLock { state -> UnsafeContinuation<BusEvent?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
