import Foundation

/// A datagram listener standing in for systemd's journal socket: each datagram read as the native protocol's fields.
public final class JournalListener: @unchecked Sendable {
    public let path: String
    private let descriptor: Int32

    public init(folder: String) throws {
        self.path = folder + "/journal.socket"
        self.descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(self.path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw TestProcessError("bind \(self.path): errno \(errno)") }
    }

    deinit { close(self.descriptor) }

    /// The next datagram's fields (the native protocol's both forms), or nil when none came within `seconds` (or it
    /// could not be read).
    public func receive(within seconds: Double = 10) -> [String: String]? {
        var waiting = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, Int32(seconds * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(self.descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Self.fields(Array(buffer[0..<count]))
    }

    public static func fields(_ bytes: [UInt8]) -> [String: String]? {
        var fields: [String: String] = [:]
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == 0x0A || $0 == UInt8(ascii: "=") }) else {
                return nil
            }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                guard let lineEnd = bytes[end...].firstIndex(of: 0x0A) else { return nil }
                fields[name] = String(decoding: bytes[(end + 1)..<lineEnd], as: UTF8.self)
                index = lineEnd + 1
            } else {
                guard end + 9 <= bytes.count else { return nil }
                var length: UInt64 = 0
                for (shift, byte) in bytes[(end + 1)..<(end + 9)].enumerated() { length |= UInt64(byte) << (8 * shift) }
                let start = end + 9
                guard start + Int(length) < bytes.count, bytes[start + Int(length)] == 0x0A else { return nil }
                fields[name] = String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)
                index = start + Int(length) + 1
            }
        }
        return fields
    }
}
