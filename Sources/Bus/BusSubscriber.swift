import CZeroMQ
import Dispatch
public import Logging
public import NavCore
import Synchronization
import SystemIO

/// A message as received, with its header and when it arrived.
public struct ReceivedMessage: Sendable {
    /// The envelope header.
    public let header: EnvelopeHeader
    /// The decoded message.
    public let message: BusMessage
    /// The endpoint it came through.
    public let endpoint: String
    /// When it arrived [nanoseconds since 1970-01-01T00:00:00Z, receiver's wall clock].
    public let receiveTimeNanoseconds: Int64
    /// When it arrived [nanoseconds, the receiver's monotonic clock, which never jumps].
    public let receiveMonotonicNanoseconds: Int64
    /// The header and payload frames byte for byte, when the subscriber keeps them (``SubscriberOptions/keepsFrames``).
    public let frames: RecordedMessage.Frames?

    /// Creates a received message.
    public init(
        header: EnvelopeHeader, message: BusMessage, endpoint: String, receiveTimeNanoseconds: Int64,
        receiveMonotonicNanoseconds: Int64, frames: RecordedMessage.Frames? = nil
    ) {
        self.header = header
        self.message = message
        self.endpoint = endpoint
        self.receiveTimeNanoseconds = receiveTimeNanoseconds
        self.receiveMonotonicNanoseconds = receiveMonotonicNanoseconds
        self.frames = frames
    }

    /// The message as a recorder keeps it: with both receive times, its send time and (when kept) its frames.
    public var recorded: RecordedMessage {
        RecordedMessage(
            receiveTimeSeconds: Double(self.receiveTimeNanoseconds) / 1e9,
            receiveMonotonicSeconds: Double(self.receiveMonotonicNanoseconds) / 1e9,
            sendTimeSeconds: Double(self.header.sendTimeNanoseconds) / 1e9, stage: self.header.stage,
            sequence: self.header.sequence, message: self.message, frames: self.frames)
    }

    /// The message as a stage takes it: with its sender, its monotonic receive time and its send time [seconds].
    public func arrival<Value: Sendable>(_ value: Value) -> Arrival<Value> {
        Arrival(
            value, sender: self.header.stage, receivedSeconds: Double(self.receiveMonotonicNanoseconds) / 1e9,
            sentSeconds: Double(self.header.sendTimeNanoseconds) / 1e9)
    }
}

/// What a subscriber yields: messages, and changes in its publishers' liveness.
public enum BusEvent: Sendable {
    /// A valid message.
    case message(ReceivedMessage)
    /// The first message, or the first after a silence, from the publisher behind `endpoint`.
    case publisherUp(endpoint: String, stage: String)
    /// Nothing, not even a heartbeat, for the liveness timeout from the publisher behind `endpoint`.
    case publisherLost(endpoint: String, stage: String, silenceSeconds: Double)
}

/// Limits of one topic's receive queue.
public struct TopicOptions: Sendable, Equatable {
    /// Messages of this topic waiting for the consumer before the oldest is dropped [count, ≥ 1].
    public var highWaterMark: Int
    /// Keep only the latest waiting message of this topic (for latest-value streams such as heading).
    public var conflate: Bool
    /// At the high-water mark, hold the next message until the stage has taken one, instead of dropping the oldest:
    /// nothing is lost, and a lossless publisher (a session replay) waits in turn. Only for stages reading a replay:
    /// a live stage must not fall behind its inputs.
    public var waitsWhenFull: Bool

    /// Creates topic options.
    public init(highWaterMark: Int = 1000, conflate: Bool = false, waitsWhenFull: Bool = false) {
        self.highWaterMark = highWaterMark
        self.conflate = conflate
        self.waitsWhenFull = waitsWhenFull
    }
}

