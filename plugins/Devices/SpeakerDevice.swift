#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import Logging
public import NavCore
import SystemIO
public import HapticLogic

/// The `speaker` device: stereo sound. Tone pulses panned to the side to turn, louder with intensity; distinct
/// sounds for turn around, arrival and signal lost; silence on course; spoken prompts through espeak-ng. Plays
/// through ALSA (`aplay`, ``AudioPlayer``) on the `device` given or the default one when there is a sound device, or
/// writes a WAV file when told to or when there is none. A new cue cuts the sound before it; a stop cuts everything,
/// the sound already handed to the device included.
public actor SpeakerDevice: OutputDevice {
    public static let id = "speaker"
    public nonisolated let name = "speaker"
    /// Samples per second per channel.
    public static let sampleRate = 22_050

    private let wavFile: String?
    private let voice: String
    private let volume: Double
    private let logger: Logger
    private var handle: OutputFile?
    private let player: AudioPlayer?
    private let device: String?
    private var frames = 0
    private var sounds = 0
    private var prompts = 0
    /// Turn events said [count].
    private var turns = 0
    /// Stops so far: a prompt synthesised across a stop is not played.
    private var stops = 0

    /// Creates the device: a WAV file when `wavFile` is given, or when no `device` is named and there is no sound
    /// device; otherwise ALSA's `device` (nil: the default).
    public init(
        wavFile: String?, device: String? = nil, voice: String = "en", volume: Double = 0.8, logger: Logger,
        aplay: String = "/usr/bin/aplay"
    ) {
        let hasSoundDevice =
            (device != nil || FileManager.default.fileExists(atPath: "/dev/snd"))
            && FileManager.default.isExecutableFile(atPath: aplay)
        self.wavFile = wavFile ?? (hasSoundDevice ? nil : "hapticnav-speaker.wav")
        self.device = device
        if self.wavFile == nil {
            var options = AudioPlayer.Options(device: device)
            options.sampleRate = Self.sampleRate
            options.aplay = aplay
            self.player = AudioPlayer(options: options, logger: logger)
        } else {
            self.player = nil
        }
        self.voice = voice
        self.volume = min(1, max(0, volume))
        self.logger = logger
    }

    /// Reads a config's settings: `wavFile`, `device` (an ALSA device, as `aplay -L` lists them), `voice` (an
    /// espeak-ng voice), `volume` (0–1).
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        let file = try settings.path(Setting.wavFile)
        let device = try settings.optionalValue(Setting.device)
        if let device, device.isEmpty || device.hasPrefix("-") || device.contains(where: \.isNewline) {
            throw ConfigError.invalidValue(
                path: "\(settings.path).device", expected: "an ALSA device name (aplay -L)", found: "'\(device)'")
        }
        let voice = try settings.value(Setting.voice)
        let volume = try settings.value(Setting.volume)
        try settings.finish()
        self.init(wavFile: file, device: device, voice: voice, volume: volume, logger: logger)
    }

    deinit { self.player?.close() }

    /// The player's figures, for tests and benchmarks: from queueing each sound to its first samples leaving for the
    /// device [seconds]; nil when writing a file.
    public nonisolated var handOffSeconds: [Double]? { self.player?.handOffSeconds }

    /// Sound (silence included) handed to the sound device so far [seconds]; nil when writing a file.
    public nonisolated var streamedSeconds: Double? { self.player?.secondsWritten }

    // MARK: Output

    /// Plays or writes `samples`; a cue (`interrupting`) cuts what was not yet played.
    private func write(_ samples: [Int16], interrupting: Bool = true) {
        guard !samples.isEmpty else { return }
        if let player = self.player {
            player.play(samples, interrupting: interrupting)
            self.frames += samples.count / 2
            return
        }
        let bytes = samples.withUnsafeBytes { Array($0) }
        if let file = self.wavFile {
            if self.handle == nil {
                do {
                    let handle = try OutputFile(path: file, mode: .truncate)
                    handle.write(Self.header(dataBytes: 0))
                    self.handle = handle
                } catch {
                    self.logger.warning("speaker: \(error)")
                    return
                }
            }
            guard let handle = self.handle else { return }
            handle.write(bytes, at: 44 + self.frames * 4)
            self.frames += samples.count / 2
            // Keep the header true after every write, so that the file is valid whenever it is read.
            handle.write(Self.header(dataBytes: self.frames * 4), at: 0)
        }
    }

    /// A 44-byte WAV header: PCM, 16-bit, stereo.
    static func header(dataBytes: Int) -> Data {
        var data = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(36 + dataBytes)
        data.append(contentsOf: Array("WAVE".utf8)); data.append(contentsOf: Array("fmt ".utf8))
        u32(16); u16(1); u16(2); u32(Self.sampleRate); u32(Self.sampleRate * 4); u16(4); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(dataBytes)
        return data
    }

    // MARK: Sounds

    /// A tone [frequency Hz, seconds] at gains per channel, with 5 ms ramps against clicks.
    private func tone(_ frequency: Double, _ seconds: Double, left: Double, right: Double) -> [Int16] {
        let count = Int(seconds * Double(Self.sampleRate))
        let ramp = max(1, Self.sampleRate / 200)
        var out = [Int16]()
        out.reserveCapacity(count * 2)
        for index in 0..<count {
            let envelope = min(1, Double(min(index, count - 1 - index)) / Double(ramp))
            let value =
                sin(2 * .pi * frequency * Double(index) / Double(Self.sampleRate)) * envelope * self.volume * 32_000
            out.append(Int16(value * left))
            out.append(Int16(value * right))
        }
        return out
    }

    private func silence(_ seconds: Double) -> [Int16] {
        [Int16](repeating: 0, count: Int(seconds * Double(Self.sampleRate)) * 2)
    }

    /// The sound for a cue.
    func sound(for cue: HapticCue) -> [Int16] {
        let loudness = 0.25 + 0.75 * min(1, max(0, cue.intensity))
        switch cue.kind {
        case .silent:
            return self.silence(0.25)
        case .turnLeft, .turnRight:
            // Panned hard to the side to turn; the other ear gets a trace, so that one ear alone still hears it.
            let (left, right) = cue.kind == .turnLeft ? (loudness, loudness * 0.1) : (loudness * 0.1, loudness)
            var out: [Int16] = []
            for _ in 0..<3 { out += self.tone(880, 0.08, left: left, right: right) + self.silence(0.06) }
            return out
        case .turnAround:
            var out: [Int16] = []
            for index in 0..<4 { out += self.tone(index % 2 == 0 ? 660 : 440, 0.1, left: 1, right: 1) }
            return out
        case .arrival:
            return self.tone(523.25, 0.15, left: 1, right: 1) + self.tone(659.25, 0.15, left: 1, right: 1)
                + self.tone(783.99, 0.3, left: 1, right: 1)
        case .signalLost:
            return self.tone(220, 0.6, left: 1, right: 1)
        case .calibration:
            return self.tone(1500, 0.03, left: loudness, right: loudness) + self.silence(0.05)
        }
    }

    public func render(_ cue: HapticCue) {
        self.sounds += cue.kind == .silent ? 0 : 1
        self.write(self.sound(for: cue))
    }

    /// Silences at once: the sound already handed to the sound device too, and a prompt still being synthesised.
    public func stopAll() {
        self.stops &+= 1
        self.player?.stopAll()
    }

    /// Says the turn event in words ("Second left, in 30 metres"; "Turn left now").
    public func renderTurn(_ event: TurnEvent) async {
        self.turns += 1
        await self.announce(TurnWords.text(event))
    }

    /// Speaks through espeak-ng, mixed to both channels. The synthesis runs on its own thread, so that the
    /// cooperative pool (and the sink's other devices) never waits on the child process.
    public func announce(_ text: String) async {
        self.prompts += 1
        let stopsBefore = self.stops
        guard let data = await Self.synthesize(text, voice: self.voice) else {
            self.logger.warning("speaker: espeak-ng is missing; prompt not spoken: \(text)")
            return
        }
        guard data.count > 44, self.stops == stopsBefore else { return }
        // espeak-ng writes 16-bit mono at 22,050 Hz after a 44-byte header.
        var out: [Int16] = []
        out.reserveCapacity((data.count - 44))
        data.dropFirst(44).withUnsafeBytes { raw in
            for index in stride(from: 0, to: raw.count - 1, by: 2) {
                let sample = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: Int16.self))
                let scaled = Int16(Double(sample) * self.volume)
                out.append(scaled)
                out.append(scaled)
            }
        }
        self.write(out, interrupting: false)
    }

    /// espeak-ng's WAV output for `text`, or nil when espeak-ng cannot be started.
    private static func synthesize(_ text: String, voice: String) async -> Data? {
        await SystemThread.run(name: "espeak-ng") {
            guard
                let process = try? ChildProcess(
                    executable: "/usr/bin/espeak-ng", arguments: ["--stdout", "-v", voice, text], output: .pipe)
            else { return nil }
            let data = (try? process.output?.readToEnd()).map { Data($0) }
            process.wait()
            return data
        }
    }

    public func observe(_ message: BusMessage) {}

    /// Nothing to keep alive.
    public func run() {}

    /// Always ready.
    public func isAvailable() -> Bool { true }

    public func summary() -> String {
        let seconds = Double(self.frames) / Double(Self.sampleRate)
        return "\(self.sounds) sound(s), \(self.prompts) spoken prompt(s) (\(self.turns) turn event(s)), "
            + fixedDecimal(seconds, digits: 1) + " s of audio"
            + (self.wavFile.map { " in \($0)" } ?? " through ALSA \(self.device ?? "default")")
    }
}

extension SpeakerDevice {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let volume = SettingSpec<Double>(
            "volume", default: 0.8, in: 0...1, "The loudest a cue plays (intensity scales it).")
        public static let voice = ValueSpec<String>("voice", default: "en", "The espeak-ng voice of spoken prompts.")
        public static let device = ValueSpec<String>(
            "device", "The ALSA device (any `aplay -L` name; `pulse` for headphones through the sound server).")
        public static let wavFile = ValueSpec<String>(
            "wavFile", accepts: "a path", "Write the sound to this WAV file instead of a device.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [volume.doc, voice.doc, device.doc, wavFile.doc]
    }
}
