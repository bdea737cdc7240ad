public import NavCore
/// Something that renders haptic cues: a band, a speaker, a console (the haptic sink's swappable part).
///
/// No requirement has a default: devices are actors, and a default in a protocol extension would win over an
/// actor's own method when called on the concrete type from outside it.
public protocol OutputDevice: Sendable {
    /// The id that configs use to choose this plugin, for example "band".
    static var id: String { get }
    /// A short name for logs and status, for example "band".
    var name: String { get }
    /// Keeps the device going (connects, reconnects, reads acknowledgements) until cancelled.
    func run() async throws
    /// True when the device can render now: connected and acknowledging.
    func isAvailable() async -> Bool
    /// Renders a cue; a silent cue stops whatever plays.
    func render(_ cue: HapticCue) async throws
    /// Stops every motor and sound at once.
    func stopAll() async throws
    /// Says or shows a short prompt ("Recalculating route").
    func announce(_ text: String) async throws
    /// Renders a turn event in the device's own way: the band as pulse patterns by side and count, the speaker in
    /// words (``TurnWords``), the console and the AR client as text.
    func renderTurn(_ event: TurnEvent) async throws
    /// What the device did, in one line, for the status and the demo's summary.
    func summary() async -> String
    /// Sees the route, progress and position messages the sink receives (for devices that place things in
    /// space, like ``ar``); most devices ignore them.
    func observe(_ message: BusMessage) async
    /// How long preflight gives the device, once started, to answer [seconds]: a Bluetooth band is looked for first.
    var answerWithinSeconds: Double { get }
}

extension OutputDevice {
    public var answerWithinSeconds: Double { 3 }
}

/// What the haptic sink reads from the bus.
public enum SinkInput: Sendable {
    /// A raw compass heading from the source.
    case heading(HeadingSample)
    /// The phone's tilt.
    case attitude(Attitude)
    /// Where to steer, from the route controller.
    case target(GuidanceTarget)
    /// Progress along the route (for spoken events: rerouting, arrived).
    case progress(RouteProgress)
    /// A turn event from the route controller, to render on the active device.
    case turn(TurnEvent)
    /// A publisher went silent (the transport noticed its heartbeats stop).
    case publisherLost(stage: String)
    /// The route, or the walker's smoothed position: passed on to devices that place waypoints in space.
    case context(BusMessage)
}
