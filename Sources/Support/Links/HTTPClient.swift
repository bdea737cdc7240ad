import Glibc
import NavCore
import Synchronization
import SystemIO

/// Why an HTTP exchange failed, in one line that names the server, the request and the reason.
public struct HTTPError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        /// No connection (refused, unreachable, cannot resolve).
        case connection(String)
        /// No complete answer within the time allowed.
        case timedOut(seconds: Double)
        /// The answer is not HTTP/1.x as this client reads it.
        case malformed(String)
        /// The caller's task was cancelled.
        case cancelled
    }

    public let server: String
    public let request: String
    public let reason: Reason

    /// An error of `request` to `server`.
    public init(server: String, request: String, reason: Reason) {
        self.server = server
        self.request = request
        self.reason = reason
    }

    public var description: String {
        let why =
            switch self.reason {
            case let .connection(detail): detail
            case let .timedOut(seconds): "no complete answer within \(seconds) s"
            case let .malformed(detail): "not an HTTP answer: \(detail)"
            case .cancelled: "cancelled"
            }
        return "\(self.server) \(self.request): \(why)"
    }
}

/// An HTTP answer: status, header fields (names in lower case) and the whole body.
public struct HTTPResponse: Sendable {
    public let status: Int
    public let headers: [String: String]
    public let body: [UInt8]
}

/// A small HTTP/1.1 client for servers on the lab's network (routing engines): plain `http://`, one kept-alive
/// connection reused between requests, a deadline on every request (connect, send and the whole answer), and
/// cancellation that closes the socket at once. The blocking socket work runs on a thread of its own, never on
/// Swift's cooperative pool.
public final class HTTPClient: Sendable {
    /// `host:port`, as requests name it.
    public let server: String
    private let host: String
    private let port: UInt16
    private let idle = Mutex<Int32?>(nil)

    /// A client of `http://host:port`.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
        self.server = host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// A client of an `http://host[:port]` base URL (the path part is the caller's), or nil for anything else.
    public convenience init?(baseURL: String) {
        guard let (host, port, _) = Self.split(url: baseURL) else { return nil }
        self.init(host: host, port: port)
    }

