import Bus
import Foundation
import NavCore
import TestSupport
import Testing

/// The Lab Streaming Layer bridge in `tools/`: a real bus publisher, the bridge process, and LSL inlets (pylsl) in
/// another process.
extension ProcessSuites.Stages {
    @Suite struct LabStreamingLayerTests {
        @Test func anLSLInletReceivesCuesTargetsAndPositionsWithTheirOwnTimes() async throws {
            let folder = try scratchFolder()
            let endpoint = "ipc://\(folder)/haptic.sock"
            let context = ZMQContext()
            defer { context.terminate() }
            let publisher = try BusPublisher(context: context, bind: [endpoint], stage: "haptic")
            defer { publisher.close() }
            let bridge = try ChildProcess(
                "/usr/bin/env",
                [
                    "python3", repositoryRoot.appendingPathComponent("tools/hapticnav_lsl.py").path, "--connect",
                    endpoint, "--source-id", "test-\(getpid())",
                ])
            defer { bridge.ensureStopped() }
            let inletScript = """
                import json, sys, time
                import pylsl
                names = ["HapticNav cues", "HapticNav targets", "HapticNav fixes", "HapticNav smoothed"]
                inlets = {}
                for name in names:
                    found = [s for s in pylsl.resolve_byprop("name", name, timeout=20) if s.source_id().startswith(sys.argv[1])]
                    assert found, "no stream " + name
                    inlets[name] = pylsl.StreamInlet(found[0])
                    inlets[name].open_stream(timeout=10)
                channels = inlets["HapticNav cues"].info().desc().child("channels").child("channel")
                labels = []
                while not channels.empty():
                    labels.append(channels.child_value("label")); channels = channels.next_sibling()
                print("ready", flush=True)
                got = {name: [] for name in names}
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and any(len(v) < 3 for v in got.values()):
                    for name, inlet in inlets.items():
                        sample, stamp = inlet.pull_sample(timeout=0.05)
                        if sample is not None:
                            offset = pylsl.local_clock() - time.time()
                            got[name].append({"values": sample, "error": stamp - (sample[0] + offset)})
                print(json.dumps({"labels": labels, "samples": got}), flush=True)
                """
            let inlet = try ChildProcess("/usr/bin/env", ["python3", "-c", inletScript, "test-\(getpid())"])
            defer { inlet.ensureStopped() }
            #expect(
                await eventually(within: 40) { inlet.stdout.contains("ready") || !isAlive(inlet.pid) },
                "the inlets opened: \(inlet.stderr.suffix(400)) \(bridge.stderr.suffix(400))")
            // Publish until the inlets have what they need (the bridge may join the bus a moment after it starts).
            let start = Date().timeIntervalSince1970
            var sent = 0
            while isAlive(inlet.pid), sent < 600 {
                let time = start + Double(sent) * 0.05
                let index = Double(sent)
                try publisher.send(
                    .cue(
                        HapticCue(
                            timeSeconds: time, kind: sent % 2 == 0 ? .turnLeft : .turnRight,
                            intensity: (index.truncatingRemainder(dividingBy: 10)) / 10, deviationDegrees: -index)))
                try publisher.send(
                    .target(
                        GuidanceTarget(
                            timeSeconds: time, routeID: 7,
                            coordinate: Coordinate(latitude: 43.73, longitude: 7.42 + index * 1e-5),
                            bearingDegrees: 90, distanceMeters: index, kind: .lookAhead)))
                try publisher.send(
                    .fix(
                        LocationFix(
                            timeSeconds: time, latitude: 43.73 + index * 1e-5, longitude: 7.42,
                            horizontalAccuracyMeters: 5)))
                try publisher.send(
                    .smoothed(
                        SmoothedFix(
                            timeSeconds: time, latitude: 43.73 + index * 1e-5, longitude: 7.42,
                            horizontalAccuracyMeters: 3,
                            speedMetersPerSecond: 1.3, courseDegrees: nil, reset: false)))
                sent += 1
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(await inlet.wait(seconds: 30) == 0, "inlet: \(inlet.stderr.suffix(600))")
            let line = try #require(inlet.stdout.split(separator: "\n").last { $0.hasPrefix("{") })
            let result = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(result["labels"] as? [String] == ["timeUnix", "kind", "intensity", "deviationDegrees"])
            let samples = try #require(result["samples"] as? [String: [[String: Any]]])
            for name in ["HapticNav cues", "HapticNav targets", "HapticNav fixes", "HapticNav smoothed"] {
                let received = samples[name] ?? []
                #expect(received.count >= 3, "\(name): \(received.count) samples")
                for sample in received {
                    let values = try #require(sample["values"] as? [Double])
                    let error = try #require(sample["error"] as? Double)
                    // Which message this was, from its own time.
                    let index = ((values[0] - start) / 0.05).rounded()
                    #expect(abs(values[0] - (start + index * 0.05)) < 1e-5)
                    // Its LSL time stamp is its own time, not when the bridge saw it.
                    #expect(abs(error) < 0.01, "\(name): time stamp off by \(error) s")
                    switch name {
                    case "HapticNav cues":
                        #expect(values[1] == (Int(index) % 2 == 0 ? 1 : 2))
                        #expect(abs(values[2] - index.truncatingRemainder(dividingBy: 10) / 10) < 1e-9)
                        #expect(values[3] == -index)
                    case "HapticNav targets":
                        #expect(values[1] == 7 && abs(values[3] - (7.42 + index * 1e-5)) < 1e-9 && values[5] == index)
                    default:
                        #expect(abs(values[1] - (43.73 + index * 1e-5)) < 1e-9 && values[2] == 7.42)
                    }
                }
            }
            print(
                "LSL inlets: " + samples.map { "\($0.key) \($0.value.count)" }.sorted().joined(separator: ", ")
                    + " samples, \(sent) rounds of four messages sent")
        }

