#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Lab
import Links
import LocationSources
import Logging
import NavCore
import Routers
import Synchronization
import SystemIO

/// Code that reads what strangers send, fed bytes the fuzzer chose, with the promises it keeps checked after each.
public protocol FuzzTarget: AnyObject, Sendable {
    /// Runs one input: nil when every promise held.
    func run(_ input: [UInt8]) -> FuzzViolation?
}

/// The fuzzer's targets: the servers the project runs where strangers reach them, and the clients that read what
/// servers on the lab's network answer.
public enum FuzzTargets {
    /// Each target's name and what it feeds.
    public static let all: [(name: String, feeds: String)] = [
        (
            "push",
            "one connection's bytes to the Sensor Logger source's push server (its real secret check and batch reader)"
        ),
        (
            "foxglove",
            "one connection's bytes to the Foxglove bridge's WebSocket server (handshake, frames, subscribe requests)"
        ),
        ("engine", "a routing engine's answer to the route request (HTTP, JSON, Valhalla's and OSRM's route)"),
        ("phyphox", "a phone's answers to /config, /time and two /get polls, split at 0x1E (HTTP, JSON, samples)"),
    ]

    /// A name that is no target's (a usage error, not a broken promise).
    public struct UnknownTarget: Error, CustomStringConvertible {
        public let name: String
        public var description: String {
            "no fuzz target '\(self.name)': there are \(FuzzTargets.all.map(\.name).joined(separator: ", "))"
        }
    }

    /// The target called `name`, set up (servers listening on loopback, unreached: connections come over socket
    /// pairs).
    public static func make(_ name: String) throws -> any FuzzTarget {
        switch name {
        case "push": try PushTarget()
        case "foxglove": try FoxgloveTarget()
        case "engine": EngineTarget()
        case "phyphox": PhyphoxTarget()
        default: throw UnknownTarget(name: name)
        }
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        return logger
    }
}

/// The Sensor Logger source's push server, as a phone or a stranger reaches it. Promises: every byte it writes is a
/// complete HTTP/1.1 answer; nothing is answered 200 unless the request carried the secret; every message the
/// source publishes is in range.
final class PushTarget: FuzzTarget {
    static let token = "fuzz-secret-7Hq2"
    private let server: HTTPServer
    /// The first message out of range the source published.
    private final class Broken: Sendable {
        let why = Mutex<String?>(nil)
    }
    private let broken = Broken()

    init() throws {
        var options = SensorLoggerSource.Options(token: Self.token)
        options.host = "127.0.0.1"
        options.port = 0
        options.path = "/push"
        let source = try SensorLoggerSource(options: options, logger: FuzzTargets.quietLogger)
        let broken = self.broken
        // The messages of each batch, checked as the server hands them on (on the connection's thread: before the
        // input's run ends).
        self.server = try source.listen { messages in
            for message in messages {
                if let why = MessageInvariants.broken(message) { broken.why.withLock { $0 = $0 ?? why } }
            }
        }
    }

    deinit { self.server.close() }

    func run(_ input: [UInt8]) -> FuzzViolation? {
        let output = Conversation.asClient(sending: input) { _ = self.server.serve(connection: $0, peer: "192.0.2.1") }
        do {
            let statuses = try HTTPAnswers.statuses(output)
            if statuses.contains(200),
                percentDecodedLoosely(input).offset(of: Array(Self.token.utf8)) == nil
            {
                return FuzzViolation("a push answered 200 without the secret: \(HTTPAnswers.show(input[...]))")
            }
        } catch {
            return error
        }
        return self.broken.why.withLock { $0 }.map(FuzzViolation.init)
    }
}

/// The Foxglove bridge's WebSocket server, as a viewer or a stranger reaches it. Promises: a stranger's handshake
/// is answered 400 whole; a 101 only to a handshake that asked for Foxglove's subprotocol from no page or an allowed
/// one; after it, whole server frames (unmasked), the text ones JSON objects with an `op`.
final class FoxgloveTarget: FuzzTarget {
    private let bridge: FoxgloveBridge
    private let server: WebSocketServer

    init() throws {
        self.bridge = try FoxgloveBridge(host: "127.0.0.1", port: 0, name: "fuzz")
        guard let server = self.bridge.webSocketServer else { throw FuzzViolation("the bridge has no server") }
        self.server = server
    }

    deinit { self.bridge.close() }

