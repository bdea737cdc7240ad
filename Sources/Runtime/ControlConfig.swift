#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
public import Bus
import Dispatch
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Stages
public import StageHaptic

/// A haptic stage's `options.control`: where it listens for the experimenter's stop, resume and mark, who may send
/// them, and where a stop is kept across a restart (docs/LAB.md, "Stopping the outputs").
public struct ControlConfig: Sendable, Equatable {
    /// The settings of `options.control`.
    public enum Setting {
        public static let listen = SettingDoc(
            key: "control.listen", defaultText: "—", rangeText: "endpoints",
            summary:
                "where the sink listens for the experimenter's stop, resume and mark (`hapticnav control`, `monitor --live`); beyond loopback only with the stage's key"
        )
        public static let advertise = SettingDoc(
            key: "control.advertise", defaultText: "listen, * as 127.0.0.1", rangeText: "endpoints",
            summary: "where senders reach it")
        public static let senders = SettingDoc(
            key: "control.senders", defaultText: "[\"experimenter\"]", rangeText: "key names",
            summary: "the keys allowed to send commands over an encrypted link (their .pub files in the keys folder)")
        public static let stateFile = SettingDoc(
            key: "control.stateFile", defaultText: "beside the calibration file, else ~/.local/state/hapticnav",
            rangeText: "a path", summary: "where a stop is kept, so that it holds across a restart of the sink")

        public static let all = [listen, advertise, senders, stateFile]
    }

    /// Endpoints the sink binds for control.
    public var listen: [String]
    /// Endpoints senders connect to.
    public var advertise: [String]
    /// Key names allowed to send, on an encrypted link.
    public var senders: [String]
    /// Where the stop in force is kept.
    public var stateFile: String

    /// Reads `options.control` of a haptic stage; nil when it has none.
    static func parse(_ stage: StageConfig, calibrationFile: String?) throws(ConfigError) -> ControlConfig? {
        var options = stage.options
        guard options.contains("control") else { return nil }
        var settings = try options.object("control")
        let listen = try settings.strings("listen")
        guard !listen.isEmpty else {
            throw ConfigError.missingKey(path: settings.path, key: "listen (the endpoints to take commands on)")
        }
        let advertise = try settings.strings(
            "advertise",
            default: listen.map {
                $0.replacing("tcp://*:", with: "tcp://127.0.0.1:").replacing("tcp://0.0.0.0:", with: "tcp://127.0.0.1:")
            })
        let senders = try settings.strings("senders", default: ["experimenter"])
        // Beside the calibration file, else in the user's state folder (never a folder other users can write).
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
        let stateHome = ProcessInfo.processInfo.environment["XDG_STATE_HOME"] ?? "\(home)/.local/state"
        let folder =
            calibrationFile.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
            ?? "\(stateHome)/hapticnav"
        let stateFile = try settings.path("stateFile") ?? "\(folder)/hapticnav-\(stage.name)-control.json"
        try settings.finish()
        return ControlConfig(listen: listen, advertise: advertise, senders: senders, stateFile: stateFile)
    }
}

/// Keeps the stop in force in a small JSON file, replaced atomically. A file that exists but cannot be read as one
/// counts as a stop (the safe reading), and the status says why.
public struct FileStopStateStore: StopStateStore {
    /// The file.
    public let path: String

    public init(path: String) { self.path = path }

