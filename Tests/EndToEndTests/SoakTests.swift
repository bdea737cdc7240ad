@testable import Bus
import Foundation
import NavCore
import Synchronization
import TestSupport
import Testing

/// The lab config at its real rates for minutes (`scripts/soak`; HAPTICNAV_SOAK_SECONDS, 300 by default). Off in
/// the ordinary test run: it only runs when HAPTICNAV_SOAK is set.
extension ProcessSuites.Hosts {
    @Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["HAPTICNAV_SOAK"] != nil))
    struct SoakTests {
        @Test func theLabConfigRunsAtItsRealRatesWithoutASingleSignalLostAlarm() async throws {
            let seconds = Double(ProcessInfo.processInfo.environment["HAPTICNAV_SOAK_SECONDS"] ?? "") ?? 300
            let folder = try scratchFolder()
            let port = freeTCPPort()
            let log = "\(folder)/band.jsonl"
            let binary = try hapticnavExecutable()
            let calibration = "\(folder)/calibration.json"
            // The lab's sim walker holds its phone with no offset from the walking direction.
            try #"{"offsetDegrees": 0, "spreadDegrees": 2, "sampleCount": 100, "calibratedAt": "2026-11-23T00:00:00Z"}"#
                .store(toFile: calibration)
            let band = try ChildProcess(binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)", "--log", log])
            defer { band.ensureStopped() }
            let config = repositoryRoot.appendingPathComponent("configs/lab-two-hosts.json5").path
            // The lab config is encrypted: its keys, made as a lab makes them.
            let keys = "\(folder)/keys"
            for name in ["group1", "group2", "monitor", "experimenter"] {
                let keygen = try ChildProcess(binary, ["keys", "generate", name, "--out", keys])
                #expect(await keygen.wait(seconds: 20) == 0, "\(keygen.stderr)")
            }
            let run = try ChildProcess(
                binary, ["run", "--config", config],
                environment: [
                    "HAPTICNAV_BAND": "127.0.0.1:\(port)", "HAPTICNAV_RECORDING": "\(folder)/recording.jsonl",
                    "HAPTICNAV_WEARABLE_RECORDING": "\(folder)/wearable.jsonl",
                    "HAPTICNAV_CALIBRATION": calibration, "HAPTICNAV_KEYS": keys,
                ])
            defer { run.ensureStopped() }
            let context = ZMQContext()
            var options = SubscriberOptions()
            options.curve = CurveClientOptions(
                identity: try CurveKeyPair.load(name: "monitor", folder: keys),
                publisherKeys: ["tcp://127.0.0.1:5604": try CurveKeyPair.loadPublic(file: "\(keys)/group2.pub")])
            let subscriber = try BusSubscriber(context: context, connect: ["tcp://127.0.0.1:5604"], options: options)
            defer {
                subscriber.close()
                context.terminate()
            }
            let cues = Mutex<[CueKind: Int]>([:])
            let silences = Mutex<[String]>([])
            let reader = Task.detached {
                for await received in subscriber.messages {
                    switch received.message {
                    case let .cue(cue): cues.withLock { $0[cue.kind, default: 0] += 1 }
                    case let .status(status) where status.health == .stale && status.message.contains("motors stopped"):
                        silences.withLock { $0.append(status.message) }
                    default: break
                    }
                }
            }
            defer { reader.cancel() }
            let started = Date().timeIntervalSince1970
            // Wait for guidance to start (bounded), then let it run.
            var guiding = false
            for _ in 0..<600 where !guiding {
                try await Task.sleep(for: .milliseconds(100))
                guiding = bandFrames(log).contains { $0.type == "setMotors" }
            }
            #expect(guiding, "guidance started: \(run.stderr.suffix(1000))")
            while Date().timeIntervalSince1970 - started < seconds, run.process.isRunning {
                try await Task.sleep(for: .seconds(1))
            }
            #expect(run.process.isRunning, "the pipeline ran the whole time: \(run.stderr.suffix(1000))")
            let pulses = bandLog(log).filter { $0.type == "pulse" }
            let frames = bandFrames(log).count
            let counted = cues.withLock { $0 }
            let stops = silences.withLock { $0 }
            print(
                "soak: \(Int(seconds)) s of the lab config: \(frames) band frames, cues \(counted.map { "\($0.key.name) \($0.value)" }.sorted()), signal-lost \(counted[.signalLost] ?? 0), silences \(stops.count)"
            )
            #expect(counted[.signalLost, default: 0] == 0, "no signal-lost alarm: \(stops)")
            #expect(!pulses.contains { $0.payload.first == 3 }, "the band never played signal lost")
            run.signal(SIGTERM)
            #expect(await run.wait(seconds: 10) == 0)
        }
    }
}