/// Settings for a subscriber.
public struct SubscriberOptions: Sendable {
    /// Topics to receive; empty means all. Heartbeats always arrive.
    public var topics: [String] = []
    /// Queue limits for topics not listed in `topicOptions`.
    public var defaultTopicOptions = TopicOptions()
    /// Queue limits per topic.
    public var topicOptions: [String: TopicOptions] = [:]
    /// Silence after which a publisher counts as lost [seconds, > 0].
    public var livenessTimeoutSeconds: Double = 0.75
    /// Frames larger than this are dropped as oversized [bytes].
    public var maximumFrameBytes: Int = Envelope.defaultMaximumFrameBytes
    /// ZMQ_RCVHWM of each socket [messages].
    public var receiveHighWaterMark: Int32 = 10_000
    /// CURVE: the key each endpoint's publisher must hold; nil for none (ipc, loopback).
    public var curve: CurveClientOptions?
    /// For each endpoint, the stage whose messages are expected there: messages from any other are dropped.
    public var expectedStages: [String: String] = [:]
    /// ZMTP heartbeats, TCP keepalive and reconnects of every connection.
    public var liveness = ConnectionLiveness()
    /// Keep each message's frames byte for byte (recorders do; it costs a copy of every message).
    public var keepsFrames = false

    /// These options for a recorder, which keeps everything: every message's frames, no topic conflated or cut short
    /// by a small queue (whether a full queue waits, for a replay, stays as it was).
    public func recording() -> SubscriberOptions {
        var options = self
        options.keepsFrames = true
        options.defaultTopicOptions = TopicOptions(
            highWaterMark: 100_000, waitsWhenFull: self.defaultTopicOptions.waitsWhenFull)
        options.topicOptions = [:]
        return options
    }

    /// Creates options with the defaults.
    public init(
        topics: [String] = [], defaultTopicOptions: TopicOptions = TopicOptions(),
        topicOptions: [String: TopicOptions] = [:], livenessTimeoutSeconds: Double = 0.75,
        maximumFrameBytes: Int = Envelope.defaultMaximumFrameBytes
    ) {
        self.topics = topics
        self.defaultTopicOptions = defaultTopicOptions
        self.topicOptions = topicOptions
        self.livenessTimeoutSeconds = livenessTimeoutSeconds
        self.maximumFrameBytes = maximumFrameBytes
    }
}

/// What a subscriber counted.
public struct SubscriberCounters: Sendable, Equatable, Codable {
    /// Valid messages received, heartbeats excluded [count].
    public var received: UInt64 = 0
    /// Heartbeats received [count].
    public var heartbeats: UInt64 = 0
    /// Messages missing according to sequence numbers [count].
    public var sequenceGaps: UInt64 = 0
    /// Times a sender's sequence started again from a lower number (a restarted publisher) [count].
    public var senderRestarts: UInt64 = 0
    /// Connections whose CURVE handshake failed: a publisher without the expected key, or none [count].
    public var refusedHandshakes: UInt64 = 0
    /// Frames dropped, by reason [count].
    public var dropped: [DropReason: UInt64] = [:]
    /// Messages dropped because their topic's receive queue was full [count].
    public var queueOverflows: UInt64 = 0
    /// Messages replaced by a newer one on a conflated topic [count].
    public var conflated: UInt64 = 0

    /// All drops of malformed input together [count].
    public var droppedTotal: UInt64 { self.dropped.values.reduce(0) { $0.addingClamped($1) } }

    /// Nothing counted yet.
    public init() {}

    /// The counters as named pairs prefixed `bus.`, for a stage's ``StageStatus``.
    public var busStatusCounters: [StatusCounter] {
        self.statusCounters.map { StatusCounter(name: "bus.\($0.name)", value: $0.value) }
    }

    /// The counters as named pairs, for a ``StageStatus``.
    public var statusCounters: [StatusCounter] {
        var list = [
            StatusCounter(name: "received", value: self.received),
            StatusCounter(name: "sequenceGaps", value: self.sequenceGaps),
            StatusCounter(name: "senderRestarts", value: self.senderRestarts),
            StatusCounter(name: "refusedHandshakes", value: self.refusedHandshakes),
            StatusCounter(name: "queueOverflows", value: self.queueOverflows),
            StatusCounter(name: "conflated", value: self.conflated),
        ]
        for reason in DropReason.allCases {
            list.append(StatusCounter(name: "dropped.\(reason.rawValue)", value: self.dropped[reason, default: 0]))
        }
        return list
    }
}

/// Whether the publisher behind one of a subscriber's endpoints is heard, and since when.
public struct PublisherPresence: Sendable, Equatable {
    /// The endpoint connected to.
    public var endpoint: String
    /// The stage expected there (from the config), else the last one heard there, else "".
    public var stage: String
    /// Heard within the liveness timeout.
    public var alive: Bool
    /// Ever heard since the subscriber started.
    public var everHeard: Bool
    /// Since when it has been alive, or silent (the subscriber's start when never heard) [nanoseconds, monotonic].
    public var sinceNanoseconds: Int64
}

