import NavCore
import Foundation
import Synchronization
import SystemIO
@testable import Links
import Testing
import TestSupport

@Suite struct WebSocketServerTests {
    /// RFC 6455's own example handshake, and FIPS 180's SHA-1 vectors.
    @Test func theHandshakeAnswersAsTheRFCSays() {
        #expect(Base64.encode(SHA1.hash(Array("abc".utf8))) == "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
        #expect(
            SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).map {
                String(format: "%02x", $0)
            }.joined() == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        let request =
            "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: chat, superchat\r\n"
            + "Sec-WebSocket-Version: 13"
        let response = WebSocketServer.upgrade(request, subprotocol: "chat")
        #expect(response?.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") == true)
        #expect(WebSocketServer.upgrade(request, subprotocol: "foxglove.websocket.v1") == nil, "not offered")
        #expect(WebSocketServer.upgrade("GET / HTTP/1.1\r\nHost: x", subprotocol: "chat") == nil)
        // A web page that is not allowed is refused; one that is, and a client with no Origin, are served.
        let fromPage = request + "\r\nOrigin: https://evil.example"
        #expect(
            WebSocketServer.upgrade(fromPage, subprotocol: "chat", allowedOrigins: ["https://app.foxglove.dev"]) == nil)
        let fromFoxglove = request + "\r\nOrigin: https://app.foxglove.dev"
        #expect(
            WebSocketServer.upgrade(fromFoxglove, subprotocol: "chat", allowedOrigins: ["https://app.foxglove.dev"])
                != nil)
        #expect(
            WebSocketServer.upgrade(request, subprotocol: "chat", allowedOrigins: ["https://app.foxglove.dev"]) != nil)
    }

    /// A client that is not a WebSocket client, and one that sends an unmasked frame: each is counted and closed, and
    /// the next client is served.
    @Test func badClientsAreCountedAndTheServerGoesOn() async throws {
        let opened = Mutex(0)
        let server = try WebSocketServer(host: "127.0.0.1", port: 0, subprotocol: "test") { event in
            if case .opened = event { opened.withLock { $0 += 1 } }
        }
        defer { server.close() }
        func exchange(_ bytes: [UInt8]) -> [UInt8] {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(server.port.bigEndian)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            _ = bytes.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, 0) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { break }
                out += chunk[0..<count]
            }
            return out
        }
        let garbage = exchange(Array("hello\r\n\r\n".utf8))
        #expect(String(decoding: garbage, as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        let handshake =
            "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: test\r\n"
            + "Sec-WebSocket-Version: 13\r\n\r\n"
        // An unmasked text frame: the server closes the connection after the handshake.
        let unmasked = exchange(Array(handshake.utf8) + [0x81, 0x02, 0x68, 0x69])
        #expect(String(decoding: unmasked, as: UTF8.self).hasPrefix("HTTP/1.1 101"))
        #expect(await eventually(within: 5) { server.counters.first { $0.name == "ws.malformed" }?.value == 1 })
        #expect(server.counters.first { $0.name == "ws.refusedHandshakes" }?.value == 1)
        #expect(opened.withLock { $0 } == 1)
    }

    /// A client that goes quiet for longer than the server's one-second read of the request head, then closes in the
    /// middle of its handshake, is let go at once. (The server took the quiet second's EAGAIN, still in errno, for the
    /// close's answer too, and spun on `recv()` until the head's 10 s deadline: a core busy per such client.)
    @Test func aClientThatClosesMidHandshakeAfterAQuietSecondIsLetGoAtOnce() async throws {
        let server = try WebSocketServer(host: "127.0.0.1", port: 0, subprotocol: "test") { _ in }
        defer { server.close() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(server.port.bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        let part = Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)
        _ = part.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, 0) }
        // Quiet past the server's one-second read: the quiet is the subject, so this wait is fixed.
        try await Task.sleep(for: .seconds(2.5))
        close(fd)
        let closedAt = ContinuousClock.now
        // Refused as soon as the close is seen; the head's own deadline is 10 s from the connection, 7.5 s from here.
        #expect(
            await eventually(within: 5) { server.counters.first { $0.name == "ws.refusedHandshakes" }?.value == 1 },
            "the close was not seen before the head's deadline")
        print("refused \(ContinuousClock.now - closedAt) after the client closed")
    }

    /// Strangers (from addresses of their own) hold connections without a byte, opening another whenever the server
    /// closes one; viewers that come afterwards are each let in on their one connection within 3 s (a viewer locked
    /// out would wait for a stranger's 10 s deadline), and keep their connections while the strangers go on.
    @Test func strangersHoldingConnectionsDoNotLockAViewerOut() async throws {
        let server = try WebSocketServer(host: "127.0.0.1", port: 0, subprotocol: "test") { _ in }
        defer { server.close() }
        let port = server.port
        let strangers = SilentStrangers(from: (50..<54).map { "127.0.0.\($0)" }, to: port, connections: 60)
        // The strangers' threads end within a sweep once told to stop.
        defer { strangers.stop() }
        #expect(await eventually(within: 30) { strangers.opened >= 200 })
        var viewers: [WebSocketViewer] = []
        var waits: [Double] = []
        defer { for viewer in viewers { viewer.stop() } }
        for index in 0..<3 {
            let viewer = WebSocketViewer(from: "127.0.0.\(60 + index)", to: port, subprotocol: "test")
            viewers.append(viewer)
            #expect(await eventually(within: 20) { viewer.upgraded }, "viewer \(index) was not let in")
            let took = viewer.upgradeSeconds ?? .infinity
            waits.append(took)
            // A viewer locked out waits for the oldest stranger's 10 s head deadline to free a slot (anywhere up to
            // 10 s away, as the strangers open another at once), and then races the strangers for it; let in by the
            // eviction of a quiet stranger, it waits 0.002-0.4 s on a quiet machine and up to 1.8 s with two busy
            // loops beside the suite. Three viewers each within 3 s: a lockout could pass only by luck three times.
            #expect(took < 3, "viewer \(index) waited \(took) s")
        }
        // The strangers go on for a second more; the viewers keep their connections.
        try await Task.sleep(for: .seconds(1))
        #expect(viewers.allSatisfy { !$0.closed })
        let evicted = server.counters.first { $0.name == "ws.evicted" }?.value ?? 0
        print(
            "ws hostile: \(strangers.opened) strangers' connections opened, evicted \(evicted); the viewers let in after "
                + waits.map { String(format: "%.3f", $0) }.joined(separator: ", ") + " s"
        )
        #expect(evicted > 0)
    }

    /// Clients that finish the handshake and never read (so never answer a ping) hold every slot: a viewer that
    /// comes afterwards takes the slot of one of them and is served. (Their pings' limit is far off here, so that only
    /// the slots' rule can let the viewer in.)
    @Test func clientsThatNeverReadDoNotLockAViewerOut() async throws {
        var limits = WebSocketServer.Limits()
        limits.pongSeconds = 120
        let server = try WebSocketServer(host: "127.0.0.1", port: 0, subprotocol: "test", limits: limits) { _ in }
        defer { server.close() }
        let port = server.port
        // Four addresses, a quarter of the slots each: every slot held by a client that was let in.
        var deaf: [RawClient] = []
        for index in 0..<16 {
            let client = try #require(RawClient(from: "127.0.0.\(70 + index / 4)", to: port))
            client.send(Self.handshake)
            deaf.append(client)
        }
        #expect(
            await eventually(within: 20) { server.counters.first { $0.name == "ws.connections" }?.value == 16 },
            "every deaf client was let in")
        let viewer = WebSocketViewer(from: "127.0.0.80", to: port, subprotocol: "test")
        defer { viewer.stop() }
        #expect(await eventually(within: 10) { viewer.upgraded }, "the viewer was let in")
        #expect(server.counters.first { $0.name == "ws.evicted" }?.value == 1, "one deaf client made room")
        #expect(server.counters.first { $0.name == "ws.unanswered" }?.value == 0)
    }

    /// Clients that never read are closed once a ping has gone unanswered for the limit (counted); a viewer, which
    /// answers its pings, is not.
    @Test func clientsThatLeaveAPingUnansweredAreClosed() async throws {
        var limits = WebSocketServer.Limits()
        limits.pingSeconds = 0.5
        limits.pongSeconds = 1.5
        let server = try WebSocketServer(host: "127.0.0.1", port: 0, subprotocol: "test", limits: limits) { _ in }
        defer { server.close() }
        let port = server.port
        let deaf = try (0..<4).map { index in
            let client = try #require(RawClient(from: "127.0.0.\(90 + index)", to: port))
            client.send(Self.handshake)
            return client
        }
        let viewer = WebSocketViewer(from: "127.0.0.95", to: port, subprotocol: "test")
        defer { viewer.stop() }
        // Each deaf client reads, at last, to the end of its stream.
        func ended(_ client: RawClient) -> Bool {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(client.descriptor, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if count == 0 { return true }
                if count < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
            }
        }
        #expect(await eventually(within: 30) { deaf.allSatisfy(ended) }, "every deaf client was closed")
        #expect(server.counters.first { $0.name == "ws.unanswered" }?.value == 4)
        #expect(await eventually(within: 30) { viewer.counts.pings >= 4 }, "the viewer is pinged on")
        #expect(viewer.upgraded && !viewer.closed, "the viewer, answering its pings, stays")
    }

    static let handshake =
        "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: test\r\n\r\n"
}
