import Foundation
import NavCore
import Synchronization
import SystemIO
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// The Sensor Logger source as it runs in the lab, a process of its own listening for phones, with a recorder
    /// beside it writing what it publishes; strangers on the lab's Wi-Fi attack its push server one way after another
    /// while two phones push five times a second, one on a kept-alive connection and one with a new connection for
    /// each push. Every attack is bounded and counted, and neither phone's fixes stop reaching the bus for more than a
    /// second; the source's memory stays bounded.
    @Suite struct PushUnderAttackTests {
        private static let token = "lab-secret-4f9c2a71"

        /// One phone's push: a batch with one location reading, stamped now, at the phone's own latitude.
        private static func push(latitude: Double, keepAlive: Bool) -> String {
            let nanoseconds = Int64(Date().timeIntervalSince1970 * 1e9)
            let body =
                #"{"messageId":1,"sessionId":"s","deviceId":"d","payload":[{"name":"location","time":\#(nanoseconds),"#
                + #""values":{"latitude":\#(latitude),"longitude":7.4213,"horizontalAccuracy":4.5}}]}"#
            return "POST /push?token=\(Self.token) HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
                + "Connection: \(keepAlive ? "keep-alive" : "close")\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }

        /// The phones' latitudes: which phone a fix on the bus came from.
        private static let phones = [
            (name: "kept-alive", latitude: 43.7301), (name: "new-connection", latitude: 43.7302),
        ]

        @Test func phonesDeliverTheirFixesThroughEveryAttack() async throws {
            let binary = try hapticnavExecutable()
            let folder = try scratchFolder()
            let port = UInt16(freeTCPPort())
            let config = """
                {
                  stages: {
                    source: { plugin: "sensorlogger", publish: "ipc://\(folder)/source.sock",
                              settings: { listen: "127.0.0.1:\(port)", path: "/push", token: "\(Self.token)" } },
                    recorder: { role: "recorder", plugin: "jsonl", inputs: ["source"], topics: ["fix", "status"],
                                settings: { file: "\(folder)/bus.jsonl" } },
                  },
                }
                """
            try config.store(toFile: "\(folder)/push.json5")
            let stages = try ["recorder", "source"].map {
                try ChildProcess(binary, ["stage", $0, "--config", "\(folder)/push.json5"])
            }
            defer { for stage in stages { stage.ensureStopped() } }
            let source = stages[1]
            #expect(
                await eventually(within: 30) { RawClient(from: "127.0.0.1", to: port) != nil }, "the source listens")

            // The phones, on threads of their own, until the end.
            let stop = Atomic<Bool>(false)
            let phonesDone = Atomic<Int>(0)
            for (index, phone) in Self.phones.enumerated() {
                SystemThread.start(name: "phone-\(index)") {
                    var client: RawClient?
                    while !stop.load(ordering: .relaxed) {
                        let keepAlive = index == 0
                        if client == nil || !keepAlive { client = RawClient(from: "127.0.0.1", to: port) }
                        if client?.exchange(Self.push(latitude: phone.latitude, keepAlive: keepAlive), within: 2) != 200
                        {
                            client = nil
                        }
                        SystemThread.sleep(seconds: 0.2)
                    }
                    phonesDone.add(1, ordering: .relaxed)
                }
            }
            defer { stop.store(true, ordering: .relaxed) }
            let busFile = "\(folder)/bus.jsonl"
            #expect(
                await eventually(within: 30) {
                    let fixes = Self.fixTimes(busFile)
                    return Self.phones.allSatisfy { (fixes[$0.latitude] ?? []).count >= 3 }
                }, "both phones' fixes reach the bus")
            let rssBefore = residentKilobytes(of: source.pid)

            // One attack after another, each for three seconds, the phones pushing throughout.
            var windows: [(name: String, start: Double, end: Double)] = []
            for attack in Attack.allCases {
                let start = Date().timeIntervalSince1970
                let running = attack.start(port: port, token: Self.token)
                try await Task.sleep(for: .seconds(3))
                let end = Date().timeIntervalSince1970
                running.stop()
                windows.append((attack.rawValue, start, end))
                while !running.stopped { try await Task.sleep(for: .milliseconds(20)) }
            }
            // The last fixes of the last window reach the recorder.
            try await Task.sleep(for: .seconds(1))
            stop.store(true, ordering: .relaxed)
            while phonesDone.load(ordering: .relaxed) < Self.phones.count {
                try await Task.sleep(for: .milliseconds(20))
            }
            let rssAfter = residentKilobytes(of: source.pid)

            let fixes = Self.fixTimes(busFile)
            var report: [String] = []
            for window in windows {
                let gaps = Self.phones.map { phone in
                    let inside =
                        [window.start] + (fixes[phone.latitude] ?? []).filter { $0 > window.start && $0 < window.end }
                        + [window.end]
                    return zip(inside, inside.dropFirst()).map { $1 - $0 }.max() ?? .infinity
                }
                report.append("\(window.name) \(gaps.map { String(format: "%.2f", $0) }.joined(separator: "/")) s")
                for (phone, gap) in zip(Self.phones, gaps) {
                    #expect(gap <= 1.0, "\(window.name): the \(phone.name) phone's fixes stopped for \(gap) s")
                }
            }
            let counters = Self.lastStatusCounters(busFile)
            print(
                "push server under attack, through the processes: longest gap between a phone's fixes on the bus "
                    + "(kept-alive/new-connection): \(report.joined(separator: "; ")); source RSS \(rssBefore / 1024) → "
                    + "\(rssAfter / 1024) MB; counters "
                    + counters.filter { $0.key.hasPrefix("http.") || $0.key.hasPrefix("sensorlogger.refused") }
                    .sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            #expect(rssAfter < rssBefore + 100 * 1024, "the source's memory grew from \(rssBefore) to \(rssAfter) kB")
            // Each kind of attack was met and counted.
            #expect((counters["http.evicted"] ?? 0) > 0)
            #expect((counters["http.tooLarge"] ?? 0) > 0)
            #expect((counters["http.malformed"] ?? 0) > 0)
            #expect((counters["sensorlogger.refused.token"] ?? 0) > 0)
            #expect(isAlive(source.pid), "the source outlived the attacks")
        }

        /// The receive times on the bus of each phone's fixes, by the phone's latitude [wall seconds].
        private static func fixTimes(_ file: String) -> [Double: [Double]] {
            var times: [Double: [Double]] = [:]
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains(#""topic":"fix""#) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let time = object["receiveTimeSeconds"] as? Double,
                    let message = object["message"] as? [String: Any],
                    let payload = message["payload"] as? [String: Any],
                    let latitude = payload["latitude"] as? Double
                else { continue }
                times[latitude, default: []].append(time)
            }
            return times
        }

        /// The counters of the source's latest status on the bus.
        private static func lastStatusCounters(_ file: String) -> [String: Int] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            guard let line = text.split(separator: "\n").last(where: { $0.contains(#""topic":"status""#) }),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let message = object["message"] as? [String: Any],
                let payload = message["payload"] as? [String: Any],
                let counters = payload["counters"] as? [[String: Any]]
            else { return [:] }
            var out: [String: Int] = [:]
            for counter in counters {
                if let name = counter["name"] as? String, let value = counter["value"] as? Int { out[name] = value }
            }
            return out
        }
    }
}

/// What a stranger on the lab's Wi-Fi sends the push server, each from addresses of its own (the whole of 127/8 is
/// this machine's), on threads of their own until stopped.
private enum Attack: String, CaseIterable {
    case silent = "500 silent connections held"
    case slowHeads = "100 heads a byte every 0.4 s"
    case oversized = "oversized heads and bodies"
    case malformedChunks = "malformed chunked bodies"
    case randomBytes = "random bytes"
    case closedMidRequest = "requests closed half sent"
    case wrongSecret = "wrong secrets with large bodies"

    /// Starts the attack on `port`.
    func start(port: UInt16, token: String) -> Attackers {
        let running: Attackers
        switch self {
        case .silent:
            running = Attackers(SilentStrangers(from: (10..<15).map { "127.0.0.\($0)" }, to: port, connections: 100))
        case .slowHeads:
            running = Attackers.slowSenders(
                Array("POST /push?token=\(token) HTTP/1.1\r\nHost: x\r\n".utf8), port: port, base: 20)
        case .oversized:
            running = Attackers()
            running.loops(5, base: 30, port: port) { client, _ in
                _ = client.exchange(
                    "POST /push?token=\(token) HTTP/1.1\r\nX-Padding: \(String(repeating: "a", count: 20_000))\r\n\r\n",
                    within: 2)
                guard let again = RawClient(from: "127.0.0.30", to: port) else { return }
                _ = again.exchange(
                    "POST /push?token=\(token) HTTP/1.1\r\nContent-Length: 50000000\r\n\r\n"
                        + String(repeating: "{", count: 4096),
                    within: 2)
            }
        case .malformedChunks:
            running = Attackers()
            running.loops(5, base: 40, port: port) { client, _ in
                _ = client.exchange(
                    "POST /push?token=\(token) HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n-1\r\n\r\n",
                    within: 2)
            }
        case .randomBytes:
            running = Attackers.randomBytes(port: port, base: 50)
        case .closedMidRequest:
            running = Attackers.halfSent(
                Array("POST /push?token=\(token) HTTP/1.1\r\nContent-Length: 500\r\n\r\n{\"payload\":[".utf8),
                port: port,
                base: 60)
        case .wrongSecret:
            running = Attackers()
            running.loops(5, base: 70, port: port) { client, _ in
                _ = client.exchange(
                    "POST /push?token=guess HTTP/1.1\r\nContent-Length: 900000\r\n\r\n"
                        + String(repeating: "x", count: 65536),
                    within: 2)
            }
        }
        return running
    }
}
