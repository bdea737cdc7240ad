#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call on a file, naming the operation, the path and the reason.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let operation: String
    public let path: String
    public let code: Int32

    public init(_ operation: String, path: String, code: Int32? = nil) {
        self.operation = operation
        self.path = path
        self.code = code ?? errno
    }

    /// The C library's text for the error code.
    public var reason: String { String(cString: strerror(self.code)) }

    public var description: String { "cannot \(self.operation) \(self.path): \(self.reason)" }
}

/// Path text helpers (POSIX paths, `/` separated).
public enum Paths {
    /// The folder part of `path` ("" when there is none; "/" for a file at the root).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// `path` made absolute against the working directory (unchanged when it already is).
    public static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/"), let cwd = getcwd(nil, 0) else { return path }
        defer { free(cwd) }
        let folder = String(cString: cwd)
        return path.isEmpty ? folder : folder + "/" + path
    }

    /// Why `file` cannot be read as a file, or nil when it can.
    public static func unreadableReason(_ file: String) -> String? {
        var info = stat()
        guard stat(file, &info) == 0 else {
            return errno == ENOENT ? "does not exist" : "cannot be read (\(String(cString: strerror(errno))))"
        }
        if info.st_mode & S_IFMT == S_IFDIR { return "is a folder, not a file" }
        guard access(file, R_OK) == 0 else { return "cannot be read (\(String(cString: strerror(errno))))" }
        return nil
    }

    /// The last component of `path`.
    public static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Moves `from` to `to` in one step (`rename(2)`): a reader sees the old file or the new, never part of one.
    public static func replace(_ to: String, with from: String) throws(SystemError) {
        guard rename(from, to) == 0 else { throw SystemError("rename \(from) to", path: to) }
    }

    /// Writes `bytes` as the whole of `path`: to a new file beside it first, then renamed over it, so that a reader or
    /// a crash finds the old file or the new one, never part of one.
    public static func writeWhole(_ bytes: [UInt8], to path: String) throws(SystemError) {
        let temporary = "\(path).new-\(getpid())"
        let output = try OutputFile(path: temporary, mode: .truncate)
        let written = output.write(bytes)
        output.close()
        guard written else {
            _ = unlink(temporary)
            throw SystemError("write", path: temporary)
        }
        try Self.replace(path, with: temporary)
    }

    /// Asks the disk to keep `path` and the folder that names it (`fsync(2)` on both), so that they outlive a power
    /// loss. It can take seconds on a busy disk: callers that must answer quickly call it off their own path.
    public static func flushToDisk(_ path: String) {
        let folder = Self.folder(of: path)
        for target in [path, folder.isEmpty ? "." : folder] {
            let descriptor = open(target, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            _ = fsync(descriptor)
            _ = close(descriptor)
        }
    }

    /// Removes a file; false when it was not there or could not be removed.
    @discardableResult public static func remove(_ path: String) -> Bool { unlink(path) == 0 }

    /// Creates `folder` and its parents with `permissions` (existing folders are left as they are).
    public static func createFolders(_ folder: String, permissions: UInt32 = 0o755) throws(SystemError) {
        guard !folder.isEmpty else { return }
        var current = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            current += "/" + part
            if mkdir(current, mode_t(permissions)) != 0 && errno != EEXIST {
                throw SystemError("create folder", path: current)
            }
        }
    }
}

/// An open file descriptor this object owns: closed on `close()` or when the object goes.
public class OwnedDescriptor: @unchecked Sendable {
    /// The path it was opened with (or a name for it).
    public let path: String
    var descriptor: Int32
    /// The descriptor while open (-1 once closed): to hand to a child as a standard stream, never to close.
    public var openDescriptor: Int32 { self.descriptor }

    /// Wraps a descriptor this object now owns.
    public init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { self.close() }

    /// Closes the descriptor (again is harmless).
    public func close() {
        if self.descriptor >= 0 { systemClose(self.descriptor) }
        self.descriptor = -1
    }
}

/// A file written with plain `write(2)`: no buffering in the process, so what was written survives a crash.
public final class OutputFile: OwnedDescriptor, @unchecked Sendable {
    /// How the file is opened.
    public enum Mode: Sendable {
        /// Created or emptied.
        case truncate
        /// Created or appended to.
        case append
        /// Opened for writing at any offset, created when missing.
        case update
    }