/// Receives bus messages on its own thread and yields them as an `AsyncSequence` of ``BusEvent``.
///
/// One SUB socket per endpoint, so that each publisher's liveness is known. Bad frames are counted,
/// logged once per reason and endpoint, and dropped; the stream goes on. One consumer at a time.
public final class BusSubscriber: AsyncSequence, Sendable {
    public typealias Element = BusEvent

    /// The endpoints connected to.
    public let endpoints: [String]
    private let queue: EventQueue
    private let counters = Mutex(SubscriberCounters())
    private let presenceState: Mutex<[PublisherPresence]>
    private let stopFlag = Atomic<Bool>(false)
    private let finishedFlag = Mutex(false)
    private let threadDone = DispatchSemaphore(value: 0)
    /// The receive thread (or the hub's thread) as a task executor: consume this subscriber inside
    /// `withTaskExecutorPreference(subscriber.executor)` to receive without a thread switch.
    public let executor: ReceiveExecutor
    /// In memory: takes this subscriber off its hub.
    private let detach = Mutex<(@Sendable () -> Void)?>(nil)

    /// Connects to every endpoint and starts the receive thread.
    public init(
        context: ZMQContext, connect endpoints: [String], options: SubscriberOptions = SubscriberOptions(),
        logger: Logger = Logger(label: "hapticnav.bus")
    ) throws {
        var sockets: [ZMQSocket] = []
        var monitors: [ZMQSocket] = []
        do {
            for endpoint in endpoints {
                let socket = try ZMQSocket(context: context, type: ZMQSocketType.subscriber)
                sockets.append(socket)
                try socket.setOption(ZMQOption.receiveHighWaterMark, options.receiveHighWaterMark)
                try options.liveness.apply(to: socket)
                if let curve = options.curve {
                    guard Curve.isAvailable else { throw CurveError.unavailable }
                    guard let key = curve.publisherKeys[endpoint] else {
                        throw CurveError.noPublisherKey(endpoint: endpoint)
                    }
                    try socket.makeCurveClient(identity: curve.identity, serverKey: key)
                }
                // A failed handshake (another key there, no key, not ZeroMQ at all) ends libzmq's connection to the
                // endpoint for good: the receive thread hears of it from this monitor, counts it and connects again.
                let monitorEndpoint = context.nextMonitorEndpoint()
                guard
                    zmq_socket_monitor(
                        socket.handle, monitorEndpoint,
                        ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED
                            | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                            | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0
                else { throw ZMQError(operation: "zmq_socket_monitor(\(endpoint))") }
                let monitor = try ZMQSocket(context: context, type: ZMQ_PAIR)
                monitors.append(monitor)
                try monitor.connect(monitorEndpoint)
                if options.topics.isEmpty {
                    try socket.subscribe("")
                } else {
                    try socket.subscribe(EnvelopeHeader.heartbeatTopic)
                    for topic in options.topics { try socket.subscribe(topic) }
                }
                try socket.connect(endpoint)
            }
        } catch {
            for socket in sockets { socket.close() }
            for monitor in monitors { monitor.close() }
            throw error
        }
        self.endpoints = endpoints
        self.presenceState = Self.presence(endpoints, options: options)
        self.queue = Self.queue(options)
        self.executor = ReceiveExecutor()
        let receiver = Receiver(
            subscriber: self, sockets: sockets, monitors: monitors, endpoints: endpoints, options: options,
            executor: self.executor, logger: logger)
        SystemThread.start(name: "bus-receive") { receiver.run() }
    }

    /// Connects to every endpoint of `hub` (stages composed in one process): messages arrive in memory, from their
    /// sender's call, with the same checks (sender, header, payload, sequence, liveness) and the same queues. The
    /// consumer runs on the hub's thread: consume inside `withTaskExecutorPreference(subscriber.executor)`.
    public init(
        hub: DirectHub, connect endpoints: [String], options: SubscriberOptions = SubscriberOptions(),
        logger: Logger = Logger(label: "hapticnav.bus")
    ) {
        self.endpoints = endpoints
        self.presenceState = Self.presence(endpoints, options: options)
        self.queue = Self.queue(options)
        self.executor = hub.executor
        let receiver = Receiver(
            subscriber: self, sockets: [], monitors: [], endpoints: endpoints, options: options,
            executor: hub.executor, logger: logger, inMemory: true)
        let inlet = DirectInlet(receiver: receiver, options: options)
        hub.connect(inlet, to: endpoints)
        self.detach.withLock { $0 = { hub.disconnect(inlet) } }
    }

    private static func presence(_ endpoints: [String], options: SubscriberOptions) -> Mutex<[PublisherPresence]> {
        let started = SystemClock.monotonicNanoseconds()
        return Mutex(
            endpoints.map {
                PublisherPresence(
                    endpoint: $0, stage: options.expectedStages[$0] ?? "", alive: false, everHeard: false,
                    sinceNanoseconds: started)
            })
    }

    private static func queue(_ options: SubscriberOptions) -> EventQueue {
        EventQueue(
            defaultLimits: .init(
                highWaterMark: Swift.max(1, options.defaultTopicOptions.highWaterMark),
                conflate: options.defaultTopicOptions.conflate,
                waitsWhenFull: options.defaultTopicOptions.waitsWhenFull),
            limitsByTopic: options.topicOptions.mapValues {
                .init(
                    highWaterMark: Swift.max(1, $0.highWaterMark), conflate: $0.conflate,
                    waitsWhenFull: $0.waitsWhenFull)
            })
    }

    deinit {
        self.stopFlag.store(true, ordering: .relaxed)
    }

    /// Each endpoint's publisher: heard or not, and since when.
    public var presence: [PublisherPresence] {
        self.presenceState.withLock { $0 }
    }

    fileprivate func notePresence(socketIndex: Int, stage: String, alive: Bool, at nanoseconds: Int64) {
        self.presenceState.withLock {
            $0[socketIndex].alive = alive
            $0[socketIndex].sinceNanoseconds = nanoseconds
            if alive { $0[socketIndex].everHeard = true }
            if !stage.isEmpty { $0[socketIndex].stage = stage }
        }
    }

    /// A snapshot of the counters.
    public var snapshot: SubscriberCounters {
        var copy = self.counters.withLock { $0 }
        copy.queueOverflows = self.queue.overflowDrops.load(ordering: .relaxed)
        copy.conflated = self.queue.conflated.load(ordering: .relaxed)
        return copy
    }

    /// Stops the receive thread, closes the sockets and ends the sequence. Returns within about 100 ms.
    public func close() {
        let alreadyClosed = self.finishedFlag.withLock { closed -> Bool in
            defer { closed = true }
            return closed
        }
        guard !alreadyClosed else { return }
        if let detach = self.detach.withLock({ $0 }) {
            detach()
        } else {
            self.stopFlag.store(true, ordering: .releasing)
            self.executor.wake()
            _ = self.threadDone.wait(timeout: .now() + 2)
        }
        self.queue.finish()
    }

    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        let queue: EventQueue

        public mutating func next() async -> BusEvent? {
            await self.queue.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(queue: self.queue)
    }

    /// Only the messages, without liveness events.
    public var messages: AsyncCompactMapSequence<BusSubscriber, ReceivedMessage> {
        self.compactMap { event in
            if case let .message(received) = event { return received }
            return nil
        }
    }

    fileprivate var isStopping: Bool { self.stopFlag.load(ordering: .acquiring) }

    fileprivate func receiverFinished() {
        self.threadDone.signal()
    }

    fileprivate func endStream() {
        self.queue.finish()
    }

    fileprivate func deliver(_ event: BusEvent, topic: String?) {
        self.queue.push(event, topic: topic)
    }

    /// For a topic that waits when full: true while its queue is at the high-water mark.
    fileprivate func mustWait(topic: String) -> Bool { self.queue.mustWait(topic: topic) }

    fileprivate func count(_ update: (inout SubscriberCounters) -> Void) {
        self.counters.withLock { update(&$0) }
    }
}

/// The receive thread's state; lives on that thread only (in memory: used under its inlet's lock).
final class Receiver: @unchecked Sendable {
    private struct Liveness {
        var stage: String = ""
        var lastSeenNanoseconds: Int64 = 0
        var alive = false
    }

