import Glibc
import SystemIO
import Synchronization

/// Why a link could not be opened.
public enum LinkError: Error, CustomStringConvertible, Sendable {
    /// Nothing answers at the address, or the device cannot be opened.
    case unreachable(String)

    public var description: String {
        switch self {
        case let .unreachable(detail): return detail
        }
    }
}

/// A byte stream to a device or a server: a TCP connection, a serial port or a pseudo-terminal. Reads run on a
/// thread of their own, so that blocking reads never occupy Swift's cooperative pool (or a subscriber's receive
/// thread); ``chunks`` ends when the peer closes or ``close()`` is called.
public final class ByteLink: Sendable {
    /// What was read: raw chunks, or one line per element (without its CR or LF) when made with `splitLines`.
    public let chunks: AsyncStream<[UInt8]>
    private let descriptor: Int32
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
    private let closed = Flag()

    /// Connects to a TCP server, giving up after `timeoutSeconds` (a host that does not answer would otherwise
    /// hold the caller for the kernel's whole connect timeout, minutes).
    public static func tcp(
        host: String, port: UInt16, timeoutSeconds: Double = 2, splitLines: Bool = false
    ) throws -> ByteLink {
        ByteLink(
            descriptor: try Self.connectTCP(host: host, port: port, timeoutSeconds: timeoutSeconds),
            splitLines: splitLines)
    }

    /// A connected, blocking TCP socket to `host`:`port` with TCP_NODELAY, or a ``LinkError`` naming the address
    /// and the reason after `timeoutSeconds`.
    static func connectTCP(host: String, port: UInt16, timeoutSeconds: Double) throws(LinkError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw LinkError.unreachable("tcp://\(host):\(port): cannot resolve")
        }
        defer { freeaddrinfo(result) }
        var failure = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            let fd = socket(
                current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                current.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var connected = connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0
            if !connected && errno == EINPROGRESS {
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&descriptor, 1, Int32(timeoutSeconds * 1000)) == 1 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    connected = error == 0
                    errno = error
                } else {
                    errno = ETIMEDOUT
                }
            }
            guard connected else {
                failure = String(cString: strerror(errno))
                Glibc.close(fd)
                continue
            }
            // Nothing listening on a loopback port in the ephemeral range, and a connect that the kernel gave that
            // very port as its source: TCP's simultaneous open connects the socket to itself. A device would then
            // read its own frames; refuse it as the absent peer it is.
            if Self.isConnectedToItself(fd) {
                failure = "connected to itself (nothing listens there)"
                Glibc.close(fd)
                continue
            }
            _ = fcntl(fd, F_SETFL, flags)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        throw LinkError.unreachable("tcp://\(host):\(port): \(failure)")
    }

    /// True when a TCP socket's local and peer addresses are the same (a self-connection).
    static func isConnectedToItself(_ fd: Int32) -> Bool {
        var local = sockaddr_storage(), peer = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let gotLocal = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
        }
        let gotPeer = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) }
        }
        guard gotLocal == 0, gotPeer == 0, localLength == peerLength else { return false }
        return withUnsafeBytes(of: &local) { a in
            withUnsafeBytes(of: &peer) { b in a.prefix(Int(localLength)).elementsEqual(b.prefix(Int(peerLength))) }
        }
    }

    /// Opens a serial port or pseudo-terminal in raw mode at `baud`.
    public static func serial(path: String, baud: Int, splitLines: Bool = false) throws -> ByteLink {
        let fd = open(path, O_RDWR | O_NOCTTY)
        guard fd >= 0 else { throw LinkError.unreachable("\(path): \(String(cString: strerror(errno)))") }
        var options = termios()
        if tcgetattr(fd, &options) == 0 {
            cfmakeraw(&options)
            cfsetispeed(&options, self.speed(baud))
            cfsetospeed(&options, self.speed(baud))
            options.c_cflag |= tcflag_t(CLOCAL | CREAD)
            _ = tcsetattr(fd, TCSANOW, &options)
        }
        return ByteLink(descriptor: fd, splitLines: splitLines)
    }

    static func speed(_ baud: Int) -> speed_t {
        switch baud {
        case 4800: return speed_t(B4800)
        case 19200: return speed_t(B19200)
        case 38400: return speed_t(B38400)
        case 57600: return speed_t(B57600)
        case 115_200: return speed_t(B115200)
        case 230_400: return speed_t(B230400)
        case 460_800: return speed_t(B460800)
        case 921_600: return speed_t(B921600)
        default: return speed_t(B9600)
        }
    }

    /// Reads an open descriptor on a thread of its own.
    public init(descriptor: Int32, splitLines: Bool = false) {
        self.descriptor = descriptor
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(4096))
        self.chunks = stream
        SystemThread.start(name: "byte-link") { [closed] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            var line: [UInt8] = []
            while !closed.value.load(ordering: .relaxed) {
                let count = read(descriptor, &buffer, buffer.count)
                if count <= 0 { break }
                guard splitLines else {
                    continuation.yield(Array(buffer[0..<count]))
                    continue
                }
                for byte in buffer[0..<count] {
                    if byte == 10 || byte == 13 {
                        if !line.isEmpty { continuation.yield(line) }
                        line.removeAll(keepingCapacity: true)
                    } else if line.count < 65_536 {
                        line.append(byte)
                    }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { [weak self] _ in self?.close() }
    }

    /// Writes all bytes (without SIGPIPE on a socket whose peer has gone); false when the link is gone.
    public func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            var written = bytes[offset...].withUnsafeBufferPointer {
                Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == ENOTSOCK {
                written = bytes[offset...].withUnsafeBufferPointer {
                    Glibc.write(self.descriptor, $0.baseAddress, $0.count)
                }
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// The open descriptor, for a crash handler's last write (see `CEmergencyStop`); never close it directly.
    public var fileDescriptor: Int32 { self.descriptor }

    /// Closes the link; the reading thread ends and ``chunks`` finishes. Idempotent.
    public func close() {
        if !self.closed.value.exchange(true, ordering: .relaxed) {
            shutdown(self.descriptor, Int32(SHUT_RDWR))
            Glibc.close(self.descriptor)
        }
    }
}