        /// An encrypted lab read with a reader's key, a heading stream, and markers, when the source's host has a
        /// wall clock 100 s ahead of the others' (never set): every sample still lands at its true time in LSL's clock.
        /// Measurement times (headings, and cues, routes, progress and turn events dated with them) are on the
        /// source's clock; the experimenter's commands on the sink's. Each turn event, sent three times by the route
        /// stage and once more by the sink that rendered it, is one marker in the speaker's words.
        @Test func headingsAndMarkersFromAnEncryptedLabWithClocksThatDisagree() async throws {
            let folder = try scratchFolder()
            let keys = "\(folder)/keys"
            for name in ["group1", "monitor"] { try CurveKeyPair.generate().write(name: name, folder: keys) }
            let context = ZMQContext()
            defer { context.terminate() }
            // The route controller, encrypted, on this host's clock (its messages dated with the source's times).
            let port = freeTCPPort()
            var options = PublisherOptions()
            options.curve = CurveServerOptions(
                identity: try CurveKeyPair.load(name: "group1", folder: keys),
                readers: [try CurveKeyPair.loadPublic(file: "\(keys)/monitor.pub")])
            let route = try BusPublisher(
                context: context, bind: ["tcp://127.0.0.1:\(port)"], stage: "route", options: options)
            defer { route.close() }
            // The sink, on this host's clock: cues dated with the headings' times, the experimenter's commands with
            // its own.
            let sinkEndpoint = "ipc://\(folder)/haptic.sock"
            let sink = try BusPublisher(context: context, bind: [sinkEndpoint], stage: "haptic")
            defer { sink.close() }
            // The source, on a host whose clock is 100 s ahead: headings, written from docs/PROTOCOL.md in Python
            // (the header's send time on that clock too).
            let sourceEndpoint = "ipc://\(folder)/source.sock"
            let sourceScript = """
                import struct, sys, time, zmq
                AHEAD = 100.0
                socket = zmq.Context().socket(zmq.PUB); socket.bind(sys.argv[1])
                sequence = 0
                while True:
                    sequence += 1
                    now = time.time() + AHEAD
                    header = struct.pack("<BBHQq", 1, 2, 0, sequence, int(now * 1e9)) + bytes([6]) + b"source"
                    accuracy = struct.pack("<Bd", 1, 7.0) if sequence % 2 else struct.pack("<B", 0)
                    socket.send_multipart([b"heading", header, struct.pack("<ddB", now, sequence % 360, 1) + accuracy])
                    time.sleep(0.05)
                """
            let source = try ChildProcess("/usr/bin/env", ["python3", "-c", sourceScript, sourceEndpoint])
            defer { source.ensureStopped() }
            let bridge = try ChildProcess(
                "/usr/bin/env",
                [
                    "python3", repositoryRoot.appendingPathComponent("tools/hapticnav_lsl.py").path, "--keys", keys,
                    "--key", "monitor", "--connect", "tcp://127.0.0.1:\(port)=group1", "--connect", sourceEndpoint,
                    "--connect", sinkEndpoint, "--source-id", "clocks-\(getpid())",
                ])
            defer { bridge.ensureStopped() }
            let inletScript = """
                import json, sys, time
                import pylsl
                names = ["HapticNav headings", "HapticNav markers", "HapticNav cues"]
                inlets = {}
                for name in names:
                    found = [s for s in pylsl.resolve_byprop("name", name, timeout=20) if s.source_id().startswith(sys.argv[1])]
                    assert found, "no stream " + name
                    inlets[name] = pylsl.StreamInlet(found[0])
                    inlets[name].open_stream(timeout=10)
                print("ready", flush=True)
                got = {name: [] for name in names}
                deadline = time.monotonic() + 40
                def enough():
                    markers = [s["values"][0] for s in got["HapticNav markers"]]
                    return (len(got["HapticNav headings"]) >= 20 and len(got["HapticNav cues"]) >= 20
                            and any(m.startswith("mark: ") for m in markers) and any(m.startswith("stop by") for m in markers)
                            and any(m.startswith("reroute") for m in markers) and any(m.startswith("arrived") for m in markers)
                            and sum(m.startswith("turn: ") for m in markers) >= 3)
                while time.monotonic() < deadline and not enough():
                    for name, inlet in inlets.items():
                        sample, stamp = inlet.pull_sample(timeout=0.02)
                        if sample is not None:
                            values = [None if isinstance(v, float) and v != v else v for v in sample]  # NaN: JSON null
                            got[name].append({"values": values, "stamp": stamp, "offset": pylsl.local_clock() - time.time()})
                print(json.dumps(got), flush=True)
                """
            let inlet = try ChildProcess("/usr/bin/env", ["python3", "-c", inletScript, "clocks-\(getpid())"])
            defer { inlet.ensureStopped() }
            #expect(
                await eventually(within: 40) { inlet.stdout.contains("ready") || !isAlive(inlet.pid) },
                "the inlets opened: \(inlet.stderr.suffix(400)) \(bridge.stderr.suffix(400))")
            // 20 rounds a second: a cue dated with the source's time; every half second an experimenter's command;
            // route 1, a reroute to route 2, the arrival; every second a turn event (announce, now, straight on in
            // turn), three times from the route stage and once from the sink, as a renderer republishes it.
            var sent = 0
            var commands = 0
            var turns: [TurnEvent] = []
            while isAlive(inlet.pid), sent < 800 {
                let now = Date().timeIntervalSince1970
                let measured = now + 100
                try sink.send(
                    .cue(HapticCue(timeSeconds: measured, kind: .turnLeft, intensity: 0.5, deviationDegrees: -40)))
                if sent % 10 == 0 {
                    let command: ControlCommand = [.stop, .resume, .mark][commands % 3]
                    commands += 1
                    try sink.send(
                        .control(
                            ControlEvent(
                                timeSeconds: now, command: command,
                                text: command == .mark ? "t=\(String(format: "%.6f", now))" : "",
                                sender: "experimenter",
                                requestID: "\(commands)", sentSeconds: now, stopped: command == .stop)))
                }
                if sent % 20 == 0 {
                    try route.send(
                        .route(
                            Route(
                                routeID: sent % 40 == 0 ? 1 : 2, timeSeconds: measured, provider: "osm",
                                lengthMeters: 100, points: [], waypoints: [])))
                }
                if sent % 20 == 10 {
                    try route.send(
                        .progress(
                            RouteProgress(
                                timeSeconds: measured, routeID: sent % 40 == 10 ? 1 : 2, distanceAlongMeters: 100,
                                distanceRemainingMeters: 0, crossTrackMeters: 0, nextWaypointIndex: 0,
                                bearingToNextDegrees: 0, distanceToNextMeters: 0, etaSeconds: nil,
                                state: sent % 40 == 10 ? .onRoute : .arrived)))
                }
                if sent % 20 == 5 {
                    let phase: TurnPhase = [.announce, .now, .straightOn][turns.count % 3]
                    let event = TurnEvent(
                        timeSeconds: measured, routeID: 2, manoeuvre: UInt32(turns.count / 3), phase: phase,
                        turnDegrees: phase == .straightOn ? 4 : (turns.count % 2 == 0 ? -80 : 35),
                        junctionsBefore: phase == .announce ? UInt32(turns.count % 4) : 0,
                        distanceMeters: phase == .now ? 1.5 : 42.4, outgoingBearingDegrees: 170,
                        street: "Rue \(turns.count)")
                    turns.append(event)
                    for _ in 0..<3 { try route.send(.turn(event)) }
                    try sink.send(.turn(event))
                }
                sent += 1
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(
                await inlet.wait(seconds: 30) == 0, "inlet: \(inlet.stderr.suffix(600)) \(bridge.stderr.suffix(600))")
            let line = try #require(inlet.stdout.split(separator: "\n").last { $0.hasPrefix("{") })
            let got = try #require(
                JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: [[String: Any]]])
            func samples(_ name: String) -> [(values: [Any], stamp: Double, offset: Double)] {
                (got[name] ?? []).compactMap {
                    guard let values = $0["values"] as? [Any], let stamp = $0["stamp"] as? Double,
                        let offset = $0["offset"] as? Double
                    else { return nil }
                    return (values, stamp, offset)
                }
            }
            // Headings from the source whose clock is ahead: at their true times (as sent, less the 100 s).
            let headings = samples("HapticNav headings")
            #expect(headings.count >= 20)
            var worstHeading = 0.0
            for heading in headings {
                let values = heading.values.map { $0 as? Double }
                #expect(values.count == 4 && values[2] == 1, "magnetic: \(values)")
                worstHeading = max(worstHeading, abs(heading.stamp - ((values[0] ?? 0) - 100 + heading.offset)))
            }
            #expect(worstHeading < 0.05, "headings within \(worstHeading) s of their true time")
            // Accuracy 7° where given, NaN (null here) where not.
            #expect(headings.contains { $0.values.count == 4 && ($0.values[3] as? Double) == 7 })
            #expect(headings.contains { $0.values.count == 4 && $0.values[3] is NSNull })
            // Cues, published by the sink on this host's clock but dated with the source's: at their true times.
            let cues = samples("HapticNav cues")
            #expect(cues.count >= 20)
            var worstCue = 0.0
            for cue in cues {
                let sentTime = (cue.values.first as? Double) ?? 0
                worstCue = max(worstCue, abs(cue.stamp - (sentTime - 100 + cue.offset)))
            }
            #expect(worstCue < 0.05, "cues within \(worstCue) s of their true time")
            // Markers: the experimenter's stop and mark (the mark at its true time), the reroute and the arrival.
            let markers = samples("HapticNav markers")
            let texts = markers.compactMap { $0.values.first as? String }
            #expect(texts.contains("stop by experimenter") && texts.contains("resume by experimenter"), "\(texts)")
            #expect(texts.contains("reroute to route 2 by osm") && texts.contains("arrived on route 2"), "\(texts)")
            #expect(!texts.contains("arrived on route 1"))
            var marks = 0
            for marker in markers {
                guard let text = marker.values.first as? String, text.hasPrefix("mark: t="),
                    let truth = Double(text.dropFirst("mark: t=".count))
                else { continue }
                marks += 1
                #expect(abs(marker.stamp - (truth + marker.offset)) < 0.05, "the mark at its true time")
            }
            #expect(marks >= 1)
            // Turn events: each one marker, in the words the speaker says, at its true time.
            let turnTexts = Dictionary(
                turns.map { ("turn: \(TurnWords.text($0))", $0) }, uniquingKeysWith: { a, _ in a })
            #expect(turnTexts.count == turns.count, "every event's words differ")
            let turnMarkers = markers.filter { ($0.values.first as? String)?.hasPrefix("turn: ") == true }
            #expect(turnMarkers.count >= 3)
            var turnsMarked: [String: Int] = [:]
            for marker in turnMarkers {
                let text = marker.values.first as? String ?? ""
                turnsMarked[text, default: 0] += 1
                let time = try #require(turnTexts[text]?.timeSeconds, "a marker for an event sent: \(text)")
                #expect(abs(marker.stamp - (time - 100 + marker.offset)) < 0.05, "\(text) at its true time")
            }
            #expect(turnsMarked.values.allSatisfy { $0 == 1 }, "each event marked once: \(turnsMarked)")
            #expect(Set(turnsMarked.keys.compactMap { turnTexts[$0]?.phase }) == [.announce, .now, .straightOn])
            print(
                "LSL turn markers: \(turnMarkers.count) for \(turns.count) events sent four times each, e.g. \(turnsMarked.keys.sorted().prefix(3))"
            )
            print(
                "LSL with the source's clock 100 s ahead: \(headings.count) headings (worst \(String(format: "%.4f", worstHeading)) s from the true time), \(cues.count) cues (worst \(String(format: "%.4f", worstCue)) s), markers \(Set(texts.map { $0.hasPrefix("mark:") ? "mark" : $0 }).sorted())"
            )
        }

        /// The bridge's turn words (a Python port, so that its markers read as the speaker speaks) against
        /// `TurnWords.text` for every phase, side and sharpness, counts past the tenth, streets and none, and distances
        /// at the rounding's edges; each event goes to Python as its wire payload and is decoded by
        /// `hapticnav_listen.py`.
        @Test func theBridgesTurnWordsAreTheSpeakersWords() async throws {
            let angles = [-179.0, -135, -134.9, -60, -45, -44.9, -20, -19.9, 0, 10, 20, 30, 45, 90, 134.9, 135, 180]
            var events: [TurnEvent] = []
            for phase in TurnPhase.allCases {
                for turn in angles {
                    for (index, junctions) in [0, 1, 2, 9, 10, 21].enumerated() {
                        events.append(
                            TurnEvent(
                                timeSeconds: 1_767_225_600, routeID: 3, manoeuvre: UInt32(index), phase: phase,
                                turnDegrees: turn, junctionsBefore: UInt32(junctions),
                                distanceMeters: [0, 2.5, 7.5, 12.49, 87.5, 250_000][index], outgoingBearingDegrees: 12,
                                street: index % 2 == 0 ? "" : "Rue Grimaldi"))
                    }
                }
            }
            let payloads = events.map { event in
                var writer = WireWriter()
                BusMessage.turn(event).encodePayload(to: &writer)
                return writer.bytes.map { String(format: "%02x", $0) }.joined()
            }
            let script = """
                import json, sys
                sys.path.insert(0, sys.argv[1])
                from hapticnav_listen import TYPES, Reader
                from hapticnav_lsl import turn_words
                topic, decoder = TYPES[13]
                assert topic == "turn"
                out = []
                for line in open(sys.argv[2]).read().split():
                    reader = Reader(bytes.fromhex(line))
                    event = decoder(reader)
                    reader.done()
                    out.append(turn_words(event))
                print(json.dumps(out))
                """
            let file = try scratchFolder() + "/turns.hex"
            try payloads.joined(separator: "\n").store(toFile: file)
            let python = try ChildProcess(
                "/usr/bin/env", ["python3", "-c", script, repositoryRoot.appendingPathComponent("tools").path, file])
            defer { python.ensureStopped() }
            #expect(await python.wait(seconds: 30) == 0, "python: \(python.stderr.suffix(600))")
            let words = try #require(
                try JSONSerialization.jsonObject(with: Data(python.stdout.utf8)) as? [String])
            #expect(words.count == events.count)
            for (event, text) in zip(events, words) {
                #expect(text == TurnWords.text(event), "\(event)")
            }
            print("turn words: Python and Swift agree on \(events.count) events, e.g. \(Set(words).sorted().prefix(4))")
        }

    }
}
