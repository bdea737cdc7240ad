import Foundation
import Glibc
import NavCore
import Synchronization
import SystemIO
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// `hapticnav foxglove` as it runs in the lab, a process of its own serving a simulated walker's bus (the source a
    /// process too); strangers on the lab's Wi-Fi attack its WebSocket server one way after another while a viewer
    /// watches the fixes on one connection and another viewer connects anew again and again. Every attack is bounded
    /// and counted, the watching viewer's fixes never stop for more than a second, each new viewer has its first fix
    /// within a second, and the server's memory stays bounded.
    @Suite struct FoxgloveUnderAttackTests {
        /// Text messages to send back for a text message from the server: a subscription to `/fix` once the channels
        /// are advertised.
        static func subscribeToFixes(_ text: String) -> [String] {
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                object["op"] as? String == "advertise", let channels = object["channels"] as? [[String: Any]],
                let fix = channels.first(where: { $0["topic"] as? String == "/fix" }), let id = fix["id"] as? Int
            else { return [] }
            return [#"{"op":"subscribe","subscriptions":[{"id":1,"channelId":\#(id)}]}"#]
        }

        @Test func viewersWatchTheFixesThroughEveryAttack() async throws {
            let binary = try hapticnavExecutable()
            let folder = try scratchFolder()
            let port = UInt16(freeTCPPort())
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            try """
            {
              stages: {
                source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                          settings: { route: "\(route)", loop: true, fixIntervalSeconds: 0.2 } },
              },
            }
            """.store(toFile: "\(folder)/lab.json5")
            let source = try ChildProcess(binary, ["stage", "source", "--config", "\(folder)/lab.json5"])
            defer { source.ensureStopped() }
            let server = try ChildProcess(
                binary, ["foxglove", "--config", "\(folder)/lab.json5", "--listen", "127.0.0.1:\(port)"])
            defer { server.ensureStopped() }
            #expect(
                await eventually(within: 30) { server.stdout.contains("listening on ws://") },
                "\(server.stderr.suffix(500))")

            // The watching viewer, connected throughout.
            let watching = WebSocketViewer(
                from: "127.0.0.2", to: port, subprotocol: "foxglove.websocket.v1", onText: Self.subscribeToFixes)
            defer { watching.stop() }
            #expect(
                await eventually(within: 30) { watching.binaryTimes.count >= 5 },
                "the viewer watches the fixes: \(server.stderr.suffix(500))")
            // The viewer that connects anew: each connection's start and its first fix's arrival [wall seconds].
            let stop = Atomic<Bool>(false)
            let newcomerDone = Atomic<Bool>(false)
            let firsts = Mutex<[(start: Double, first: Double?)]>([])
            SystemThread.start(name: "newcomer") {
                while !stop.load(ordering: .relaxed) {
                    let start = Date().timeIntervalSince1970
                    let viewer = WebSocketViewer(
                        from: "127.0.0.3", to: port, subprotocol: "foxglove.websocket.v1",
                        onText: Self.subscribeToFixes)
                    while viewer.binaryTimes.isEmpty, !viewer.closed, Date().timeIntervalSince1970 < start + 3 {
                        SystemThread.sleep(seconds: 0.01)
                    }
                    firsts.withLock { $0.append((start, viewer.binaryTimes.first)) }
                    viewer.stop()
                    while !viewer.stopped { SystemThread.sleep(seconds: 0.01) }
                    SystemThread.sleep(seconds: 0.3)
                }
                newcomerDone.store(true, ordering: .relaxed)
            }
            defer { stop.store(true, ordering: .relaxed) }
            let rssBefore = residentKilobytes(of: server.pid)

            // One attack after another, the viewers watching throughout.
            var windows: [(name: String, start: Double, end: Double)] = []
            for attack in FoxgloveAttack.allCases {
                let start = Date().timeIntervalSince1970
                let running = attack.start(port: port)
                try await Task.sleep(for: .seconds(attack.seconds))
                let end = Date().timeIntervalSince1970
                running.stop()
                windows.append((attack.rawValue, start, end))
                while !running.stopped { try await Task.sleep(for: .milliseconds(20)) }
            }
            stop.store(true, ordering: .relaxed)
            while !newcomerDone.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(20)) }
            let rssAfter = residentKilobytes(of: server.pid)
            #expect(!watching.closed, "the watching viewer kept its connection")

            let times = watching.binaryTimes
            let attempts = firsts.withLock { $0 }
            var report: [String] = []
            for window in windows {
                let inside = [window.start] + times.filter { $0 > window.start && $0 < window.end } + [window.end]
                let gap = zip(inside, inside.dropFirst()).map { $1 - $0 }.max() ?? .infinity
                let waits = attempts.filter { $0.start >= window.start && $0.start < window.end }.map {
                    ($0.first ?? .infinity) - $0.start
                }
                let longest = waits.max() ?? .infinity
                report.append(
                    "\(window.name) \(String(format: "%.2f", gap)) s, \(waits.count) new viewers, first fix within "
                        + String(format: "%.2f", longest) + " s")
                #expect(gap <= 1.0, "\(window.name): the watching viewer's fixes stopped for \(gap) s")
                #expect(!waits.isEmpty && longest <= 1.0, "\(window.name): a new viewer waited \(longest) s")
            }
            // The server's counters, which it logs as it stops.
            server.signal(SIGTERM)
            #expect(await server.wait(seconds: 20) == 0, "the server stops on SIGTERM: \(server.stderr.suffix(500))")
            var counters: [String: Int] = [:]
            let line = server.stderr.split(separator: "\n").last { $0.contains("Foxglove: foxglove.sent=") } ?? ""
            for pair in line.split(separator: " ") where pair.contains("=") {
                let parts = pair.split(separator: "=")
                if parts.count == 2, let value = Int(parts[1]) { counters[String(parts[0])] = value }
            }
            print(
                "Foxglove server under attack, through the processes: the watching viewer's longest gap between fixes; "
                    + "\(report.joined(separator: "; ")); server RSS \(rssBefore / 1024) → \(rssAfter / 1024) MB; "
                    + "counters "
                    + counters.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                    .joined(separator: ", "))
            #expect(rssAfter < rssBefore + 100 * 1024, "the server's memory grew from \(rssBefore) to \(rssAfter) kB")
            // Each kind of attack was met and counted.
            for name in ["ws.evicted", "ws.refusedHandshakes", "ws.malformed", "ws.unanswered"] {
                #expect((counters[name] ?? 0) > 0, "\(name) counted: \(line)")
            }
        }
    }
}

