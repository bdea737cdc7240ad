#if canImport(Glibc)
import Glibc
#endif

/// The system's two clocks as seconds: the wall clock (UTC, may jump) and the monotonic clock (never jumps).
public enum SystemClock {
    /// Seconds since 1970-01-01T00:00:00Z, from the wall clock.
    public static func wallSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Nanoseconds since 1970-01-01T00:00:00Z, from the wall clock.
    public static func wallNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Nanoseconds on the monotonic clock (since an arbitrary start): for timeouts, never for message times.
    public static func monotonicNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Seconds on the monotonic clock (since an arbitrary start).
    public static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
