#if canImport(Glibc)
import Glibc
#endif
import Dispatch
public import Logging
import Synchronization
import SystemIO

/// Plays 16-bit stereo PCM through ALSA's `aplay` on one device (`default`, a card, or the sound server's `pulse`
/// for Bluetooth or bone-conduction headphones), at the device's own pace, with little queued: a thread of its own
/// writes 10 ms chunks into a pipe of one page, which `aplay` drains into an ALSA buffer of 80 ms, so a write blocks
/// until the device has taken the sound before it. From the start, and between sounds, it writes silence, so the
/// stream (and a Bluetooth link) stays awake and the next sound starts at once.
///
/// A cue replaces whatever sound has not yet left the program (``play(_:interrupting:)``); a stop drops that and
/// also what the device already holds, by ending `aplay` (ALSA drops a stream's buffer when it closes without
/// draining); the next sound starts a new `aplay`.
public final class AudioPlayer: Sendable {
    /// The `aplay` options after `-D`.
    public struct Options: Sendable {
        /// The ALSA device; nil: ALSA's default.
        public var device: String?
        public var sampleRate = 22_050
        /// The ALSA buffer [microseconds].
        public var bufferMicroseconds = 80_000
        /// The period within it [microseconds].
        public var periodMicroseconds = 20_000
        /// The program.
        public var aplay = "/usr/bin/aplay"

        public init(device: String? = nil) { self.device = device }
    }

    private struct State {
        var pending: [Int16] = []
        var offset = 0
        var player: ChildProcess?
        var closed = false
        /// When the sound now pending was queued, until its first chunk leaves [monotonic seconds].
        var queuedAt: Double?
        /// For each sound, from its queueing to its first chunk written to `aplay` [seconds] (the latest 1000).
        var handOffs: [Double] = []
        var framesWritten = 0
        var starts = 0
        var failures = 0
    }