/// What a stranger on the lab's Wi-Fi sends a Foxglove server, each from addresses of its own.
private enum FoxgloveAttack: String, CaseIterable {
    case silent = "500 silent connections held"
    case slowHandshakes = "100 handshakes a byte every 0.4 s"
    case oversized = "oversized heads and frames"
    case randomBytes = "random bytes"
    case closedMidHandshake = "handshakes closed half sent, some after a quiet second"
    case foreignPages = "handshakes from a foreign web page"
    case malformedFrames = "malformed frames"
    case deafClients = "clients that never read, 20 held"

    /// How long it runs: long enough for a deaf client's unanswered ping to close it (5 s) [seconds].
    var seconds: Double { self == .deafClients ? 7 : 3 }

    /// A handshake asking for Foxglove's subprotocol, with `extra` header lines.
    static func handshake(_ extra: String = "") -> String {
        "GET / HTTP/1.1\r\nHost: lab\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: foxglove.websocket.v1\r\n"
            + extra + "\r\n"
    }

    /// Starts the attack on `port`.
    func start(port: UInt16) -> Attackers {
        let running: Attackers
        switch self {
        case .silent:
            running = Attackers(SilentStrangers(from: (10..<15).map { "127.0.0.\($0)" }, to: port, connections: 100))
        case .slowHandshakes:
            running = Attackers.slowSenders(Array(Self.handshake().utf8), port: port, base: 20)
        case .oversized:
            running = Attackers()
            running.loops(5, base: 30, port: port) { client, _ in
                _ = client.exchange(
                    Self.handshake("X-Padding: \(String(repeating: "a", count: 20_000))\r\n"), within: 2)
                // After a handshake, a frame that says it carries a terabyte.
                guard let again = RawClient(from: "127.0.0.30", to: port) else { return }
                again.send(Array(Self.handshake().utf8) + [0x82, 0xFF, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4])
                again.send([UInt8](repeating: 0x41, count: 65536))
                _ = again.answer(within: 0.5)
            }
        case .randomBytes:
            running = Attackers.randomBytes(port: port, base: 50)
        case .closedMidHandshake:
            running = Attackers.halfSent(Array(Self.handshake().utf8), port: port, base: 60, quietEveryThird: true)
        case .foreignPages:
            running = Attackers()
            running.loops(5, base: 80, port: port) { client, _ in
                _ = client.exchange(Self.handshake("Origin: https://evil.example\r\n"), within: 2)
            }
        case .malformedFrames:
            running = Attackers()
            running.loops(5, base: 90, port: port) { client, random in
                // An unmasked text frame, a ping of 200 bytes, or an unknown opcode.
                let frames: [[UInt8]] = [
                    [0x81, 0x02, 0x68, 0x69], [0x89, 0xFE, 0, 200, 1, 2, 3, 4] + [UInt8](repeating: 7, count: 200),
                    [0x83, 0x80, 1, 2, 3, 4],
                ]
                client.send(Array(Self.handshake().utf8) + frames[Int.random(in: 0..<3, using: &random)])
                _ = client.answer(within: 0.5)
            }
        case .deafClients:
            running = Attackers()
            running.threads(5) { host, stopping in
                // Each address holds four, each let in and subscribed to every channel, none ever read; one held six
                // seconds is replaced (the server closes them first, for their unanswered pings).
                var held: [(client: RawClient, since: Double)] = []
                let all = (1...40).map { #"{"id":\#($0),"channelId":\#($0)}"# }.joined(separator: ",")
                let request = Array(#"{"op":"subscribe","subscriptions":[\#(all)]}"#.utf8)
                while !stopping() {
                    let now = SystemClock.monotonicSeconds()
                    held.removeAll { now - $0.since > 6 }
                    while held.count < 4, !stopping(), let client = RawClient(from: "127.0.0.\(100 + host)", to: port) {
                        client.send(Self.handshake())
                        client.send(WebSocketViewer.masked(opcode: 0x1, request))
                        held.append((client, now))
                    }
                    SystemThread.sleep(seconds: 0.1)
                }
            }
        }
        return running
    }
}
