public import NavCore

/// Collects what a stage publishes, in memory: the one publisher test double.
public actor MemoryPublisher: MessagePublisher {
    /// Everything published, in order.
    public private(set) var messages: [BusMessage] = []

    /// Creates an empty publisher.
    public init() {}

    public func publish(_ message: BusMessage) {
        self.messages.append(message)
    }
}
