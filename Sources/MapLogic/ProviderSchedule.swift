import NavCore
/// The order in which a route controller asks its providers (an engine first, the offline router last, say), and
/// which it leaves alone for a while after they failed.
///
/// A provider that failed is asked again after a backoff that doubles with each failure in a row, up to a limit;
/// until then it goes to the end of the list rather than off it, so that a request is never refused while any
/// provider might answer. Time is given, never read: the route controller passes the receive time of the fix
/// that asked (monotonic seconds), so that a test can drive it.
public struct ProviderSchedule: Sendable, Equatable {
    /// Backoff settings.
    public struct Options: Sendable, Equatable {
        /// The wait after a first failure [seconds, ≥ 0].
        public var backoffSeconds: Double
        /// The longest wait, however many failures in a row [seconds, ≥ backoffSeconds].
        public var maximumBackoffSeconds: Double

        /// Options with the defaults of a route stage: 5 s, doubling up to 5 minutes.
        public init(backoffSeconds: Double = 5, maximumBackoffSeconds: Double = 300) {
            self.backoffSeconds = max(0, backoffSeconds)
            self.maximumBackoffSeconds = max(self.backoffSeconds, maximumBackoffSeconds)
        }
    }

    /// The providers' names, in the configured order.
    public let names: [String]
    /// Backoff settings.
    public let options: Options
    /// Failures in a row, per provider [count].
    public private(set) var failuresInARow: [Int]
    /// When each provider may be asked first again [seconds, the caller's time base].
    public private(set) var retryAt: [Double]

    /// A schedule for providers in this order.
    public init(names: [String], options: Options = Options()) {
        self.names = names
        self.options = options
        self.failuresInARow = Array(repeating: 0, count: names.count)
        self.retryAt = Array(repeating: -.infinity, count: names.count)
    }

    /// Provider indices in the order to ask them at `time`: those not backing off, in the configured order, then
    /// those backing off, in the configured order.
    public func order(at time: Double) -> [Int] {
        let indices = Array(self.names.indices)
        return indices.filter { self.retryAt[$0] <= time } + indices.filter { self.retryAt[$0] > time }
    }

    /// Whether the provider is backing off at `time`.
    public func isBackingOff(_ index: Int, at time: Double) -> Bool {
        self.retryAt[index] > time
    }

    /// Notes a failure (an error or a timeout) at `time`; returns the backoff it starts [seconds].
    @discardableResult
    public mutating func failed(_ index: Int, at time: Double) -> Double {
        self.failuresInARow[index] += 1
        let doublings = Double(min(self.failuresInARow[index] - 1, 30))
        let wait = min(self.options.maximumBackoffSeconds, self.options.backoffSeconds * _pow(2, doublings))
        self.retryAt[index] = time + wait
        return wait
    }

    /// Notes an answer: the provider is first in its place again.
    public mutating func succeeded(_ index: Int) {
        self.failuresInARow[index] = 0
        self.retryAt[index] = -.infinity
    }
}
