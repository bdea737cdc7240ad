import Devices
import Foundation
import Logging
import NavCore
import Testing

extension ProcessSuites.Data {
    @Suite struct BandReconnectTests {
        @Test func theBandPluginReconnectsWhenTheLinkDropsAndComesBack() async throws {
            let port = freeTCPPort()
            let binary = try hapticnavExecutable()
            var emulator = try ChildProcess(binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)"])
            let band = BandDevice(address: .tcp(host: "127.0.0.1", port: UInt16(port)), logger: Logger(label: "test"))
            let task = Task { try await band.run() }
            defer {
                task.cancel()
                emulator.ensureStopped()
            }
            func waitFor(_ wanted: Bool, seconds: Double) async -> Bool {
                for _ in 0..<Int(seconds * 20) {
                    if await band.isAvailable() == wanted { return true }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return false
            }
            // Generous bounds: a first run on a fresh machine starts the emulator slowly; a pass takes well under one.
            #expect(await waitFor(true, seconds: 15), "connected")
            emulator.signal(SIGKILL)
            _ = await emulator.wait(seconds: 2)
            #expect(await waitFor(false, seconds: 1.5), "noticed the band is gone within the acknowledgement timeout")
            emulator = try ChildProcess(binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)"])
            #expect(await waitFor(true, seconds: 15), "reconnected")
            // At least one reconnection. On fresh clones a third connection has been seen (once in ~3 runs), whose two
            // frames went unacknowledged before it dropped and the plugin connected again: benign for the wearer
            // (the band is available again), not yet explained; see the closing note.
            let summary = await band.summary()
            let connections = summary.split(separator: ",").compactMap { part -> Int? in
                let words = part.split(separator: " ")
                return words.count == 2 && words[1] == "connection(s)" ? Int(words[0]) : nil
            }.first
            #expect((connections ?? 0) >= 2, "\(summary)")
        }

        /// The task driving a healthy band is cancelled (its stage stopping) while the motors run: the last frame on
        /// the link is a stopAll, sent before the link closes, not left to the band's watchdog.
        @Test func cancellingTheBandWithItsMotorsRunningSendsAStopBeforeTheLinkCloses() async throws {
            let port = freeTCPPort()
            let emulator = try ChildProcess(try hapticnavExecutable(), ["band-emulator", "--tcp", "127.0.0.1:\(port)"])
            defer { emulator.ensureStopped() }
            let band = BandDevice(address: .tcp(host: "127.0.0.1", port: UInt16(port)), logger: Logger(label: "test"))
            let task = Task { try await band.run() }
            defer { task.cancel() }
            func available() async -> Bool {
                for _ in 0..<300 {
                    if await band.isAvailable() { return true }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return false
            }
            #expect(await available(), "connected")
            try await band.render(HapticCue(timeSeconds: 1, kind: .turnLeft, intensity: 1, deviationDegrees: -90))
            func frames(_ type: String) -> Int {
                emulator.stdout.split(separator: "\n").filter { $0.contains("\"type\":\"\(type)\"") }.count
            }
            #expect(
                await eventually(within: 5) { frames("setMotors") >= 1 }, "motors on: \(emulator.stdout.suffix(400))")
            let stopsBefore = frames("stopAll")
            task.cancel()
            _ = await task.result
            #expect(
                await eventually(within: 5) { frames("stopAll") > stopsBefore },
                "a stopAll after the cancel: \(emulator.stdout.suffix(600))")
        }
    }
}
