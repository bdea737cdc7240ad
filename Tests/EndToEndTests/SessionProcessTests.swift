import SessionFiles
import Bus
import Foundation
import NavCore
import Parsers
import Synchronization
import TestSupport
import Testing

/// Sessions with real processes: a recorded demo walk replayed through a haptic sink at three rates, and a recorder
/// killed mid-session.
extension ProcessSuites.Data {
    @Suite struct SessionProcessTests {
        /// The demo's pipeline with a console for a band, at `pace`, recorded by the mcap recorder into `folder/session`.
        private func recordedWalkConfig(in folder: String, pace: Double) throws -> String {
            let root = repositoryRoot.path
            let config = """
                {
                  name: "session-e2e",
                  stages: {
                    source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                              settings: { route: "\(root)/data/routes/monaco-demo-walk.geojson", speedMetersPerSecond: 1.4,
                                          gpsNoiseMeters: 4, reportedAccuracyMeters: 5, compassNoiseDegrees: 3, pace: \(pace), seed: 7 } },
                    smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock",
                                settings: { accelerationNoise: 0.5, velocityNoise: 0.2 } },
                    route: { plugin: "osm", inputs: ["smoother"], topics: ["smoothed"], publish: "ipc://\(folder)/route.sock",
                             settings: { map: "\(root)/data/maps/monaco-highways.osm" },
                             options: { destination: [43.72977, 7.416504], target: "lookAhead", lookAheadMeters: 15 } },
                    haptic: { plugin: "console", inputs: ["source", "route", "smoother"],
                              topics: ["heading", "attitude", "target", "progress", "route", "smoothed"],
                              publish: "ipc://\(folder)/haptic.sock", settings: { prefix: "cue | " },
                              options: { offsetDegrees: 0, toleranceDegrees: 15 } },
                    recorder: { role: "recorder", plugin: "mcap", inputs: ["source", "smoother", "route", "haptic"],
                                settings: { folder: "\(folder)/session" } },
                  },
                }
                """
            let file = "\(folder)/walk.json5"
            try config.store(toFile: file)
            return file
        }

        /// The same haptic stage, reading a replay instead of the source and the route controller.
        private func replaySinkConfig(in folder: String) throws -> String {
            let config = """
                {
                  name: "replay-sink",
                  bus: { losslessInputs: true },
                  stages: {
                    haptic: { plugin: "console", inputs: ["ipc://\(folder)/replay.sock"],
                              topics: ["heading", "attitude", "target", "progress", "route", "smoothed"],
                              publish: "ipc://\(folder)/replay-haptic.sock", settings: { prefix: "cue | " },
                              options: { offsetDegrees: 0, toleranceDegrees: 15 } },
                  },
                }
                """
            let file = "\(folder)/replay-sink.json5"
            try config.store(toFile: file)
            return file
        }

        struct Cue: Equatable, CustomStringConvertible {
            var time: Double
            var kind: CueKind
            var intensity: Double
            var description: String { "\(self.time) \(self.kind) \(self.intensity)" }
        }

        /// Replays `session` at `rate` into a fresh haptic stage; the cues it gives until the replay ends (the
        /// signal-lost cue that follows the replay's going away is the end marker, not kept).
        private func replay(
            _ session: String, rate: String, folder: String, sinkConfig: String
        ) async throws -> (
            cues: [Cue], replayOutput: String
        ) {
            let binary = try hapticnavExecutable()
            let sink = try ChildProcess(binary, ["stage", "haptic", "--config", sinkConfig])
            defer { sink.ensureStopped() }
            let context = ZMQContext()
            defer { context.terminate() }
            let subscriber = try BusSubscriber(
                context: context, connect: ["ipc://\(folder)/replay-haptic.sock"],
                options: SubscriberOptions(topics: ["cue"], defaultTopicOptions: TopicOptions(highWaterMark: 100_000)))
            defer { subscriber.close() }
            let started = Mutex<ChildProcess?>(nil)
            defer { started.withLock { $0?.ensureStopped() } }
            let cues =
                await withDeadline(seconds: 120, onTimeout: { subscriber.close() }) { () -> [Cue]? in
                    var cues: [Cue] = []
                    for await event in subscriber {
                        switch event {
                        case .publisherUp:
                            // The sink's cues reach us from here on: start the replay (it waits for the sink).
                            started.withLock { replay in
                                guard replay == nil else { return }
                                replay = try? ChildProcess(
                                    binary,
                                    [
                                        "replay", session, "--publish", "ipc://\(folder)/replay.sock", "--rate", rate,
                                        "--topics", "heading,attitude,target,progress,route,smoothed",
                                    ])
                            }
                        case let .message(received):
                            guard case let .cue(cue) = received.message else { continue }
                            if cue.kind == .signalLost { return cues }
                            cues.append(Cue(time: cue.timeSeconds, kind: cue.kind, intensity: cue.intensity))
                        default: continue
                        }
                    }
                    return cues
                } ?? []
            let replay = started.withLock { $0 }
            let status = await replay?.wait(seconds: 30)
            #expect(status == 0, "replay at \(rate): \(replay?.stderr.suffix(500) ?? "not started")")
            return (cues, replay?.stdout ?? "")
        }

