#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain OS threads for the loops that block in the kernel (socket reads, timers), without Foundation's `Thread`.
public enum SystemThread {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new detached thread named `name` (its first 15 bytes, as `ps -L`, `top -H` and `perf` show
    /// it; without a name a thread shows its creator's, a Swift pool thread's as often as not); `name` also says in a
    /// failure which thread it was.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let result = pthread_create(
            &thread, nil,
            { context in
                let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
                SystemThread.nameCurrentThread(body.name)
                body.run()
                return nil
            }, context)
        guard result == 0 else {
            // No thread to run it on (out of threads): run nothing, and say so loudly rather than hang silently.
            Unmanaged<Body>.fromOpaque(context).release()
            fatalError("pthread_create failed (\(result)) for thread '\(name)'")
        }
        #if canImport(Glibc)
        pthread_detach(thread)
        #else
        if let thread { pthread_detach(thread) }
        #endif
    }

    /// Runs blocking work (a child process to its end, a request that waits for its reply) on a new thread named `name`
    /// and returns what it returns, or throws what it throws: the cooperative pool's few threads, which every task of
    /// the process needs, are not held meanwhile. The work is not cancelled with the task: give it its own bound.
    public static func run<T: Sendable, E: Error>(
        name: String, _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            self.start(name: name) {
                do throws(E) { continuation.resume(returning: .success(try body())) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Blocks the calling thread for `seconds` (restarting after signals).
    public static func sleep(seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// The calling thread's name as `ps -L` and `perf` show it (Linux: its `comm`, without the line's end); empty where
    /// it cannot be read.
    public static var currentName: String {
        #if os(Linux)
        guard let comm = try? InputFile.contents(of: "/proc/thread-self/comm") else { return "" }
        return String(decoding: comm.last == UInt8(ascii: "\n") ? comm.dropLast() : comm[...], as: UTF8.self)
        #else
        return ""
        #endif
    }

    /// Names the calling thread (Linux: its `comm`, at most 15 bytes); a name that cannot be set is left as it was.
    static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let bytes = Array(name.utf8.prefix(15))
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        #endif
    }
}
