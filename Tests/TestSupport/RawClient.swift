import Foundation
import Synchronization
import SystemIO

/// A raw TCP client from a chosen loopback address (the whole of 127/8 is this machine's): a stranger on the lab's
/// network, with an address of its own, doing what a server must survive.
public final class RawClient: @unchecked Sendable {
    public let descriptor: Int32

    /// Connects from `source` to 127.0.0.1:`port`; nil when the connection did not come up within 2 s.
    public init?(from source: String, to port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        remote.sin_port = in_port_t(port.bigEndian)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, connected == 0 else {
            close(fd)
            return nil
        }
        self.descriptor = fd
    }

    public func send(_ text: String) { self.send(Array(text.utf8)) }

    /// The server has closed the connection (its end of the stream has come).
    public var closedByServer: Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(self.descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0
    }

    public func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBufferPointer { Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// What the server sends within `seconds`, until it closes or `seconds` pass.
    public func answer(within seconds: Double) -> String {
        let deadline = SystemClock.monotonicSeconds() + seconds
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline - SystemClock.monotonicSeconds()
            guard left > 0 else { break }
            var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(left * 1000) + 1) == 1 else { break }
            let count = recv(self.descriptor, &chunk, chunk.count, 0)
            if count <= 0 { break }
            out += chunk[0..<count]
            if String(decoding: out, as: UTF8.self).contains("\r\n\r\n") { break }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Sends one HTTP request and reads its whole answer (head, then Content-Length bytes of body) within `seconds`:
    /// its status, or nil when the connection failed or the answer did not come in time. The connection stays usable
    /// for the next request when the server keeps it alive.
    public func exchange(_ request: String, within seconds: Double) -> Int? {
        self.send(request)
        let deadline = SystemClock.monotonicSeconds() + seconds
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        func more() -> Bool {
            let left = deadline - SystemClock.monotonicSeconds()
            guard left > 0 else { return false }
            var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(left * 1000) + 1) == 1 else { return false }
            let count = recv(self.descriptor, &chunk, chunk.count, 0)
            guard count > 0 else { return false }
            bytes += chunk[0..<count]
            return true
        }
        var headEnd: Int?
        while headEnd == nil {
            headEnd = bytes.indices.dropLast(3).first { bytes[$0..<($0 + 4)].elementsEqual([13, 10, 13, 10]) }
            if headEnd == nil, !more() { return nil }
        }
        let head = String(decoding: bytes[..<headEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        let length =
            lines.dropFirst().first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        while bytes.count < headEnd! + 4 + length {
            if !more() { return nil }
        }
        return status
    }

    deinit { close(self.descriptor) }
}

/// Strangers who hold connections without a byte, each from its own address, opening another as soon as the server
/// closes one, on a thread per address (they block), until ``stop()``.
public final class SilentStrangers: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let openedCount = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)
    private let threads: Int

    /// Starts them: `connections` from each of `sources` to 127.0.0.1:`port`.
    public init(from sources: [String], to port: UInt16, connections: Int) {
        self.threads = sources.count
        for source in sources {
            SystemThread.start(name: "silent-\(source.split(separator: ".").last ?? "")") { [self] in
                var mine: [RawClient] = []
                while !self.stopping.load(ordering: .relaxed) {
                    mine.removeAll { $0.closedByServer }
                    // At most 10 new connections a sweep, a sweep every 100 ms: 100 a second from each address (the
                    // point is to hold connections; a faster churn only loads the machine the clients share).
                    var fresh = 0
                    while mine.count < connections, fresh < 10, !self.stopping.load(ordering: .relaxed),
                        let client = RawClient(from: source, to: port)
                    {
                        mine.append(client)
                        fresh += 1
                        self.openedCount.add(1, ordering: .relaxed)
                    }
                    SystemThread.sleep(seconds: 0.1)
                }
                self.ended.add(1, ordering: .relaxed)
            }
        }
    }

    /// Connections opened so far [count].
    public var opened: Int { self.openedCount.load(ordering: .relaxed) }

    /// Tells them to stop; they close their connections within a sweep.
    public func stop() { self.stopping.store(true, ordering: .relaxed) }

    /// Every thread has ended.
    public var stopped: Bool { self.ended.load(ordering: .relaxed) == self.threads }
}