    private let subscriber: BusSubscriber
    private let sockets: [ZMQSocket]
    private let monitors: [ZMQSocket]
    /// Sockets to connect again, with the monotonic time when [nanoseconds].
    private var reconnects: [Int: Int64] = [:]
    /// Per socket: the current connection completed its handshake, or its failure was already counted.
    private var handshakeSettled: [Bool]
    private let endpoints: [String]
    /// Per socket, the stage whose messages alone are accepted there (looked up once, not per message).
    private let expectedStages: [String?]
    private let options: SubscriberOptions
    private let executor: ReceiveExecutor
    private let logger: Logger
    private var liveness: [Liveness]
    /// Messages are handed over in memory by their sender (``DirectHub``), not read from sockets by this thread.
    private let inMemory: Bool
    /// One numbered stream: a stage's messages of one type on one socket, and the last number seen.
    private struct Stream {
        var stage: String
        var last: UInt64
    }

    /// Per socket and message type (index `socketIndex * 256 + typeID`), the streams seen there: one, unless another
    /// stage published at the endpoint. Looked up by index and a short string comparison, not hashed per message.
    private var streams: [[Stream]]
    /// Streams kept per socket and type; beyond it the oldest is forgotten (a sender inventing stage names).
    private static let streamsPerSlot = 16
    // Reused for every message: zmq_msg_recv releases a frame's previous content itself.
    private let topicFrame = ZMQFrame()
    private let headerFrame = ZMQFrame()
    private let payloadFrame = ZMQFrame()
    private let extraFrame = ZMQFrame()
    private var logged: Set<String> = []
    /// Topics seen, as strings (``topicName(_:)``).
    private var knownTopics: [String] = []

