import NavCore
/// Which output device the haptic sink drives: the first of its ordered list that is available. A value that
/// decides, so that fallback is unit-tested without devices or time; the sink carries out its changes.
public struct OutputSelection: Sendable, Equatable {
    /// A move from one device to another.
    public struct Change: Sendable, Equatable {
        /// The device that was active (its index in the list), to stop; nil when none was.
        public var from: Int?
        /// The device now active, to take over what plays; nil when none is available.
        public var to: Int?
        /// True when the new device is not the first choice (the sink reports itself degraded).
        public var degraded: Bool { self.to != 0 }

        /// A move from `from` to `to`.
        public init(from: Int?, to: Int?) {
            self.from = from
            self.to = to
        }
    }

    /// The active device's index, or nil.
    public private(set) var active: Int?

    /// No device is active until the first choice.
    public init() {}

    /// Chooses from `available`, one flag per device in order of preference; returns the change, if any.
    public mutating func choose(available: [Bool]) -> Change? {
        let chosen = available.firstIndex(of: true)
        guard chosen != self.active else { return nil }
        defer { self.active = chosen }
        return Change(from: self.active, to: chosen)
    }
}
