import Foundation
import Synchronization
import SystemIO

/// A real PulseAudio sound server for a test: a null sink (a sound card that plays to nowhere at the real pace)
/// in a runtime folder of its own, and a recorder of that sink's monitor, so that a test hears what reached the
/// "speakers" and when. ALSA's `pulse` device (libasound2-plugins) plays into it once `PULSE_SERVER` names it.
public final class SoundServer: @unchecked Sendable {
    /// `unix:…/native`: the value for `PULSE_SERVER`.
    public let address: String
    public let sampleRate: Int
    private let daemon: SystemIO.ChildProcess
    private let folder: String

    /// True when PulseAudio, its tools and ALSA's aplay with the pulse plugin are installed (scripts/setup).
    public static var isAvailable: Bool {
        ["/usr/bin/pulseaudio", "/usr/bin/parec", "/usr/bin/pactl", "/usr/bin/aplay"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Starts the server and waits (up to 20 s) until it answers.
    public init(sampleRate: Int = 22_050) async throws {
        self.sampleRate = sampleRate
        self.folder = try scratchFolder()
        self.address = "unix:\(self.folder)/native"
        // Clients never start a server of their own (one would outlive the test).
        try "autospawn = no\n".store(toFile: "\(self.folder)/client.conf")
        self.daemon = try SystemIO.ChildProcess(
            executable: "/usr/bin/env",
            arguments: Self.variables(folder: self.folder) + [
                "/usr/bin/pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                "--disable-shm=yes", "-F", "/dev/null",
                "--load=module-null-sink sink_name=hn rate=\(sampleRate) channels=2",
                "--load=module-native-protocol-unix socket=\(self.folder)/native auth-anonymous=1",
            ])
        let folder = self.folder
        let ready = await eventually(within: 20) {
            guard FileManager.default.fileExists(atPath: "\(folder)/native") else { return false }
            return
                (try? await offThePool {
                    let pactl = try SystemIO.ChildProcess(
                        executable: "/usr/bin/env",
                        arguments: Self.variables(folder: folder) + ["/usr/bin/pactl", "list", "short", "sinks"],
                        output: .pipe)
                    let text = String(decoding: (try? pactl.output?.readToEnd()) ?? [], as: UTF8.self)
                    pactl.wait()
                    return text.contains("hn")
                }) ?? false
        }
        guard ready else {
            self.stop()
            throw NetworkSetupError("PulseAudio did not start at \(self.address)")
        }
    }

    /// The environment for clients of this server.
    public var environment: [String: String] {
        var environment: [String: String] = [:]
        for variable in Self.variables(folder: self.folder) {
            let parts = variable.split(separator: "=", maxSplits: 1)
            environment[String(parts[0])] = String(parts[1])
        }
        return environment
    }

    /// NAME=VALUE for `env`: the server's folders, its address, and a client config that never autospawns.
    static func variables(folder: String) -> [String] {
        [
            "PULSE_RUNTIME_PATH=\(folder)", "PULSE_STATE_PATH=\(folder)", "HOME=\(folder)",
            "PULSE_SERVER=unix:\(folder)/native", "PULSE_CLIENTCONFIG=\(folder)/client.conf",
        ]
    }

    /// An `aplay` that plays into this server alone: a script in the server's folder that runs /usr/bin/aplay with the
    /// server's variables. A test hands it to its speaker instead of setting them for the whole test process, where
    /// every other test's players, started meanwhile, would inherit them.
    public func aplay() throws -> String {
        let path = "\(self.folder)/aplay"
        let variables = Self.variables(folder: self.folder).joined(separator: " ")
        try "#!/bin/sh\nexec /usr/bin/env \(variables) /usr/bin/aplay \"$@\"\n".store(toFile: path)
        guard chmod(path, 0o755) == 0 else { throw NetworkSetupError("cannot make \(path) executable") }
        return path
    }

    public func stop() {
        if self.daemon.isRunning {
            self.daemon.signal(SIGKILL)
            self.daemon.wait()
        }
    }

    deinit { self.stop() }

    /// What the null sink played, as it came: each chunk of 16-bit stereo samples with the wall-clock time it arrived.
    public final class Recording: @unchecked Sendable {
        private let process: SystemIO.ChildProcess
        private final class Chunks: Sendable {
            let list = Mutex<[(time: Double, samples: [Int16])]>([])
            func withLock<T>(_ body: (inout [(time: Double, samples: [Int16])]) -> T) -> T {
                self.list.withLock { body(&$0) }
            }
        }
        private let chunks = Chunks()
        /// Each chunk's arrival time and loudest sample per channel, noted as it comes; waiters are woken by it.
        private let peakList = NSCondition()
        nonisolated(unsafe) private var peakValues: [(time: Double, left: Int, right: Int)] = []
        private let sampleRate: Int

        init(server: SoundServer) throws {
            self.sampleRate = server.sampleRate
            let process = try SystemIO.ChildProcess(
                executable: "/usr/bin/env",
                arguments: SoundServer.variables(folder: server.folder) + [
                    "/usr/bin/parec", "-d", "hn.monitor", "--format=s16le", "--rate=\(server.sampleRate)",
                    "--channels=2", "--latency-msec=5", "--raw",
                ], output: .pipe)
            self.process = process
            guard let handle = process.output else { throw NetworkSetupError("parec has no output") }
            let chunks = self.chunks
            Thread.detachNewThread { [self] in
                var carry: [UInt8] = []
                while true {
                    guard let data = try? handle.read(upTo: 4096), !data.isEmpty else { return }
                    let time = Date().timeIntervalSince1970
                    carry += data
                    let usable = carry.count / 4 * 4
                    let samples = carry[..<usable].withUnsafeBytes { raw in
                        (0..<(usable / 2)).map {
                            Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self))
                        }
                    }
                    carry.removeFirst(usable)
                    chunks.withLock { $0.append((time, samples)) }
                    var left = 0, right = 0
                    var index = 0
                    while index + 1 < samples.count {
                        left = max(left, abs(Int(samples[index])))
                        right = max(right, abs(Int(samples[index + 1])))
                        index += 2
                    }
                    self.peakList.lock()
                    self.peakValues.append((time, left, right))
                    self.peakList.broadcast()
                    self.peakList.unlock()
                }
            }
        }

        /// Each chunk's arrival time and its loudest sample per channel.
        public var peaks: [(time: Double, left: Int, right: Int)] {
            self.peakList.lock()
            defer { self.peakList.unlock() }
            return self.peakValues
        }

        /// Blocks the calling thread (never the cooperative pool's: call it from a thread of its own) until a chunk
        /// louder than `threshold` arrives after `time`, for at most `seconds`; that chunk's arrival time, or nil. Woken
        /// by the recorder as each chunk comes, so a test that acts on a sound acts within a chunk of it.
        public func waitForSound(after time: Double, within seconds: Double, threshold: Int = 300) -> Double? {
            let deadline = Date(timeIntervalSinceNow: seconds)
            self.peakList.lock()
            defer { self.peakList.unlock() }
            while true {
                // Only the chunks after `time` are looked at, from the newest back.
                let after = (self.peakValues.lastIndex { $0.time <= time } ?? -1) + 1
                if let found = self.peakValues[after...].first(where: { max($0.left, $0.right) > threshold }) {
                    return found.time
                }
                if !self.peakList.wait(until: deadline) {
                    // The deadline: one last look at what came meanwhile.
                    let after = (self.peakValues.lastIndex { $0.time <= time } ?? -1) + 1
                    return self.peakValues[after...].first { max($0.left, $0.right) > threshold }?.time
                }
            }
        }

        /// Energy per channel of everything recorded after `time` (wall clock).
        public func energy(after time: Double) -> (left: Double, right: Double) {
            self.chunks.withLock { chunks in
                var left = 0.0, right = 0.0
                for chunk in chunks where chunk.time > time {
                    var index = 0
                    while index + 1 < chunk.samples.count {
                        left += Double(chunk.samples[index]) * Double(chunk.samples[index])
                        right += Double(chunk.samples[index + 1]) * Double(chunk.samples[index + 1])
                        index += 2
                    }
                }
                return (left, right)
            }
        }

        /// The first chunk after `time` with a sample louder than `threshold`, its arrival time.
        public func firstSound(after time: Double, threshold: Int = 300) -> Double? {
            self.peaks.first { $0.time > time && max($0.left, $0.right) > threshold }?.time
        }

        /// The last chunk with a sample louder than `threshold`, its arrival time.
        public func lastSound(threshold: Int = 300) -> Double? {
            self.peaks.last { max($0.left, $0.right) > threshold }?.time
        }

        /// The latest chunk's arrival time.
        public var latest: Double? { self.chunks.withLock { $0.last?.time } }

        public func stop() {
            if self.process.isRunning {
                self.process.signal(SIGKILL)
                self.process.wait()
            }
        }

        deinit { self.stop() }
    }

    /// Starts recording the null sink's monitor.
    public func record() throws -> Recording { try Recording(server: self) }
}