    init(
        subscriber: BusSubscriber, sockets: [ZMQSocket], monitors: [ZMQSocket], endpoints: [String],
        options: SubscriberOptions, executor: ReceiveExecutor, logger: Logger, inMemory: Bool = false
    ) {
        self.inMemory = inMemory
        self.subscriber = subscriber
        self.executor = executor
        self.sockets = sockets
        self.monitors = monitors
        self.endpoints = endpoints
        self.expectedStages = endpoints.map { options.expectedStages[$0] }
        self.options = options
        self.logger = logger
        self.liveness = Array(repeating: Liveness(), count: endpoints.count)
        self.handshakeSettled = Array(repeating: false, count: endpoints.count)
        self.streams = Array(repeating: [], count: max(1, endpoints.count) * 256)
    }

    func run() {
        self.executor.adoptCurrentThread()
        defer {
            for socket in self.sockets { socket.close() }
            for monitor in self.monitors { monitor.close() }
            self.executor.retire()
            self.subscriber.receiverFinished()
        }
        var pollSet: PollSet
        do {
            pollSet = try PollSet(sockets: self.sockets + self.monitors, wake: self.executor.wakeDescriptor)
        } catch {
            self.logger.error("cannot receive from \(self.endpoints.joined(separator: ", ")): \(error)")
            self.subscriber.endStream()
            return
        }
        let wakeIndex = self.sockets.count + self.monitors.count
        while !self.subscriber.isStopping {
            pollSet.wait(timeoutMilliseconds: self.waitMilliseconds(now: SystemClock.monotonicNanoseconds()))
            for index in pollSet.ready {
                if index == wakeIndex {
                    self.executor.acknowledgeWake()
                } else if index >= self.sockets.count {
                    self.drainMonitor(socketIndex: index - self.sockets.count)
                } else {
                    do {
                        if try !self.drain(socketIndex: index) { pollSet.markPending(index) }
                    } catch {
                        // ETERM: the context is shutting down, as expected on close. Anything else ends receiving
                        // for good: say so loudly, and end the stream so that the consumer sees it.
                        if !error.isTermination {
                            self.logger.error(
                                "receiving from \(self.endpoints.joined(separator: ", ")) stopped: \(error)")
                        }
                        self.subscriber.endStream()
                        return
                    }
                }
                // Consumers preferring this executor run here, right after their message arrived.
                self.executor.runPendingJobs()
            }
            let now = SystemClock.monotonicNanoseconds()
            for (index, due) in self.reconnects where due <= now {
                self.reconnects[index] = nil
                let socket = self.sockets[index]
                _ = zmq_disconnect(socket.handle, self.endpoints[index])
                if zmq_connect(socket.handle, self.endpoints[index]) != 0 {
                    self.logger.error(
                        "cannot connect again to \(self.endpoints[index]): \(ZMQError(operation: "zmq_connect"))")
                }
                // Those calls may have taken the socket's signal: it is read again without waiting for one.
                pollSet.markPending(index)
            }
            self.checkLiveness(now: now)
            // A publisher lost, said from this thread, resumes its consumer here: it runs now, not at the next input.
            self.executor.runPendingJobs()
        }
    }

