#if canImport(Glibc)
import Glibc
#endif
import Dispatch
public import NavCore
import Synchronization
import SystemIO

/// A WebSocket server (RFC 6455) for live views: it accepts the HTTP upgrade for one subprotocol, then exchanges
/// frames. Each connection has a thread that reads the client's frames (masked, at most `maximumMessageBytes`,
/// fragments joined) and one that writes from a bounded queue, so that a slow client never holds up the caller:
/// when its queue is full the oldest binary frame is dropped and counted. A malformed handshake or frame closes the
/// connection (counted); the server goes on. The server pings every client (RFC 6455 5.5.2, a payload of its own
/// each time, which every WebSocket implementation answers by itself): a client holds its slot against strangers only
/// once it has answered one, and one that leaves a ping unanswered too long (it does not read) is closed and counted.
public final class WebSocketServer: Sendable {
    /// Limits against a misbehaving or slow client.
    public struct Limits: Sendable {
        /// The longest message from a client [bytes].
        public var maximumMessageBytes = 64 * 1024
        /// Frames waiting for a client before its oldest binary frame is dropped [count].
        public var queueFrames = 2000
        /// Clients at once (a quarter of them per peer address; see ``ConnectionSlots``).
        public var maximumConnections = 16
        /// A client quiet this long whose handshake was not yet accepted may lose its slot to a new one when all are
        /// taken [seconds].
        public var quietSeconds = 0.25
        /// The time between the server's pings to a client (the first goes at once after the handshake) [seconds].
        public var pingSeconds = 2.0
        /// A client that has not answered a ping for this long is closed (`ws.unanswered`) [seconds].
        public var pongSeconds = 5.0
        /// Web pages allowed to connect (a browser sends its page's `Origin`); nil: any. Clients that send no
        /// `Origin` (desktop apps, scripts) are always served.
        public var allowedOrigins: Set<String>?
        public init() {}
    }

    /// One client, as the handler sees it.
    public final class Connection: Sendable {
        /// A number for this connection, from 1.
        public let id: Int
        /// The client's address.
        public let peer: String
        fileprivate let queue = Mutex<(frames: [[UInt8]], closed: Bool, dropped: UInt64)>(([], false, 0))
        /// Set when the client is closed for not reading (its queue held too many bytes).
        fileprivate let overrun = Atomic<Bool>(false)
        fileprivate let wake = DispatchSemaphore(value: 0)
        fileprivate let limit: Int
        /// The ping waiting for its answer: its payload and when it was written [monotonic nanoseconds].
        fileprivate let ping = Mutex<(payload: [UInt8], sentAt: Int64)?>(nil)

        fileprivate init(id: Int, peer: String, limit: Int) {
            self.id = id
            self.peer = peer
            self.limit = limit
        }

        /// Queues a text message (JSON); never blocks.
        public func send(text: String) { self.enqueue(WebSocketServer.frame(opcode: 0x1, Array(text.utf8))) }

        /// Queues a binary message; never blocks (the oldest binary frame goes when the queue is full).
        public func send(binary: [UInt8]) { self.enqueue(WebSocketServer.frame(opcode: 0x2, binary)) }

        /// Binary frames dropped because this client did not keep up [count].
        public var dropped: UInt64 { self.queue.withLock { $0.dropped } }

        fileprivate func enqueue(_ frame: [UInt8]) {
            let queued = self.queue.withLock { queue -> Bool in
                guard !queue.closed else { return false }
                if queue.frames.count >= self.limit,
                    let oldest = queue.frames.firstIndex(where: { $0.first == 0x82 })
                {
                    queue.frames.remove(at: oldest)
                    queue.dropped &+= 1
                }
                // Text and control frames are never dropped; a client that lets them pile up is closed.
                guard queue.frames.count < 4 * self.limit else {
                    queue.closed = true
                    self.overrun.store(true, ordering: .relaxed)
                    return true
                }
                queue.frames.append(frame)
                return true
            }
            if queued { self.wake.signal() }
        }

        /// True when `payload` answers the ping waiting (which is then settled).
        fileprivate func answers(_ payload: [UInt8]) -> Bool {
            let answered = self.ping.withLock { ping in
                guard let waiting = ping, waiting.payload == payload else { return false }
                ping = nil
                return true
            }
            // The writer, asleep until this ping's deadline, wakes to keep the next ping on time.
            if answered { self.wake.signal() }
            return answered
        }

        fileprivate func close() {
            self.queue.withLock { $0.closed = true }
            self.wake.signal()
        }
    }

    /// What the server tells its owner.
    public enum Event: Sendable {
        case opened(Connection)
        case text(Connection, String)
        case closed(Connection)
    }

