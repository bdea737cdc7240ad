import SystemIO

/// The wall clock, for the edges only (status reports, receive stamps). Core never reads it:
/// their time arrives inside the messages.
public enum WallClock {
    /// Now [seconds since 1970-01-01T00:00:00Z].
    public static func nowSeconds() -> Double { SystemClock.wallSeconds() }
}

/// The monotonic clock that receive times are on: it never jumps when the wall clock is set.
public enum MonotonicClock {
    /// Now [seconds since an arbitrary start, CLOCK_MONOTONIC].
    public static func nowSeconds() -> Double { SystemClock.monotonicSeconds() }
}
