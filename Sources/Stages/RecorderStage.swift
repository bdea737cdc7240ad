public import Logging
public import NavCore
public import ServiceLifecycle

/// The recorder stage: hands every received message to a ``MessageSink`` plugin until shutdown.
public actor RecorderStage<Input: AsyncSequence & Sendable>: Service where Input.Element == RecordedMessage {
    private let name: String
    private let input: Input
    private let sink: any MessageSink
    private let logger: Logger
    private var recorded: UInt64 = 0

    /// Creates the stage.
    public init(name: String, input: Input, sink: any MessageSink, logger: Logger) {
        self.name = name
        self.input = input
        self.sink = sink
        self.logger = logger
    }

    public func run() async throws {
        do {
            for try await message in self.input.cancelOnGracefulShutdown() {
                try await self.sink.record(message)
                self.recorded += 1
            }
        } catch is CancellationError {
            // Shutdown: fall through and close the recording.
        }
        try await self.sink.finish()
        self.logger.info("recorder '\(self.name)': \(self.recorded) messages recorded")
    }
}
