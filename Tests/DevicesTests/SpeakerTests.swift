import Devices
import Foundation
import Logging
import NavCore
import TestSupport
import Testing

/// Energy per channel of a 16-bit stereo WAV file.
private func channelEnergy(_ file: String) throws -> (left: Double, right: Double, frames: Int) {
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
