public import NavCore
/// A filter that turns raw fixes into smoothed ones (the smoother stage's swappable part).
public protocol SmoothingFilter: Sendable {
    /// The id that configs use to choose this plugin, for example "kalman".
    static var id: String { get }
    /// Takes one fix; returns the estimate, or why the fix was not used.
    mutating func update(with fix: LocationFix) -> Result<SmoothedFix, FixRejection>
    /// Forgets the track: the next fix starts a new one (its stream's time line started again).
    mutating func reset()
    /// What the filter has counted, for the stage's status reports.
    var statusCounters: [StatusCounter] { get }
}

extension KalmanSmoother: SmoothingFilter {
    public static let id = "kalman"

    public var statusCounters: [StatusCounter] {
        [
            StatusCounter(name: "accepted", value: UInt64(self.counters.accepted)),
            StatusCounter(name: "resets", value: UInt64(self.counters.resets)),
        ]
            + FixRejection.allCases.map {
                StatusCounter(name: "rejected.\($0.rawValue)", value: UInt64(self.counters.rejected[$0, default: 0]))
            }
    }
}
