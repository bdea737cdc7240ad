import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemIO

/// The bus in memory, for stages composed in one process (as ROS 2 composes nodes): a publisher bound on the hub
/// hands each message, encoded exactly as on a socket (header with its sequence number and send time, payload), to
/// every subscriber connected to its endpoint, whose checks and queues are those of a socket's subscriber.
///
/// Everything composed on a hub runs on its one thread (``executor``): a message's sender enqueues its reader's job
/// on the thread it runs on, so a message costs no thread switch and no system call. Endpoints are names on the
/// hub (a config's `ipc://` paths as they are); nothing is bound in the file system or the network.
public final class DirectHub: Sendable {
    /// The hub's thread as a task executor: run composed stages (and whoever drives them) with it as their task
    /// executor preference.
    public let executor = ReceiveExecutor()
    /// A ZeroMQ context for what is not the bus (a sink's control listener, on `inproc://` endpoints); terminated as
    /// the hub's thread ends.
    public let context = ZMQContext()

    private struct State {
        var outlets: [String: DirectOutlet] = [:]
        var inlets: [ObjectIdentifier: DirectInlet] = [:]
        var running = true
    }

    private let state = Mutex(State())
    private let threadDone = DispatchSemaphore(value: 0)

    /// How often publishers' liveness is checked [seconds].
    private static let livenessCheckSeconds = 0.025

    /// Starts the hub's thread.
    public init() {
        let executor = self.executor
        let context = self.context
        SystemThread.start(name: "bus-direct") { [self] in
            executor.adoptCurrentThread()
            var lastCheck = SystemClock.monotonicNanoseconds()
            var wake = pollfd(fd: executor.wakeDescriptor, events: Int16(POLLIN), revents: 0)
            while self.state.withLock({ $0.running }) {
                let timeout: Int32 = executor.hasPendingJobs ? 0 : Int32(Self.livenessCheckSeconds * 1000)
                _ = poll(&wake, 1, timeout)
                executor.acknowledgeWake()
                executor.runPendingJobs()
                let now = SystemClock.monotonicNanoseconds()
                if Double(now - lastCheck) / 1e9 >= Self.livenessCheckSeconds {
                    lastCheck = now
                    for inlet in self.state.withLock({ Array($0.inlets.values) }) { inlet.checkLiveness(now: now) }
                    executor.runPendingJobs()
                }
            }
            executor.retire()
            context.terminate()
            self.threadDone.signal()
        }
    }

    /// Stops the hub's thread once the job it runs returns; what is still queued goes to the global executor. Does
    /// not wait (it may be called from the hub's own thread).
    public func close() {
        let wasRunning = self.state.withLock { state -> Bool in
            defer { state.running = false }
            return state.running
        }
        guard wasRunning else { return }
        self.executor.wake()
    }

    /// The outlet of an endpoint, made on first use (by its publisher or a subscriber, whichever comes first).
    private func outlet(_ endpoint: String, in state: inout State) -> DirectOutlet {
        if let outlet = state.outlets[endpoint] { return outlet }
        let outlet = DirectOutlet(endpoint: endpoint)
        state.outlets[endpoint] = outlet
        return outlet
    }

    /// Binds a publisher to `endpoints`: refused for an endpoint another publisher holds.
    func bind(_ endpoints: [String]) throws -> [DirectOutlet] {
        try self.state.withLock { state in
            let outlets = endpoints.map { self.outlet($0, in: &state) }
            if let taken = outlets.first(where: \.isBound) { throw EndpointInUse(endpoint: taken.endpoint) }
            for outlet in outlets { outlet.isBound = true }
            return outlets
        }
    }

    /// Connects a subscriber to `endpoints`, bound yet or not (a publisher that binds later reaches it).
    func connect(_ inlet: DirectInlet, to endpoints: [String]) {
        self.state.withLock { state in
            for (index, endpoint) in endpoints.enumerated() {
                self.outlet(endpoint, in: &state).add(DirectOutlet.Connection(inlet: inlet, socketIndex: index))
            }
            state.inlets[ObjectIdentifier(inlet)] = inlet
        }
    }

    /// Takes a subscriber off every endpoint.
    func disconnect(_ inlet: DirectInlet) {
        self.state.withLock { state in
            for outlet in state.outlets.values { outlet.remove(inlet) }
            state.inlets[ObjectIdentifier(inlet)] = nil
        }
    }
}

/// One endpoint on a hub: whether a publisher holds it, and the subscribers connected to it.
final class DirectOutlet: Sendable {
    struct Connection: Sendable {
        let inlet: DirectInlet
        /// The endpoint's index among the subscriber's.
        let socketIndex: Int
    }

    private struct State {
        var bound = false
        var connections: [Connection] = []
    }

    let endpoint: String
    private let state = Mutex(State())

    init(endpoint: String) {
        self.endpoint = endpoint
    }

    var isBound: Bool {
        get { self.state.withLock { $0.bound } }
        set { self.state.withLock { $0.bound = newValue } }
    }

    /// Subscribers connected now [count].
    var connectionCount: Int { self.state.withLock { $0.connections.count } }

    func add(_ connection: Connection) {
        self.state.withLock { $0.connections.append(connection) }
    }

    func remove(_ inlet: DirectInlet) {
        self.state.withLock { $0.connections.removeAll { $0.inlet === inlet } }
    }

    /// Hands a message (`bytes`: its header, then its payload from `headerSize`) to every subscriber of its topic.
    func deliver(topic: String, bytes: [UInt8], headerSize: Int) {
        let connections = self.state.withLock { $0.connections }
        guard !connections.isEmpty else { return }
        bytes.withUnsafeBytes { all in
            let header = UnsafeRawBufferPointer(rebasing: all[..<headerSize])
            let payload = UnsafeRawBufferPointer(rebasing: all[headerSize...])
            for connection in connections {
                connection.inlet.offer(
                    topic: topic, header: header, payload: payload, socketIndex: connection.socketIndex)
            }
        }
    }
}

/// A subscriber's side of the hub: its topics, and its receiver's checks, one message at a time.
final class DirectInlet: Sendable {
    private let receiver: Mutex<Receiver>
    /// The topic prefixes taken, as a socket subscribes to them; empty for all.
    private let prefixes: [String]
    private let maximumFrameBytes: Int

    init(receiver: Receiver, options: SubscriberOptions) {
        self.receiver = Mutex(receiver)
        self.prefixes = options.topics.isEmpty ? [] : [EnvelopeHeader.heartbeatTopic] + options.topics
        self.maximumFrameBytes = options.maximumFrameBytes
    }

    func offer(topic: String, header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, socketIndex: Int) {
        guard self.prefixes.isEmpty || self.prefixes.contains(where: { topic.hasPrefix($0) }) else { return }
        let receiveTime = SystemClock.wallNanoseconds()
        let receiveMonotonic = SystemClock.monotonicNanoseconds()
        self.receiver.withLock { receiver in
            receiver.accept(
                topic: topic, frameCount: 3,
                oversized: header.count > self.maximumFrameBytes || payload.count > self.maximumFrameBytes,
                header: header, payload: payload,
                socketIndex: socketIndex, receiveTime: receiveTime, receiveMonotonic: receiveMonotonic)
        }
    }

    func checkLiveness(now: Int64) {
        self.receiver.withLock { $0.checkLiveness(now: now) }
    }
}
