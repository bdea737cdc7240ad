import CZeroMQ
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
public import Logging
public import NavCore
import Synchronization
import SystemIO

/// Who may send control requests to a listener, and how its link is protected.
public struct ControlListenerOptions: Sendable {
    /// The listener's CURVE identity (the sink's key pair) and the senders' public keys it admits; nil: plain (ipc
    /// or loopback only, which the config check enforces).
    public var curve: CurveServerOptions?
    /// Names for the admitted senders' public keys (Z85), as replies and control events name them.
    public var senderNames: [String: String]
    /// How long a request may wait for the sink before the sender is told it timed out [seconds].
    public var handlerTimeoutSeconds: Double

    public init(
        curve: CurveServerOptions? = nil, senderNames: [String: String] = [:], handlerTimeoutSeconds: Double = 1.5
    ) {
        self.curve = curve
        self.senderNames = senderNames
        self.handlerTimeoutSeconds = handlerTimeoutSeconds
    }
}

/// The sink's end of the experimenter's control channel: a ZeroMQ ROUTER bound on the control endpoints (a CURVE
/// server admitting only the senders' keys, through the process's ZAP handler, when the stage has a key). Each
/// request is handed to `handler` and its reply sent back to the sender. A malformed or oversized request is counted
/// and answered with a refusal; it never reaches the handler. One thread of its own.
public final class ControlListener: Sendable {
    private let stop = Mutex(false)
    private let counts = Mutex<[String: UInt64]>([:])
    private let done = DispatchSemaphore(value: 0)
    /// The ipc socket files bound, removed on close while still ours.
    private let socketFiles: [IPCSocketFile]
    /// The ZAP domain of this listener's connections.
    public let domain: String

    /// Binds `endpoints` and serves until ``close()``.
    public init(
        context: ZMQContext, bind endpoints: [String], stage: String, options: ControlListenerOptions,
        zap: ZAPHandler?, logger: Logger,
        handler: @escaping @Sendable (ControlRequest, _ sender: String) async -> ControlReply
    ) throws {
        self.domain = "control:\(stage)"
        let socket = try ZMQSocket(context: context, type: ZMQ_ROUTER)
        var monitor: ZMQSocket?
        do {
            if let curve = options.curve {
                guard let zap else { throw ZMQError(operation: "control listener without a ZAP handler") }
                zap.register(domain: self.domain, readers: curve.readers)
                try socket.makeCurveServer(curve, domain: self.domain)
                // A sender without CURVE (plain text) or not speaking ZeroMQ at all never reaches the ZAP handler,
                // which counts the wrong keys: its handshake fails before. The socket's monitor says so.
                let endpoint = context.nextMonitorEndpoint()
                guard
                    zmq_socket_monitor(
                        socket.handle, endpoint,
                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) == 0
                else { throw ZMQError(operation: "zmq_socket_monitor(control)") }
                let made = try ZMQSocket(context: context, type: ZMQ_PAIR)
                monitor = made
                try made.connect(endpoint)
            }
            try socket.setOption64(ZMQ_MAXMSGSIZE, Int64(ControlProtocol.maximumFrameBytes))
            // As the publishers' ipc sockets: never take over one a live process serves (a second sink, or an
            // impostor), and only this user may connect.
            for endpoint in endpoints {
                try prepareEndpoint(endpoint)
                try socket.bind(endpoint)
                if endpoint.hasPrefix("ipc://") { _ = chmod(String(endpoint.dropFirst("ipc://".count)), 0o600) }
            }
        } catch {
            monitor?.close()
            socket.close()
            throw error
        }
        self.socketFiles = endpoints.compactMap(IPCSocketFile.init(boundAt:))
        SystemThread.start(name: "control-\(stage)") { [self, monitor] in
            self.serve(socket, monitor: monitor, stage: stage, options: options, logger: logger, handler: handler)
            monitor?.close()
            socket.close()
            self.done.signal()
        }
    }

    /// Senders whose handshake failed before any key was shown (plain text to a CURVE listener, or not ZeroMQ); the
    /// wrong keys are the ZAP handler's count.
    public var refusedHandshakes: UInt64 { self.counts.withLock { $0["control.refusedHandshakes", default: 0] } }

    /// Requests received, refused as malformed, and answered, for the stage's status.
    public var statusCounters: [StatusCounter] {
        self.counts.withLock { counts in
            ["control.requests", "control.malformed", "control.timedOut"].map {
                StatusCounter(name: $0, value: counts[$0, default: 0])
            }
        }
    }

    private func count(_ name: String) { self.counts.withLock { $0[name, default: 0] &+= 1 } }

    /// Stops serving and closes the socket (waits for the thread, at most a second).
    public func close() {
        let first = self.stop.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first {
            _ = self.done.wait(timeout: .now() + 1)
            for file in self.socketFiles { file.removeIfStillOurs() }
        }
    }

