#if canImport(Glibc)
import Glibc
#endif
public import Logging
public import NavCore
import Synchronization
import SystemIO

/// Settings for a publisher.
public struct PublisherOptions: Sendable {
    /// Messages queued per subscriber before ZeroMQ drops new ones for it (ZMQ_SNDHWM) [count].
    public var sendHighWaterMark: Int32 = 1000
    /// Time between heartbeats [seconds, > 0].
    public var heartbeatIntervalSeconds: Double = 0.2
    /// ZMTP heartbeats, TCP keepalive and reconnects of every connection.
    public var liveness = ConnectionLiveness()
    /// CURVE encryption and the subscribers allowed to read; nil for none (ipc, loopback).
    public var curve: CurveServerOptions?
    /// Wait for a subscriber's room instead of dropping (a session replay as fast as it goes, which must lose nothing).
    /// A live stage never sets this: a stalled subscriber would stall it. It also counts subscribers as they join.
    public var lossless = false

    /// Creates options with the defaults.
    public init(sendHighWaterMark: Int32 = 1000, heartbeatIntervalSeconds: Double = 0.2) {
        self.sendHighWaterMark = sendHighWaterMark
        self.heartbeatIntervalSeconds = heartbeatIntervalSeconds
    }
}

/// Publishes messages on a bound PUB socket with per-topic sequence numbers and periodic heartbeats.
///
/// Thread-safe: the socket sits behind a `Mutex`. A send never blocks: ZeroMQ drops what a slow
/// subscriber cannot take once its high-water mark is reached, and that subscriber sees the gap.
public final class BusPublisher: MessagePublisher, Sendable {
    private struct State: ~Copyable {
        var socket: ZMQSocket?
        /// In memory (bound on a ``DirectHub``): the endpoints' outlets; nil once closed.
        var outlets: [DirectOutlet]?
        var sequences = [UInt64](repeating: 0, count: 256)
        var scratch = WireWriter(capacity: 512)
        /// Heartbeat subscriptions seen minus those withdrawn: one per subscriber socket (lossless mode).
        var subscribers = 0
    }

    /// The stage name written into every header.
    public let stage: String
    /// The endpoints bound.
    public let endpoints: [String]
    private let state: Mutex<State>
    private let heartbeatStop = Atomic<Bool>(false)
    private let lossless: Bool
    /// The socket files this publisher bound, with their identity, to remove on close.
    private let socketFiles: [IPCSocketFile]

    /// Binds a PUB socket to every endpoint and starts heartbeats.
    public init(
        context: ZMQContext, bind endpoints: [String], stage: String,
        options: PublisherOptions = PublisherOptions(), logger: Logger = Logger(label: "hapticnav.bus")
    ) throws {
        let socket = try ZMQSocket(
            context: context, type: options.lossless ? ZMQSocketType.extendedPublisher : ZMQSocketType.publisher)
        do {
            try socket.setOption(ZMQOption.sendHighWaterMark, options.sendHighWaterMark)
            if options.lossless {
                try socket.setOption(ZMQOption.publisherNoDrop, 1)
                try socket.setOption(ZMQOption.publisherVerbose, 1)
            }
            try options.liveness.apply(to: socket)
            if let curve = options.curve {
                guard Curve.isAvailable else { throw CurveError.unavailable }
                // The handler first, so that no connection is ever checked by nobody.
                try context.zapHandler(logger: logger).register(domain: stage, readers: curve.readers)
                try socket.makeCurveServer(curve, domain: stage)
            }
            for endpoint in endpoints {
                try prepareEndpoint(endpoint)
                try socket.bind(endpoint)
                if endpoint.hasPrefix("ipc://") {
                    // Only this user may connect: nobody else on the machine reads or drives the pipeline.
                    _ = chmod(String(endpoint.dropFirst("ipc://".count)), 0o600)
                }
            }
        } catch {
            socket.close()
            throw error
        }
        self.stage = stage
        self.endpoints = endpoints
        self.lossless = options.lossless
        self.socketFiles = endpoints.compactMap(IPCSocketFile.init(boundAt:))
        self.state = Mutex(State(socket: socket))
        self.startHeartbeats(intervalSeconds: options.heartbeatIntervalSeconds)
    }

