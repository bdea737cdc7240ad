import SessionFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
public import NavCore
import Parsers
import Synchronization
import SystemIO

/// Records a session as MCAP parts in a folder (`docs/RECORDING.md`): every message with both receive times and its
/// frames. ``record(_:)`` never waits for the disk: messages queue in memory up to a bound, and a writer thread of
/// its own turns them into chunks and writes them at least every `flushSeconds`. When the disk falls behind and the
/// queue is full, messages are dropped and counted (in the log and in the part's closing metadata); the pipeline is
/// never slowed. A part is closed and the next begun past `maxFileMegabytes` or `maxFileMinutes`.
public final class MCAPRecorder: MessageSink, Sendable {
    public static let id = "mcap"

    /// Where and how to record.
    public struct Options: Sendable {
        /// The session's folder; parts are `part-0001.mcap`, `part-0002.mcap`, …
        public var folder: String
        /// A part's size at which the next begins [bytes].
        public var maxFileBytes = UInt64(MCAPRecorder.Setting.maxFileMegabytes.defaultValue * 1_048_576)
        /// A part's age at which the next begins [seconds].
        public var maxFileSeconds = MCAPRecorder.Setting.maxFileMinutes.defaultValue * 60
        /// Messages waiting for the disk beyond which new ones are dropped [bytes].
        public var queueBytes = Int(MCAPRecorder.Setting.queueMegabytes.defaultValue * 1_048_576)
        /// The longest a received message waits before it is on disk [seconds].
        public var flushSeconds = MCAPRecorder.Setting.flushSeconds.defaultValue
        /// What the session's first metadata record says besides the part number (the config, the recorder's name).
        public var metadata: [(String, String)] = []

        /// Options with the defaults.
        public init(folder: String) { self.folder = folder }
    }

    /// Where the bytes go: a file that can be written and closed. Tests give a slow one.
    public protocol Output: Sendable {
        /// Appends bytes; false when the write failed.
        func write(_ bytes: [UInt8]) -> Bool
        /// Closes.
        func close()
    }

    private struct Queue: ~Copyable {
        var waiting: [RecordedMessage] = []
        var waitingBytes = 0
        var received: UInt64 = 0
        var dropped: UInt64 = 0
        var finishing = false
        var finished = false
        var failure: String?
    }

    /// The folder recorded to.
    public let options: Options
    private let queue = Mutex(Queue())
    private let logger: Logger
    private let openOutput: @Sendable (String) throws -> any Output
    private let now: @Sendable () -> Double
    /// The number of the first part this recorder writes: after the parts already in the folder.
    private let firstPart: Int

    /// Reads a config's `mcap` recorder settings and starts recording.
    public convenience init(settings: Settings, logger: Logger) throws {
        try self.init(options: Self.options(from: settings), logger: logger)
    }

