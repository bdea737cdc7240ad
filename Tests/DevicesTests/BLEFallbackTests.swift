import Devices
import Foundation
import Links
import Logging
import NavCore
import Stages
import Synchronization
import TestSupport
import Testing

/// A band over Bluetooth LE that stops answering (connected, its frames arriving, no acknowledgement) makes the sink
/// fall back to its next device at its next check after the acknowledgement limit (0.5 s here, checks every 0.25 s).
@Suite(.serialized) struct BLEFallbackTests {
    @Test func aBLEBandThatStopsAnsweringMakesTheSinkFallBackAtItsNextCheck() async throws {
        let ble = try await VirtualBLE(slots: 2)
        defer { ble.stop() }
        let emulated = try EmulatedBand(pty: false)
        defer { emulated.emulator.stop() }
        guard case let .tcp(_, port) = emulated.address else { return }
        let peripheral = try ble.peripheral(slot: 1, name: "HN-Mute", emulatorPort: Int(port))
        defer { peripheral.ensureStopped() }
        let band = BandDevice(
            address: .ble(BLELink.Target(device: .name("HN-Mute"), transport: ble.transport(0), scanSeconds: 10)),
            acknowledgeTimeoutSeconds: 0.5, logger: Logger(label: "test"))
        let speaker = RecordingDevice(name: "speaker")
        let sink = SinkHarness(devices: [band, speaker])
        let connected = await eventually(within: 30) { await band.isAvailable() }
        let summary = await band.summary()
        #expect(connected, "connected: \(summary); \(peripheral.stdout.suffix(400)); \(ble.log.suffix(600))")
        // The sink settles on the band (its choice is checked once a second; the speaker may have had the first cues,
        // and on a loaded machine the virtual controller's acknowledgement may once come later than the 0.5 s limit,
        // which rightly sends a cue to the speaker). What must hold: a whole second in which the band plays every cue
        // while it answers, seen within a bounded number of seconds.
        var bandPlayedASecond = false
        for _ in 0..<20 where !bandPlayedASecond {
            let before = await speaker.cues.count
            try await sink.hold(heading: 300, seconds: 1)
            bandPlayedASecond = await speaker.cues.count == before
        }
        let playing = await band.summary()
        #expect(bandPlayedASecond, "the band plays while it answers: \(playing)")
        // The emulator logs each frame as it takes it (behind the virtual link on a loaded machine).
        #expect(
            await eventually(within: 20) {
                emulated.frames.contains { $0.type == "setMotors" && $0.left + $0.right > 0 }
            }, "over BLE")
        emulated.emulator.muted.store(true, ordering: .relaxed)
        let mutedAt = ContinuousClock.now
        let mutedAtWall = Date().timeIntervalSince1970
        let mutedOn = await speaker.cues.count
        let tookOver = try await sink.hold(heading: 300) { await speaker.cues.count > mutedOn }
        #expect(tookOver.held, "the speaker took over")
        if let first = await speaker.cues.first(where: { $0.0 > mutedAt }) {
            print(
                "BLE band: a band that stops answering (acknowledgement limit 0.5 s): the speaker after \(first.0 - mutedAt)"
            )
        }
        // Timed by the sink's own status of the change (its clock when it chose the speaker), not by when this
        // thread's cues reached the speaker: the band's 0.5 s limit, then the next check (0.25 s). The bound is one
        // that a loaded machine's delays have not reached (1.3 s by the speaker's first cue, with two busy loops).
        let change = await sink.statusTimes(startingWith: "output: speaker").first { $0 > mutedAtWall }
        let switched = try #require(change, "the sink said the speaker took over")
        #expect(switched - mutedAtWall < 2, "speaker chosen \(switched - mutedAtWall) s after the band went mute")
        try await sink.finish()
    }
}
