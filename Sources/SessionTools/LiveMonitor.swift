public import Bus
import NavCore

/// `monitor --live`: what the bus says, as one screen redrawn in place: each stage's health, message rate, silence and
/// status; the bus's losses; the walker's position, progress to the next waypoint, deviation, the cue playing with the
/// device playing it, and the latest turn event in words. A pure state machine: events in (with their receive time),
/// lines out.
public struct LiveMonitor: Sendable {
    private struct StageView: Sendable {
        var health = "–"
        var status = ""
        var alive = false
        var lastHeard: Double?
        /// Receive times of recent messages, for the rate [seconds, monotonic].
        var recent: [Double] = []
    }

    private var stages: [String: StageView] = [:]
    private var order: [String]
    private var smoothed: SmoothedFix?
    private var progress: RouteProgress?
    private var cue: HapticCue?
    /// The latest turn event, and who sent it (the route stage, or the sink that rendered it).
    private var turn: (event: TurnEvent, stage: String)?
    private var device: String?
    private var routes: [UInt32: Route] = [:]
    /// The outputs' stop in force, per sink: what its `control` message said (who and why), or, for a stop made
    /// before this monitor started, its status (`stopped` counter 1); absent while it guides.
    private var stops: [String: String] = [:]
    /// The window the rates are measured over [seconds].
    public var rateWindowSeconds = 2.0

    /// Starts with the stages a config names (in its order); others appear as they are heard.
    public init(stages: [String]) {
        self.order = stages
        for stage in stages { self.stages[stage] = StageView() }
    }

    /// Takes one event received at `now` [seconds, monotonic].
    public mutating func update(_ event: BusEvent, now: Double) {
        switch event {
        case let .message(received):
            let name = received.header.stage
            if self.stages[name] == nil {
                self.order.append(name)
                self.stages[name] = StageView()
            }
            self.stages[name]?.alive = true
            self.stages[name]?.lastHeard = now
            self.stages[name]?.recent.append(now)
            self.stages[name]?.recent.removeAll { $0 < now - self.rateWindowSeconds }
            switch received.message {
            case let .status(status):
                if let stopped = status.counters.first(where: { $0.name == "stopped" }) {
                    if stopped.value == 0 {
                        self.stops[name] = nil
                    } else if self.stops[name] == nil {
                        self.stops[name] =
                            status.message.hasPrefix("stopped ") ? String(status.message.dropFirst(8)) : "at \(name)"
                    }
                }
                self.stages[name]?.health = status.health.name
                self.stages[name]?.status = status.message
                if status.message.hasPrefix("output: ") { self.device = String(status.message.dropFirst(8)) }
                if status.message.hasPrefix("guiding on ") { self.device = String(status.message.dropFirst(11)) }
            case let .smoothed(fix): self.smoothed = fix
            case let .progress(progress): self.progress = progress
            case let .route(route): self.routes[route.routeID] = route
            case let .cue(cue) where cue.kind != .calibration: self.cue = cue
            case let .turn(event): self.turn = (event, name)
            case let .control(event) where event.command != .mark:
                self.stops[name] =
                    event.stopped ? "by \(event.sender)" + (event.text.isEmpty ? "" : ": \(event.text)") : nil
            default: break
            }
        case let .publisherUp(_, stage):
            if self.stages[stage] == nil, !stage.isEmpty {
                self.order.append(stage)
                self.stages[stage] = StageView()
            }
            self.stages[stage]?.alive = true
            self.stages[stage]?.lastHeard = now
        case let .publisherLost(_, stage, _):
            self.stages[stage]?.alive = false
        }
    }

    /// The screen at `now`, one line each; `counters` are the monitor's own bus counters.
    public func render(now: Double, title: String, counters: SubscriberCounters) -> [String] {
        func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
        }
        var lines = [title, ""]
        // An alert the experimenter cannot miss: every output stopped, and by whom (the condition lock says why).
        if let (_, stop) = self.stops.min(by: { $0.key < $1.key }) {
            lines[1] = "!!! EVERY OUTPUT STOPPED \(stop); `r` resumes"
        }
        lines.append(pad("STAGE", 12) + pad("HEALTH", 12) + pad("MSG/S", 8) + pad("SILENT", 9) + "STATUS")
        for name in self.order {
            guard let stage = self.stages[name] else { continue }
            let rate = Double(stage.recent.filter { $0 >= now - self.rateWindowSeconds }.count) / self.rateWindowSeconds
            let silence = stage.lastHeard.map { decimal(now - $0, 1) + " s" } ?? "never"
            let health = stage.alive ? stage.health : (stage.lastHeard == nil ? "waiting" : "LOST")
            lines.append(pad(name, 12) + pad(health, 12) + pad(decimal(rate, 1), 8) + pad(silence, 9) + stage.status)
        }
        lines.append(
            "bus: \(counters.received) received, \(counters.sequenceGaps) missing in sequence, "
                + "\(counters.droppedTotal) bad frames dropped, \(counters.queueOverflows) queue overflows")
        lines.append("")
        if let fix = self.smoothed {
            lines.append(
                "position   \(decimal(fix.latitude, 6)), \(decimal(fix.longitude, 6))  ±\(decimal(fix.horizontalAccuracyMeters, 1)) m  \(decimal(fix.speedMetersPerSecond, 1)) m/s"
            )
        } else {
            lines.append("position   –")
        }
        if let progress = self.progress {
            let total = self.routes[progress.routeID]?.waypoints.count
            lines.append(
                "route      \(progress.state.name)  next waypoint \(progress.nextWaypointIndex)\(total.map { "/\($0)" } ?? "") in \(decimal(progress.distanceToNextMeters, 1)) m at \(decimal(progress.bearingToNextDegrees, 0))°  remaining \(decimal(progress.distanceRemainingMeters, 0)) m  cross-track \(decimal(progress.crossTrackMeters, 1)) m"
            )
        } else {
            lines.append("route      –")
        }
        if let cue = self.cue {
            lines.append("deviation  \(decimal(cue.deviationDegrees, 0))°")
            lines.append(
                "cue        \(cue.kind.name) \(decimal(cue.intensity, 2))  on \(self.device ?? "–")")
        } else {
            lines.append("deviation  –")
            lines.append("cue        –  on \(self.device ?? "–")")
        }
        if let (event, stage) = self.turn {
            lines.append(
                "turn       \(TurnWords.text(event))  (\(event.phase.name), route \(event.routeID) manoeuvre \(event.manoeuvre), from \(stage))"
            )
        } else {
            lines.append("turn       –")
        }
        return lines
    }
}
