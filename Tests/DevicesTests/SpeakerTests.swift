import Devices
import Foundation
import Logging
import NavCore
import TestSupport
import Testing

/// Energy per channel of a 16-bit stereo WAV file.
func channelEnergy(_ file: String) throws -> (left: Double, right: Double, frames: Int) {
    let data = try Data(contentsOf: URL(fileURLWithPath: file))
    #expect(data.count >= 44 && String(decoding: data[0..<4], as: UTF8.self) == "RIFF")
    var left = 0.0, right = 0.0, frames = 0
    data.dropFirst(44).withUnsafeBytes { raw in
        var index = 0
        while index + 3 < raw.count {
            let l = Double(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: Int16.self)))
            let r = Double(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: index + 2, as: Int16.self)))
            left += l * l
            right += r * r
            frames += 1
            index += 4
        }
    }
    return (left, right, frames)
}

@Suite struct SpeakerTests {
    private func cue(_ kind: CueKind, _ intensity: Double = 0.6) -> HapticCue {
        HapticCue(timeSeconds: 0, kind: kind, intensity: intensity, deviationDegrees: kind == .turnLeft ? -60 : 60)
    }

    @Test func aLeftCueIsLouderOnTheLeftAndARightCueOnTheRight() async throws {
        let folder = try scratchFolder()
        let left = SpeakerDevice(wavFile: "\(folder)/left.wav", logger: Logger(label: "test"))
        await left.render(self.cue(.turnLeft))
        let l = try channelEnergy("\(folder)/left.wav")
        #expect(l.frames > 0)
        #expect(l.left > 10 * l.right)
        let right = SpeakerDevice(wavFile: "\(folder)/right.wav", logger: Logger(label: "test"))
        await right.render(self.cue(.turnRight))
        let r = try channelEnergy("\(folder)/right.wav")
        #expect(r.right > 10 * r.left)
    }

    @Test func onCourseIsSilence() async throws {
        let folder = try scratchFolder()
        let speaker = SpeakerDevice(wavFile: "\(folder)/quiet.wav", logger: Logger(label: "test"))
        await speaker.render(self.cue(.silent, 0))
        let energy = try channelEnergy("\(folder)/quiet.wav")
        #expect(energy.frames > 0)
        #expect(energy.left == 0 && energy.right == 0)
    }

    @Test func louderWithIntensity() async throws {
        let folder = try scratchFolder()
        var energies: [Double] = []
        for (index, intensity) in [0.2, 0.6, 1.0].enumerated() {
            let speaker = SpeakerDevice(wavFile: "\(folder)/\(index).wav", logger: Logger(label: "test"))
            await speaker.render(self.cue(.turnLeft, intensity))
            energies.append(try channelEnergy("\(folder)/\(index).wav").left)
        }
        #expect(energies[0] < energies[1] && energies[1] < energies[2])
    }

    @Test func promptsAreSpokenThroughEspeak() async throws {
        let folder = try scratchFolder()
        let speaker = SpeakerDevice(wavFile: "\(folder)/spoken.wav", logger: Logger(label: "test"))
        await speaker.announce("Recalculating route")
        let energy = try channelEnergy("\(folder)/spoken.wav")
        #expect(
            energy.frames > SpeakerDevice.sampleRate / 2,
            "half a second of speech or more (espeak-ng: scripts/setup installs it)")
        #expect(energy.left > 0 && energy.left == energy.right)
    }
}

/// The speaker through a real sound server: ALSA's `pulse` device into PulseAudio's null sink, whose monitor the test
/// records. What reaches the "speakers", and when.
@Suite(.serialized, .enabled(if: SoundServer.isAvailable, "PulseAudio and aplay: scripts/setup installs them"))
struct SpeakerSoundServerTests {
    private func cue(_ kind: CueKind) -> HapticCue {
        HapticCue(timeSeconds: 0, kind: kind, intensity: 0.8, deviationDegrees: kind == .turnLeft ? -60 : 60)
    }

