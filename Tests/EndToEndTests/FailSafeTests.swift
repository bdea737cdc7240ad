import Foundation
import Testing

extension ProcessSuites.Hosts {
    @Suite(.serialized) struct FailSafeTests {
        @Test func killingTheRouteControllerStopsEveryMotorWithinOneAndAHalfSecondsTwentyTimesOutOfTwenty() async throws
        {
            let pipeline = try MotorPipeline()
            defer { pipeline.band.ensureStopped() }
            let (log, binary, config) = (pipeline.log, pipeline.binary, pipeline.config)
            let stages = try pipeline.start(["source", "smoother", "haptic"])
            defer { stages.forEach { $0.ensureStopped() } }

            var delays: [Double] = []
            for trial in 1...20 {
                let route = try ChildProcess(binary, ["stage", "route", "--config", config])
                defer { route.ensureStopped() }
                let started = Date().timeIntervalSince1970
                // Wait (bounded) until a motor runs on guidance from this route controller.
                var running = false
                for _ in 0..<300 {
                    try await Task.sleep(for: .milliseconds(50))
                    if let last = bandFrames(log).last(where: { $0.type == "setMotors" || $0.type == "stopAll" }),
                        last.time > started,
                        last.left + last.right > 0
                    {
                        running = true
                        break
                    }
                }
                #expect(running, "trial \(trial): a motor ran")
                guard running else { continue }
                route.signal(SIGKILL)
                let killed = Date().timeIntervalSince1970
                var stoppedAt: Double?
                for _ in 0..<60 {
                    try await Task.sleep(for: .milliseconds(50))
                    if let last = bandFrames(log).last(where: { $0.type == "setMotors" || $0.type == "stopAll" }),
                        last.time > killed,
                        last.left == 0 && last.right == 0
                    {
                        stoppedAt =
                            bandFrames(log).first {
                                $0.time > killed
                                    && ($0.type == "stopAll" || ($0.type == "setMotors" && $0.left + $0.right == 0))
                            }?.time
                        break
                    }
                }
                let delay = try #require(stoppedAt, "trial \(trial): the motors stopped") - killed
                delays.append(delay)
                #expect(delay < 1.5, "trial \(trial): motors at zero \(delay) s after SIGKILL")
                _ = await route.wait(seconds: 2)
            }
            #expect(delays.count == 20)
            let sorted = delays.sorted()
            print(
                "fail-safe: motors at zero after SIGKILL of the route controller: median \(sorted[sorted.count / 2]) s, max \(sorted.last ?? .nan) s over \(delays.count) trials"
            )

            // SIGTERM to the sink: a stop frame before it exits.
            let haptic = stages[2]
            haptic.signal(SIGTERM)
            let status = await haptic.wait(seconds: 3)
            let exited = Date().timeIntervalSince1970
            #expect(status == 0)
            let last = bandFrames(log).last { $0.type != "ping" }
            #expect(last?.type == "stopAll", "the band's last command was a stop")
            #expect((last?.time ?? .infinity) <= exited)
        }

        @Test func anUpstreamThatPausesAndResumesPlaysSignalLostOnceAndGuidanceComesBack() async throws {
            let pipeline = try MotorPipeline()
            defer { pipeline.band.ensureStopped() }
            let log = pipeline.log
            let stages = try pipeline.start(["source", "smoother", "route", "haptic"])
            defer { stages.forEach { $0.ensureStopped() } }
            func running(after time: Double) -> Bool {
                bandFrames(log).contains { $0.time > time && $0.type == "setMotors" && $0.left + $0.right > 0 }
            }
            var ready = false
            for _ in 0..<400 where !ready {
                try await Task.sleep(for: .milliseconds(25))
                ready = running(after: 0)
            }
            #expect(ready, "a motor ran")
            for round in 1...3 {
                // The source (headings, and through the chain the targets) pauses for 3 s, then goes on.
                let paused = Date().timeIntervalSince1970
                stages[0].signal(SIGSTOP)
                try await Task.sleep(for: .seconds(3))
                stages[0].signal(SIGCONT)
                let resumed = Date().timeIntervalSince1970
                var back = false
                for _ in 0..<200 where !back {
                    try await Task.sleep(for: .milliseconds(25))
                    back = running(after: resumed)
                }
                #expect(back, "round \(round): guidance came back after the pause")
                try await Task.sleep(for: .seconds(3))
                let pulses = bandLog(log).filter { $0.time > paused && $0.type == "pulse" && $0.payload.first == 3 }
                #expect(pulses.count == 1, "round \(round): the signal-lost pulse played \(pulses.count) time(s)")
            }
        }
    }
}
