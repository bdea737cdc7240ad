internal import CZeroMQ
public import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A failed libzmq call: its errno and which call failed.
public struct ZMQError: Error, CustomStringConvertible, Sendable {
    /// The errno libzmq reported.
    public let code: Int32
    /// The call that failed, with its argument where it helps, for example "zmq_bind(ipc:///tmp/x)".
    public let operation: String

    /// Captures `zmq_errno()` for the call just made.
    init(operation: String) {
        self.code = zmq_errno()
        self.operation = operation
    }

    public var description: String {
        "\(self.operation) failed: \(String(cString: zmq_strerror(self.code))) (errno \(self.code))"
    }

    /// True when the context is being terminated: the expected end of a socket's life.
    public var isTermination: Bool { self.code == ETERM }
}

/// A ZeroMQ context: thread-safe, one per process is usual, shared by all sockets that use `inproc://`.
public final class ZMQContext: Sendable {
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer
    private let zap = Mutex<ZAPHandler?>(nil)
    private let monitorCount = Atomic<Int>(0)

    /// Creates a context.
    public init() {
        guard let handle = zmq_ctx_new() else { fatalError("zmq_ctx_new failed: out of memory") }
        self.handle = handle
    }

    /// The process's ZAP handler for CURVE publishers in this context, started on first use.
    public func zapHandler(logger: Logger) throws(ZMQError) -> ZAPHandler {
        try self.zap.withLock { (zap: inout ZAPHandler?) throws(ZMQError) -> ZAPHandler in
            if let zap { return zap }
            let handler = try ZAPHandler(context: self, logger: logger)
            zap = handler
            return handler
        }
    }

    /// A fresh inproc endpoint name for a socket monitor.
    func nextMonitorEndpoint() -> String {
        "inproc://hapticnav-monitor-\(self.monitorCount.add(1, ordering: .relaxed).newValue)"
    }

    /// Wakes every blocking call on every socket of this context, then frees it once they are closed.
    public func terminate() {
        zmq_ctx_shutdown(self.handle)
        zmq_ctx_term(self.handle)
    }
}

/// A ZeroMQ socket. Not thread-safe: one thread uses it at a time (behind a `Mutex`, or owned by a thread);
/// `@unchecked Sendable` only so that it can be handed to the thread that will own it.
final class ZMQSocket: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    init(context: ZMQContext, type: Int32) throws(ZMQError) {
        guard let handle = zmq_socket(context.handle, type) else {
            throw ZMQError(operation: "zmq_socket")
        }
        self.handle = handle
        // Closing never waits for unsent messages: shutdown must not hang on an absent peer.
        try self.setOption(ZMQ_LINGER, Int32(0))
    }

    func setOption(_ option: Int32, _ value: Int32) throws(ZMQError) {
        var value = value
        if zmq_setsockopt(self.handle, option, &value, MemoryLayout<Int32>.size) != 0 {
            throw ZMQError(operation: "zmq_setsockopt(\(option))")
        }
    }

    func setOption64(_ option: Int32, _ value: Int64) throws(ZMQError) {
        var value = value
        if zmq_setsockopt(self.handle, option, &value, MemoryLayout<Int64>.size) != 0 {
            throw ZMQError(operation: "zmq_setsockopt(\(option))")
        }
    }

    func subscribe(_ prefix: String) throws(ZMQError) {
        let bytes = Array(prefix.utf8)
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(self.handle, ZMQ_SUBSCRIBE, $0.baseAddress, bytes.count) }
        if rc != 0 { throw ZMQError(operation: "zmq_setsockopt(ZMQ_SUBSCRIBE)") }
    }

    func bind(_ endpoint: String) throws(ZMQError) {
        if zmq_bind(self.handle, endpoint) != 0 { throw ZMQError(operation: "zmq_bind(\(endpoint))") }
    }

    func connect(_ endpoint: String) throws(ZMQError) {
        if zmq_connect(self.handle, endpoint) != 0 { throw ZMQError(operation: "zmq_connect(\(endpoint))") }
    }

    /// Sends one frame; `more` marks that another frame of the same message follows.
    func send(_ bytes: UnsafeRawBufferPointer, more: Bool, dontWait: Bool = true) throws(ZMQError) {
        var flags: Int32 = more ? ZMQ_SNDMORE : 0
        if dontWait { flags |= ZMQ_DONTWAIT }
        if zmq_send(self.handle, bytes.baseAddress, bytes.count, flags) < 0 {
            throw ZMQError(operation: "zmq_send")
        }
    }

    func close() {
        zmq_close(self.handle)
    }
}