    /// Binds to every endpoint of `hub` (stages composed in one process) and starts heartbeats: each message goes,
    /// encoded as on a socket, to the hub's subscribers of that endpoint, from this call. Lossless or not, nothing is
    /// dropped on the way (a subscriber's queue keeps its own bound); CURVE does not apply.
    public init(
        hub: DirectHub, bind endpoints: [String], stage: String, options: PublisherOptions = PublisherOptions()
    ) throws {
        let outlets = try hub.bind(endpoints)
        self.stage = stage
        self.endpoints = endpoints
        self.lossless = options.lossless
        self.socketFiles = []
        self.state = Mutex(State(outlets: outlets))
        self.startHeartbeats(intervalSeconds: options.heartbeatIntervalSeconds)
    }

    private func startHeartbeats(intervalSeconds interval: Double) {
        SystemThread.start(name: "bus-heartbeat-\(self.stage)") { [weak self] in
            while let self, !self.heartbeatStop.load(ordering: .relaxed) {
                self.sendHeartbeat()
                SystemThread.sleep(seconds: interval)
            }
        }
    }

    deinit {
        self.close()
    }

    /// Sends one message. Never blocks; throws only if the socket is closed or libzmq fails.
    public func send(_ message: BusMessage) throws {
        let sendTime = SystemClock.wallNanoseconds()
        try self.state.withLock { (state: inout State) throws in
            guard state.socket != nil || state.outlets != nil else {
                throw ZMQError(operation: "publish on a closed publisher")
            }
            let typeID = message.kind.rawValue
            let sequence = state.sequences[Int(typeID)]
            state.sequences[Int(typeID)] = sequence &+ 1
            // Header and payload go into one reused buffer: no allocation per message.
            state.scratch.reset()
            EnvelopeHeader(typeID: typeID, sequence: sequence, sendTimeNanoseconds: sendTime, stage: self.stage)
                .encode(to: &state.scratch)
            let headerSize = state.scratch.bytes.count
            message.encodePayload(to: &state.scratch)
            guard let socket = state.socket else {
                for outlet in state.outlets ?? [] {
                    outlet.deliver(topic: message.kind.topic, bytes: state.scratch.bytes, headerSize: headerSize)
                }
                return
            }
            if self.lossless {
                Self.readSubscriptions(socket, into: &state.subscribers)
                // The first frame waits for room in every subscriber's queue; the rest of the message follows it.
                while true {
                    do {
                        try Self.send(
                            socket, topic: message.kind.topic, frames: state.scratch.bytes, headerSize: headerSize)
                        break
                    } catch let error as ZMQError where error.code == EAGAIN {
                        SystemThread.sleep(seconds: 0.0002)
                        Self.readSubscriptions(socket, into: &state.subscribers)
                    }
                }
            } else {
                try Self.send(socket, topic: message.kind.topic, frames: state.scratch.bytes, headerSize: headerSize)
            }
        }
    }

    /// Subscriber sockets connected now [count]; only a lossless publisher counts them (0 otherwise).
    public var subscriberCount: Int {
        guard self.lossless else { return 0 }
        return self.state.withLock { (state: inout State) in
            if let outlets = state.outlets { return outlets.reduce(0) { $0 + $1.connectionCount } }
            if let socket = state.socket { Self.readSubscriptions(socket, into: &state.subscribers) }
            return state.subscribers
        }
    }

    /// Reads pending subscription messages: every subscriber socket subscribes to heartbeats (or to all) once.
    private static func readSubscriptions(_ socket: ZMQSocket, into count: inout Int) {
        let frame = ZMQFrame()
        while (try? frame.receive(from: socket)) == true {
            frame.withBytes { (bytes: UnsafeRawBufferPointer) in
                // A subscriber to everything subscribes to "" instead; either way once per socket.
                guard bytes.count >= 1, EnvelopeHeader.heartbeatTopic.utf8.starts(with: bytes.dropFirst()) else {
                    return
                }
                count += bytes[0] == 1 ? 1 : -1
            }
        }
    }

    /// Async form for stages: the same non-blocking send.
    public func publish(_ message: BusMessage) async throws {
        try self.send(message)
    }

