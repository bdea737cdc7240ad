public import CSpawn
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Held while a pipe is made close-on-exec and while a program is started, so that no start falls in between.
private let spawning = Mutex(0)

/// A program started with `posix_spawn`, its standard input and output optionally on pipes to this process.
public final class ChildProcess: @unchecked Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable, Equatable {
        /// `/dev/null`.
        case null
        /// A pipe to this process (`input` or `output`).
        case pipe
        /// The same as this process's.
        case inherit
        /// This descriptor of this process (one end of a socket pair, say), which the caller keeps and closes.
        case descriptor(Int32)
    }

    /// The child's process id.
    public let pid: Int32
    /// The write end of the child's standard input, when it is a pipe.
    public let input: OutputFile?
    /// The read end of the child's standard output, when it is a pipe.
    public let output: InputFile?
    private var exitStatus: Int32?

    /// Starts `executable` (a path) with `arguments` (without argv[0]).
    public init(
        executable: String, arguments: [String], input: Stream = .null, output: Stream = .null,
        error: Stream = .null
    ) throws(SystemError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var inputPipe: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        if input == .pipe {
            guard Self.makePipe(&inputPipe) else { throw SystemError("create a pipe for", path: executable) }
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, inputPipe[1])
        } else if case let .descriptor(descriptor) = input {
            posix_spawn_file_actions_adddup2(&actions, descriptor, 0)
        } else if input == .null {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if output == .pipe {
            guard Self.makePipe(&outputPipe) else { throw SystemError("create a pipe for", path: executable) }
            posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
            posix_spawn_file_actions_addclose(&actions, outputPipe[0])
        } else if case let .descriptor(descriptor) = output {
            posix_spawn_file_actions_adddup2(&actions, descriptor, 1)
        } else if output == .null {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if error == .null {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        } else if case let .descriptor(descriptor) = error {
            posix_spawn_file_actions_adddup2(&actions, descriptor, 2)
        }
        // Nothing else this process holds reaches the program: a descriptor opened without close-on-exec (by a
        // library, say) would otherwise stay open in it for its whole life.
        Self.closeInheritedDescriptors(&actions)
        // The program starts with no signal blocked and the usual ones at their defaults, whatever this thread blocks
        // or this process ignores (a thread of a Swift process may block SIGTERM, which a child would inherit: it
        // could then never be asked to stop).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        Self.startWithDefaultSignals(&attributes)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let result = spawning.withLock { _ in posix_spawn(&pid, executable, &actions, &attributes, argv, environ) }
        for descriptor in [inputPipe[0], outputPipe[1]] where descriptor >= 0 { _ = close(descriptor) }
        guard result == 0 else {
            for descriptor in [inputPipe[1], outputPipe[0]] where descriptor >= 0 { _ = close(descriptor) }
            throw SystemError("start", path: executable, code: result)
        }
        self.pid = pid
        if inputPipe[1] >= 0 {
            self.input = OutputFile(descriptor: inputPipe[1], path: "\(executable) standard input")
        } else {
            self.input = nil
        }
        if outputPipe[0] >= 0 {
            self.output = InputFile(descriptor: outputPipe[0], path: "\(executable) standard output")
        } else {
            self.output = nil
        }
    }

    /// Sets `attributes` so that a program starts with no signal blocked and the usual ones (SIGTERM, SIGINT, SIGHUP,
    /// SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD) at their defaults, whatever the starting thread blocks or this
    /// process ignores.
    public static func startWithDefaultSignals(_ attributes: inout posix_spawnattr_t) {
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD] {
            sigaddset(&defaults, number)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    }

    /// Adds to `actions` the closing of every descriptor above standard error in the started program: it inherits
    /// its standard streams only. A descriptor of this process opened without close-on-exec (by a library, say)
    /// would otherwise stay open in the program for its whole life, and a peer waiting for its end never see it.
    static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        _ = hn_spawn_close_from(&actions, 3)
    }

    /// A pipe whose two ends are close-on-exec before any other thread can start a program: a program started
    /// meanwhile must not inherit either end (it would hold the pipe open, and the reader would never see its end).
    /// The child's own end is dup2'd to its standard stream, which clears the flag there.
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        spawning.withLock { _ in
            guard pipe(&ends) == 0 else { return false }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            return true
        }
    }

    /// Waits for the child to end: its exit code, or 128 + the signal that ended it.
    @discardableResult
    public func wait() -> Int32 {
        if let status = self.exitStatus { return status }
        var status: Int32 = 0
        while waitpid(self.pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        self.exitStatus = code
        return code
    }

    /// True until the child has ended (checked without waiting).
    public var isRunning: Bool {
        guard self.exitStatus == nil else { return false }
        var status: Int32 = 0
        guard waitpid(self.pid, &status, WNOHANG) == self.pid else { return true }
        self.exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return false
    }

    /// Sends `signal` to the child.
    public func signal(_ signal: Int32) {
        if self.exitStatus == nil { _ = kill(self.pid, signal) }
    }
}

/// Whether `path` names a file this process may execute.
public func isExecutable(_ path: String) -> Bool {
    access(path, X_OK) == 0
}

/// The first executable called `name` in the directories of `PATH` (or `name` itself when it holds a slash), or nil.
public func executableOnPath(_ name: String) -> String? {
    if name.contains("/") { return isExecutable(name) ? name : nil }
    let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in path.split(separator: ":") where !directory.isEmpty {
        let candidate = "\(directory)/\(name)"
        if isExecutable(candidate) { return candidate }
    }
    return nil
}

/// A connected pair of stream sockets, both close-on-exec (a program started meanwhile inherits neither; give one
/// to a child as a standard stream with ``ChildProcess/Stream/descriptor(_:)``), or nil when the system refuses.
public func streamSocketPair() -> (Int32, Int32)? {
    var ends: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
        return nil
    }
    return (ends[0], ends[1])
}
