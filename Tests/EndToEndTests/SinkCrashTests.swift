import Foundation
import Testing

extension ProcessSuites.Stages {
    /// A sink that freezes, is killed or crashes while a motor runs: the band stops by itself (its watchdog, or its
    /// host's link closing), or the sink's crash handler stops it.
    @Suite(.serialized) struct SinkCrashTests {
        /// Starts a sink and waits (bounded) until a motor runs on its guidance; returns it, or nil.
        private func sinkWithARunningMotor(
            _ binary: String, config: String, log: String,
            environment: [String: String] = [:]
        ) async throws -> ChildProcess? {
            let sink = try ChildProcess(binary, ["stage", "haptic", "--config", config], environment: environment)
            let started = Date().timeIntervalSince1970
            for _ in 0..<400 {
                try await Task.sleep(for: .milliseconds(25))
                let entries = bandLog(log).filter { $0.time > started }
                if let last = entries.last(where: { $0.type == "setMotors" || $0.type == "stopAll" || $0.event != nil }
                ),
                    last.type == "setMotors", last.left + last.right > 0
                {
                    return sink
                }
            }
            sink.ensureStopped()
            return nil
        }

        /// Waits (bounded) for the band's motors to read zero after `time`; returns when that happened.
        private func motorsStopped(
            after time: Double, log: String, within seconds: Double
        ) async throws -> (Double, String)? {
            let deadline = Date().timeIntervalSince1970 + seconds
            while Date().timeIntervalSince1970 < deadline {
                try await Task.sleep(for: .milliseconds(20))
                if let stop = bandLog(log).first(where: {
                    $0.time > time && $0.left == 0 && $0.right == 0
                        && ($0.event != nil || $0.type == "stopAll" || $0.type == "setMotors")
                }) {
                    return (stop.time, stop.event ?? stop.type ?? "?")
                }
            }
            return nil
        }

        @Test(arguments: [SIGSTOP, SIGKILL])
        func aSinkThatFreezesOrIsKilledHasItsMotorsStoppedWithinHalfASecondTwentyTimesOutOfTwenty(
            _ signal: Int32
        ) async throws {
            let pipeline = try MotorPipeline()
            defer { pipeline.band.ensureStopped() }
            let (log, binary, config) = (pipeline.log, pipeline.binary, pipeline.config)
            let upstream = try pipeline.start(["source", "smoother", "route"])
            defer { upstream.forEach { $0.ensureStopped() } }

            var delays: [Double] = []
            var how: [String: Int] = [:]
            for trial in 1...20 {
                guard let sink = try await self.sinkWithARunningMotor(binary, config: config, log: log) else {
                    Issue.record("trial \(trial): no motor ran")
                    continue
                }
                defer { sink.ensureStopped() }
                let signalled = Date().timeIntervalSince1970
                sink.signal(signal)
                let stopped = try await self.motorsStopped(after: signalled, log: log, within: 2)
                let (time, by) = try #require(stopped, "trial \(trial): the motors stopped")
                delays.append(time - signalled)
                how[by, default: 0] += 1
                #expect(
                    time - signalled < 0.5,
                    "trial \(trial): motors at zero \(time - signalled) s after the signal, by \(by)")
                if signal == SIGSTOP {
                    #expect(by == "watchdog", "a frozen host's link stays open: the band's watchdog stops it")
                    sink.signal(SIGKILL)
                    sink.signal(SIGCONT)
                }
                _ = await sink.wait(seconds: 2)
            }
            #expect(delays.count == 20)
            let sorted = delays.sorted()
            let name = signal == SIGSTOP ? "SIGSTOP" : "SIGKILL"
            print(
                "band watchdog: motors at zero after \(name) of the sink: median \(String(format: "%.3f", sorted[sorted.count / 2])) s, max \(String(format: "%.3f", sorted.last ?? .nan)) s, \(delays.filter { $0 < 0.5 }.count)/20 under 0.5 s, by \(how)"
            )
        }

        @Test func aSinkThatCrashesWritesStopAllFromItsSignalHandler() async throws {
            let pipeline = try MotorPipeline()
            defer { pipeline.band.ensureStopped() }
            let (log, binary, config) = (pipeline.log, pipeline.binary, pipeline.config)
            let upstream = try pipeline.start(["source", "smoother", "route"])
            defer { upstream.forEach { $0.ensureStopped() } }
            // A bad access and a trap (Swift's overflow and force-unwrap traps arrive as SIGILL or SIGTRAP).
            for crash in [SIGSEGV, SIGILL, SIGABRT] {
                // Without Swift's backtracer, which takes seconds to symbolicate before the process may die.
                let sink = try #require(
                    try await self.sinkWithARunningMotor(
                        binary, config: config, log: log,
                        environment: ["SWIFT_BACKTRACE": "enable=no"]))
                defer { sink.ensureStopped() }
                let signalled = Date().timeIntervalSince1970
                sink.signal(crash)
                let status = await sink.wait(seconds: 5)
                #expect(status != nil && status != 0, "the sink died of signal \(crash)")
                let stopped = try await self.motorsStopped(after: signalled, log: log, within: 2)
                #expect(
                    stopped?.1 == "stopAll",
                    "signal \(crash): the first stop after the crash is the sink's own stopAll, not the band's")
            }
        }
    }
}