    public func load() -> StopState? {
        var info = stat()
        guard lstat(self.path, &info) == 0 else { return nil }
        // Written by someone else, or a link: not ours to trust, so the safe reading.
        guard info.st_uid == getuid(), info.st_mode & S_IFMT == S_IFREG else {
            return StopState(
                by: "unknown", sinceSeconds: 0,
                note: "the control state \(self.path) is not a file of this user: stopped until resumed")
        }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: self.path))
            let saved = try JSONDecoder().decode(Saved.self, from: data)
            return saved.stop
        } catch {
            return StopState(
                by: "unknown", sinceSeconds: 0,
                note: "the control state \(self.path) cannot be read (\(error)): stopped until resumed")
        }
    }

    /// Writes the state with one `write(2)` over the file's old bytes (padded with spaces to the old length, which JSON
    /// allows), so that a sink restarted after a crash reads it at once. A new file is written and renamed into place
    /// only where there is none yet, or something that is not this user's file. Never a rename over the old file on
    /// the way of an experimenter's stop: freeing its blocks can wait on the disk (online discard), and so can the
    /// flush to the disk (`fsync`, for a power loss), which follows on another thread. A write torn by a power loss is
    /// unreadable, and an unreadable file is a stop (a band that loses power stops its motors on its own).
    public func save(_ state: StopState?) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var bytes = Array(try encoder.encode(Saved(stop: state)))
        bytes.append(UInt8(ascii: "\n"))
        var info = stat()
        let descriptor =
            lstat(self.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_uid == getuid()
            ? open(self.path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW) : -1
        if descriptor >= 0 {
            if bytes.count < Int(info.st_size) {
                let padding = repeatElement(UInt8(ascii: " "), count: Int(info.st_size) - bytes.count)
                bytes.insert(contentsOf: padding, at: 0)
            }
            let file = OutputFile(descriptor: descriptor, path: self.path)
            defer { file.close() }
            guard file.write(bytes, at: 0) else { throw SystemError("write", path: self.path) }
        } else {
            try Paths.createFolders(Paths.folder(of: self.path))
            try Paths.writeWhole(bytes, to: self.path)
        }
        let path = self.path
        DispatchQueue.global(qos: .utility).async { Paths.flushToDisk(path) }
    }

    private struct Saved: Codable {
        var stop: StopState?
    }
}

/// Sends the experimenter's commands to every haptic stage of a pipeline that takes them.
public enum ExperimenterControl {
    /// One sink's answer, or why there was none.
    public struct Outcome: Sendable {
        /// The haptic stage.
        public var stage: String
        /// Where it was asked.
        public var endpoint: String
        /// Its reply, or the failure.
        public var result: Result<ControlReply, ControlClient.Failure>
        /// From sending to the reply [seconds].
        public var seconds: Double
    }

    /// Sends `request` to each haptic stage with `options.control` in `pipeline`, as key `keyName` on encrypted
    /// stages, and waits for every reply up to `timeoutSeconds` in all.
    public static func send(
        _ request: ControlRequest, pipeline: PipelineConfig, keyName: String, timeoutSeconds: Double = 2
    ) async throws -> [Outcome] {
        var targets: [(stage: String, endpoint: String, identity: CurveKeyPair?, serverKey: String?)] = []
        for stage in pipeline.stages where stage.role == .haptic {
            guard let control = try ControlConfig.parse(stage, calibrationFile: nil),
                let endpoint = control.advertise.first
            else { continue }
            var identity: CurveKeyPair?
            var serverKey: String?
            if let key = stage.key, let security = pipeline.security {
                do {
                    identity = try security.keyPair(keyName)
                } catch {
                    throw ConfigError.invalidValue(
                        path: "--key", expected: "a key pair in \(security.keysFolder) among \(stage.name)'s senders",
                        found: "\(keyName): \(error)")
                }
                serverKey = try security.publicKey(key)
            }
            targets.append((stage.name, endpoint, identity, serverKey))
        }
        guard !targets.isEmpty else {
            throw ConfigError.missingKey(
                path: "stages.<haptic>.options", key: "control (no haptic stage of this config takes commands)")
        }
        let context = ZMQContext()
        defer { context.terminate() }
        // Each sink on a thread of its own: the wait for a reply blocks, and must not hold the cooperative pool.
        return await withTaskGroup(of: Outcome.self) { group in
            for target in targets {
                group.addTask {
                    await SystemThread.run(name: "control-send") {
                        let started = SystemClock.monotonicSeconds()
                        let result = Result { () throws(ControlClient.Failure) -> ControlReply in
                            try ControlClient.send(
                                request, to: target.endpoint, identity: target.identity,
                                serverKey: target.serverKey, timeoutSeconds: timeoutSeconds, context: context)
                        }
                        return Outcome(
                            stage: target.stage, endpoint: target.endpoint, result: result,
                            seconds: SystemClock.monotonicSeconds() - started)
                    }
                }
            }
            var outcomes: [Outcome] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes.sorted { $0.stage < $1.stage }
        }
    }
}
