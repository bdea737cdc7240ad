public import Logging
public import NavCore
public import ServiceLifecycle
import Synchronization
public import Stages

/// The recorder stage: hands every received message to a ``MessageSink`` plugin until shutdown.
///
/// Asked to stop (a graceful shutdown, or its task cancelled), it first records what has already reached it: it
/// goes on taking messages until none has come for `quietSeconds` since the later of the stop and the last message
/// (waiting at most `drainSeconds`, within the launcher's 1.5 s before it kills a stage), so that the last messages
/// of a session (an arrival, a stop) are not lost because the recorder was a few messages behind.
public actor RecorderStage<Input: AsyncSequence & Sendable>: Service where Input.Element == RecordedMessage {
    private let name: String
    private let input: Input
    private let sink: any MessageSink
    private let logger: Logger
    private let time: StageTime
    private let quietSeconds: Double
    private let drainSeconds: Double
    private var recorded: UInt64 = 0
    /// When the last message was taken [seconds, the stage's monotonic time].
    private var lastTaken: Double

    /// Creates the stage.
    public init(
        name: String, input: Input, sink: any MessageSink, logger: Logger, time: StageTime = .system,
        quietSeconds: Double = 0.25, drainSeconds: Double = 1
    ) {
        self.name = name
        self.input = input
        self.sink = sink
        self.logger = logger
        self.time = time
        self.quietSeconds = quietSeconds
        self.drainSeconds = drainSeconds
        self.lastTaken = time.monotonicSeconds()
    }

    private func take(_ message: RecordedMessage) async throws {
        try await self.sink.record(message)
        self.recorded += 1
        self.lastTaken = self.time.monotonicSeconds()
    }

    private var quietFor: Double { self.time.monotonicSeconds() - self.lastTaken }

    public func run() async throws {
        // The input is read by a task of its own, which a stop does not cut off in the middle of its queue.
        let (ended, endedSink) = AsyncStream.makeStream(of: Never.self)
        let input = self.input
        let consumerEnded = Atomic<Bool>(false)
        let consumer = Task {
            defer {
                consumerEnded.store(true, ordering: .relaxed)
                endedSink.finish()
            }
            for try await message in input { try await self.take(message) }
        }
        // Until the input ends, or the stage is asked to stop.
        for await _ in ended.cancelOnGracefulShutdown() {}
        if !consumerEnded.load(ordering: .relaxed) {
            // Asked to stop: what has reached the recorder is recorded before it closes. (In a task of its own: this
            // one may be cancelled, and its waits would end at once.)
            let (time, quiet, limit) = (self.time, self.quietSeconds, self.drainSeconds)
            let stopped = time.monotonicSeconds()
            await Task {
                // Quiet since the later of the stop and the last message: a message still on its way when the stop
                // came is waited for too.
                while !consumerEnded.load(ordering: .relaxed),
                    min(self.quietFor, time.monotonicSeconds() - stopped) < quiet,
                    time.monotonicSeconds() - stopped < limit
                {
                    try? await time.sleep(.milliseconds(20))
                }
            }.value
            consumer.cancel()
        }
        let result = await consumer.result
        try await self.sink.finish()
        self.logger.info("recorder '\(self.name)': \(self.recorded) messages recorded")
        if case let .failure(error) = result, !(error is CancellationError) { throw error }
    }
}