/// One received frame, read through `zmq_msg_t` so that its true size is always known.
struct ZMQFrame: ~Copyable {
    private let message: UnsafeMutablePointer<zmq_msg_t>

    init() {
        self.message = .allocate(capacity: 1)
        zmq_msg_init(self.message)
    }

    deinit {
        zmq_msg_close(self.message)
        self.message.deallocate()
    }

    /// Receives the next frame without blocking; returns false when nothing is waiting.
    func receive(from socket: ZMQSocket) throws(ZMQError) -> Bool {
        if zmq_msg_recv(self.message, socket.handle, ZMQ_DONTWAIT) >= 0 { return true }
        if zmq_errno() == EAGAIN { return false }
        throw ZMQError(operation: "zmq_msg_recv")
    }

    /// A metadata property of the received frame ("User-Id": the CURVE key ZAP admitted), if set.
    func property(_ name: String) -> String? {
        guard let value = zmq_msg_gets(self.message, name) else { return nil }
        return String(cString: value)
    }

    var size: Int { zmq_msg_size(self.message) }

    var hasMore: Bool { zmq_msg_more(self.message) != 0 }

    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let size = zmq_msg_size(self.message)
        guard let data = zmq_msg_data(self.message), size > 0 else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: data, count: size))
    }
}

/// A reusable poll set: ZeroMQ sockets plus one plain file descriptor (a wake pipe), built once, waited on with one
/// `poll(2)` over the sockets' own descriptors (`ZMQ_FD`).
///
/// `zmq_poll` asks every socket for its state (`ZMQ_EVENTS`, a system call each) before and after it waits: with a
/// subscriber's several sockets and their monitors that was about 18 system calls for each message or timeout, most
/// of a stage's idle cost. A socket's descriptor says only that something happened to it, not that a message waits,
/// and it is not said again until the socket has been read empty: whoever owns a socket reads it until
/// `EAGAIN` after it was reported, and marks it ``markPending(_:)`` whenever it stops short of that (a bounded burst)
/// or did anything else with it (connecting again), so that it is read again without waiting.
struct PollSet {
    private var descriptors: [pollfd]
    private var pending: [Bool]
    private(set) var ready: [Int] = []

    init(sockets: [ZMQSocket], wake: Int32) throws(ZMQError) {
        self.descriptors = []
        self.descriptors.reserveCapacity(sockets.count + 1)
        for socket in sockets {
            var descriptor: Int32 = -1
            var size = MemoryLayout<Int32>.size
            if zmq_getsockopt(socket.handle, ZMQ_FD, &descriptor, &size) != 0 {
                throw ZMQError(operation: "zmq_getsockopt(ZMQ_FD)")
            }
            self.descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0))
        }
        self.descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
        // Messages may have arrived before the first wait (a socket connected early): every socket is read first.
        self.pending = Array(repeating: true, count: sockets.count)
        self.pending.append(false)
        self.ready.reserveCapacity(self.descriptors.count)
    }

    /// The socket at `index` may hold messages though its descriptor will not say so: it is reported ready at the
    /// next ``wait(timeoutMilliseconds:)``, which then does not block.
    mutating func markPending(_ index: Int) {
        self.pending[index] = true
    }

    /// Waits up to `timeoutMilliseconds` for input (not at all when a socket is pending); afterwards ``ready`` holds
    /// the indices with input (the last index is the wake descriptor).
    mutating func wait(timeoutMilliseconds: Int) {
        self.ready.removeAll(keepingCapacity: true)
        let anyPending = self.pending.contains(true)
        let count = nfds_t(self.descriptors.count)
        let timeout = Int32(clamping: anyPending ? 0 : timeoutMilliseconds)
        let rc = self.descriptors.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, count, timeout) }
        for index in self.descriptors.indices {
            let signalled = rc > 0 && self.descriptors[index].revents != 0
            if signalled || self.pending[index] {
                self.pending[index] = false
                self.ready.append(index)
            }
        }
    }
}

/// The socket types this transport uses.
enum ZMQSocketType {
    static let publisher = ZMQ_PUB
    static let subscriber = ZMQ_SUB
    /// A publisher that sees its subscribers' subscriptions (a replay's lossless mode).
    static let extendedPublisher = ZMQ_XPUB
}

