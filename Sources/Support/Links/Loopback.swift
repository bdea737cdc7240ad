import Glibc

/// TCP on 127.0.0.1 with a port the kernel chooses: for benchmarks and tests that start servers of their own.
public enum Loopback {
    /// A TCP socket bound to 127.0.0.1 on a port the kernel chose, and that port (descriptor −1 when none could be made).
    public static func boundSocket() -> (descriptor: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return (-1, 0) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// A TCP port on 127.0.0.1 that nothing listens on right now.
    public static func freePort() -> Int {
        let (fd, port) = self.boundSocket()
        if fd >= 0 { close(fd) }
        return Int(port)
    }
}
