import Foundation

/// A TCP port on 127.0.0.1 that nothing listens on right now.
public func freeTCPPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A fresh folder for a test's sockets and files, short enough for ipc:// paths (108 bytes at most).
public func scratchFolder() throws -> String {
    let path = "/tmp/hn-test-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs `body`, giving up after `seconds`: then `onTimeout` runs (to unblock `body`, say by closing
/// what it reads) and the result is nil unless `body` still returns one.
public func withDeadline<T: Sendable>(seconds: Double, onTimeout: @escaping @Sendable () -> Void = {},
                                      _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            if !Task.isCancelled { onTimeout() }
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