        @Test func aRecordedWalkReplayedThroughTheHapticStageGivesTheSameCuesAtEveryRate() async throws {
            let folder = try scratchFolder()
            // The walk at 20 times real time. Where the live sink read a heading and a new target within the machine's
            // scheduling jitter of each other, the recorder may have heard them the other way round; the share of cues
            // that can differ grows with the pace (beside two busy loops at 40×: 403 of 455 in common once; at 20×,
            // 449-452 of 450-452 in three runs).
            let walk = try self.recordedWalkConfig(in: folder, pace: 20)
            let run = try ChildProcess(try hapticnavExecutable(), ["run", "--config", walk])
            defer { run.ensureStopped() }
            #expect(await run.wait(seconds: 180) == 0, "the walk ends on its own: \(run.stderr.suffix(800))")

            // The recorded cues, and the session's order of what the sink read.
            let (records, summary) = try SessionReader.records("\(folder)/session")
            #expect(summary.cutFiles.isEmpty && summary.badRecords == 0)
            let recorded = records.compactMap { record -> Cue? in
                guard case let .cue(cue) = record.message, cue.kind != .signalLost else { return nil }
                return Cue(time: cue.timeSeconds, kind: cue.kind, intensity: cue.intensity)
            }
            #expect(recorded.count > 50, "the walk gave turn cues")
            #expect(records.contains { if case .progress(let p) = $0.message { p.state == .arrived } else { false } })
            // The session carries its config (and so its map): its report draws the walkable ways, given no --map,
            // even with the config that recorded it gone.
            #expect(FileManager.default.fileExists(atPath: "\(folder)/session/config.json"))
            try FileManager.default.removeItem(atPath: walk)
            let report = try ChildProcess(
                try hapticnavExecutable(), ["report", "\(folder)/session", "--out", "\(folder)/report.html"])
            #expect(await report.wait(seconds: 120) == 0, "\(report.stderr)")
            #expect(report.stdout.contains("walkable way segments under the tracks"), "\(report.stdout)")

            let sinkConfig = try self.replaySinkConfig(in: folder)
            var results: [String: [Cue]] = [:]
            // Twice the recording's pace (40 times the walk's), ten times and as fast as the sink reads.
            for rate in ["2", "10", "max"] {
                let (cues, output) = try await self.replay(
                    "\(folder)/session", rate: rate, folder: folder, sinkConfig: sinkConfig)
                print(
                    "replay at \(rate): \(output.trimmingCharacters(in: .whitespacesAndNewlines)); \(cues.count) cues")
                results[rate] = cues
            }
            let twice = results["2"] ?? []
            #expect(twice.count > 50)
            for rate in ["10", "max"] {
                let cues = results[rate] ?? []
                #expect(
                    cues == twice,
                    "at \(rate): \(cues.count) cues against \(twice.count) at 2×; first difference \(zip(cues, twice).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "in length")"
                )
            }
            // Against the live run: the recorder heard the source and the route controller on two sockets, as the
            // live sink did; where their interleaving differed, a cue may differ, or be one more or one fewer. The
            // cues common to both in order (their longest common subsequence), so that one cue more early on does not
            // count every later one as different.
            var row = [Int](repeating: 0, count: recorded.count + 1)
            for cue in twice {
                var diagonal = 0
                for (index, other) in recorded.enumerated() {
                    let above = row[index + 1]
                    row[index + 1] = cue == other ? diagonal + 1 : max(above, row[index])
                    diagonal = above
                }
            }
            let same = row[recorded.count]
            print("replay against the live run: \(same) of \(recorded.count) recorded cues in common, in order")
            #expect(Double(same) >= 0.9 * Double(recorded.count))
        }