    private static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    /// 20 turn cues, left and right in turn: each is heard on its side; from the cue to its sound leaving the
    /// program, and to its onset at the sound server's sink.
    @Test func cuesReachTheSoundServerOnTheirSide() async throws {
        let server = try await SoundServer()
        defer { server.stop() }
        let recording = try server.record()
        defer { recording.stop() }
        let speaker = SpeakerDevice(
            wavFile: nil, device: "pulse", logger: Logger(label: "test"), aplay: try server.aplay())
        // The speaker opens its stream at once and keeps it open with silence (as in a sink, long before a cue).
        #expect(await eventually(within: 20) { (speaker.streamedSeconds ?? 0) > 0.5 }, "the stream is open")
        var onsets: [Double] = []
        for trial in 0..<20 {
            let kind: CueKind = trial % 2 == 0 ? .turnLeft : .turnRight
            let started = Date().timeIntervalSince1970
            await speaker.render(self.cue(kind))
            let heard = await eventually(within: 10) { recording.firstSound(after: started) != nil }
            #expect(heard, "cue \(trial) heard")
            if let onset = recording.firstSound(after: started) { onsets.append(onset - started) }
            // The cue's three pulses played out: 0.3 s of quiet after the last sound (bounded).
            #expect(
                await eventually(within: 10) {
                    guard let last = recording.lastSound(), let latest = recording.latest else { return false }
                    return latest - last > 0.3
                })
            // The cue's side carries most of the sound. Not all: on a loaded machine the recorder has stamped a late
            // chunk of the cue before (the other side) into this one's window (a fresh-clone CI run: 3 : 1).
            let energy = recording.energy(after: started)
            if kind == .turnLeft {
                #expect(energy.left > 2 * energy.right, "left cue \(trial): \(energy)")
            } else {
                #expect(energy.right > 2 * energy.left, "right cue \(trial): \(energy)")
            }
        }
        let handOffs = speaker.handOffSeconds ?? []
        #expect(handOffs.count >= 20)
        print(
            "speaker cue → sound leaves the program: p50 \(String(format: "%.4f", Self.percentile(handOffs, 0.5))) s, max \(String(format: "%.4f", handOffs.max() ?? .nan)) s; → onset at the sound server's sink (ALSA pulse, 80 ms buffer; includes the recorder's 5 ms): p50 \(String(format: "%.3f", Self.percentile(onsets, 0.5))) s, max \(String(format: "%.3f", onsets.max() ?? .nan)) s over \(onsets.count) cues"
        )
        #expect(onsets.count == 20)
    }

    /// A spoken prompt of several seconds, stopped a moment after it is heard: the sound already handed to the
    /// device is cut too; 20 times, the time from the stop to the last sound at the sink.
    @Test func aStopCutsTheSoundAlreadyQueued() async throws {
        let server = try await SoundServer()
        defer { server.stop() }
        let recording = try server.record()
        defer { recording.stop() }
        let speaker = SpeakerDevice(
            wavFile: nil, device: "pulse", logger: Logger(label: "test"), aplay: try server.aplay())
        var silences: [Double] = []
        for trial in 0..<20 {
            let started = Date().timeIntervalSince1970
            await speaker.announce(
                "Continue straight along the Boulevard des Moulins for two hundred metres, then turn left.")
            // Heard for a fifth of a second (the prompt lasts several seconds), then stopped.
            var onset: Double?
            #expect(
                await eventually(within: 10) {
                    onset = recording.firstSound(after: started)
                    guard let onset, let latest = recording.latest else { return false }
                    return latest - onset > 0.2
                }, "prompt \(trial) heard")
            let stoppedAt = Date().timeIntervalSince1970
            await speaker.stopAll()
            // A second of the sink's stream after the stop.
            #expect(await eventually(within: 10) { (recording.latest ?? 0) > stoppedAt + 1 })
            let last = recording.lastSound() ?? stoppedAt
            silences.append(max(0, last - stoppedAt))
            #expect(last - stoppedAt < 0.5, "prompt \(trial) went on \(last - stoppedAt) s after the stop")
        }
        print(
            "speaker stop → silence at the sound server's sink: p50 \(String(format: "%.3f", Self.percentile(silences, 0.5))) s, max \(String(format: "%.3f", silences.max() ?? .nan)) s over \(silences.count) stops of a spoken prompt"
        )
    }
}