    /// Sends topic, then `frames[..<headerSize]` as the header, then the rest as the payload.
    private static func send(_ socket: ZMQSocket, topic: String, frames: [UInt8], headerSize: Int) throws {
        var topic = topic
        try topic.withUTF8 { try socket.send(UnsafeRawBufferPointer($0), more: true) }
        try frames.withUnsafeBytes { bytes in
            try socket.send(UnsafeRawBufferPointer(rebasing: bytes[..<headerSize]), more: true)
            try socket.send(UnsafeRawBufferPointer(rebasing: bytes[headerSize...]), more: false)
        }
    }

    private func sendHeartbeat() {
        let sendTime = SystemClock.wallNanoseconds()
        self.state.withLock { (state: inout State) in
            guard state.socket != nil || state.outlets != nil else { return }
            let typeID = EnvelopeHeader.heartbeatTypeID
            let sequence = state.sequences[Int(typeID)]
            state.sequences[Int(typeID)] = sequence &+ 1
            state.scratch.reset()
            EnvelopeHeader(typeID: typeID, sequence: sequence, sendTimeNanoseconds: sendTime, stage: self.stage)
                .encode(to: &state.scratch)
            guard let socket = state.socket else {
                for outlet in state.outlets ?? [] {
                    outlet.deliver(
                        topic: EnvelopeHeader.heartbeatTopic, bytes: state.scratch.bytes,
                        headerSize: state.scratch.bytes.count)
                }
                return
            }
            // A full queue or a missing peer is not an error for a heartbeat.
            try? Self.send(
                socket, topic: EnvelopeHeader.heartbeatTopic, frames: state.scratch.bytes,
                headerSize: state.scratch.bytes.count)
        }
    }

    /// Stops heartbeats and closes the socket, letting unsent messages leave for at most
    /// `lingerMilliseconds` (during the context's termination). Idempotent.
    public func close(lingerMilliseconds: Int32 = 0) {
        self.heartbeatStop.store(true, ordering: .relaxed)
        self.state.withLock { (state: inout State) in
            if lingerMilliseconds > 0 { try? state.socket?.setOption(ZMQOption.linger, lingerMilliseconds) }
            state.socket?.close()
            state.socket = nil
            for outlet in state.outlets ?? [] { outlet.isBound = false }
            state.outlets = nil
        }
        // Stopping leaves nothing behind: the socket files go, unless another publisher has bound them since.
        for file in self.socketFiles { file.removeIfStillOurs() }
    }
}

/// An `ipc://` socket file as it was right after binding: removed on close only if it is still that file.
struct IPCSocketFile: Sendable {
    let path: String
    let device: UInt64
    let inode: UInt64

    init?(boundAt endpoint: String) {
        guard endpoint.hasPrefix("ipc://") else { return nil }
        let path = String(endpoint.dropFirst("ipc://".count))
        var info = stat()
        guard !path.hasPrefix("@"), stat(path, &info) == 0 else { return nil }
        self.path = path
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
    }

    func removeIfStillOurs() {
        var info = stat()
        guard stat(self.path, &info) == 0, UInt64(info.st_dev) == self.device, UInt64(info.st_ino) == self.inode else {
            return
        }
        unlink(self.path)
    }
}

/// An endpoint another process already serves.
public struct EndpointInUse: Error, CustomStringConvertible, Sendable {
    public let endpoint: String
    public var description: String {
        "\(self.endpoint) is in use: another process listens there (a second copy of this stage, or an impostor); refusing to take it over"
    }
}

/// Makes sure an `ipc://` endpoint's folder exists, and that no live process listens at its path: libzmq would
/// silently replace that socket file, and the subscribers connecting there would hear this process instead.
/// A file nobody listens on (left by a crash) is taken over. Other transports need nothing: a TCP port in use
/// fails to bind by itself.
func prepareEndpoint(_ endpoint: String) throws {
    guard endpoint.hasPrefix("ipc://") else { return }
    let path = String(endpoint.dropFirst("ipc://".count))
    // A run directory this process makes is private (0700); an existing one is left as it is (`config check`
    // warns when others can write to it).
    try Paths.createFolders(Paths.folder(of: path), permissions: 0o700)
    if isListening(unixSocket: path) { throw EndpointInUse(endpoint: endpoint) }
}

/// True when a process accepts connections on the Unix socket at `path`.
func isListening(unixSocket path: String) -> Bool {
    guard !path.hasPrefix("@"), path.utf8.count < 108 else { return false }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    return connected == 0
}