    /// How long the thread may wait for input: until a publisher heard so far would have been silent for longer than
    /// the liveness timeout, or a socket is due to connect again; at most half a second (stopping wakes it at once).
    private func waitMilliseconds(now: Int64) -> Int {
        var due = now + 500_000_000
        let timeout = Int64(self.options.livenessTimeoutSeconds * 1e9)
        for liveness in self.liveness where liveness.alive {
            due = min(due, liveness.lastSeenNanoseconds + timeout + 1)
        }
        for reconnect in self.reconnects.values { due = min(due, reconnect) }
        return max(0, Int((due - now + 999_999) / 1_000_000))
    }

    /// Says so for each publisher silent for longer than the liveness timeout.
    func checkLiveness(now: Int64) {
        let timeout = Int64(self.options.livenessTimeoutSeconds * 1e9)
        for index in self.liveness.indices where self.liveness[index].alive {
            let silence = now - self.liveness[index].lastSeenNanoseconds
            if silence > timeout {
                self.liveness[index].alive = false
                self.subscriber.notePresence(
                    socketIndex: index, stage: self.liveness[index].stage, alive: false,
                    at: self.liveness[index].lastSeenNanoseconds)
                self.subscriber.deliver(
                    .publisherLost(
                        endpoint: self.endpoints[index], stage: self.liveness[index].stage,
                        silenceSeconds: Double(silence) / 1e9),
                    topic: nil)
            }
        }
    }

    /// Reads the socket's messages until it is empty (true), or up to a burst's bound (false: more may wait), so that
    /// one busy publisher cannot starve liveness checks. Throws what libzmq reports other than "nothing waiting".
    private func drain(socketIndex: Int) throws(ZMQError) -> Bool {
        let socket = self.sockets[socketIndex]
        for _ in 0..<10_000 {
            guard try self.topicFrame.receive(from: socket) else { return true }
            let receiveTime = SystemClock.wallNanoseconds()
            let receiveMonotonic = SystemClock.monotonicNanoseconds()
            var frameCount = 1
            var oversized = self.topicFrame.size > self.options.maximumFrameBytes
            if self.topicFrame.hasMore, (try? self.headerFrame.receive(from: socket)) == true {
                frameCount = 2
                oversized = oversized || self.headerFrame.size > self.options.maximumFrameBytes
                if self.headerFrame.hasMore, (try? self.payloadFrame.receive(from: socket)) == true {
                    frameCount = 3
                    oversized = oversized || self.payloadFrame.size > self.options.maximumFrameBytes
                    var more = self.payloadFrame.hasMore
                    while more {
                        guard (try? self.extraFrame.receive(from: socket)) == true else { break }
                        frameCount += 1
                        more = self.extraFrame.hasMore
                    }
                }
            }
            let topic = self.topicFrame.withBytes { self.topicName($0) }
            self.headerFrame.withBytes { header in
                self.payloadFrame.withBytes { payload in
                    self.accept(
                        topic: topic, frameCount: frameCount, oversized: oversized, header: header, payload: payload,
                        socketIndex: socketIndex, receiveTime: receiveTime, receiveMonotonic: receiveMonotonic)
                }
            }
        }
        return false
    }

    /// A topic frame's text: one of the topics seen so far, compared byte by byte rather than decoded and allocated
    /// again for each message (the cache is bounded: a sender inventing topics is decoded each time beyond it).
    private func topicName(_ bytes: UnsafeRawBufferPointer) -> String {
        for known in self.knownTopics where known.utf8.elementsEqual(bytes) { return known }
        let topic = String(decoding: bytes, as: UTF8.self)
        if self.knownTopics.count < 32 && topic.utf8.elementsEqual(bytes) { self.knownTopics.append(topic) }
        return topic
    }