    /// Checks the settings of an `mcap` recorder without touching the disk.
    public static func options(from settings: Settings) throws -> Options {
        var settings = settings
        guard let folder = try settings.path(Setting.folder) else {
            throw ConfigError.missingKey(path: settings.path, key: Setting.folder.key)
        }
        var options = Options(folder: folder)
        options.maxFileBytes = UInt64(
            try settings.value(Setting.maxFileMegabytes) * 1_048_576)
        options.maxFileSeconds = try settings.value(Setting.maxFileMinutes) * 60
        options.queueBytes = Int(try settings.value(Setting.queueMegabytes) * 1_048_576)
        options.flushSeconds = try settings.value(Setting.flushSeconds)
        // What the session's first metadata record says besides the part (a study trial's who and what).
        if case let .object(values)? = settings.value(Setting.metadata.key) {
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                guard case let .string(text) = value else {
                    throw ConfigError.invalidValue(
                        path: "\(settings.path).metadata.\(key)", expected: "a string", found: value.typeName)
                }
                options.metadata.append((key, text))
            }
        }
        try settings.finish()
        return options
    }

    /// Starts recording into `options.folder` (made if missing); `output` opens each part (a file by default); `now`
    /// is the clock that parts' and chunks' ages are measured on [seconds, monotonic by default].
    public init(
        options: Options, logger: Logger,
        output: (@Sendable (String) throws -> any Output)? = nil,
        now: (@Sendable () -> Double)? = nil
    ) throws {
        self.options = options
        self.logger = logger
        // Ages of parts and chunks on a clock that never jumps: a wall clock set back must not hold a part open.
        let clock = ContinuousClock()
        let zero = clock.now
        self.now = now ?? { zero.duration(to: clock.now).inSeconds }
        self.openOutput = output ?? { path in FileOutput(file: try OutputFile(path: path, mode: .truncate)) }
        do {
            try Paths.createFolders(options.folder)
        } catch {
            throw ConfigError.invalidValue(
                path: "recorder.folder", expected: "a folder that can be made", found: "\(error)")
        }
        // A recorder started again in its folder (after a crash, by `hapticnav run` or systemd) goes on after the
        // parts there: what was recorded before is never overwritten.
        self.firstPart = Self.nextPart(in: options.folder)
        // Open the first part now, so that a folder that cannot be written is an error at start, not a silent loss.
        let first = try self.openOutput(self.partPath(self.firstPart))
        let started = self.now()
        SystemThread.start(name: "mcap-recorder") { [self] in self.writeLoop(first: first, started: started) }
    }

    public func record(_ message: RecordedMessage) throws {
        let size = 64 + (message.frames.map { $0.header.count + $0.payload.count } ?? 256)
        let (dropped, failure) = self.queue.withLock { queue -> (UInt64?, String?) in
            queue.received += 1
            if let failure = queue.failure { return (nil, failure) }
            guard queue.waitingBytes + size <= self.options.queueBytes else {
                queue.dropped += 1
                return (queue.dropped, nil)
            }
            queue.waiting.append(message)
            queue.waitingBytes += size
            return (nil, nil)
        }
        if let failure { throw RecorderFailure(description: failure) }
        if let dropped, dropped == 1 || dropped.isMultiple(of: 1000) {
            self.logger.warning(
                "recorder: the disk is behind; \(dropped) message(s) dropped so far (queue of \(self.options.queueBytes) bytes full)"
            )
        }
    }

    /// Messages given, and messages dropped because the disk was behind [count].
    public var counts: (received: UInt64, dropped: UInt64) {
        self.queue.withLock { ($0.received, $0.dropped) }
    }

    public func finish() async throws {
        self.queue.withLock { $0.finishing = true }
        while !self.queue.withLock({ $0.finished }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let (received, dropped, failure) = self.queue.withLock { ($0.received, $0.dropped, $0.failure) }
        if let failure { throw RecorderFailure(description: failure) }
        self.logger.info(
            "recorder: \(received - dropped) message(s) in \(self.options.folder)\(dropped > 0 ? ", \(dropped) dropped (the disk was behind)" : "")"
        )
    }

    private func partPath(_ number: Int) -> String {
        "\(self.options.folder)/part-\(String(repeating: "0", count: max(0, 4 - String(number).count)))\(number).mcap"
    }

    private func newWriter(part: Int) -> SessionWriter {
        var metadata = self.options.metadata
        metadata.append(("part", String(part)))
        metadata.append(("startedSeconds", String(Date().timeIntervalSince1970)))
        return SessionWriter(library: "hapticnav", metadata: metadata)
    }

    /// One more than the highest `part-NNNN.mcap` in `folder`; 1 when there is none.
    static func nextPart(in folder: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let numbers = names.compactMap { name -> Int? in
            guard name.hasPrefix("part-"), name.hasSuffix(".mcap") else { return nil }
            return Int(name.dropFirst("part-".count).dropLast(".mcap".count))
        }
        return (numbers.max() ?? 0) + 1
    }

    private func writeLoop(first: any Output, started: Double) {
        var part = self.firstPart
        var output = first
        var writer = self.newWriter(part: part)
        var partStarted = started
        var lastChunk = partStarted
        var failed = false
        func write() {
            let bytes = writer.takeOutput()
            if !bytes.isEmpty, !failed, !output.write(bytes) {
                failed = true
                self.queue.withLock { $0.failure = "\(self.partPath(part)): write failed" }
                self.logger.error("recorder: \(self.partPath(part)): write failed; recording stopped")
            }
        }
        func closePart() {
            let (received, dropped) = self.counts
            writer.addMetadata(
                name: "hapticnav.recorder",
                values: [("received", String(received)), ("dropped", String(dropped)), ("part", String(part))])
            writer.finish()
            write()
            output.close()
        }
        while true {
            let (batch, finishing) = self.queue.withLock { queue in
                defer {
                    queue.waiting.removeAll(keepingCapacity: true)
                    queue.waitingBytes = 0
                }
                return (queue.waiting, queue.finishing)
            }
            let now = self.now()
            for message in batch {
                if writer.offset + UInt64(writer.openChunkBytes) >= self.options.maxFileBytes
                    || now - partStarted >= self.options.maxFileSeconds
                {
                    closePart()
                    part += 1
                    do {
                        output = try self.openOutput(self.partPath(part))
                    } catch {
                        self.queue.withLock {
                            $0.failure = "\(self.partPath(part)): \(error)"
                            $0.finished = true
                        }
                        self.logger.error("recorder: \(self.partPath(part)): \(error); recording stopped")
                        return
                    }
                    writer = self.newWriter(part: part)
                    partStarted = now
                }
                writer.add(message)
            }
            if writer.openChunkBytes > 0, now - lastChunk >= self.options.flushSeconds {
                writer.closeChunk()
                lastChunk = now
            }
            write()
            if finishing, batch.isEmpty {
                closePart()
                self.queue.withLock { $0.finished = true }
                return
            }
            if batch.isEmpty { SystemThread.sleep(seconds: min(0.02, self.options.flushSeconds / 4)) }
        }
    }

    private struct FileOutput: Output {
        let file: OutputFile
        func write(_ bytes: [UInt8]) -> Bool { self.file.write(bytes) }
        func close() { self.file.close() }
    }
}

/// The recorder cannot go on (its disk failed).
public struct RecorderFailure: Error, CustomStringConvertible {
    public var description: String
}

extension MCAPRecorder {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let maxFileMegabytes = SettingSpec<Double>(
            "maxFileMegabytes", unit: "MiB", default: 512, in: 1...1_000_000, "A new part past this size.")
        public static let maxFileMinutes = SettingSpec<Double>(
            "maxFileMinutes", unit: "min", default: 60, in: 0.01...100_000, "A new part past this age.")
        public static let queueMegabytes = SettingSpec<Double>(
            "queueMegabytes", unit: "MiB", default: 16, in: 0.01...4096,
            "What may wait for the disk before messages are dropped (and counted).")
        public static let flushSeconds = SettingSpec<Double>(
            "flushSeconds", unit: "s", default: 0.2, in: 0.01...60, "How often what is written reaches the disk.")
        public static let folder = ValueSpec<String>(
            "folder", accepts: "a path", "The session folder its MCAP parts go into.")

        public static let metadata = ValueSpec<String>(
            "metadata", accepts: "an object of strings", "Written into the session's first metadata record.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [
            folder.doc, maxFileMegabytes.doc, maxFileMinutes.doc, queueMegabytes.doc, flushSeconds.doc, metadata.doc,
        ]
    }
}