    private func serve(
        _ socket: ZMQSocket, monitor: ZMQSocket?, stage: String, options: ControlListenerOptions, logger: Logger,
        handler: @escaping @Sendable (ControlRequest, String) async -> ControlReply
    ) {
        var items = [zmq_pollitem_t(socket: socket.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)]
        if let monitor {
            items.append(zmq_pollitem_t(socket: monitor.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0))
        }
        var warned = false
        while !self.stop.withLock({ $0 }) {
            let ready = zmq_poll(&items, Int32(items.count), 100)
            if ready < 0 {
                if zmq_errno() == EINTR { continue }
                return
            }
            guard ready > 0 else { continue }
            if let monitor, items.count > 1, items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                let event = ZMQFrame()
                let address = ZMQFrame()
                while (try? event.receive(from: monitor)) == true {
                    guard event.hasMore, (try? address.receive(from: monitor)) == true else { continue }
                    self.count("control.refusedHandshakes")
                    if !warned {
                        warned = true
                        logger.warning(
                            "control: a sender without the CURVE handshake (plain text, or not ZeroMQ) refused (counted in control.refusedSenders; further ones silently)"
                        )
                    }
                }
            }
            guard items[0].revents & Int16(ZMQ_POLLIN) != 0 else { continue }
            // A ROUTER gives [sender identity, request]; anything else is malformed.
            var frames: [[UInt8]] = []
            var userID: String?
            while true {
                let frame = ZMQFrame()
                guard (try? frame.receive(from: socket)) == true else { break }
                if frames.count < 3 { frames.append(frame.withBytes { Array($0) }) }
                if frames.count == 2, userID == nil { userID = frame.property("User-Id") }
                if !frame.hasMore { break }
            }
            guard frames.count == 2 else {
                self.count("control.malformed")
                continue
            }
            let identity = frames[0]
            let sender: String
            if options.curve != nil {
                sender = userID.flatMap { options.senderNames[$0] } ?? "unknown key"
            } else {
                sender = "local"
            }
            let reply: ControlReply
            do {
                let request = try ControlRequest.parse(frames[1])
                self.count("control.requests")
                reply = self.run(handler, request, sender: sender, timeout: options.handlerTimeoutSeconds, stage: stage)
            } catch {
                self.count("control.malformed")
                logger.warning("control: a malformed request from \(sender) refused: \(error)")
                reply = ControlReply(
                    requestID: "", stage: stage, accepted: false, stopped: false, message: "malformed request: \(error)"
                )
            }
            let bytes = reply.frame
            _ = identity.withUnsafeBytes {
                zmq_send(socket.handle, $0.baseAddress, $0.count, ZMQ_SNDMORE | ZMQ_DONTWAIT)
            }
            _ = bytes.withUnsafeBytes { zmq_send(socket.handle, $0.baseAddress, $0.count, ZMQ_DONTWAIT) }
        }
    }

    /// Runs the handler and waits for it, at most `timeout` seconds.
    private func run(
        _ handler: @escaping @Sendable (ControlRequest, String) async -> ControlReply, _ request: ControlRequest,
        sender: String, timeout: Double, stage: String
    ) -> ControlReply {
        let result = Mutex<ControlReply?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Task {
            let reply = await handler(request, sender)
            result.withLock { $0 = reply }
            finished.signal()
        }
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            self.count("control.timedOut")
            // The command may still be carried out: say that the outcome is unknown, not that nothing happened.
            return ControlReply(
                requestID: request.requestID, stage: stage, accepted: false, stopped: false,
                message: "OUTCOME UNKNOWN: the sink did not answer within \(timeout) s (it may still carry it out)")
        }
        return result.withLock { $0 }!
    }
}

/// The sender's end: one request to one sink, and its reply.
public enum ControlClient {
    /// Why a request got no reply.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Sends `request` to the listener at `endpoint` (as a CURVE client of `serverKey` with `identity` when both are
    /// given) and waits up to `timeoutSeconds` for its reply.
    public static func send(
        _ request: ControlRequest, to endpoint: String, identity: CurveKeyPair?, serverKey: String?,
        timeoutSeconds: Double, context: ZMQContext
    ) throws(Failure) -> ControlReply {
        let deadline = SystemClock.monotonicSeconds() + timeoutSeconds
        let socket: ZMQSocket
        do {
            socket = try ZMQSocket(context: context, type: ZMQ_DEALER)
        } catch { throw Failure(description: "\(error)") }
        defer { socket.close() }
        do {
            if let identity, let serverKey { try socket.makeCurveClient(identity: identity, serverKey: serverKey) }
            try socket.setOption(ZMQ_RECONNECT_IVL, 50)
            try socket.connect(endpoint)
        } catch { throw Failure(description: "cannot connect to \(endpoint): \(error)") }
        let frame = request.frame
        // A DEALER queues the request until the connection is up; the wait below bounds it.
        let sent = frame.withUnsafeBytes { zmq_send(socket.handle, $0.baseAddress, $0.count, ZMQ_DONTWAIT) }
        guard sent >= 0 else {
            throw Failure(description: "cannot queue the request: \(ZMQError(operation: "zmq_send"))")
        }
        var item = zmq_pollitem_t(socket: socket.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
        while true {
            let left = deadline - SystemClock.monotonicSeconds()
            guard left > 0 else {
                throw Failure(description: "no answer from \(endpoint) within \(timeoutSeconds) s")
            }
            let ready = zmq_poll(&item, 1, max(1, Int(left * 1000)))
            if ready < 0 {
                if zmq_errno() == EINTR { continue }
                throw Failure(description: "\(ZMQError(operation: "zmq_poll"))")
            }
            guard ready > 0 else { continue }
            let message = ZMQFrame()
            guard (try? message.receive(from: socket)) == true else { continue }
            let bytes = message.withBytes { Array($0) }
            do {
                let reply = try ControlReply.parse(bytes)
                if reply.requestID == request.requestID || reply.requestID.isEmpty { return reply }
            } catch {
                throw Failure(description: "a malformed reply from \(endpoint): \(error)")
            }
        }
    }
}
