#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain OS threads for the loops that block in the kernel (socket reads, timers), without Foundation's `Thread`.
public enum SystemThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts `body` on a new detached thread; `name` says in a failure which one.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(run: body)).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let result = pthread_create(
            &thread, nil,
            { context in
                let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
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

    /// Blocks the calling thread for `seconds` (restarting after signals).
    public static func sleep(seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