    public let port: UInt16
    private let counts = Mutex<[String: UInt64]>([:])
    private let closed = Atomic<Bool>(false)
    private let slots: ConnectionSlots
    private let subprotocol: String
    private let limits: Limits
    private let handler: @Sendable (Event) -> Void
    /// The last connection's number.
    private let lastID = Atomic<Int>(0)

    /// Listens on `host`:`port` (0: any free port) for clients asking for `subprotocol`; `handler` hears every
    /// connection, text message and close, on the connection's reading thread.
    public init(
        host: String, port: UInt16, subprotocol: String, limits: Limits = Limits(),
        handler: @escaping @Sendable (Event) -> Void
    ) throws(LinkError) {
        let fd = try ListeningSocket.bind(host: host, port: port, type: Int32(SOCK_STREAM.rawValue), scheme: "ws")
        self.port = ListeningSocket.port(of: fd)
        self.slots = ConnectionSlots(serving: limits.maximumConnections, quietSeconds: limits.quietSeconds)
        self.subprotocol = subprotocol
        self.limits = limits
        self.handler = handler
        SystemThread.start(name: "ws-accept") { [self] in
            while !self.closed.load(ordering: .relaxed) {
                guard ListeningSocket.readable(fd, milliseconds: 100) else { continue }
                var address = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let client = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(fd, $0, &length) }
                }
                guard client >= 0 else {
                    // Out of descriptors or a transient failure: wait a little rather than spin.
                    SystemThread.sleep(seconds: 0.1)
                    continue
                }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                let peer = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ListeningSocket.host($0, length) }
                }
                let admitted = self.slots.take(client, peer: peer, now: SystemClock.monotonicNanoseconds())
                if admitted.evicted { self.count("ws.evicted") }
                guard let slot = admitted.slot else {
                    self.count("ws.refusedConnections")
                    Glibc.close(client)
                    continue
                }
                SystemThread.start(name: "ws-connection") {
                    self.serve(client, peer: peer, slot: slot)
                    // The slot goes before the descriptor closes (see ConnectionSlots.take).
                    self.slots.release(slot)
                    Glibc.close(client)
                }
            }
            Glibc.close(fd)
        }
    }

    /// Serves one connection already open on `fd` (a socket pair's end, say) on the calling thread, as a connection's
    /// own thread does after the accept, and returns when it ends; the caller closes `fd`. False when no slot was free
    /// for it. The fuzzer feeds whole connections through it, without the network's timing.
    package func serve(connection fd: Int32, peer: String) -> Bool {
        let admitted = self.slots.take(fd, peer: peer, now: SystemClock.monotonicNanoseconds())
        if admitted.evicted { self.count("ws.evicted") }
        guard let slot = admitted.slot else {
            self.count("ws.refusedConnections")
            return false
        }
        self.serve(fd, peer: peer, slot: slot)
        self.slots.release(slot)
        return true
    }

    /// Stops accepting; open connections close as their clients go.
    public func close() { self.closed.store(true, ordering: .relaxed) }

    deinit { self.closed.store(true, ordering: .relaxed) }

    /// Handshakes refused, frames that broke the protocol, connections refused (every slot held by one that may keep
    /// it), connections closed to make room for a new one, clients closed for leaving a ping unanswered [count].
    public var counters: [StatusCounter] {
        self.counts.withLock { counts in
            [
                "ws.connections", "ws.refusedHandshakes", "ws.malformed", "ws.refusedConnections", "ws.evicted",
                "ws.unanswered",
            ].map { StatusCounter(name: $0, value: counts[$0, default: 0]) }
        }
    }

    private func count(_ name: String) { self.counts.withLock { $0[name, default: 0] &+= 1 } }

    /// Serves one connection: its handshake, then its frames until it closes or breaks the protocol.
    private func serve(_ fd: Int32, peer: String, slot: ConnectionSlots.Slot) {
        let connection = Connection(
            id: self.lastID.add(1, ordering: .relaxed).newValue, peer: peer, limit: self.limits.queueFrames)
        defer { connection.close() }
        let (limits, handler) = (self.limits, self.handler)
        // A client that stops reading cannot hold a writer forever.
        var sendTimeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer: [UInt8] = []
        self.slots.began(slot, now: SystemClock.monotonicNanoseconds())
        let heard = { self.slots.heard(slot, now: SystemClock.monotonicNanoseconds()) }
        guard let request = Self.readHead(fd, &buffer, heard: heard),
            let response = Self.upgrade(
                request, subprotocol: self.subprotocol, allowedOrigins: limits.allowedOrigins)
        else {
            self.count("ws.refusedHandshakes")
            _ = Self.write(fd, Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        guard Self.write(fd, Array(response.utf8)) else { return }
        self.count("ws.connections")
        // The writer: drains the queue until the connection closes, and pings the client (at once, then every
        // `pingSeconds` after the last answer); a ping unanswered for `pongSeconds` closes the connection.
        let written = DispatchSemaphore(value: 0)
        // Within 10 ms and a day: a limit given as infinity (or NaN) must not trap the conversion or the sums below.
        func nanoseconds(_ seconds: Double) -> Int64 {
            Int64((seconds.isNaN ? 1 : min(max(seconds, 0.01), 86_400)) * 1e9)
        }
        let (pingNanoseconds, pongNanoseconds) = (nanoseconds(limits.pingSeconds), nanoseconds(limits.pongSeconds))
        SystemThread.start(name: "ws-writer") {
            defer {
                // Ends the reader too when the writer stops first (a client that let its queue overrun).
                Glibc.shutdown(fd, Int32(SHUT_RDWR))
                written.signal()
            }
            var nextPing = SystemClock.monotonicNanoseconds()
            while true {
                let now = SystemClock.monotonicNanoseconds()
                let waiting = connection.ping.withLock { $0 }
                let wakeAt = waiting.map { $0.sentAt + pongNanoseconds } ?? nextPing
                if wakeAt > now { _ = connection.wake.wait(timeout: .now() + .nanoseconds(Int(wakeAt - now))) }
                let (frames, closed) = connection.queue.withLock { queue in
                    defer { queue.frames.removeAll(keepingCapacity: true) }
                    return (queue.frames, queue.closed)
                }
                for frame in frames where !Self.write(fd, frame) {
                    connection.close()
                    return
                }
                if closed { return }
                let later = SystemClock.monotonicNanoseconds()
                if let waiting = connection.ping.withLock({ $0 }) {
                    if later - waiting.sentAt >= pongNanoseconds {
                        self.count("ws.unanswered")
                        connection.close()
                        return
                    }
                } else if later >= nextPing {
                    var random = SystemRandomNumberGenerator()
                    let payload = withUnsafeBytes(of: random.next() as UInt64) { Array($0) }
                    connection.ping.withLock { $0 = (payload, later) }
                    guard Self.write(fd, Self.frame(opcode: 0x9, payload)) else {
                        connection.close()
                        return
                    }
                    nextPing = later + pingNanoseconds
                }
            }
        }
        handler(.opened(connection))
        var message: [UInt8] = []
        var messageOpcode: UInt8 = 0
        reading: while true {
            guard let frame = Self.readFrame(fd, &buffer, limit: limits.maximumMessageBytes) else {
                if !buffer.isEmpty { self.count("ws.malformed") }
                break
            }
            // Control frames are short and whole (RFC 6455 5.5); a data frame may not start inside a message.
            if frame.opcode >= 0x8, !frame.final || frame.payload.count > 125 {
                self.count("ws.malformed")
                break reading
            }
            if (frame.opcode == 0x1 || frame.opcode == 0x2) != (messageOpcode == 0) && frame.opcode < 0x8 {
                self.count("ws.malformed")
                break reading
            }
            switch frame.opcode {
            case 0x0, 0x1, 0x2:
                if frame.opcode != 0 { (message, messageOpcode) = ([], frame.opcode) }
                message += frame.payload
                guard message.count <= limits.maximumMessageBytes else {
                    self.count("ws.malformed")
                    break reading
                }
                if frame.final {
                    defer { (message, messageOpcode) = ([], 0) }
                    guard messageOpcode == 0x1 else { break }
                    guard let text = String(validating: message, as: UTF8.self) else {
                        self.count("ws.malformed")
                        break reading
                    }
                    handler(.text(connection, text))
                }
            case 0x8:
                connection.enqueue(Self.frame(opcode: 0x8, Array(frame.payload.prefix(2))))
                break reading
            case 0x9:
                connection.enqueue(Self.frame(opcode: 0xA, frame.payload))
            case 0xA:
                // The answer to the server's ping: a client that reads, which keeps its slot against strangers.
                if connection.answers(frame.payload) {
                    self.slots.proved(slot, now: SystemClock.monotonicNanoseconds())
                }
            default:
                self.count("ws.malformed")
                break reading
            }
        }
        handler(.closed(connection))
        connection.close()
        // The writer sends what is queued (the answer to a close among it) and ends; one blocked on a client that
        // stopped reading is ended under it after a second.
        if written.wait(timeout: .now() + 1) == .timedOut {
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
            written.wait()
        }
    }

    /// The 101 response to a valid upgrade request for `subprotocol`, or nil.
    static func upgrade(_ head: String, subprotocol: String, allowedOrigins: Set<String>? = nil) -> String? {
        let lines = head.split(separator: "\r\n")
        guard let first = lines.first, first.hasPrefix("GET "), first.hasSuffix(" HTTP/1.1") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...]).trimmed()
        }
        guard headers["upgrade"]?.lowercased() == "websocket",
            headers["connection"]?.lowercased().contains("upgrade") == true,
            headers["sec-websocket-version"] == "13", let key = headers["sec-websocket-key"], key.utf8.count == 24,
            let offered = headers["sec-websocket-protocol"],
            offered.split(separator: ",").contains(where: { $0.trimmed() == subprotocol })
        else { return nil }
        // Any other web page open in the lab's browser must not read the participant's live position.
        if let origin = headers["origin"], let allowed = allowedOrigins, !allowed.contains(origin) { return nil }
        let accept = Base64.encode(SHA1.hash(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
        return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept)\r\nSec-WebSocket-Protocol: \(subprotocol)\r\n\r\n"
    }

    /// A server frame (never masked), final.
    static func frame(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            out.append(UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        return out + payload
    }

    /// What one read brought.
    private enum Read { case data, closed, quiet, failed }

    /// Reads what the client sent into `buffer`. `quiet`: nothing within the socket's receive timeout. A client that
    /// closed is `closed`, whatever errno an earlier call left (a read of 0 bytes sets none).
    private static func receive(_ fd: Int32, _ buffer: inout [UInt8]) -> Read {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count > 0 {
                buffer += chunk[0..<count]
                return .data
            }
            if count == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .quiet
            default: return .failed
            }
        }
    }

    /// The request head (at most 16 KB), or nil; `heard` is called whenever bytes come.
    private static func readHead(_ fd: Int32, _ buffer: inout [UInt8], heard: () -> Void) -> String? {
        // The whole head within 10 s, however slowly it trickles in.
        let deadline = SystemClock.monotonicSeconds() + 10
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        defer {
            var none = timeval(tv_sec: 0, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        }
        while true {
            if let end = buffer.offset(of: [13, 10, 13, 10]) {
                let head = String(validating: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                return head
            }
            guard buffer.count <= 16 * 1024, SystemClock.monotonicSeconds() < deadline else { return nil }
            switch Self.receive(fd, &buffer) {
            case .data: heard()
            case .quiet: continue  // a quiet second: the head's own deadline decides
            case .closed, .failed: return nil
            }
        }
    }

    /// The next client frame (unmasked), or nil when the connection ends or the frame breaks the protocol.
    private static func readFrame(
        _ fd: Int32, _ buffer: inout [UInt8], limit: Int
    ) -> (final: Bool, opcode: UInt8, payload: [UInt8])? {
        func need(_ count: Int) -> Bool {
            // After the handshake reads block: anything but data is the connection's end.
            while buffer.count < count { guard Self.receive(fd, &buffer) == .data else { return false } }
            return true
        }
        guard need(2) else { return nil }
        let final = buffer[0] & 0x80 != 0
        let opcode = buffer[0] & 0x0F
        // Clients must mask; reserved bits must be clear.
        guard buffer[0] & 0x70 == 0, buffer[1] & 0x80 != 0 else { return nil }
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard need(4) else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            guard need(10) else { return nil }
            var value: UInt64 = 0
            for index in 2..<10 { value = value << 8 | UInt64(buffer[index]) }
            guard value <= UInt64(limit) else { return nil }
            length = Int(value)
            offset = 10
        }
        guard length <= limit, need(offset + 4 + length) else { return nil }
        let mask = Array(buffer[offset..<(offset + 4)])
        var payload = Array(buffer[(offset + 4)..<(offset + 4 + length)])
        for index in payload.indices { payload[index] ^= mask[index % 4] }
        buffer.removeFirst(offset + 4 + length)
        return (final, opcode, payload)
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBufferPointer {
                send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }
}

/// SHA-1 (FIPS 180-4), for the WebSocket handshake only (not for security).
enum SHA1 {
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var data = message
        let bitLength = UInt64(message.count) * 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8((bitLength >> UInt64(shift)) & 0xFF)) }
        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: data.count, by: 64) {
            for t in 0..<16 {
                let i = block + t * 4
                w[t] =
                    UInt32(data[i]) << 24 | UInt32(data[i + 1]) << 16 | UInt32(data[i + 2]) << 8 | UInt32(data[i + 3])
            }
            for t in 16..<80 {
                let x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]
                w[t] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for t in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch t {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[t]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temp)
            }
            h[0] = h[0] &+ a
            h[1] = h[1] &+ b
            h[2] = h[2] &+ c
            h[3] = h[3] &+ d
            h[4] = h[4] &+ e
        }
        return h.flatMap { value in [24, 16, 8, 0].map { UInt8((value >> UInt32($0)) & 0xFF) } }
    }
}

/// Standard base64 with padding.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        for start in stride(from: 0, to: bytes.count, by: 3) {
            let chunk = Array(bytes[start..<min(start + 3, bytes.count)])
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(16 - 8 * $1.offset) }
            for index in 0..<4 {
                out.append(index <= chunk.count ? Self.alphabet[Int((value >> UInt32(18 - 6 * index)) & 0x3F)] : 61)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
