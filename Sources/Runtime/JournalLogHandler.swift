#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Logging
import Synchronization
import SystemIO

/// A `LogHandler` that writes to systemd's journal over its native protocol, so that every metadata field of a
/// stage's log (`stage`, a device, a count) stays a field of its own: `journalctl -u hapticnav@worn
/// HAPTICNAV_STAGE=haptic`. Used when standard error is the journal's stream (``JournalLogHandler/stderrIsJournal()``,
/// the check systemd documents for `JOURNAL_STREAM`); a message the journal's socket does not take goes to standard
/// error instead, so nothing is lost.
///
/// Each message is one datagram of `KEY=value` lines (a value with a line break as `KEY`, a line break, its length as
/// 64 bits little-endian, the value and a line break): `MESSAGE` (the text and its metadata as `key=value`, as a
/// reader of the plain journal sees it), `PRIORITY` (syslog's: trace and debug 7 … critical 2),
/// `SYSLOG_IDENTIFIER`, `HAPTICNAV_LABEL`, `HAPTICNAV_SOURCE` (the module that logged), `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC`, and each metadata key in capitals after `HAPTICNAV_` (characters other than letters and digits as
/// `_`).
public struct JournalLogHandler: LogHandler {
    /// The journal's socket, where systemd listens for the native protocol (`HAPTICNAV_JOURNAL_SOCKET` names
    /// another: a test's listener).
    public static var defaultSocket: String {
        getenv("HAPTICNAV_JOURNAL_SOCKET").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
            ?? "/run/systemd/journal/socket"
    }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String
    private let identifier: String
    private let sink: JournalSocket
    private let fallback: (@Sendable (String) -> Void)?

    /// A handler sending to `socket` as `identifier` (the program's name in `journalctl`'s lines); a message the
    /// socket does not take goes to `fallback` as a line (nil: standard error).
    public init(
        label: String, identifier: String = "hapticnav", socket: String = JournalLogHandler.defaultSocket,
        fallback: (@Sendable (String) -> Void)? = nil
    ) {
        self.label = label
        self.identifier = identifier
        self.sink = JournalSocket.shared(path: socket)
        self.fallback = fallback
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = self.metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var message = "\(event.message)"
        if let error = event.error { message += ": \(error)" }
        let datagram = Self.datagram(
            message: message, level: event.level, identifier: self.identifier, label: self.label,
            source: event.source, metadata: merged, file: event.file, function: event.function, line: event.line)
        if !self.sink.send(datagram) {
            // The whole message, its error too, as the journal would have had it.
            let line =
                "\(self.identifier)[\(self.label)] \(event.level): \(Self.text(Logger.Message(stringLiteral: message), merged))\n"
            if let fallback = self.fallback { fallback(line) } else { StandardStreams.writeError(line) }
        }
    }

    /// True when standard error is the stream systemd gave this service (`JOURNAL_STREAM` names its device and
    /// inode): then the native protocol is the better way to the same journal.
    public static func stderrIsJournal() -> Bool {
        Self.stderrIsJournal(journalStream: getenv("JOURNAL_STREAM").map { String(cString: $0) })
    }

    /// The same for a given value of `JOURNAL_STREAM`.
    public static func stderrIsJournal(journalStream: String?) -> Bool {
        guard let stream = journalStream else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// The syslog priority of a level.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// A metadata key as a journal field name: `HAPTICNAV_` and the key in capitals, other characters as `_`,
    /// at most 64 characters (the journal's limit).
    static func fieldName(_ key: String) -> String {
        let mapped = key.unicodeScalars.map { scalar -> Character in
            switch scalar {
            case "a"..."z": return Character(String(scalar).uppercased())
            case "A"..."Z", "0"..."9": return Character(scalar)
            default: return "_"
            }
        }
        return String(("HAPTICNAV_" + String(mapped)).prefix(64))
    }

    static func text(_ message: Logger.Message, _ metadata: Logger.Metadata) -> String {
        guard !metadata.isEmpty else { return "\(message)" }
        let pairs = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(pairs) \(message)"
    }

    /// One message in the native protocol.
    static func datagram(
        message: String, level: Logger.Level, identifier: String, label: String, source: String,
        metadata: Logger.Metadata, file: String, function: String, line: UInt
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        func field(_ name: String, _ value: String) {
            let utf8 = Array(value.utf8)
            bytes += Array(name.utf8)
            if utf8.contains(0x0A) {
                bytes.append(0x0A)
                var length = UInt64(utf8.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += $0 }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes += utf8
            bytes.append(0x0A)
        }
        field("MESSAGE", Self.text(Logger.Message(stringLiteral: message), metadata))
        field("PRIORITY", "\(Self.priority(level))")
        field("SYSLOG_IDENTIFIER", identifier)
        field("HAPTICNAV_LABEL", label)
        field("HAPTICNAV_SOURCE", source)
        field("CODE_FILE", file)
        field("CODE_LINE", "\(line)")
        field("CODE_FUNC", function)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            field(Self.fieldName(key), "\(value)")
        }
        return bytes
    }
}

/// One datagram socket to the journal for the whole process, opened at the first message.
final class JournalSocket: Sendable {
    private let path: String
    private let descriptor: Int32

    private static let sockets = Mutex<[String: JournalSocket]>([:])

    static func shared(path: String) -> JournalSocket {
        sockets.withLock { sockets in
            if let socket = sockets[path] { return socket }
            let socket = JournalSocket(path: path)
            sockets[path] = socket
            return socket
        }
    }

    private init(path: String) {
        self.path = path
        self.descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    /// Sends one datagram; false when it could not (no journal there, a message too large for a datagram).
    func send(_ datagram: [UInt8]) -> Bool {
        guard self.descriptor >= 0 else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let pathBytes = Array(self.path.utf8)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                datagram.withUnsafeBytes { body in
                    sendto(
                        self.descriptor, body.baseAddress, body.count, Int32(MSG_NOSIGNAL), socketAddress,
                        socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == datagram.count
    }
}
