/// A source of bus messages: a simulated walker, a log replay, a live receiver.
///
/// The stage calls ``run(emit:)`` once; the plugin emits what it produces and returns at the end of
/// its input (a finite log), or runs until its task is cancelled (a live source).
public protocol MessageSource: Sendable {
    /// The id that configs use to choose this plugin, for example "sim".
    static var id: String { get }
    /// Produces messages until the input ends or the task is cancelled.
    func run(emit: @Sendable (BusMessage) async throws -> Void) async throws
    /// True for live inputs (a receiver, a serial device), whose silence the stage reports as stale.
    var isLive: Bool { get }
    /// What the source has counted (lines read, records skipped), for the stage's status reports.
    func statusCounters() async -> [StatusCounter]
    /// How long between two messages of each kind, at the source's pace [seconds]; empty where it is not known
    /// before running (a log played as fast as possible). `hapticnav config check` holds stale limits against it.
    var nominalPeriods: [BusMessage.Kind: Double] { get }
    /// What is wrong with the input now, for the stage's status ("compass disturbed: …", "phone unreachable: …");
    /// nil while all is well.
    func condition() async -> SourceCondition?
}

/// A live source's own word on its input, carried into the stage's status.
public struct SourceCondition: Sendable, Equatable {
    /// How the stage should report itself: `.degraded` (data flows, with a problem) or `.stale` (no data).
    public var health: StageHealth
    /// One line: what is wrong.
    public var message: String

    /// Creates a condition.
    public init(health: StageHealth, message: String) {
        self.health = health
        self.message = message
    }
}

extension MessageSource {
    public func condition() async -> SourceCondition? { nil }
    public var isLive: Bool { false }
    public var nominalPeriods: [BusMessage.Kind: Double] { [:] }
    public func statusCounters() async -> [StatusCounter] { [] }
}