    private let options: Options
    private let logger: Logger
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    /// 10 ms of stereo samples.
    private let chunk: Int

    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
        self.chunk = options.sampleRate / 100 * 2
        SystemThread.start(name: "audio-player") { [self] in
            // A write to an aplay that a stop just ended fails with EPIPE on this thread instead of raising SIGPIPE
            // (which would end a process that does not ignore it).
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            self.serve()
            self.finished.signal()
        }
    }

    /// Queues `samples`; `interrupting` drops what has not yet been handed to the device first (a new cue).
    public func play(_ samples: [Int16], interrupting: Bool) {
        guard !samples.isEmpty else { return }
        self.state.withLock { state in
            if interrupting || state.offset >= state.pending.count {
                state.pending = samples
                state.offset = 0
                state.queuedAt = SystemClock.monotonicSeconds()
            } else {
                state.pending += samples
            }
        }
    }

    /// Silences at once: drops every sound not yet played, the device's buffer included.
    public func stopAll() {
        let player = self.state.withLock { state -> ChildProcess? in
            state.pending = []
            state.offset = 0
            state.queuedAt = nil
            defer { state.player = nil }
            return state.player
        }
        if let player {
            player.signal(SIGKILL)
            player.wait()
        }
    }

    /// Stops and ends the thread.
    public func close() {
        self.state.withLock { $0.closed = true }
        self.stopAll()
        _ = self.finished.wait(timeout: .now() + 2)
    }

    /// Sound handed to the device so far [seconds of audio].
    public var secondsWritten: Double {
        Double(self.state.withLock { $0.framesWritten }) / Double(self.options.sampleRate)
    }

    /// From queueing each sound to its first chunk leaving the program [seconds], oldest first.
    public var handOffSeconds: [Double] { self.state.withLock { $0.handOffs } }

    /// `aplay` starts and the failures to start or feed it [count].
    public var counts: (starts: Int, failures: Int) { self.state.withLock { ($0.starts, $0.failures) } }

    private func serve() {
        let silence = [Int16](repeating: 0, count: self.chunk)
        var failuresInARow = 0
        // Audio written to the current aplay [frames]: one that ends before a second of it counts as a failure.
        var writtenToThisPlayer = 0
        while true {
            // The next chunk: pending sound, or silence while a stream is open; nothing to do otherwise.
            enum Step {
                case exit
                case write(ChildProcess?, [Int16], handOff: Double?)
            }
            let step = self.state.withLock { state -> Step in
                if state.closed { return .exit }
                if state.offset < state.pending.count {
                    let end = min(state.pending.count, state.offset + self.chunk)
                    let samples = Array(state.pending[state.offset..<end])
                    state.offset = end
                    let handOff = state.queuedAt.map { SystemClock.monotonicSeconds() - $0 }
                    state.queuedAt = nil
                    return .write(state.player, samples, handOff: handOff)
                }
                state.pending = []
                state.offset = 0
                // The stream is kept open with silence from the start and again after a stop, so that a cue never
                // waits for aplay and the sound server to set a stream up.
                return .write(state.player, silence, handOff: nil)
            }
            switch step {
            case .exit:
                return
            case let .write(current, samples, handOff):
                if current == nil, failuresInARow > 0 {
                    // A device that will not open or keeps closing (no sound server, headphones gone): try again
                    // after 0.2, 0.4 … 5 s, never in a tight loop.
                    self.pause(seconds: min(5, 0.2 * Double(1 << min(5, failuresInARow - 1))))
                }
                let started = current == nil
                guard let player = current ?? self.start() else {
                    failuresInARow += 1
                    continue
                }
                if started { writtenToThisPlayer = 0 }
                let written = samples.withUnsafeBytes { player.input?.write($0) ?? false }
                if written {
                    writtenToThisPlayer += samples.count / 2
                    if writtenToThisPlayer >= self.options.sampleRate { failuresInARow = 0 }
                    self.state.withLock { state in
                        state.framesWritten += samples.count / 2
                        if let handOff {
                            state.handOffs.append(handOff)
                            if state.handOffs.count > 1000 { state.handOffs.removeFirst() }
                        }
                    }
                } else {
                    // aplay ended (a stop killed it, or the device went away): reap it; the next sound starts anew.
                    let ours = self.state.withLock { state -> Bool in
                        guard state.player === player else { return false }
                        state.player = nil
                        return true
                    }
                    if ours {
                        let status = player.wait()
                        self.state.withLock { $0.failures += 1 }
                        if writtenToThisPlayer < self.options.sampleRate { failuresInARow += 1 }
                        if failuresInARow <= 1 || failuresInARow % 20 == 0 {
                            self.logger.warning(
                                "speaker: aplay ended (status \(status)); starting it again (\(failuresInARow) early end(s) in a row)"
                            )
                        }
                    }
                }
            }
        }
    }

    /// Waits `seconds`, or less when the player is closed.
    private func pause(seconds: Double) {
        let end = SystemClock.monotonicSeconds() + seconds
        while SystemClock.monotonicSeconds() < end, !self.state.withLock({ $0.closed }) {
            SystemThread.sleep(seconds: 0.05)
        }
    }

    /// Starts `aplay` for the stream, or nil when it cannot be started.
    private func start() -> ChildProcess? {
        var arguments = [
            "-q", "-t", "raw", "-f", "S16_LE", "-r", "\(self.options.sampleRate)", "-c", "2",
            "--buffer-time=\(self.options.bufferMicroseconds)", "--period-time=\(self.options.periodMicroseconds)",
        ]
        if let device = self.options.device { arguments += ["-D", device] }
        do {
            let player = try ChildProcess(executable: self.options.aplay, arguments: arguments, input: .pipe)
            player.input?.setPipeCapacity(4096)
            let kept = self.state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.player = player
                state.starts += 1
                return true
            }
            guard kept else {
                player.signal(SIGKILL)
                player.wait()
                return nil
            }
            return player
        } catch {
            self.state.withLock { $0.failures += 1 }
            self.logger.warning("speaker: cannot start \(self.options.aplay) (\(error))")
            return nil
        }
    }
}