/// Socket option names this transport uses.
enum ZMQOption {
    static let sendHighWaterMark = ZMQ_SNDHWM
    static let receiveHighWaterMark = ZMQ_RCVHWM
    static let conflate = ZMQ_CONFLATE
    static let reconnectInterval = ZMQ_RECONNECT_IVL
    static let linger = ZMQ_LINGER
    static let publisherNoDrop = ZMQ_XPUB_NODROP
    static let publisherVerbose = ZMQ_XPUB_VERBOSE
}

/// How every connection keeps itself honest across hosts: ZMTP heartbeats, so that a half-open TCP connection
/// (a cut link, a peer that restarted during a cut) is noticed and closed within seconds rather than the
/// kernel's minutes; TCP keepalive and a bound on unacknowledged data for the same at the TCP level; and a
/// reconnect interval that backs off only to a quarter of a second, so that a healed link carries messages again at once.
public struct ConnectionLiveness: Sendable, Equatable {
    /// Time between ZMTP PINGs on an idle connection [milliseconds].
    public var heartbeatIntervalMilliseconds: Int32 = 500
    /// Without any traffic for this long after a PING, the connection is closed [milliseconds].
    public var heartbeatTimeoutMilliseconds: Int32 = 1500
    /// The time-to-live this side asks its peer to apply [milliseconds, multiple of 100].
    public var heartbeatTTLMilliseconds: Int32 = 2000
    /// TCP keepalive: idle time before the first probe, time between probes [seconds], probes before giving up.
    public var keepaliveIdleSeconds: Int32 = 5
    /// See `keepaliveIdleSeconds`.
    public var keepaliveIntervalSeconds: Int32 = 1
    /// See `keepaliveIdleSeconds`.
    public var keepaliveProbes: Int32 = 3
    /// Data unacknowledged for this long closes the TCP connection (TCP_USER_TIMEOUT) [milliseconds].
    public var maximumRetransmitMilliseconds: Int32 = 3000
    /// A connection attempt that has not completed after this long is abandoned and tried again, so that a SYN
    /// sent into a cut link does not wait for the kernel's retransmission back-off once the link heals [milliseconds].
    public var connectTimeoutMilliseconds: Int32 = 250
    /// First and largest reconnect interval [milliseconds].
    public var reconnectIntervalMilliseconds: Int32 = 100
    /// See `reconnectIntervalMilliseconds`.
    public var reconnectIntervalMaximumMilliseconds: Int32 = 250
    /// A connection whose ZMTP/CURVE handshake has not completed after this long is closed and tried again: a
    /// handshake that failed (an impostor without the expected key) must not hold the connection for libzmq's
    /// default 30 s once the rightful publisher is back [milliseconds].
    public var handshakeMilliseconds: Int32 = 2000

    /// The defaults.
    public init() {}

    func apply(to socket: ZMQSocket) throws(ZMQError) {
        try socket.setOption(ZMQ_HEARTBEAT_IVL, self.heartbeatIntervalMilliseconds)
        try socket.setOption(ZMQ_HEARTBEAT_TIMEOUT, self.heartbeatTimeoutMilliseconds)
        try socket.setOption(ZMQ_HEARTBEAT_TTL, self.heartbeatTTLMilliseconds)
        try socket.setOption(ZMQ_TCP_KEEPALIVE, 1)
        try socket.setOption(ZMQ_TCP_KEEPALIVE_IDLE, self.keepaliveIdleSeconds)
        try socket.setOption(ZMQ_TCP_KEEPALIVE_INTVL, self.keepaliveIntervalSeconds)
        try socket.setOption(ZMQ_TCP_KEEPALIVE_CNT, self.keepaliveProbes)
        try socket.setOption(ZMQ_TCP_MAXRT, self.maximumRetransmitMilliseconds)
        try socket.setOption(ZMQ_CONNECT_TIMEOUT, self.connectTimeoutMilliseconds)
        try socket.setOption(ZMQ_RECONNECT_IVL, self.reconnectIntervalMilliseconds)
        try socket.setOption(ZMQ_RECONNECT_IVL_MAX, self.reconnectIntervalMaximumMilliseconds)
        try socket.setOption(ZMQ_HANDSHAKE_IVL, self.handshakeMilliseconds)
    }
}

/// The libzmq version linked at run time, for example "4.3.4".
public func zmqVersion() -> String {
    var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
    zmq_version(&major, &minor, &patch)
    return "\(major).\(minor).\(patch)"
}
