import Glibc
public import NavCore
import SystemIO
import Synchronization

/// One HTTP request as the server read it.
public struct HTTPRequest: Sendable {
    /// "POST", "GET", …
    public let method: String
    /// The request target: path and query ("/push?token=…").
    public let target: String
    /// Header fields, names in lower case.
    public let headers: [String: String]
    /// The whole body.
    public let body: [UInt8]
    /// The peer's numeric address.
    public let peer: String

    /// The target's path, without the query.
    public var path: String { String(self.target.prefix { $0 != "?" }) }

    /// The query's parameters, percent-decoded (`+` as space); a pair that does not decode is left out.
    public var query: [String: String] {
        Dictionary(self.queryItems, uniquingKeysWith: { _, last in last })
    }

    /// The query's parameters in order, percent-decoded; a pair that does not decode is left out.
    public var queryItems: [(name: String, value: String)] {
        guard let mark = self.target.firstIndex(of: "?") else { return [] }
        var result: [(String, String)] = []
        for pair in self.target[self.target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = Self.percentDecoded(parts[0]),
                let value = parts.count > 1 ? Self.percentDecoded(parts[1]) : ""
            else { continue }
            result.append((key, value))
        }
        return result
    }

    /// Creates a request (the server makes them; tests may too).
    public init(method: String, target: String, headers: [String: String], body: [UInt8], peer: String) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(32)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(Self.hexValue),
                    let low = iterator.next().flatMap(Self.hexValue)
                else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The value of one hexadecimal digit, or nil.
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 65...70: byte - 55
        case 97...102: byte - 87
        default: nil
        }
    }
}

/// An HTTP answer from the server.
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    /// A response with a body (plain text by default).
    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// A short plain-text answer.
    public static func text(_ status: Int, _ text: String) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: Array((text + "\n").utf8))
    }
}

/// A small HTTP/1.1 server for what phones push to the lab (Sensor Logger's batches): bound to one address, a
/// thread per connection, keep-alive, a bound on the head and the body (413 beyond it), and a deadline on every
/// request. The handler runs on the connection's thread and must not block.
///
/// Connections that never send, or send a byte now and then, must not lock a phone out: the slots
/// (`maximumConnections`, a quarter of them per peer address) are shared by ``ConnectionSlots``' rule, a connection
/// proven by a request answered with success keeping its slot against strangers. `admit` sees each request's head
/// before its body is read: a request it refuses is answered at once and its body is never taken.
public final class HTTPServer: Sendable {
    /// The limits.
    public struct Limits: Sendable {
        /// The largest body taken [bytes].
        public var maximumBodyBytes = 1 << 20
        /// The largest request head [bytes].
        public var maximumHeadBytes = 16 * 1024
        /// How long a request may take to arrive, head and body [seconds].
        public var requestSeconds = 10.0
        /// How long a kept-alive connection may wait for its next request [seconds].
        public var idleSeconds = 15.0
        /// Connections served at once.
        public var maximumConnections = 32
        /// A connection quiet for this long that never had a request answered with success may lose its slot to a
        /// new connection when all are taken [seconds].
        public var quietSeconds = 0.25

        /// The defaults.
        public init() {}
    }

    /// The port bound (the one asked for, or the one the system chose for 0).
    public let port: UInt16
    private let descriptor: Int32
    private final class State: Sendable {
        let closed = Atomic<Bool>(false)
        let requests = Atomic<UInt64>(0)
        let refusedConnections = Atomic<UInt64>(0)
        let tooLarge = Atomic<UInt64>(0)
        let malformed = Atomic<UInt64>(0)
        let timedOut = Atomic<UInt64>(0)
        let evicted = Atomic<UInt64>(0)
        let refusedBeforeBody = Atomic<UInt64>(0)
        let slots: ConnectionSlots
        let limits: Limits
        let admit: @Sendable (HTTPRequest) -> HTTPServerResponse?
        let handler: @Sendable (HTTPRequest) -> HTTPServerResponse
        init(
            limits: Limits, admit: @escaping @Sendable (HTTPRequest) -> HTTPServerResponse?,
            handler: @escaping @Sendable (HTTPRequest) -> HTTPServerResponse
        ) {
            self.slots = ConnectionSlots(serving: limits.maximumConnections, quietSeconds: limits.quietSeconds)
            self.limits = limits
            self.admit = admit
            self.handler = handler
        }
    }
    private let state: State

