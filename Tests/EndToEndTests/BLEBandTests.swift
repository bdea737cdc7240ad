import Devices
import Foundation
import Links
import Logging
import NavCore
import Testing

extension ProcessSuites.Stages {
    /// The band over Bluetooth LE without Bluetooth hardware: the `band` plugin's bridge (a central) and
    /// `band-emulator --ble` (a peripheral with the Nordic UART Service) each on a virtual controller of Bumble's, the
    /// controllers joined by one in-process radio link (tools/hapticnav_ble_controllers.py), every part its own process.
    @Suite struct BLEBandTests {
        /// Slot 0: the host's controller; 1: the band's; 2: a look-alike's.
        static let host = 0

        func emulator(
            _ ble: VirtualBLE, slot: Int, name: String, log: String, _ extra: [String] = []
        ) throws
            -> ChildProcess
        {
            try ChildProcess(
                try hapticnavExecutable(),
                ["band-emulator", "--ble", "--ble-transport", ble.transport(slot), "--ble-name", name, "--log", log]
                    + extra)
        }

        func band(_ ble: VirtualBLE, _ device: BLELink.Target.Device, acknowledgeTimeout: Double = 1) -> BandDevice {
            BandDevice(
                address: .ble(BLELink.Target(device: device, transport: ble.transport(Self.host), scanSeconds: 10)),
                acknowledgeTimeoutSeconds: acknowledgeTimeout, logger: Logger(label: "test"))
        }

        /// The address the emulator says it advertises at, once it says so (within 60 s), or nil.
        func advertised(_ emulator: ChildProcess) async -> String? {
            var address: String?
            _ = await eventually(within: 60) {
                guard
                    let line = emulator.stderr.split(separator: "\n").last(where: { $0.contains("\"advertising\"") }),
                    let json = line.firstIndex(of: "{"),
                    let object = try? JSONSerialization.jsonObject(with: Data(line[json...].utf8)) as? [String: Any]
                else { return false }
                address = object["address"] as? String
                return true
            }
            return address
        }

        /// Waits up to `seconds` for `band` to be available; if it is not, the expectation says what the band says of
        /// itself.
        func expectAvailable(
            _ band: BandDevice, within seconds: Double, _ what: String, _ more: String = "",
            sourceLocation: SourceLocation = #_sourceLocation
        ) async {
            let available = await eventually(within: seconds) { await band.isAvailable() }
            let summary = await band.summary()
            #expect(available, "\(what): \(summary)\(more)", sourceLocation: sourceLocation)
        }