        /// A replay of a session that is not there, or of a folder with no parts, says so at once: it does not wait
        /// (30 s by default) for subscribers to a replay that cannot be.
        @Test func aReplayOfNoSessionSaysSoWithoutWaitingForSubscribers() async throws {
            let folder = try scratchFolder()
            try FileManager.default.createDirectory(atPath: "\(folder)/empty", withIntermediateDirectories: true)
            for (session, said) in [
                ("\(folder)/missing", "no such session"), ("\(folder)/empty", "a folder with no .mcap parts"),
            ] {
                let replay = try ChildProcess(
                    try hapticnavExecutable(), ["replay", session, "--publish", "ipc://\(folder)/replay.sock"])
                defer { replay.ensureStopped() }
                #expect(await replay.wait(seconds: 20) == 1, "\(session): \(replay.stderr)")
                #expect(replay.stderr.contains("\(session): \(said)"), "\(replay.stderr)")
            }
        }

        /// `hapticnav record` killed with SIGKILL mid-session: its part reads back to the last chunk it wrote, every
        /// record whole, each stream's sequence numbers without a hole.
        @Test func aRecorderKilledWithSIGKILLLeavesASessionReadableToItsLastRecord() async throws {
            let folder = try scratchFolder()
            let walk = try self.recordedWalkConfig(in: folder, pace: 5)
            let binary = try hapticnavExecutable()
            let run = try ChildProcess(binary, ["run", "--config", walk])
            defer { run.ensureStopped() }
            let recorder = try ChildProcess(binary, ["record", "--config", walk, "--out", "\(folder)/killed"])
            defer { recorder.ensureStopped() }
            // Let it write a few chunks (one every 0.2 s), then kill it mid-stream.
            let part = "\(folder)/killed/part-0001.mcap"
            #expect(
                await eventually(within: 60) {
                    ((try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? 0) > 100_000
                })
            recorder.signal(SIGKILL)
            _ = await recorder.wait(seconds: 5)
            let (records, summary) = try SessionReader.records("\(folder)/killed")
            #expect(summary.cutFiles.count == 1, "the part was not closed: \(summary.cutFiles)")
            #expect(summary.badRecords == 0)
            #expect(records.count > 500)
            // Whole and in order: per stream, sequence numbers rise by one (the recorder heard every message).
            var last: [String: UInt64] = [:]
            var holes = 0
            for record in records {
                let key = "\(record.stage)/\(record.message.kind.topic)"
                if let previous = last[key], record.sequence != previous + 1 { holes += 1 }
                last[key] = record.sequence
            }
            #expect(holes == 0)
            let size = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? 0
            defer {
                print(
                    "killed recorder: \(records.count) records read from \(size) bytes, the last complete one ending at byte \(summary.cutFiles.first?.atByte ?? 0)"
                )
            }
            // `hapticnav repair` closes the part: the reference reader (Python's mcap), which refuses the cut file,
            // then reads every record ours read.
            let check = """
                import sys
                from mcap.reader import make_reader
                with open(sys.argv[1], "rb") as f:
                    reader = make_reader(f)
                    print(sum(1 for _ in reader.iter_messages()), reader.get_summary().statistics.message_count)
                """
            let before = try ChildProcess("/usr/bin/env", ["python3", "-c", check, part])
            #expect(await before.wait(seconds: 30) != 0, "the cut part is refused by indexed readers")
            let repair = try ChildProcess(binary, ["repair", "\(folder)/killed"])
            #expect(await repair.wait(seconds: 30) == 0, "\(repair.stderr)")
            #expect(repair.stdout.contains("closed with its \(records.count) complete record(s)"), "\(repair.stdout)")
            let after = try ChildProcess("/usr/bin/env", ["python3", "-c", check, part])
            #expect(await after.wait(seconds: 30) == 0, "\(after.stderr)")
            #expect(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(records.count) \(records.count)")
            let (repaired, repairedSummary) = try SessionReader.records("\(folder)/killed")
            #expect(repairedSummary.cutFiles.isEmpty)
            #expect(repaired.map(\.message) == records.map(\.message))
            #expect(repaired.map(\.frames) == records.map(\.frames))
        }
    }
}
