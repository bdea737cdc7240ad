import Glibc
import Links
import Synchronization
import SystemIO
import Testing
import TestSupport

/// A real HTTP server on loopback that answers each request with the next scripted reply (raw bytes, so that a
/// test can send chunked, cut, malformed or no answers), and counts the connections it accepted.
final class ScriptedServer: Sendable {
    enum Reply: Sendable {
        /// These bytes, then keep the connection open for the next request.
        case send(String)
        /// These bytes, then close the connection.
        case sendAndClose(String)
        /// Read the request and never answer.
        case silence
    }

    let port: UInt16
    private let listener: Int32
    private let replies: Mutex<[Reply]>
    let connections = Atomic<Int>(0)
    let requests = Mutex<[String]>([])
    /// For each silent reply: how long the client kept the connection after its request [seconds], measured on the
    /// server's own thread (the test's task may wait for a busy cooperative pool; the client's socket does not).
    let heldOpen = Mutex<[Double]>([])
    private let stopped = Atomic<Bool>(false)

    init(_ replies: [Reply]) throws {
        let (fd, port) = Loopback.boundSocket()
        guard fd >= 0, listen(fd, 8) == 0 else { throw SystemError("listen on", path: "127.0.0.1") }
        self.listener = fd
        self.port = port
        self.replies = Mutex(replies)
        SystemThread.start(name: "http-server") { [self] in self.acceptLoop() }
    }

    func stop() {
        self.stopped.store(true, ordering: .relaxed)
        shutdown(self.listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while !self.stopped.load(ordering: .relaxed) {
            let client = accept(self.listener, nil, nil)
            guard client >= 0 else { return }
            self.connections.add(1, ordering: .relaxed)
            SystemThread.start(name: "http-connection") { [self] in self.serve(client) }
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var pending: [UInt8] = []
        while true {
            // One request: its head, then Content-Length bytes of body.
            var head: [UInt8] = []
            while true {
                if let end = Self.find(pending) {
                    head = Array(pending[0..<end])
                    pending.removeFirst(end + 4)
                    break
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = recv(client, &chunk, chunk.count, 0)
                if count <= 0 { return }
                pending += chunk[0..<count]
            }
            let text = String(decoding: head, as: UTF8.self)
            let length =
                text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingPrefix(" ")) } ?? 0
            while pending.count < length {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = recv(client, &chunk, chunk.count, 0)
                if count <= 0 { return }
                pending += chunk[0..<count]
            }
            let body = String(decoding: pending.prefix(length), as: UTF8.self)
            pending.removeFirst(length)
            self.requests.withLock { $0.append(text.split(separator: "\r\n").first.map(String.init)! + " " + body) }
            let reply = self.replies.withLock { $0.isEmpty ? Reply.sendAndClose("") : $0.removeFirst() }
            switch reply {
            case let .send(bytes):
                _ = send(client, bytes, bytes.utf8.count, Int32(MSG_NOSIGNAL))
            case let .sendAndClose(bytes):
                _ = send(client, bytes, bytes.utf8.count, Int32(MSG_NOSIGNAL))
                return
            case .silence:
                let start = ContinuousClock.now
                var chunk = [UInt8](repeating: 0, count: 16)
                while recv(client, &chunk, chunk.count, 0) > 0 {}
                let held = ContinuousClock.now - start
                self.heldOpen.withLock {
                    $0.append(Double(held.components.seconds) + Double(held.components.attoseconds) / 1e18)
                }
                return
            }
        }
    }

    private static func find(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0..<($0 + 4)].elementsEqual([13, 10, 13, 10]) }
    }
}

func json(_ body: String, status: String = "200 OK", extra: String = "") -> String {
    "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
}

@Suite struct HTTPClientTests {
    @Test func keptAliveConnectionCarriesTheNextRequest() async throws {
        let server = try ScriptedServer([.send(json("{\"a\":1}")), .send(json("{\"b\":2}"))])
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        let first = try await client.send(
            method: "POST", path: "/route", body: Array("{\"x\":1}".utf8), contentType: "application/json",
            timeoutSeconds: 2)
        let second = try await client.send(method: "GET", path: "/status", timeoutSeconds: 2)
        #expect(first.status == 200 && String(decoding: first.body, as: UTF8.self) == "{\"a\":1}")
        #expect(second.status == 200 && String(decoding: second.body, as: UTF8.self) == "{\"b\":2}")
        #expect(server.connections.load(ordering: .relaxed) == 1)
        #expect(server.requests.withLock { $0 } == ["POST /route HTTP/1.1 {\"x\":1}", "GET /status HTTP/1.1 "])
    }