        /// The emulator's stop events: (event, silence before it [s], motors before it).
        func stops(_ log: String) -> [(event: String, silence: Double, before: Int)] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let event = object["event"] as? String, let silence = object["silenceSeconds"] as? Double,
                    let before = object["motorsBefore"] as? [String: Int]
                else { return nil }
                return (event, silence, (before["left"] ?? 0) + (before["right"] ?? 0))
            }
        }

        /// Found by name, connected, its frames both ways (the host's acknowledged; the band's battery and its
        /// acknowledgements read), the signal strength known; host → band latency over the link printed.
        @Test func aBandOverBLEIsFoundByNameAndItsFramesGoBothWays() async throws {
            let ble = try await VirtualBLE()
            defer { ble.stop() }
            let log = try scratchFolder() + "/band.jsonl"
            let emulator = try self.emulator(ble, slot: 1, name: "HN-Band", log: log)
            defer { emulator.ensureStopped() }
            let band = self.band(ble, .name("HN-Band"))
            let task = Task { try await band.run() }
            defer { task.cancel() }
            await self.expectAvailable(
                band, within: 30, "connected", "; \(emulator.stderr.suffix(800)); \(ble.log.suffix(800))")
            #expect(
                await eventually(within: 10) { await band.summary().contains("battery 87 %") }, "the band's battery")
            // Host → band: motor frames, each timed from the call to its arrival at the band.
            var sent: [(Double, Int)] = []
            for step in 0..<60 {
                let intensity = 0.2 + 0.8 * Double(step % 5) / 4
                sent.append((Date().timeIntervalSince1970, Int((intensity * 255).rounded())))
                try await band.render(
                    HapticCue(timeSeconds: 1, kind: .turnLeft, intensity: intensity, deviationDegrees: -60))
                try await Task.sleep(for: .milliseconds(25))
            }
            let lastCue = Date().timeIntervalSince1970
            await band.stopAll()
            // Every frame arrived, in order: the stop after the last cue (the pings go on after it).
            #expect(
                await eventually(within: 10) {
                    bandFrames(log).contains { $0.type == "stopAll" && $0.time >= lastCue }
                },
                "the stop arrived")
            let frames = bandFrames(log)
            #expect(frames.contains { $0.type == "watchdog" }, "the watchdog set at the connection")
            let motorFrames = frames.filter { $0.type == "setMotors" }
            #expect(motorFrames.count >= sent.count, "\(motorFrames.count) motor frames for \(sent.count) cues")
            var latencies: [Double] = []
            var searchFrom = 0
            for (time, _) in sent {
                guard let index = motorFrames[searchFrom...].firstIndex(where: { $0.time >= time - 0.001 }) else {
                    continue
                }
                latencies.append((motorFrames[index].time - time) * 1000)
                searchFrom = index + 1
            }
            latencies.sort()
            let summary = await band.summary()
            #expect(summary.contains("BLE HN-Band") && summary.contains("signal -50 dBm"), "\(summary)")
            print(
                "BLE band: host → band frame over the virtual link, \(latencies.count) frames: p50 \(fixedDecimal(latencies[latencies.count / 2], digits: 1)) ms, p99 \(fixedDecimal(latencies[latencies.count * 99 / 100], digits: 1)) ms; \(summary)"
            )
        }

        /// The band's radio goes out of range with its motors on: the band's own watchdog stops them within its limit
        /// (nothing reaches it any more), and once the link has timed out the plugin finds the band again.
        @Test func outOfRangeTheMotorsStopWithinTheWatchdogAndTheBandIsFoundAgain() async throws {
            let ble = try await VirtualBLE()
            defer { ble.stop() }
            let log = try scratchFolder() + "/band.jsonl"
            let emulator = try self.emulator(ble, slot: 1, name: "HN-Band", log: log)
            defer { emulator.ensureStopped() }
            let band = self.band(ble, .name("HN-Band"))
            let task = Task { try await band.run() }
            defer { task.cancel() }
            await self.expectAvailable(band, within: 30, "connected")
            try await band.render(HapticCue(timeSeconds: 1, kind: .turnRight, intensity: 1, deviationDegrees: 90))
            #expect(await eventually(within: 5) { bandFrames(log).contains { $0.type == "setMotors" && $0.right > 0 } })
            let cutSeconds = 3.0
            ble.cut(slot: 1, seconds: cutSeconds)
            let cutAt = ContinuousClock.now
            #expect(
                await eventually(within: 5) { self.stops(log).contains { $0.event == "watchdog" && $0.before > 0 } },
                "the watchdog stopped the running motors: \(self.stops(log))")
            let watchdog = try #require(self.stops(log).first { $0.event == "watchdog" })
            // The stand-in's own timer fires the watchdog: at 0.4 s of silence when the machine is quiet, 0.5 s was
            // seen beside two busy loops. What is judged is that the band stopped on its own, after its limit.
            #expect(
                watchdog.silence >= 0.4 && watchdog.silence < 1.0,
                "stopped after \(watchdog.silence) s of silence (limit 0.4 s)")
            #expect(await eventually(within: cutSeconds + 5) { !(await band.isAvailable()) }, "the link went")
            await self.expectAvailable(band, within: cutSeconds + 30, "found again")
            let back = ContinuousClock.now - cutAt - .seconds(cutSeconds)
            print(
                "BLE band: out of range for \(cutSeconds) s; watchdog stop after \(fixedDecimal(watchdog.silence * 1000, digits: 0)) ms of silence; connected again \(back) after the link timed out"
            )
            let afterwards = await band.summary()
            #expect(!afterwards.contains(", 1 connection(s)"), "\(afterwards)")
        }

        /// The band restarts (its process killed: its radio goes with it, the link times out) and comes back; the
        /// plugin, finding it by address, connects again.
        @Test func aBandThatRestartsIsConnectedAgainByItsAddress() async throws {
            let ble = try await VirtualBLE()
            defer { ble.stop() }
            let log = try scratchFolder() + "/band.jsonl"
            var emulator = try self.emulator(ble, slot: 1, name: "HN-Band", log: log)
            defer { emulator.ensureStopped() }
            let bandAddress = try #require(await self.advertised(emulator), "the band advertises: \(emulator.stderr)")
            let band = self.band(ble, .address(bandAddress))
            let task = Task { try await band.run() }
            defer { task.cancel() }
            await self.expectAvailable(band, within: 30, "connected")
            emulator.signal(SIGKILL)
            _ = await emulator.wait(seconds: 5)
            #expect(await eventually(within: 5) { !(await band.isAvailable()) }, "the band went")
            emulator = try self.emulator(ble, slot: 1, name: "HN-Band", log: log)
            let restarted = ContinuousClock.now
            // Advertising again (a Python process starting: seconds on a loaded machine), at the same address; the
            // plugin then finds it on its next scan.
            let again = await self.advertised(emulator)
            #expect(again == bandAddress, "the band advertises again: \(emulator.stderr)")
            print("BLE band: advertising again \(ContinuousClock.now - restarted) after its start")
            await self.expectAvailable(band, within: 60, "again")
            print(
                "BLE band: restarted, connected again by address \(bandAddress) \(ContinuousClock.now - restarted) after its start"
            )
        }

        /// A device that advertises the band's name without the Nordic UART Service is refused, and the refusal names
        /// it and what it lacks; the plugin never counts it as a band.
        @Test func aLookAlikeWithoutTheServiceIsRefusedAndNamed() async throws {
            let ble = try await VirtualBLE()
            defer { ble.stop() }
            let log = try scratchFolder() + "/fake.jsonl"
            let fake = try self.emulator(ble, slot: 2, name: "HN-Fake", log: log, ["--without-service"])
            defer { fake.ensureStopped() }
            let target = BLELink.Target(device: .name("HN-Fake"), transport: ble.transport(Self.host), scanSeconds: 10)
            var refusal = ""
            do {
                let connection = try await BLELink.connect(target)
                connection.link.close()
            } catch {
                refusal = "\(error)"
            }
            #expect(refusal.contains("HN-Fake lacks the Nordic UART Service"), "\(refusal)")
            let band = self.band(ble, .name("HN-Fake"))
            let task = Task { try await band.run() }
            defer { task.cancel() }
            let refused = await eventually(within: 30) { await band.summary().contains("refused") }
            let said = await band.summary()
            #expect(refused, "\(said)")
            #expect(!(await band.isAvailable()))
            print("BLE band: a look-alike: \(refusal)")
        }

        /// Nothing advertises the name: the attempt ends after its scan, saying so.
        @Test func aBandOutOfRangeIsSaidToBeNotFound() async throws {
            let ble = try await VirtualBLE()
            defer { ble.stop() }
            let target = BLELink.Target(
                device: .name("HN-Nowhere"), transport: ble.transport(Self.host), scanSeconds: 1)
            var problem = ""
            do {
                _ = try await BLELink.connect(target)
            } catch {
                problem = "\(error)"
            }
            #expect(problem.contains("no device with name 'HN-Nowhere' within 1.0 s"), "\(problem)")
        }
    }
}
