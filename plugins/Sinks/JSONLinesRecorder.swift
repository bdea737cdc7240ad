#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
import SystemIO

/// Records every message it is given as one JSON line, for replay and for analysis in any language.
///
/// A line is a ``RecordedMessage``: `{"receiveTimeSeconds":…,"stage":…,"sequence":…,"message":{"topic":…,"payload":{…}}}`.
public actor JSONLinesRecorder: MessageSink {
    public static let id = "jsonl"

    /// The file written.
    public let file: String
    private let handle: OutputFile
    private let encoder: JSONEncoder
    private var buffer = Data()
    private var lastFlush = ContinuousClock.now

    /// Opens the recording file to append to (a stage started again after a crash continues it), making its folder
    /// if needed.
    public init(file: String) throws {
        do {
            self.handle = try OutputFile(path: file, mode: .append)
        } catch {
            throw ConfigError.invalidValue(path: "recorder.file", expected: "a writable file", found: "\(error)")
        }
        self.file = file
        self.encoder = JSONEncoder()
        self.encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// Reads the settings of a config's `jsonl` recorder and opens its file.
    public init(settings: Settings) throws {
        try self.init(file: try Self.file(from: settings))
    }

    /// Checks the settings of a `jsonl` recorder without touching the file; returns the file's path.
    public static func file(from settings: Settings) throws -> String {
        var settings = settings
        guard let file = try settings.path(Setting.file) else {
            throw ConfigError.missingKey(path: settings.path, key: Setting.file.key)
        }
        try settings.finish()
        return file
    }

    public func record(_ message: RecordedMessage) throws {
        self.buffer.append(try self.encoder.encode(message))
        self.buffer.append(0x0A)
        // Write at least every half second, so that a killed process loses little.
        if self.buffer.count > 64 * 1024 || ContinuousClock.now - self.lastFlush > .milliseconds(500) {
            try self.flush()
        }
    }

    private func flush() throws {
        if !self.buffer.isEmpty {
            guard self.handle.write(self.buffer) else {
                throw SystemError("write", path: self.file)
            }
            self.buffer.removeAll(keepingCapacity: true)
        }
        self.lastFlush = ContinuousClock.now
    }

    public func finish() throws {
        try self.flush()
        self.handle.close()
    }
}

extension JSONLinesRecorder {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let file = ValueSpec<String>(
            "file", accepts: "a path", "The file to append a JSON line per message to.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [file.doc]
    }
}
