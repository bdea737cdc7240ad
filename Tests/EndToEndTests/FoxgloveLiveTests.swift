import Bus
import Foundation
import NavCore
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// `hapticnav foxglove` serving an encrypted lab's live bus over Foxglove's WebSocket protocol, to a client written
    /// from the protocol's specification in Python's standard library: the server's info, every channel advertised
    /// with its schema, a subscription, and a LocationFix equal to the one published.
    @Suite struct FoxgloveLiveTests {
        static let client = #"""
            import base64, json, os, socket, struct, sys
            host, port, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3]
            s = socket.create_connection((host, port), timeout=30)
            key = base64.b64encode(os.urandom(16)).decode()
            s.sendall((f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                       "Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n").encode())
            buffer = b""
            while b"\r\n\r\n" not in buffer:
                buffer += s.recv(4096)
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 101"), head
            assert b"Sec-WebSocket-Protocol: foxglove.websocket.v1" in head, head
            def need(n):
                global buffer
                while len(buffer) < n:
                    chunk = s.recv(65536)
                    assert chunk, "closed"
                    buffer += chunk
            def frame():
                global buffer
                need(2)
                opcode, length = buffer[0] & 0x0F, buffer[1] & 0x7F
                assert buffer[1] & 0x80 == 0, "the server must not mask"
                offset = 2
                if length == 126:
                    need(4); length = struct.unpack(">H", buffer[2:4])[0]; offset = 4
                elif length == 127:
                    need(10); length = struct.unpack(">Q", buffer[2:10])[0]; offset = 10
                need(offset + length)
                payload = buffer[offset:offset + length]
                buffer = buffer[offset + length:]
                return opcode, payload
            def send_frame(opcode, data):
                mask = os.urandom(4)
                header = bytes([0x80 | opcode]) + (bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data)))
                s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
            def send_text(text):
                send_frame(1, text.encode())
            result = {"pings": 0}
            while "advertise" not in result:
                opcode, payload = frame()
                if opcode == 9:
                    result["pings"] += 1; send_frame(10, payload); continue
                assert opcode == 1
                message = json.loads(payload)
                result[message["op"]] = message
            channel = next(c for c in result["advertise"]["channels"] if c["topic"] == topic)
            send_text(json.dumps({"op": "subscribe", "subscriptions": [{"id": 7, "channelId": channel["id"]}]}))
            while True:
                opcode, payload = frame()
                if opcode == 9:
                    result["pings"] += 1; send_frame(10, payload); continue
                if opcode == 2 and payload[0] == 1:
                    subscription, stamp = struct.unpack("<IQ", payload[1:13])
                    result["message"] = {"subscription": subscription, "timestamp": stamp, "payload": json.loads(payload[13:])}
                    break
            print(json.dumps(result), flush=True)
            """#

        @Test func aFoxgloveClientSubscribesAndDecodesALocationFixEqualToWhatWasPublished() async throws {
            let folder = try scratchFolder()
            let keys = "\(folder)/keys"
            for name in ["group1", "monitor"] { try CurveKeyPair.generate().write(name: name, folder: keys) }
            let port = freeTCPPort(), webPort = freeTCPPort()
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let config = "\(folder)/lab.json5"
            try """
            {
              security: { keys: "\(keys)", readers: ["monitor"] },
              stages: {
                source: { plugin: "sim", key: "group1", publish: "tcp://127.0.0.1:\(port)", settings: { route: "\(route)" } },
              },
            }
            """.store(toFile: config)
            let context = ZMQContext()
            defer { context.terminate() }
            var options = PublisherOptions()
            options.curve = CurveServerOptions(
                identity: try CurveKeyPair.load(name: "group1", folder: keys),
                readers: [try CurveKeyPair.loadPublic(file: "\(keys)/monitor.pub")])
            let source = try BusPublisher(
                context: context, bind: ["tcp://127.0.0.1:\(port)"], stage: "source", options: options)
            defer { source.close() }
            let server = try ChildProcess(
                try hapticnavExecutable(),
                ["foxglove", "--config", config, "--key", "monitor", "--listen", "127.0.0.1:\(webPort)"])
            defer { server.ensureStopped() }
            #expect(
                await eventually(within: 30) { server.stdout.contains("listening on ws://") },
                "\(server.stderr.suffix(500))")
            let client = try ChildProcess(
                "/usr/bin/env", ["python3", "-c", Self.client, "127.0.0.1", "\(webPort)", "/fix"])
            defer { client.ensureStopped() }
            // Fixes until the client has one (it subscribes a moment after it connects).
            let fix = LocationFix(
                timeSeconds: 1_767_225_600.25, latitude: 43.7311234, longitude: 7.4197654, altitudeMeters: 61.5,
                horizontalAccuracyMeters: 4, speedMetersPerSecond: 1.3, courseDegrees: 90)
            var sent = 0
            while isAlive(client.pid), sent < 600 {
                try source.send(.fix(fix))
                try source.send(.heading(HeadingSample(timeSeconds: fix.timeSeconds, headingDegrees: 12)))
                sent += 1
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(await client.wait(seconds: 10) == 0, "client: \(client.stderr.suffix(800))")
            let line = try #require(client.stdout.split(separator: "\n").last)
            let result = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let info = try #require(result["serverInfo"] as? [String: Any])
            // The server's first ping comes with the handshake; the client answers it, as Foxglove's does.
            #expect((result["pings"] as? Int ?? 0) >= 1)
            #expect((info["name"] as? String)?.hasPrefix("hapticnav") == true)
            let channels = try #require((result["advertise"] as? [String: Any])?["channels"] as? [[String: Any]])
            // Every channel of the MCAP export, with its schema.
            #expect(Set(channels.compactMap { $0["topic"] as? String }) == Set(FoxgloveExpectations.topics))
            let fixChannel = try #require(channels.first { $0["topic"] as? String == "/fix" })
            #expect(fixChannel["schemaName"] as? String == "foxglove.LocationFix")
            #expect(
                fixChannel["encoding"] as? String == "json" && fixChannel["schemaEncoding"] as? String == "jsonschema")
            #expect((fixChannel["schema"] as? String)?.contains("position_covariance") == true)
            #expect(
                channels.first { $0["topic"] as? String == "/route" }?["schemaName"] as? String == "foxglove.GeoJSON")
            // The LocationFix, equal to the fix published.
            let message = try #require(result["message"] as? [String: Any])
            #expect(message["subscription"] as? Int == 7)
            let stamp = try #require(message["timestamp"] as? Double)
            #expect(abs(stamp / 1e9 - Date().timeIntervalSince1970) < 60, "stamped with its receive time")
            let payload = try #require(message["payload"] as? [String: Any])
            #expect(payload["latitude"] as? Double == fix.latitude && payload["longitude"] as? Double == fix.longitude)
            #expect(payload["altitude"] as? Double == 61.5 && payload["frame_id"] as? String == "gps")
            let time = try #require(payload["timestamp"] as? [String: Any])
            #expect(time["sec"] as? Int == 1_767_225_600 && time["nsec"] as? Int == 250_000_000)
            #expect(payload["position_covariance"] as? [Double] == [16, 0, 0, 0, 16, 0, 0, 0, 0])
            #expect(payload["position_covariance_type"] as? Int == 1)
            // The shipped layout reads only channels the server advertises.
            let layout = try String(
                contentsOf: repositoryRoot.appendingPathComponent("configs/foxglove-layout.json"), encoding: .utf8)
            _ = try JSONSerialization.jsonObject(with: Data(layout.utf8))
            for match in layout.matches(of: /"(\/[a-z]+)[".]/) {
                #expect(FoxgloveExpectations.topics.contains(String(match.1)), "layout topic \(match.1)")
            }
        }
    }
}

/// The channels the export and the live server share: /fix, /smoothed, /route and /<topic> for every other kind.
enum FoxgloveExpectations {
    static let topics = BusMessage.Kind.allCases.map { "/\($0.topic)" }
}