    /// Binds `host`:`port` and serves `handler` until ``close()``. `admit` sees each request with its head only
    /// (`body` empty, not yet read): a response from it is sent at once and the connection closed, the body unread
    /// (a wrong secret, a wrong path); nil lets the request go on to `handler` with its body.
    public init(
        host: String, port: UInt16, limits: Limits = Limits(),
        admit: @escaping @Sendable (HTTPRequest) -> HTTPServerResponse? = { _ in nil },
        handler: @escaping @Sendable (HTTPRequest) -> HTTPServerResponse
    ) throws(LinkError) {
        let fd = try ListeningSocket.bind(host: host, port: port, type: Int32(SOCK_STREAM.rawValue), scheme: "http")
        self.descriptor = fd
        self.port = ListeningSocket.port(of: fd)
        self.state = State(limits: limits, admit: admit, handler: handler)
        let state = self.state
        SystemThread.start(name: "http-accept") {
            while !state.closed.load(ordering: .relaxed) {
                guard ListeningSocket.readable(fd, milliseconds: 100) else { continue }
                var address = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let client = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        accept(fd, $0, &length)
                    }
                }
                guard client >= 0 else { continue }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                let peer = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ListeningSocket.host($0, length) }
                }
                let admitted = state.slots.take(client, peer: peer, now: SystemClock.monotonicNanoseconds())
                if admitted.evicted { state.evicted.add(1, ordering: .relaxed) }
                guard let slot = admitted.slot else {
                    state.refusedConnections.add(1, ordering: .relaxed)
                    Glibc.close(client)
                    continue
                }
                SystemThread.start(name: "http-connection") {
                    Self.serve(client, peer: peer, slot: slot, state: state)
                    // The slot goes before the descriptor closes: a connection closed to make room is shut down
                    // under the slots' lock, and so never by a number the system has given to another since.
                    state.slots.release(slot)
                    Glibc.close(client)
                }
            }
            Glibc.close(fd)
        }
    }

    /// Counters for a status: requests served, connections refused (every slot taken by one that may keep it),
    /// connections closed to make room for a new one, requests refused on their head (body unread), bodies too
    /// large, requests that were not HTTP, requests that did not arrive in time.
    public var counters: [StatusCounter] {
        [
            StatusCounter(name: "http.requests", value: self.state.requests.load(ordering: .relaxed)),
            StatusCounter(
                name: "http.refusedConnections", value: self.state.refusedConnections.load(ordering: .relaxed)),
            StatusCounter(name: "http.evicted", value: self.state.evicted.load(ordering: .relaxed)),
            StatusCounter(
                name: "http.refusedBeforeBody", value: self.state.refusedBeforeBody.load(ordering: .relaxed)),
            StatusCounter(name: "http.tooLarge", value: self.state.tooLarge.load(ordering: .relaxed)),
            StatusCounter(name: "http.malformed", value: self.state.malformed.load(ordering: .relaxed)),
            StatusCounter(name: "http.timedOut", value: self.state.timedOut.load(ordering: .relaxed)),
        ]
    }

    /// Serves one connection already open on `fd` (a socket pair's end, say) on the calling thread, as a connection's
    /// own thread does after the accept, and returns when it ends; the caller closes `fd`. False when no slot was free
    /// for it. The fuzzer feeds whole connections through it, without the network's timing.
    package func serve(connection fd: Int32, peer: String) -> Bool {
        let admitted = self.state.slots.take(fd, peer: peer, now: SystemClock.monotonicNanoseconds())
        if admitted.evicted { self.state.evicted.add(1, ordering: .relaxed) }
        guard let slot = admitted.slot else {
            self.state.refusedConnections.add(1, ordering: .relaxed)
            return false
        }
        Self.serve(fd, peer: peer, slot: slot, state: self.state)
        self.state.slots.release(slot)
        return true
    }

    /// Stops accepting; the listening socket closes within 0.1 s. Connections being served finish their request.
    public func close() {
        self.state.closed.store(true, ordering: .relaxed)
    }

    deinit {
        self.state.closed.store(true, ordering: .relaxed)
    }

    private enum Failure: Error {
        case closed, timedOut, tooLarge, malformed
        case refused(HTTPServerResponse)
    }

    /// Serves requests on one connection until it closes, idles out, misbehaves or loses its slot.
    private static func serve(_ fd: Int32, peer: String, slot: ConnectionSlots.Slot, state: State) {
        let limits = state.limits
        var buffer: [UInt8] = []
        state.slots.began(slot, now: SystemClock.monotonicNanoseconds())
        while !state.closed.load(ordering: .relaxed) {
            let request: HTTPRequest
            var keepAlive = true
            do {
                request = try Self.read(
                    fd, &buffer, peer: peer, limits: limits, state: state, admit: state.admit,
                    activity: { state.slots.heard(slot, now: SystemClock.monotonicNanoseconds()) })
                keepAlive = request.headers["connection"]?.lowercased() != "close"
            } catch let .refused(response) {
                state.refusedBeforeBody.add(1, ordering: .relaxed)
                Self.write(fd, response, keepAlive: false)
                Self.lingeringClose(fd, limits: limits)
                return
            } catch .closed {
                return
            } catch .timedOut {
                if !buffer.isEmpty { state.timedOut.add(1, ordering: .relaxed) }
                return
            } catch .tooLarge {
                state.tooLarge.add(1, ordering: .relaxed)
                Self.write(fd, .text(413, "request too large"), keepAlive: false)
                Self.lingeringClose(fd, limits: limits)
                return
            } catch {
                state.malformed.add(1, ordering: .relaxed)
                Self.write(fd, .text(400, "not an HTTP/1.1 request"), keepAlive: false)
                Self.lingeringClose(fd, limits: limits)
                return
            }
            state.requests.add(1, ordering: .relaxed)
            let response = state.handler(request)
            if (200..<300).contains(response.status) {
                state.slots.proved(slot, now: SystemClock.monotonicNanoseconds())
            }
            guard Self.write(fd, response, keepAlive: keepAlive), keepAlive else { return }
        }
    }

    private static func now() -> Double { HTTPClient.now() }

    /// After refusing a request whose body is still arriving: stops writing and reads what the client still sends
    /// (for at most a second and twice the body limit) before the caller closes, so that the client finishes sending
    /// and reads the refusal instead of a connection reset.
    private static func lingeringClose(_ fd: Int32, limits: Limits) {
        _ = shutdown(fd, Int32(SHUT_WR))
        let deadline = Self.now() + 1
        var discarded = 0
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while Self.now() < deadline, discarded < 2 * limits.maximumBodyBytes {
            guard ListeningSocket.readable(fd, milliseconds: 50) else { continue }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return }
            discarded += count
        }
    }

    /// Reads one request: the head (up to a blank line), then, if `admit` lets it, Content-Length bytes of body;
    /// `activity` is called whenever bytes arrive.
    private static func read(
        _ fd: Int32, _ buffer: inout [UInt8], peer: String, limits: Limits, state: State,
        admit: @Sendable (HTTPRequest) -> HTTPServerResponse?, activity: () -> Void
    ) throws(Failure) -> HTTPRequest {
        let idleDeadline = Self.now() + limits.idleSeconds
        var deadline = idleDeadline
        func fill() throws(Failure) {
            while true {
                if state.closed.load(ordering: .relaxed) { throw .closed }
                let left = deadline - Self.now()
                guard left > 0 else { throw .timedOut }
                if ListeningSocket.readable(fd, milliseconds: Int32(min(100, left * 1000) + 1)) { break }
            }
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { throw .closed }
            activity()
            if buffer.isEmpty { deadline = min(idleDeadline, Self.now() + limits.requestSeconds) }
            buffer += chunk[0..<count]
        }
        // The head.
        var headEnd: Int?
        while headEnd == nil {
            headEnd = buffer.offset(of: [13, 10, 13, 10])
            if headEnd == nil {
                guard buffer.count <= limits.maximumHeadBytes else { throw .tooLarge }
                try fill()
                deadline = min(deadline, Self.now() + limits.requestSeconds)
            }
        }
        let head = Array(buffer[0..<headEnd!])
        guard head.count <= limits.maximumHeadBytes, let text = String(validating: head, as: UTF8.self) else {
            throw .malformed
        }
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { throw .malformed }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...]).trimmed()
        }
        if headers["transfer-encoding"] != nil { throw .malformed }  // phones send a length; chunks are not taken
        let length: Int
        if let field = headers["content-length"] {
            guard let value = Int(field), value >= 0 else { throw .malformed }
            guard value <= limits.maximumBodyBytes else { throw .tooLarge }
            length = value
        } else {
            length = 0
        }
        let method = String(requestLine[0])
        let target = String(requestLine[1])
        if let refusal = admit(HTTPRequest(method: method, target: target, headers: headers, body: [], peer: peer)) {
            throw .refused(refusal)
        }
        let bodyStart = headEnd! + 4
        while buffer.count < bodyStart + length { try fill() }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        return HTTPRequest(method: method, target: target, headers: headers, body: body, peer: peer)
    }

    /// Writes a response; false when the peer has gone.
    @discardableResult
    private static func write(_ fd: Int32, _ response: HTTPServerResponse, keepAlive: Bool) -> Bool {
        let reason =
            switch response.status {
            case 200: "OK"
            case 204: "No Content"
            case 400: "Bad Request"
            case 401: "Unauthorized"
            case 403: "Forbidden"
            case 404: "Not Found"
            case 405: "Method Not Allowed"
            case 413: "Content Too Large"
            case 415: "Unsupported Media Type"
            default: "Status"
            }
        let head =
            "HTTP/1.1 \(response.status) \(reason)\r\nContent-Type: \(response.contentType)\r\n"
            + "Content-Length: \(response.body.count)\r\nConnection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        let bytes = Array(head.utf8) + response.body
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBufferPointer {
                send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }
}
