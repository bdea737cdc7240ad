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
    /// The descriptor's lifetime. Its number is given back to the system only when the link is closed and nobody
    /// uses it any more (the reading thread has left, no write is under way): a write or read after that would
    /// reach whatever the process opened next under the same number, another device or a socket, and a band's
    /// frame would land in a stranger's stream. Every use holds a reference; the last one out closes.
    private final class Lifetime: Sendable {
        struct State {
            var closed = false
            /// The reading thread's and the owner's, and one per write under way.
            var references = 2
            var beforeClosing: [@Sendable (Int32) -> Void] = []
        }
        let state = Mutex(State())
        let closedFlag = Atomic<Bool>(false)
        let descriptor: Int32
        init(descriptor: Int32) { self.descriptor = descriptor }

        /// A reference for one use, or nil once the link is closed.
        func acquire() -> Bool {
            self.state.withLock {
                guard !$0.closed else { return false }
                $0.references += 1
                return true
            }
        }

        /// Gives a reference back; the last one runs the closing actions and closes the descriptor.
        func release() {
            let actions: [@Sendable (Int32) -> Void]? = self.state.withLock {
                $0.references -= 1
                return $0.references == 0 ? $0.beforeClosing : nil
            }
            guard let actions else { return }
            for action in actions { action(self.descriptor) }
            Glibc.close(self.descriptor)
        }

        /// Marks the link closed (no new use starts) and wakes a read or write under way; true the first time.
        func markClosed() -> Bool {
            let first = self.state.withLock { state in
                defer { state.closed = true }
                return !state.closed
            }
            guard first else { return false }
            self.closedFlag.store(true, ordering: .relaxed)
            shutdown(self.descriptor, Int32(SHUT_RDWR))
            return true
        }
    }
    private let lifetime: Lifetime

    /// Connects to a TCP server, giving up after `timeoutSeconds` (a host that does not answer would otherwise
    /// hold the caller for the kernel's whole connect timeout, minutes).
    public static func tcp(
        host: String, port: UInt16, timeoutSeconds: Double = 2, splitLines: Bool = false
    ) throws -> ByteLink {
        ByteLink(
            descriptor: try Self.connectTCP(host: host, port: port, timeoutSeconds: timeoutSeconds),
            splitLines: splitLines)
    }

    /// A connected TCP socket to `host`:`port` with TCP_NODELAY, blocking (a link makes it non-blocking), or a
    /// ``LinkError`` naming the address and the reason after `timeoutSeconds`.
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
        // Close-on-exec: a program this process starts (a stage, a tool) must not hold the band's port open.
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
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

    /// Reads an open descriptor on a thread of its own. The link owns the descriptor, which must be shared with nobody
    /// (not standard input, not one inherited): it becomes non-blocking, its reads wait in `poll`, and its writes wait
    /// for room no longer than their time limit.
    public init(descriptor: Int32, splitLines: Bool = false) {
        self.descriptor = descriptor
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
        let lifetime = Lifetime(descriptor: descriptor)
        self.lifetime = lifetime
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(4096))
        self.chunks = stream
        // A reader that stops listening leaves the link open: its owner may still write (a band's last stopAll after
        // the task that read it was cancelled) and closes it, or its end does.
        SystemThread.start(name: "byte-link") {
            defer {
                // The peer has gone (or the link was closed): no write starts after this.
                if lifetime.markClosed() { lifetime.release() }
                lifetime.release()
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var line: [UInt8] = []
            while !lifetime.closedFlag.load(ordering: .relaxed) {
                // A bounded wait, so that a close is seen within 0.1 s on a serial port or pseudo-terminal too
                // (shutdown wakes only sockets).
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&waiting, 1, 100)
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
                if ready < 0 { break }
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
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
    }

    /// Runs `body` with the descriptor while it is open and cannot be given back meanwhile (registering it with a
    /// crash handler, say); false, without running it, once the link is closed.
    @discardableResult
    public func withOpenDescriptor(_ body: (Int32) -> Void) -> Bool {
        guard self.lifetime.acquire() else { return false }
        defer { self.lifetime.release() }
        body(self.descriptor)
        return true
    }

    /// Writes all bytes (without SIGPIPE on a socket whose peer has gone) within `timeoutSeconds` for the whole write
    /// (at most 10⁶ s); false when the link is gone, or when its peer has not taken them all by then (a band whose
    /// firmware hangs, a bridge that stopped reading, a serial port held by flow control); some of them may have gone.
    /// A write never waits longer: the caller learns that the device is gone and falls back, warns and reconnects,
    /// instead of hanging with it (and everything waiting on the caller) while the device's motors do whatever they
    /// last were told.
    public func write(_ bytes: [UInt8], timeoutSeconds: Double = 1) -> Bool {
        guard self.lifetime.acquire() else { return false }
        defer { self.lifetime.release() }
        let deadline = SystemClock.monotonicNanoseconds() + Int64(min(max(0, timeoutSeconds), 1e6) * 1e9)
        var offset = 0
        while offset < bytes.count {
            var written = bytes[offset...].withUnsafeBufferPointer {
                Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written < 0 && errno == ENOTSOCK {
                // A serial port or pseudo-terminal: non-blocking since the link was made.
                written = bytes[offset...].withUnsafeBufferPointer {
                    Glibc.write(self.descriptor, $0.baseAddress, $0.count)
                }
            }
            if written > 0 {
                offset += written
                continue
            }
            guard written < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return false }
            // No room: wait for some, in slices that see a close (which does not wake a terminal's poll).
            let left = deadline - SystemClock.monotonicNanoseconds()
            guard left > 0, !self.lifetime.closedFlag.load(ordering: .relaxed) else { return false }
            var waiting = pollfd(fd: self.descriptor, events: Int16(POLLOUT), revents: 0)
            _ = poll(&waiting, 1, Int32(min(100, (left + 999_999) / 1_000_000)))
        }
        return true
    }

    /// The open descriptor, for a crash handler's last write (see `CEmergencyStop`): register it with
    /// ``whenClosing(_:)`` unregistering it, and never close it directly.
    public var fileDescriptor: Int32 { self.descriptor }

    /// Runs `action` with the descriptor just before its number is given back to the system (after ``close()``,
    /// once the reading thread and every write have left it), or at once when that has happened already: where a
    /// crash handler that writes to the descriptor unregisters it. Returns false when it ran at once.
    @discardableResult
    public func whenClosing(_ action: @escaping @Sendable (Int32) -> Void) -> Bool {
        let added = self.lifetime.state.withLock {
            guard $0.references > 0 else { return false }
            $0.beforeClosing.append(action)
            return true
        }
        if !added { action(self.descriptor) }
        return added
    }

    /// True once ``close()`` was called or the peer went away (the reading thread saw the end).
    public var isClosed: Bool { self.lifetime.closedFlag.load(ordering: .relaxed) }

    /// Closes the link: no write starts after it, the reading thread ends within 0.1 s and ``chunks`` finishes;
    /// the descriptor itself is closed when the last use has left it. Idempotent.
    public func close() {
        if self.lifetime.markClosed() { self.lifetime.release() }
    }

    deinit {
        self.close()
    }
}
