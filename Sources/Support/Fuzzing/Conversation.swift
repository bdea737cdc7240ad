import Dispatch
import Glibc
import Links
import NavCore
import SystemIO

/// The far end of a connection in the fuzzer's hands, over a socket pair: no network, no port, no timing but the
/// code's own.
enum Conversation {
    /// A client that sends `input` whole and closes its sending side, while `serve` runs the server's code for one
    /// connection on the other end on this thread; what the server wrote back, once it has closed its end.
    static func asClient(sending input: [UInt8], to serve: (Int32) -> Void) -> [UInt8] {
        guard let (client, server) = Self.pair() else { return [] }
        let received = Received()
        let done = DispatchSemaphore(value: 0)
        // Writing and reading on threads of their own: a server that answers pipelined requests while the client
        // is still sending must find a reader, or both would wait on full buffers.
        SystemThread.start(name: "fuzz-client-send") {
            Self.writeAll(client, input)
            _ = shutdown(client, Int32(SHUT_WR))
            done.signal()
        }
        SystemThread.start(name: "fuzz-client-read") {
            received.bytes = Self.readToEnd(client)
            done.signal()
        }
        serve(server)
        _ = shutdown(server, Int32(SHUT_RDWR))
        done.wait()
        done.wait()
        close(server)
        close(client)
        return received.bytes
    }

    /// A server that answers each request the client sends with the next of `answers` (the last followed by the end
    /// of its stream), while `talk` runs the client's code on the other end on this thread.
    static func asServer(answering answers: [[UInt8]], to talk: (Int32) -> Void) {
        guard let (client, server) = Self.pair() else { return }
        let done = DispatchSemaphore(value: 0)
        SystemThread.start(name: "fuzz-server") {
            var pending: [UInt8] = []
            for answer in answers {
                // The next request's head, then the answer (a body the client sent with it is not waited for). An
                // answer that is not whole (it announces more than it holds, or runs to the end of the stream) is
                // followed by the end of the stream at once: the client reading it asks for nothing more. A client
                // that asks for nothing after one judged whole is given 20 ms, then the stream ends, as a phone that
                // went away ends it.
                guard Self.readHead(client, &pending) else { break }
                Self.writeAll(client, answer)
                if !Self.isWhole(answer) { break }
            }
            _ = shutdown(client, Int32(SHUT_WR))
            _ = Self.readToEnd(client)
            done.signal()
        }
        talk(server)
        _ = shutdown(server, Int32(SHUT_RDWR))
        done.wait()
        close(server)
        close(client)
    }

    private final class Received: @unchecked Sendable {
        var bytes: [UInt8] = []
    }

    private static func pair() -> (Int32, Int32)? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return nil
        }
        return (ends[0], ends[1])
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBufferPointer {
                send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return }
            offset += written
        }
    }

    private static func readToEnd(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return out }
            out += chunk[0..<count]
        }
    }

    /// True when `answer` is one HTTP answer whose end a client can tell without the end of the stream: a head, and a
    /// Content-Length body or chunks up to the last, whole (a client reads a bodiless status's head alone).
    static func isWhole(_ answer: [UInt8]) -> Bool {
        guard let end = answer.offset(of: [13, 10, 13, 10]) else { return false }
        let head = String(decoding: answer[..<end], as: UTF8.self).lowercased()
        let lines = head.split(separator: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            return false
        }
        if (100..<200).contains(status) || status == 204 || status == 304 { return true }
        let body = answer[(end + 4)...]
        func value(_ name: String) -> Substring? {
            lines.dropFirst().first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1) }
        }
        if value("transfer-encoding")?.contains("chunked") == true {
            return body.offset(of: Array("0\r\n\r\n".utf8)) != nil
        }
        guard let length = value("content-length").flatMap({ Int($0.trimmed()) }) else { return false }
        return body.count >= length
    }

    /// Reads up to the end of a request head (consumed from `pending` and the socket); false when the stream ended.
    private static func readHead(_ fd: Int32, _ pending: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = pending.offset(of: [13, 10, 13, 10]) {
                pending.removeFirst(end + 4)
                return true
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) == 1 else { return false }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return false }
            pending += chunk[0..<count]
        }
    }
}