    @Test func chunkedAnswerIsReassembled() async throws {
        let chunked =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"tr\r\nA;ext=1\r\nip\":[1,2]}\r\n0\r\nX-Trailer: y\r\n\r\n"
        let server = try ScriptedServer([.send(chunked), .send(json("{}"))])
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        let response = try await client.send(method: "GET", path: "/", timeoutSeconds: 2)
        #expect(String(decoding: response.body, as: UTF8.self) == "{\"trip\":[1,2]}")
        // The connection stays usable after a chunked answer and its trailer.
        _ = try await client.send(method: "GET", path: "/", timeoutSeconds: 2)
        #expect(server.connections.load(ordering: .relaxed) == 1)
    }

    @Test func aConnectionTheServerClosedIsReplacedOnce() async throws {
        let server = try ScriptedServer([.sendAndClose(json("{}", extra: "")), .send(json("{\"again\":true}"))])
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        _ = try await client.send(method: "GET", path: "/", timeoutSeconds: 2)
        #expect(await eventually(within: 30) { server.connections.load(ordering: .relaxed) == 1 })
        let second = try await client.send(method: "GET", path: "/", timeoutSeconds: 2)
        #expect(String(decoding: second.body, as: UTF8.self) == "{\"again\":true}")
        #expect(server.connections.load(ordering: .relaxed) == 2)
    }

    @Test func aServerThatNeverAnswersTimesOutOnTime() async throws {
        let server = try ScriptedServer([.silence])
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        do {
            _ = try await client.send(method: "GET", path: "/route", timeoutSeconds: 0.3)
            Issue.record("a silent server answered")
        } catch {
            #expect(error.reason == .timedOut(seconds: 0.3))
            #expect(error.description.contains("GET /route"), "\(error)")
        }
        // The client gave up and closed the connection 0.3 s after it sent the request.
        try #require(await eventually(within: 30) { server.heldOpen.withLock { !$0.isEmpty } })
        let held = try #require(server.heldOpen.withLock { $0.first })
        #expect(held >= 0.25 && held < 1.0, "\(held) s")
    }

    @Test func cancellingTheTaskEndsTheRequestAtOnce() async throws {
        let server = try ScriptedServer([.silence])
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        let task = Task { () -> HTTPError.Reason? in
            do {
                _ = try await client.send(method: "GET", path: "/", timeoutSeconds: 30)
                return nil
            } catch let error as HTTPError {
                return error.reason
            } catch {
                return nil
            }
        }
        try #require(await eventually(within: 30) { server.requests.withLock { !$0.isEmpty } })
        task.cancel()
        let reason = await task.value
        #expect(reason == .cancelled)
        // Cancelled, the client closed the connection, not after its 30 s deadline (at once on a quiet machine; a
        // fresh-clone CI run, the whole suite starting at once on two cores, took more than 5 s).
        try #require(await eventually(within: 30) { server.heldOpen.withLock { !$0.isEmpty } })
        #expect(try #require(server.heldOpen.withLock { $0.first }) < 20)
    }

    @Test func refusedAndMalformedAnswersAreNamed() async throws {
        let port = UInt16(Loopback.freePort())
        do {
            _ = try await HTTPClient(host: "127.0.0.1", port: port).send(method: "GET", path: "/", timeoutSeconds: 1)
            Issue.record("nothing listens, yet it answered")
        } catch {
            #expect(error.description.contains("Connection refused"), "\(error)")
        }
        let server = try ScriptedServer([.sendAndClose("SSH-2.0-OpenSSH_9.2\r\n\r\n")])
        defer { server.stop() }
        do {
            _ = try await HTTPClient(host: "127.0.0.1", port: server.port).send(
                method: "GET", path: "/", timeoutSeconds: 1)
            Issue.record("a non-HTTP answer was accepted")
        } catch {
            guard case .malformed = error.reason else {
                Issue.record("expected malformed, got \(error)")
                return
            }
        }
    }

    @Test func urlsAreSplitOrRefused() {
        #expect(HTTPClient.split(url: "http://127.0.0.1:8002")! == ("127.0.0.1", 8002, "/"))
        #expect(HTTPClient.split(url: "http://router.lab/valhalla/")! == ("router.lab", 80, "/valhalla/"))
        #expect(HTTPClient.split(url: "http://[::1]:5000/x")! == ("::1", 5000, "/x"))
        #expect(HTTPClient.split(url: "https://valhalla1.openstreetmap.de") == nil)
        #expect(HTTPClient.split(url: "http://host:99999") == nil)
        #expect(HTTPClient.split(url: "http://:80") == nil)
    }
}