    /// Splits `http://host[:port][/path]` into its parts (port 80 when absent); nil when it is not that shape.
    public static func split(url: String) -> (host: String, port: UInt16, path: String)? {
        guard url.lowercased().hasPrefix("http://") else { return nil }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let path = String(rest.dropFirst(authority.count))
        var host = Substring(authority)
        var port: UInt16 = 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let number = UInt16(after.dropFirst()), number > 0 else { return nil }
                port = number
            } else if !after.isEmpty {
                return nil
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = UInt16(host[host.index(after: colon)...]), number > 0 else { return nil }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "@" || $0.isWhitespace }) else { return nil }
        return (String(host), port, path.isEmpty ? "/" : path)
    }

    deinit {
        if let fd = self.idle.withLock({ $0 }) { _ = Glibc.close(fd) }
    }

    /// Sends `method` `path` (with `body`, typed `contentType`) and reads the whole answer within `timeoutSeconds`.
    public func send(
        method: String, path: String, body: [UInt8] = [], contentType: String? = nil, timeoutSeconds: Double
    ) async throws(HTTPError) -> HTTPResponse {
        let label = "\(method) \(path.count > 120 ? String(path.prefix(117)) + "..." : path)"
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(self.host):\(self.port)\r\nAccept: application/json\r\n"
        head += "User-Agent: hapticnav\r\nConnection: keep-alive\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        let exchange = Exchange()
        let outcome: Result<HTTPResponse, HTTPError> = await withTaskCancellationHandler {
            await SystemThread.run(name: "http") { [self] in
                self.exchange(request, label: label, timeoutSeconds: timeoutSeconds, exchange)
            }
        } onCancel: {
            exchange.cancel()
        }
        return try outcome.get()
    }

    /// The socket in use by one request, so that cancellation can shut it down from another thread.
    private final class Exchange: Sendable {
        let state = Mutex<(descriptor: Int32?, cancelled: Bool)>((nil, false))

        func use(_ fd: Int32) -> Bool {
            self.state.withLock { state in
                state.descriptor = fd
                return !state.cancelled
            }
        }

        func release() { self.state.withLock { $0.descriptor = nil } }

        var isCancelled: Bool { self.state.withLock { $0.cancelled } }

        func cancel() {
            self.state.withLock { state in
                state.cancelled = true
                if let fd = state.descriptor { _ = shutdown(fd, Int32(SHUT_RDWR)) }
            }
        }
    }

    private func exchange(
        _ request: [UInt8], label: String, timeoutSeconds: Double, _ exchange: Exchange
    ) -> Result<HTTPResponse, HTTPError> {
        let deadline = Self.now() + timeoutSeconds
        // A kept-alive connection the server may have closed meanwhile: one try on it, then one on a fresh one.
        var attempts: [Int32?] = [
            self.idle.withLock { idle in
                defer { idle = nil }; return idle
            }
        ]
        if attempts[0] != nil { attempts.append(nil) }
        var lastError = HTTPError.Reason.connection("no attempt")
        for (index, reused) in attempts.enumerated() {
            let fd: Int32
            if let reused {
                fd = reused
            } else {
                do {
                    fd = try ByteLink.connectTCP(
                        host: self.host, port: self.port, timeoutSeconds: max(0.001, deadline - Self.now()))
                } catch {
                    if exchange.isCancelled { return .failure(self.error(label, .cancelled)) }
                    return .failure(
                        self.error(
                            label, Self.now() >= deadline ? .timedOut(seconds: timeoutSeconds) : .connection("\(error)")
                        ))
                }
            }
            guard exchange.use(fd) else {
                _ = Glibc.close(fd)
                return .failure(self.error(label, .cancelled))
            }
            let result = Self.roundTrip(fd, request, deadline: deadline, timeoutSeconds: timeoutSeconds)
            exchange.release()
            switch result {
            case let .success((response, reusable)):
                if reusable {
                    let previous = self.idle.withLock { idle in
                        defer { idle = fd }; return idle
                    }
                    if let previous { _ = Glibc.close(previous) }
                } else {
                    _ = Glibc.close(fd)
                }
                return .success(response)
            case let .failure(failure):
                _ = Glibc.close(fd)
                if exchange.isCancelled { return .failure(self.error(label, .cancelled)) }
                lastError = failure.reason
                // Only a reused connection that closed before answering anything earns a second try.
                guard reused != nil, index + 1 < attempts.count, failure.nothingRead else {
                    return .failure(self.error(label, failure.reason))
                }
            }
        }
        return .failure(self.error(label, lastError))
    }

    private func error(_ label: String, _ reason: HTTPError.Reason) -> HTTPError {
        HTTPError(server: self.server, request: label, reason: reason)
    }

    private struct Failure: Error {
        let reason: HTTPError.Reason
        var nothingRead = false
    }

    /// Writes the request and reads one answer; the flag says whether the connection may carry another.
    private static func roundTrip(
        _ fd: Int32, _ request: [UInt8], deadline: Double, timeoutSeconds: Double
    ) -> Result<(HTTPResponse, Bool), Failure> {
        var reader = Reader(fd: fd, deadline: deadline, timeoutSeconds: timeoutSeconds)
        do {
            try reader.writeAll(request)
            let headText: [UInt8]
            do {
                headText = try reader.readHead()
            } catch var failure {
                failure.nothingRead = reader.received == 0
                throw failure
            }
            guard let (status, headers) = Self.parseHead(headText) else {
                throw Failure(
                    reason: .malformed("status line '\(String(decoding: headText.prefix(60), as: UTF8.self))'"))
            }
            var reusable = headers["connection"]?.lowercased() != "close"
            let body: [UInt8]
            if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                body = try reader.readChunked()
            } else if let lengthText = headers["content-length"] {
                guard let length = Int(lengthText.trimmed()), length >= 0, length <= Reader.maximumBody else {
                    throw Failure(reason: .malformed("Content-Length '\(lengthText)'"))
                }
                body = try reader.read(count: length)
            } else if status == 204 || status == 304 || (100..<200).contains(status) {
                body = []
            } else {
                body = try reader.readToClose()
                reusable = false
            }
            return .success((HTTPResponse(status: status, headers: headers, body: body), reusable && reader.isDrained))
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(reason: .malformed("\(error)")))
        }
    }

    /// Writes `request` on a connection already open on `fd` (a socket pair's end, say) and reads one answer within
    /// `timeoutSeconds`, as ``send(method:path:body:contentType:timeoutSeconds:)`` does on its connection; the answer
    /// and whether the connection could carry another. The fuzzer feeds servers' answers through it.
    package static func exchange(
        on fd: Int32, _ request: [UInt8], timeoutSeconds: Double
    ) -> Result<(response: HTTPResponse, reusable: Bool), HTTPError> {
        switch Self.roundTrip(fd, request, deadline: Self.now() + timeoutSeconds, timeoutSeconds: timeoutSeconds) {
        case let .success((response, reusable)): .success((response, reusable))
        case let .failure(failure):
            .failure(HTTPError(server: "descriptor \(fd)", request: "exchange", reason: failure.reason))
        }
    }

    /// The status code and header fields (lower-case names) of an answer's head.
    static func parseHead(_ bytes: [UInt8]) -> (Int, [String: String])? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let statusLine = lines.first else { return nil }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...599).contains(status)
        else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers[line[..<colon].lowercased().trimmed()] = line[line.index(after: colon)...].trimmed()
        }
        return (status, headers)
    }

    static func now() -> Double { SystemClock.monotonicSeconds() }

    /// Buffered reads with a deadline.
    private struct Reader {
        static let maximumHead = 64 * 1024
        static let maximumBody = 64 * 1024 * 1024
        let fd: Int32
        let deadline: Double
        let timeoutSeconds: Double
        var buffer: [UInt8] = []
        var received = 0
        var closed = false

        init(fd: Int32, deadline: Double, timeoutSeconds: Double) {
            self.fd = fd
            self.deadline = deadline
            self.timeoutSeconds = timeoutSeconds
        }

        /// True when nothing beyond the answer was read (the connection can carry the next one).
        var isDrained: Bool { self.buffer.isEmpty && !self.closed }

        func wait(for events: Int32) throws(Failure) {
            while true {
                let remaining = self.deadline - HTTPClient.now()
                guard remaining > 0 else { throw Failure(reason: .timedOut(seconds: self.timeoutSeconds)) }
                var descriptor = pollfd(fd: self.fd, events: Int16(events), revents: 0)
                let ready = poll(&descriptor, 1, Int32(min(remaining * 1000, 60_000).rounded(.up)))
                if ready > 0 { return }
                if ready < 0 && errno != EINTR {
                    throw Failure(reason: .connection(String(cString: strerror(errno))))
                }
            }
        }

        func writeAll(_ bytes: [UInt8]) throws(Failure) {
            var done = 0
            while done < bytes.count {
                try self.wait(for: Int32(POLLOUT))
                let count = bytes[done...].withUnsafeBytes {
                    Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw Failure(reason: .connection("send: \(String(cString: strerror(errno)))"))
                }
                done += count
            }
        }

        /// Reads more into the buffer; false at the end of the stream.
        mutating func fill() throws(Failure) -> Bool {
            guard !self.closed else { return false }
            try self.wait(for: Int32(POLLIN))
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = chunk.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { return true }
                throw Failure(reason: .connection("receive: \(String(cString: strerror(errno)))"))
            }
            if count == 0 {
                self.closed = true
                return false
            }
            self.received += count
            self.buffer += chunk[0..<count]
            return true
        }

        mutating func readHead() throws(Failure) -> [UInt8] {
            while true {
                if let end = self.buffer.offset(of: [13, 10, 13, 10]) {
                    let head = Array(self.buffer[0..<end])
                    self.buffer.removeFirst(end + 4)
                    return head
                }
                guard self.buffer.count <= Self.maximumHead else {
                    throw Failure(reason: .malformed("a head longer than \(Self.maximumHead) bytes"))
                }
                guard try self.fill() else {
                    throw Failure(reason: .connection("the server closed the connection before answering"))
                }
            }
        }

        mutating func readLine() throws(Failure) -> [UInt8] {
            while true {
                if let end = self.buffer.offset(of: [13, 10]) {
                    let line = Array(self.buffer[0..<end])
                    self.buffer.removeFirst(end + 2)
                    return line
                }
                guard self.buffer.count <= Self.maximumHead else {
                    throw Failure(reason: .malformed("a line too long"))
                }
                guard try self.fill() else { throw Failure(reason: .connection("the answer was cut short")) }
            }
        }

        mutating func read(count: Int) throws(Failure) -> [UInt8] {
            while self.buffer.count < count {
                guard try self.fill() else { throw Failure(reason: .connection("the answer was cut short")) }
            }
            let bytes = Array(self.buffer[0..<count])
            self.buffer.removeFirst(count)
            return bytes
        }

        mutating func readChunked() throws(Failure) -> [UInt8] {
            var body: [UInt8] = []
            while true {
                let line = String(decoding: try self.readLine(), as: UTF8.self)
                let sizeText = line.prefix { $0 != ";" }.trimmed()
                guard let size = Int(sizeText, radix: 16), size >= 0, body.count + size <= Self.maximumBody else {
                    throw Failure(reason: .malformed("chunk size '\(sizeText.prefix(20))'"))
                }
                if size == 0 {
                    // Trailer fields until the empty line.
                    while !(try self.readLine()).isEmpty {}
                    return body
                }
                body += try self.read(count: size)
                guard try self.readLine().isEmpty else { throw Failure(reason: .malformed("a chunk without its CRLF")) }
            }
        }

        mutating func readToClose() throws(Failure) -> [UInt8] {
            while try self.fill() {
                guard self.buffer.count <= Self.maximumBody else {
                    throw Failure(reason: .malformed("a body longer than \(Self.maximumBody) bytes"))
                }
            }
            defer { self.buffer = [] }
            return self.buffer
        }
    }
}
