import Glibc
import SystemIO
import Synchronization

/// A bound socket: what UDP receivers and the HTTP server listen on.
enum ListeningSocket {
    /// A socket of `type` (SOCK_DGRAM, SOCK_STREAM) bound to `host`:`port` ("0.0.0.0", "::", "127.0.0.1"; port 0 for
    /// any free one), listening when it is a stream.
    static func bind(host: String, port: UInt16, type: Int32, scheme: String) throws(LinkError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = type
        hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw LinkError.unreachable("\(scheme)://\(host):\(port): not a numeric address to listen on")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(first.pointee.ai_family, type | Int32(SOCK_CLOEXEC.rawValue), first.pointee.ai_protocol)
        guard fd >= 0 else {
            throw LinkError.unreachable("\(scheme)://\(host):\(port): \(String(cString: strerror(errno)))")
        }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard Glibc.bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0,
            type != Int32(SOCK_STREAM.rawValue) || listen(fd, 128) == 0
        else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw LinkError.unreachable("\(scheme)://\(host):\(port): \(reason)")
        }
        return fd
    }

    /// The port a socket is bound to.
    static func port(of fd: Int32) -> UInt16 {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0 else { return 0 }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// A peer's numeric address ("192.168.1.23", "::1").
    static func host(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> String {
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return "?"
        }
        var host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if host.hasPrefix("::ffff:") { host.removeFirst("::ffff:".count) }
        return host
    }

    /// Waits up to `milliseconds` for `fd` to be readable; false on a timeout or an error.
    static func readable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) == 1
    }
}

/// A UDP port that receives datagrams (NMEA sentences from a phone app), on a thread of its own. Datagrams from a
/// sender outside `allowedSenders` (when given) are counted and dropped: on a shared network anyone can send.
public final class DatagramLink: Sendable {
    /// One received datagram and who sent it (numeric address).
    public struct Datagram: Sendable {
        public let bytes: [UInt8]
        public let sender: String
    }

    /// What arrives; ends when ``close()`` is called. Bounded: a flood keeps the newest.
    public let datagrams: AsyncStream<Datagram>
    /// The port bound (the one asked for, or the one the system chose for 0).
    public let port: UInt16
    private let descriptor: Int32
    private final class State: Sendable {
        let closed = Atomic<Bool>(false)
        let refused = Atomic<UInt64>(0)
        let received = Atomic<UInt64>(0)
    }
    private let state = State()

    /// Binds `host`:`port` ("0.0.0.0" for every interface).
    public init(host: String, port: UInt16, allowedSenders: Set<String>? = nil) throws(LinkError) {
        let fd = try ListeningSocket.bind(host: host, port: port, type: Int32(SOCK_DGRAM.rawValue), scheme: "udp")
        self.descriptor = fd
        self.port = ListeningSocket.port(of: fd)
        let (stream, continuation) = AsyncStream.makeStream(of: Datagram.self, bufferingPolicy: .bufferingNewest(1024))
        self.datagrams = stream
        let state = self.state
        SystemThread.start(name: "udp-link") {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !state.closed.load(ordering: .relaxed) {
                guard ListeningSocket.readable(fd, milliseconds: 100) else { continue }
                var address = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
                guard count >= 0 else { continue }
                let sender = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ListeningSocket.host($0, length) }
                }
                if let allowedSenders, !allowedSenders.contains(sender) {
                    state.refused.add(1, ordering: .relaxed)
                    continue
                }
                state.received.add(1, ordering: .relaxed)
                continuation.yield(Datagram(bytes: Array(buffer[0..<count]), sender: sender))
            }
            Glibc.close(fd)
            continuation.finish()
        }
        continuation.onTermination = { [state] _ in state.closed.store(true, ordering: .relaxed) }
    }

    /// Datagrams taken, and refused for their sender [count].
    public var receivedCount: UInt64 { self.state.received.load(ordering: .relaxed) }
    public var refusedCount: UInt64 { self.state.refused.load(ordering: .relaxed) }

    /// Stops receiving; the thread ends within 0.1 s and closes the socket.
    public func close() {
        self.state.closed.store(true, ordering: .relaxed)
    }

    deinit {
        self.state.closed.store(true, ordering: .relaxed)
    }
}