    /// Checks one message (its sender, header, payload and sequence) and hands it to the consumer, or counts and
    /// drops it: the same checks whichever transport brought it.
    func accept(
        topic: String, frameCount: Int, oversized: Bool, header headerBytes: UnsafeRawBufferPointer,
        payload payloadBytes: UnsafeRawBufferPointer, socketIndex: Int, receiveTime: Int64, receiveMonotonic: Int64
    ) {
        let endpoint = self.endpoints[socketIndex]
        if oversized {
            self.drop(
                .init(reason: .oversized, detail: "a frame exceeds \(self.options.maximumFrameBytes) bytes"),
                topic: topic, endpoint: endpoint)
            return
        }
        let isHeartbeat = topic == EnvelopeHeader.heartbeatTopic
        guard frameCount == 3 else {
            self.drop(
                .init(reason: .malformed, detail: "\(frameCount) frames, expected 3"),
                topic: topic, endpoint: endpoint)
            return
        }
        do {
            let header = try Envelope.decodeHeader(headerBytes, knownStage: self.liveness[socketIndex].stage)
            if let expected = self.expectedStages[socketIndex], header.stage != expected {
                throw DecodeFailure(
                    reason: .unexpectedSender,
                    detail: "sent by stage '\(header.stage.prefix(64))', where only '\(expected)' publishes")
            }
            self.noteAlive(socketIndex: socketIndex, stage: header.stage, at: receiveMonotonic)
            if isHeartbeat {
                guard header.typeID == EnvelopeHeader.heartbeatTypeID else {
                    throw DecodeFailure(
                        reason: .malformed, detail: "type id \(header.typeID) on the heartbeat topic")
                }
                self.subscriber.count { $0.heartbeats = $0.heartbeats.addingClamped(1) }
                return
            }
            let message = try Envelope.decodePayload(topic: topic, header: header, payload: payloadBytes)
            let frames: RecordedMessage.Frames? =
                self.options.keepsFrames ? .init(header: Array(headerBytes), payload: Array(payloadBytes)) : nil
            self.checkSequence(header, topic: topic, socketIndex: socketIndex)
            self.subscriber.count { $0.received = $0.received.addingClamped(1) }
            // A lossless input: the stage, which runs on this thread, makes room before the next message goes in.
            // (In memory the sender runs on that thread itself: the queue keeps its bound and counts what it drops.)
            while !self.inMemory && self.subscriber.mustWait(topic: topic) {
                self.executor.runPendingJobs()
                if self.subscriber.mustWait(topic: topic) { SystemThread.sleep(seconds: 0.00005) }
            }
            self.subscriber.deliver(
                .message(
                    ReceivedMessage(
                        header: header, message: message, endpoint: endpoint,
                        receiveTimeNanoseconds: receiveTime,
                        receiveMonotonicNanoseconds: receiveMonotonic, frames: frames)),
                topic: topic)
            // A consumer on this thread's executor handles it now, before the next receive (in memory: once the
            // sender's job has returned).
            if !self.inMemory { self.executor.runPendingJobs() }
        } catch let failure as DecodeFailure {
            self.drop(failure, topic: topic, endpoint: endpoint)
        } catch {
            self.drop(.init(reason: .malformed, detail: "\(error)"), topic: topic, endpoint: endpoint)
        }
    }

    /// Connection events from a socket's monitor. A connection that ends before its handshake completed (another
    /// key there, no key, not ZeroMQ) never carried a message: it is counted, logged once, and the endpoint is
    /// connected again, since libzmq gives up on it for good after a protocol error and the rightful publisher may
    /// come back there.
    private func drainMonitor(socketIndex: Int) {
        let monitor = self.monitors[socketIndex]
        let event = ZMQFrame()
        let address = ZMQFrame()
        while (try? event.receive(from: monitor)) == true {
            guard event.hasMore, (try? address.receive(from: monitor)) == true else { continue }
            let kind = Int32(event.withBytes { $0.count >= 2 ? $0.loadUnaligned(as: UInt16.self) : 0 })
            switch kind {
            case ZMQ_EVENT_CONNECTED:
                self.handshakeSettled[socketIndex] = false
            case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
                self.handshakeSettled[socketIndex] = true
            case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
                self.refuse(socketIndex, "its authentication refused this subscriber's key")
            case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                self.refuse(socketIndex, "it does not hold the expected key, or speaks no CURVE")
            case ZMQ_EVENT_DISCONNECTED:
                self.refuse(socketIndex, "the peer there does not speak this bus's protocol")
                let delay = Int64(self.options.liveness.reconnectIntervalMaximumMilliseconds) * 1_000_000
                self.reconnects[socketIndex] = SystemClock.monotonicNanoseconds() + delay
            default:
                break
            }
        }
    }