    func run(_ input: [UInt8]) -> FuzzViolation? {
        let output = Conversation.asClient(sending: input) { _ = self.server.serve(connection: $0, peer: "192.0.2.2") }
        let upgraded = Array("HTTP/1.1 101 ".utf8)
        guard output.starts(with: upgraded) else {
            do {
                let statuses = try HTTPAnswers.statuses(output)
                return statuses == [400] ? nil : FuzzViolation("a refused handshake answered \(statuses)")
            } catch {
                return error
            }
        }
        // The request's head, read independently of the server's own reading.
        guard let headEnd = input.offset(of: [13, 10, 13, 10]),
            let answerEnd = output.offset(of: [13, 10, 13, 10])
        else { return FuzzViolation("a 101 to a request without a whole head") }
        var headers: [String: String] = [:]
        for line in String(decoding: input[..<headEnd], as: UTF8.self).split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmed()
        }
        guard let offered = headers["sec-websocket-protocol"], offered.contains(FoxgloveBridge.subprotocol) else {
            return FuzzViolation("a 101 to a handshake that did not ask for \(FoxgloveBridge.subprotocol)")
        }
        if let origin = headers["origin"], !FoxgloveBridge.allowedOrigins.contains(origin) {
            return FuzzViolation("a 101 to a page from '\(origin)'")
        }
        return Self.frames(output[(answerEnd + 4)...])
    }

    /// Nil when `bytes` are whole server frames.
    private static func frames(_ bytes: ArraySlice<UInt8>) -> FuzzViolation? {
        var rest = bytes
        while !rest.isEmpty {
            guard rest.count >= 2 else { return FuzzViolation("a frame cut short after \(rest.count) bytes") }
            let first = rest[rest.startIndex], second = rest[rest.startIndex + 1]
            let opcode = first & 0x0F
            guard first & 0xF0 == 0x80, second & 0x80 == 0, [0x1, 0x2, 0x8, 0x9, 0xA].contains(opcode) else {
                return FuzzViolation(
                    "not a final unmasked server frame: \(String(first, radix: 16)) \(String(second, radix: 16))")
            }
            var length = Int(second & 0x7F)
            var offset = 2
            if length == 126 || length == 127 {
                let size = length == 126 ? 2 : 8
                guard rest.count >= 2 + size else { return FuzzViolation("a frame's length cut short") }
                length = rest[(rest.startIndex + 2)..<(rest.startIndex + 2 + size)].reduce(0) { $0 << 8 | Int($1) }
                offset += size
            }
            guard length >= 0, rest.count >= offset + length else {
                return FuzzViolation("a frame of \(length) bytes with \(rest.count - offset) sent")
            }
            let payload = rest[(rest.startIndex + offset)..<(rest.startIndex + offset + length)]
            if opcode == 0x1 {
                guard let object = try? JSONDecoder().decode(JSONValue.self, from: Data(payload)),
                    object["op"]?.stringValue != nil
                else { return FuzzViolation("a text frame that is not an op: \(HTTPAnswers.show(payload))") }
            }
            rest = rest[(rest.startIndex + offset + length)...]
        }
        return nil
    }
}

/// A routing engine's answer, read as the engine route provider reads it. Promises: a failure is named, never a
/// crash; a route taken from it has at least two points, every one on the Earth, a name slot per segment and a
/// length that is a length.
final class EngineTarget: FuzzTarget {
    private static let request = Array(
        "POST /route HTTP/1.1\r\nHost: engine\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".utf8)

    func run(_ input: [UInt8]) -> FuzzViolation? {
        nonisolated(unsafe) var result: Result<(response: HTTPResponse, reusable: Bool), HTTPError>?
        Conversation.asServer(answering: [input]) {
            result = HTTPClient.exchange(on: $0, Self.request, timeoutSeconds: 5)
        }
        guard case let .success((response, _))? = result,
            let object = try? JSONDecoder().decode(JSONValue.self, from: Data(response.body)), object.objectValue != nil
        else { return nil }
        for dialect in EngineRouteProvider.Dialect.allCases {
            guard let plan = try? EngineRouteProvider.plan(dialect, answer: object) else { continue }
            guard plan.points.count >= 2 else {
                return FuzzViolation("\(dialect.rawValue): a route of \(plan.points.count) point(s)")
            }
            guard
                plan.points.allSatisfy({
                    $0.latitude.isFinite && $0.longitude.isFinite && abs($0.latitude) <= 90
                        && abs($0.longitude) <= 180
                })
            else { return FuzzViolation("\(dialect.rawValue): a route point off the Earth") }
            guard plan.segmentNames.count == plan.points.count - 1 else {
                return FuzzViolation(
                    "\(dialect.rawValue): \(plan.segmentNames.count) segment names for \(plan.points.count) points")
            }
            if let length = plan.reportedLengthMeters, !(length.isFinite && length >= 0) {
                return FuzzViolation("\(dialect.rawValue): a reported length of \(length) m")
            }
        }
        return nil
    }
}

/// A phone's answers to the phyphox source's requests, read as the source reads them: `/config`, `/time`, then
/// polls of `/get`. Promises: a failure is named, never a crash; every message from a poll is in range.
final class PhyphoxTarget: FuzzTarget {
    func run(_ input: [UInt8]) -> FuzzViolation? {
        let answers = input.split(separator: 0x1E, maxSplits: 3, omittingEmptySubsequences: false).map(Array.init)
        nonisolated(unsafe) var violation: FuzzViolation?
        Conversation.asServer(answering: answers) { fd in
            var poller = PhyphoxProtocol.Poller()
            func get(_ path: String) -> JSONValue? {
                let request = Array("GET \(path) HTTP/1.1\r\nHost: phone\r\nConnection: keep-alive\r\n\r\n".utf8)
                guard case let .success((response, _)) = HTTPClient.exchange(on: fd, request, timeoutSeconds: 5),
                    response.status == 200
                else { return nil }
                return try? JSONDecoder().decode(JSONValue.self, from: Data(response.body))
            }
            guard let config = get("/config") else { return }
            _ = poller.check(config: config)
            guard let time = get("/time") else { return }
            poller.take(time: time)
            for poll in 0..<2 {
                guard let answer = get(poller.request()) else { return }
                let result = poller.take(get: answer, receivedAt: 1_700_000_000 + Double(poll))
                for message in result.messages {
                    if let why = MessageInvariants.broken(message) {
                        violation = FuzzViolation(why)
                        return
                    }
                }
            }
        }
        return violation
    }
}
