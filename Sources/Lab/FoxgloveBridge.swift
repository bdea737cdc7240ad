import SessionTools
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Bus
public import Links
public import NavCore
import Synchronization

/// The live bus for Foxglove: a WebSocket server speaking `foxglove.websocket.v1` (Foxglove's WebSocket protocol) on
/// which each client is told the server and every channel (``FoxgloveChannels``, the same as an exported MCAP file's,
/// so one layout serves both), subscribes to channels, and receives each message as it crosses the bus, stamped
/// with its receive time.
public final class FoxgloveBridge: Sendable {
    /// The subprotocol Foxglove asks for.
    public static let subprotocol = "foxglove.websocket.v1"
    /// The web pages that may connect: Foxglove's own (the desktop app sends no Origin).
    public static let allowedOrigins: Set<String> = ["https://app.foxglove.dev", "https://studio.foxglove.dev"]
    /// Subscriptions one client may hold.
    static let maximumSubscriptions = 256

    private let server: Mutex<WebSocketServer?> = Mutex(nil)
    /// Per connection: subscription id → channel id.
    private let subscriptions = Mutex<[Int: (connection: WebSocketServer.Connection, channels: [UInt32: Int])]>([:])
    private let counts = Mutex<[String: UInt64]>([:])
    private let name: String

    /// Listens on `host`:`port` (0: a free port).
    public init(host: String, port: UInt16, name: String) throws(LinkError) {
        self.name = name
        var limits = WebSocketServer.Limits()
        limits.allowedOrigins = Self.allowedOrigins
        let server = try WebSocketServer(host: host, port: port, subprotocol: Self.subprotocol, limits: limits) {
            [weak self] event in
            self?.handle(event)
        }
        self.server.withLock { $0 = server }
    }

    /// Its WebSocket server (the fuzzer feeds connections to it).
    package var webSocketServer: WebSocketServer? { self.server.withLock { $0 } }

    /// The port listened on.
    public var port: UInt16 { self.server.withLock { $0?.port ?? 0 } }

    public func close() { self.server.withLock { $0?.close() } }

    /// Subscribe requests refused (unknown channel, malformed), messages sent, and the server's counters.
    public var counters: [StatusCounter] {
        self.counts.withLock { counts in
            ["foxglove.sent", "foxglove.refused"].map { StatusCounter(name: $0, value: counts[$0, default: 0]) }
        } + (self.server.withLock { $0?.counters } ?? [])
    }

    private func count(_ name: String, _ n: UInt64 = 1) { self.counts.withLock { $0[name, default: 0] &+= n } }

    private static func json(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private func handle(_ event: WebSocketServer.Event) {
        switch event {
        case let .opened(connection):
            self.subscriptions.withLock { $0[connection.id] = (connection, [:]) }
            connection.send(
                text: Self.json([
                    "op": "serverInfo", "name": .string(self.name), "capabilities": [], "supportedEncodings": [],
                    "metadata": [:], "sessionId": .string("\(Int(Date().timeIntervalSince1970))"),
                ]))
            let channels: [JSONValue] = FoxgloveChannels.all.enumerated().map { index, channel in
                [
                    "id": .number(Double(index + 1)), "topic": .string(channel.topic), "encoding": "json",
                    "schemaName": .string(channel.schemaName), "schema": .string(channel.schema),
                    "schemaEncoding": "jsonschema",
                ]
            }
            connection.send(text: Self.json(["op": "advertise", "channels": .array(channels)]))
        case let .text(connection, text):
            guard let request = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
                let op = request["op"]?.stringValue
            else {
                self.count("foxglove.refused")
                return
            }
            switch op {
            case "subscribe":
                for item in request["subscriptions"]?.arrayValue ?? [] {
                    guard let id = item["id"]?.doubleValue, let channel = item["channelId"]?.doubleValue,
                        id >= 0, id <= Double(UInt32.max), channel >= 1, Int(channel) <= FoxgloveChannels.all.count
                    else {
                        self.count("foxglove.refused")
                        continue
                    }
                    let added = self.subscriptions.withLock { subscriptions -> Bool in
                        guard let entry = subscriptions[connection.id],
                            entry.channels.count < Self.maximumSubscriptions || entry.channels[UInt32(id)] != nil
                        else { return false }
                        subscriptions[connection.id]?.channels[UInt32(id)] = Int(channel)
                        return true
                    }
                    if !added { self.count("foxglove.refused") }
                }
            case "unsubscribe":
                for id in request["subscriptionIds"]?.arrayValue ?? [] {
                    guard let id = id.doubleValue, id >= 0, id <= Double(UInt32.max) else { continue }
                    _ = self.subscriptions.withLock { $0[connection.id]?.channels.removeValue(forKey: UInt32(id)) }
                }
            default:
                // Other operations (parameters, services) are not offered: the server advertised no capability.
                self.count("foxglove.refused")
            }
        case let .closed(connection):
            _ = self.subscriptions.withLock { $0.removeValue(forKey: connection.id) }
        }
    }

    /// Sends `message` (received at `receivedSeconds`, wall clock) to every client subscribed to its channel.
    public func publish(_ message: BusMessage, receivedSeconds: Double) {
        let channelID = (BusMessage.Kind.allCases.firstIndex(of: message.kind) ?? 0) + 1
        let targets = self.subscriptions.withLock { subscriptions in
            subscriptions.values.flatMap { entry in
                entry.channels.filter { $0.value == channelID }.map { (entry.connection, $0.key) }
            }
        }
        guard !targets.isEmpty else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let (_, payload) = FoxgloveChannels.encode(message, encoder: encoder) else { return }
        let nanoseconds = UInt64(max(0, receivedSeconds * 1e9))
        for (connection, subscription) in targets {
            var frame: [UInt8] = [0x01]
            withUnsafeBytes(of: subscription.littleEndian) { frame += $0 }
            withUnsafeBytes(of: nanoseconds.littleEndian) { frame += $0 }
            connection.send(binary: frame + payload)
        }
        self.count("foxglove.sent", UInt64(targets.count))
    }
}
