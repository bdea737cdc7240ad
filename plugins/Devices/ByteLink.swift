import Foundation
import Synchronization

/// A byte stream to a device: a TCP connection, or a serial device or pseudo-terminal by path. Reads run on
/// their own thread; ``bytes`` ends when the link drops or ``close()`` is called.
final class ByteLink: Sendable {
    let bytes: AsyncStream<[UInt8]>
    let descriptor: Int32
    private final class Flag: Sendable { let value = Atomic<Bool>(false) }
    private let closed = Flag()

    /// Opens a TCP connection.
    static func tcp(host: String, port: UInt16) throws -> ByteLink {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw DeviceError.unreachable("tcp://\(host):\(port): cannot resolve")
        }
        defer { freeaddrinfo(result) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            let fd = socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            if fd >= 0 {
                if connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return ByteLink(descriptor: fd)
                }
                Glibc.close(fd)
            }
            entry = current.pointee.ai_next
        }
        throw DeviceError.unreachable("tcp://\(host):\(port): \(String(cString: strerror(errno)))")
    }

    /// Opens a serial device or a pseudo-terminal in raw mode.
    static func path(_ path: String, baud: Int) throws -> ByteLink {
        let fd = open(path, O_RDWR | O_NOCTTY)
        guard fd >= 0 else { throw DeviceError.unreachable("\(path): \(String(cString: strerror(errno)))") }
        var options = termios()
        if tcgetattr(fd, &options) == 0 {
            cfmakeraw(&options)
            cfsetispeed(&options, speed_t(B115200))
            cfsetospeed(&options, speed_t(B115200))
            _ = baud
            _ = tcsetattr(fd, TCSANOW, &options)
        }
        return ByteLink(descriptor: fd)
    }

    init(descriptor: Int32) {
        self.descriptor = descriptor
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(256))
        self.bytes = stream
        let thread = Thread { [closed] in
            var buffer = [UInt8](repeating: 0, count: 1024)
            while !closed.value.load(ordering: .relaxed) {
                let count = read(descriptor, &buffer, buffer.count)
                if count <= 0 { break }
                continuation.yield(Array(buffer[0..<count]))
            }
            continuation.finish()
        }
        thread.name = "byte-link"
        thread.start()
    }

    /// Writes all bytes; false when the link is gone.
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBufferPointer { Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == ENOTSOCK {
                let plain = bytes[offset...].withUnsafeBufferPointer { Glibc.write(self.descriptor, $0.baseAddress, $0.count) }
                if plain <= 0 { return false }
                offset += plain
                continue
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    func close() {
        if !self.closed.value.exchange(true, ordering: .relaxed) {
            shutdown(self.descriptor, Int32(SHUT_RDWR))
            Glibc.close(self.descriptor)
        }
    }
}

/// Why a device could not be reached.
public enum DeviceError: Error, CustomStringConvertible {
    /// Nothing answers at the address.
    case unreachable(String)

    public var description: String {
        switch self {
        case let .unreachable(detail): return detail
        }
    }
}
