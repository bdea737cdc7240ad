import Foundation
import Links
import Synchronization
import SystemIO

/// A WebSocket client as a viewer runs one, on a thread of its own from a chosen loopback address: it asks for a
/// subprotocol, answers the server's pings (as every WebSocket implementation does by itself), sends what `onText`
/// returns for each text message (a Foxglove subscription once the channels are advertised, say), and notes when
/// each binary message came. Written from RFC 6455: client frames masked, server frames read whole.
public final class WebSocketViewer: Sendable {
    private struct State {
        var upgraded = false
        var upgradeSeconds: Double?
        var closed = false
        var binaryTimes: [Double] = []
        var texts = 0
        var pings = 0
    }

    private let state = Mutex(State())
    private let stopping = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)

    /// Connects from `source` to 127.0.0.1:`port` and keeps reading until ``stop()`` or the server closes.
    /// `onText` gets each text message and returns the text messages to send back.
    public init(
        from source: String, to port: UInt16, subprotocol: String, origin: String? = nil,
        onText: @escaping @Sendable (String) -> [String] = { _ in [] }
    ) {
        SystemThread.start(name: "ws-viewer") { [self] in
            defer {
                self.state.withLock { $0.closed = true }
                self.ended.store(true, ordering: .relaxed)
            }
            let began = SystemClock.monotonicSeconds()
            guard let client = RawClient(from: source, to: port) else { return }
            var key = [UInt8](repeating: 0, count: 16)
            for index in key.indices { key[index] = UInt8.random(in: 0...255) }
            client.send(
                "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: \(Data(key).base64EncodedString())\r\nSec-WebSocket-Version: 13\r\n"
                    + "Sec-WebSocket-Protocol: \(subprotocol)\r\n" + (origin.map { "Origin: \($0)\r\n" } ?? "") + "\r\n"
            )
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            func more() -> Bool {
                while !self.stopping.load(ordering: .relaxed) {
                    var descriptor = pollfd(fd: client.descriptor, events: Int16(POLLIN), revents: 0)
                    guard poll(&descriptor, 1, 100) == 1 else { continue }
                    let count = recv(client.descriptor, &chunk, chunk.count, 0)
                    guard count > 0 else { return false }
                    buffer += chunk[0..<count]
                    return true
                }
                return false
            }
            var headEnd = buffer.offset(of: [13, 10, 13, 10])
            while headEnd == nil {
                guard more() else { return }
                headEnd = buffer.offset(of: [13, 10, 13, 10])
            }
            guard buffer.starts(with: Array("HTTP/1.1 101".utf8)) else { return }
            buffer.removeFirst(headEnd! + 4)
            let took = SystemClock.monotonicSeconds() - began
            self.state.withLock {
                $0.upgraded = true
                $0.upgradeSeconds = took
            }
            while true {
                guard let frame = Self.frame(&buffer) else {
                    guard more() else { return }
                    continue
                }
                switch frame.opcode {
                case 0x1:
                    self.state.withLock { $0.texts += 1 }
                    for reply in onText(String(decoding: frame.payload, as: UTF8.self)) {
                        client.send(Self.masked(opcode: 0x1, Array(reply.utf8)))
                    }
                case 0x2:
                    let now = Date().timeIntervalSince1970
                    self.state.withLock { $0.binaryTimes.append(now) }
                case 0x8:
                    return
                case 0x9:
                    self.state.withLock { $0.pings += 1 }
                    client.send(Self.masked(opcode: 0xA, frame.payload))
                default:
                    break
                }
            }
        }
    }

    /// The server accepted the handshake.
    public var upgraded: Bool { self.state.withLock { $0.upgraded } }
    /// From the start of the connection to the server's acceptance of the handshake, timed on the viewer's own thread
    /// (not by a test's wait, which a busy cooperative pool wakes late) [seconds].
    public var upgradeSeconds: Double? { self.state.withLock { $0.upgradeSeconds } }
    /// The connection has ended (the server closed it, or ``stop()``).
    public var closed: Bool { self.state.withLock { $0.closed } }
    /// When each binary message came [wall seconds].
    public var binaryTimes: [Double] { self.state.withLock { $0.binaryTimes } }
    /// Text messages and pings received [count].
    public var counts: (texts: Int, pings: Int) { self.state.withLock { ($0.texts, $0.pings) } }

    /// Ends the connection within a tenth of a second.
    public func stop() { self.stopping.store(true, ordering: .relaxed) }

    /// Its thread has ended.
    public var stopped: Bool { self.ended.load(ordering: .relaxed) }

    /// One whole frame taken from the front of `buffer`, or nil until it has come whole.
    private static func frame(_ buffer: inout [UInt8]) -> (opcode: UInt8, payload: [UInt8])? {
        guard buffer.count >= 2 else { return nil }
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 || length == 127 {
            let size = length == 126 ? 2 : 8
            guard buffer.count >= 2 + size else { return nil }
            length = buffer[2..<(2 + size)].reduce(0) { $0 << 8 | Int($1) }
            offset += size
        }
        // A length no test server sends (or a negative one from the top bit): read as the end of the stream.
        guard length >= 0, length < 1 << 30 else {
            buffer.removeAll()
            return (0x8, [])
        }
        guard buffer.count >= offset + length else { return nil }
        let frame = (buffer[0] & 0x0F, Array(buffer[offset..<(offset + length)]))
        buffer.removeFirst(offset + length)
        return frame
    }

    /// A final client frame, masked as RFC 6455 requires.
    public static func masked(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        var header: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            header.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            header += [0x80 | 126, UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF)]
        } else {
            header.append(0x80 | 127)
            header += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        return header + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }
}
