import Bus
import Foundation
import NavCore
import Testing

/// The Lab Streaming Layer bridge in `tools/`: a real bus publisher, the bridge process, and LSL inlets (pylsl) in
/// another process.
extension ProcessSuites {
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
    }
}
