/// How a per-sender sequence number relates to the one before it. Pure arithmetic on wire values, so it never traps.
public enum SequenceTracking {
    /// What the next number says about the stream.
    public enum Step: Equatable, Sendable {
        /// Exactly one more than the last.
        case next
        /// Higher than expected: this many messages are missing [count, ≥ 1].
        case gap(missing: UInt64)
        /// Equal to or lower than the last: the sender started its numbering again (a restarted publisher).
        case restart
    }

    /// Classifies `next` after `last`. 2^64 − 1 followed by 0 is the next message (the counter wrapped);
    /// followed by anything above 0 it is a restart, never a gap of nearly 2^64.
    public static func classify(last: UInt64, next: UInt64) -> Step {
        if next == last &+ 1 { return .next }
        if next > last { return .gap(missing: next - last - 1) }  // next > last ≥ 0, so next − last − 1 ≥ 0
        return .restart
    }
}

extension UInt64 {
    /// `self + other`, stopping at `UInt64.max` instead of trapping (for counters fed by the wire).
    public func addingClamped(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = self.addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