    /// Counts and logs (once per endpoint) a connection that ended before its handshake completed.
    private func refuse(_ socketIndex: Int, _ detail: String) {
        guard !self.handshakeSettled[socketIndex] else { return }
        self.handshakeSettled[socketIndex] = true
        self.subscriber.count { $0.refusedHandshakes = $0.refusedHandshakes.addingClamped(1) }
        let endpoint = self.endpoints[socketIndex]
        self.logOnce(
            "handshake|\(endpoint)",
            "could not authenticate the publisher at \(endpoint): \(detail); nothing from there is accepted (counted; further failures there are counted silently)"
        )
    }

    private func noteAlive(socketIndex: Int, stage: String, at receiveMonotonic: Int64) {
        self.liveness[socketIndex].lastSeenNanoseconds = receiveMonotonic
        if !self.liveness[socketIndex].alive || self.liveness[socketIndex].stage != stage {
            self.liveness[socketIndex].alive = true
            self.liveness[socketIndex].stage = stage
            self.subscriber.notePresence(
                socketIndex: socketIndex, stage: stage, alive: true,
                at: self.liveness[socketIndex].lastSeenNanoseconds)
            self.subscriber.deliver(.publisherUp(endpoint: self.endpoints[socketIndex], stage: stage), topic: nil)
        }
    }

    private func checkSequence(_ header: EnvelopeHeader, topic: String, socketIndex: Int) {
        let slot = socketIndex * 256 + Int(header.typeID)
        guard let index = self.streams[slot].firstIndex(where: { $0.stage == header.stage }) else {
            if self.streams[slot].count >= Self.streamsPerSlot { self.streams[slot].removeFirst() }
            self.streams[slot].append(Stream(stage: header.stage, last: header.sequence))
            return
        }
        let last = self.streams[slot][index].last
        self.streams[slot][index].last = header.sequence
        let endpoint = self.endpoints[socketIndex]
        switch SequenceTracking.classify(last: last, next: header.sequence) {
        case .next:
            break
        case let .gap(missing):
            self.subscriber.count { $0.sequenceGaps = $0.sequenceGaps.addingClamped(missing) }
            self.logOnce(
                "gap|\(endpoint)|\(header.stage)|\(topic)",
                "sequence gap: \(missing) message(s) missing on topic '\(topic)' from stage '\(header.stage)' at \(endpoint) (counted; further gaps are counted silently)"
            )
        case .restart:
            // A sequence that goes back (or repeats) is a publisher that started again: its numbering starts
            // over, so the stream's tracking starts over with it rather than counting a gap of 2^64.
            self.subscriber.count { $0.senderRestarts = $0.senderRestarts.addingClamped(1) }
            self.logOnce(
                "restart|\(endpoint)|\(header.stage)|\(topic)",
                "stage '\(header.stage)' at \(endpoint) restarted its numbering on topic '\(topic)' (\(last) then \(header.sequence)); counted as a restart"
            )
        }
    }

    private func drop(_ failure: DecodeFailure, topic: String, endpoint: String) {
        self.subscriber.count { $0.dropped[failure.reason] = $0.dropped[failure.reason, default: 0].addingClamped(1) }
        let printableTopic = topic.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 32 } ? topic : "<binary>"
        self.logOnce(
            "\(failure.reason)|\(endpoint)",
            "dropped a \(failure.reason.rawValue) frame on topic '\(printableTopic)' from \(endpoint): \(failure.detail) (counted; further \(failure.reason.rawValue) frames from there are counted silently)"
        )
    }

    private func logOnce(_ key: String, _ message: String) {
        guard self.logged.insert(key).inserted else { return }
        self.logger.warning("\(message)")
    }
}