    /// Opens `path`; its folder is created first when `createFolders`.
    public init(
        path: String, mode: Mode = .truncate, createFolders: Bool = true, permissions: UInt32 = 0o644
    ) throws(SystemError) {
        if createFolders { try Paths.createFolders(Paths.folder(of: path)) }
        var flags = O_WRONLY | O_CREAT | O_CLOEXEC
        switch mode {
        case .truncate: flags |= O_TRUNC
        case .append: flags |= O_APPEND
        case .update: break
        }
        let descriptor = open(path, flags, mode_t(permissions))
        guard descriptor >= 0 else { throw SystemError("open", path: path) }
        super.init(descriptor: descriptor, path: path)
    }

    /// Wraps a descriptor this object now owns (closing it when closed).
    public override init(descriptor: Int32, path: String) {
        super.init(descriptor: descriptor, path: path)
    }

    /// Writes all of `bytes` at the current offset (or the end, when appending). False when the write failed.
    @discardableResult
    public func write<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        let written = bytes.withContiguousStorageIfAvailable { self.writeAll(UnsafeRawBufferPointer($0), at: nil) }
        return written ?? Array(bytes).withUnsafeBytes { self.writeAll($0, at: nil) }
    }

    /// For a pipe: sets how many bytes it holds before a write blocks (Linux rounds up to a page); the size set, or
    /// nil when it cannot be set.
    @discardableResult
    public func setPipeCapacity(_ bytes: Int) -> Int? {
        #if os(Linux)
        let size = fcntl(self.descriptor, 1031, Int32(bytes))  // F_SETPIPE_SZ
        return size > 0 ? Int(size) : nil
        #else
        return nil
        #endif
    }

    /// Writes `text` as UTF-8.
    @discardableResult
    public func write(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { self.writeAll(UnsafeRawBufferPointer($0), at: nil) }
    }

    /// Writes all of `bytes` at `offset`, leaving the file offset as it was.
    @discardableResult
    public func write<Bytes: Collection>(_ bytes: Bytes, at offset: Int) -> Bool where Bytes.Element == UInt8 {
        Array(bytes).withUnsafeBytes { self.writeAll($0, at: offset) }
    }

    private func writeAll(_ buffer: UnsafeRawBufferPointer, at offset: Int?) -> Bool {
        guard self.descriptor >= 0 else { return false }
        var done = 0
        while done < buffer.count {
            let pointer = buffer.baseAddress! + done
            let count =
                if let offset {
                    pwrite(self.descriptor, pointer, buffer.count - done, off_t(offset + done))
                } else {
                    systemWrite(self.descriptor, pointer, buffer.count - done)
                }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            done += count
        }
        return true
    }

}

/// A file read in chunks with plain `read(2)`.
public final class InputFile: OwnedDescriptor, @unchecked Sendable {
    /// Opens `path` for reading.
    public init(path: String) throws(SystemError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SystemError("open", path: path) }
        super.init(descriptor: descriptor, path: path)
    }

    /// Wraps a descriptor this object now owns (closing it when closed).
    public override init(descriptor: Int32, path: String) {
        super.init(descriptor: descriptor, path: path)
    }

    /// The whole content of the file at `path`.
    public static func contents(of path: String) throws(SystemError) -> [UInt8] {
        let file = try InputFile(path: path)
        defer { file.close() }
        return try file.readToEnd()
    }

    /// Up to `count` bytes; empty at the end of the file.
    public func read(upTo count: Int) throws(SystemError) -> [UInt8] {
        guard self.descriptor >= 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        while true {
            let got = buffer.withUnsafeMutableBytes { systemRead(self.descriptor, $0.baseAddress, count) }
            if got >= 0 {
                buffer.removeLast(count - got)
                return buffer
            }
            if errno != EINTR { throw SystemError("read", path: self.path) }
        }
    }

    /// `count` bytes, or fewer only when the file ends first.
    public func read(exactly count: Int) throws(SystemError) -> [UInt8] {
        var all: [UInt8] = []
        all.reserveCapacity(count)
        while all.count < count {
            let chunk = try self.read(upTo: min(count - all.count, 1 << 20))
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    /// The rest of the file.
    public func readToEnd() throws(SystemError) -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = try self.read(upTo: 65_536)
            if chunk.isEmpty { return all }
            all += chunk
        }
    }
}

/// The process's standard output and error, written unbuffered and whole.
public enum StandardStreams {
    private static let output = OutputFile(descriptor: 1, path: "standard output")
    private static let error = OutputFile(descriptor: 2, path: "standard error")

    /// Writes `text` to standard output.
    public static func writeOutput(_ text: String) { Self.output.write(text) }

    /// Writes `text` to standard error.
    public static func writeError(_ text: String) { Self.error.write(text) }
}

private func systemWrite(_ descriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, pointer, count)
}

private func systemRead(_ descriptor: Int32, _ pointer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, pointer, count)
}

private func systemClose(_ descriptor: Int32) {
    _ = close(descriptor)
}
