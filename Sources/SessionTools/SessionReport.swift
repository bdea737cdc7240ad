public import NavCore
import Stages
public import MapLogic
import StageHaptic

/// `hapticnav report`: one self-contained HTML page about a session, readable without a network: the summary (distance,
/// time against the route's walking time, time off course, cues a minute, reroutes, fail-safe events, turn events), an
/// SVG map of the routes with the raw and smoothed tracks, waypoints, reroutes and where the walker was off course, a
/// timeline of deviation, cue side and intensity, device switches, fail-safe events and turn events, and the turn
/// events in words.
public enum SessionReport {
    /// A turn event of the session, once however often it was sent (the route stage repeats each; a sink republishes
    /// those it rendered, equal in every field).
    public struct Turn: Sendable, Equatable {
        /// The event.
        public var event: TurnEvent
        /// A haptic sink (a stage that sent cues) republished it, so rendered it; nil when the session holds no cues
        /// from any stage, so cannot tell.
        public var rendered: Bool?
    }

    /// A turn event's fields as a dictionary key: equal keys, equal events.
    private struct TurnKey: Hashable {
        var timeBits: UInt64
        var routeID: UInt32
        var manoeuvre: UInt32
        var phase: UInt8
        var turnBits: UInt64
        var junctionsBefore: UInt32
        var distanceBits: UInt64
        var bearingBits: UInt64
        var street: String

        init(_ event: TurnEvent) {
            self.timeBits = event.timeSeconds.bitPattern
            self.routeID = event.routeID
            self.manoeuvre = event.manoeuvre
            self.phase = event.phase.rawValue
            self.turnBits = event.turnDegrees.bitPattern
            self.junctionsBefore = event.junctionsBefore
            self.distanceBits = event.distanceMeters.bitPattern
            self.bearingBits = event.outgoingBearingDegrees.bitPattern
            self.street = event.street
        }
    }

    /// The session's turn events in the order they were first recorded, each once, with whether a sink rendered it.
    public static func turns(_ session: SessionExport.Session) -> [Turn] {
        var sinks = Set<String>()
        for record in session.records {
            if case .cue = record.message { sinks.insert(record.stage) }
        }
        var turns: [Turn] = []
        var index: [TurnKey: Int] = [:]
        for record in session.records {
            guard case let .turn(event) = record.message else { continue }
            let key = TurnKey(event)
            let fromSink = sinks.contains(record.stage)
            if let at = index[key] {
                if fromSink { turns[at].rendered = true }
            } else {
                index[key] = turns.count
                turns.append(Turn(event: event, rendered: sinks.isEmpty ? nil : fromSink))
            }
        }
        return turns
    }

    /// The figures of a session.
    public struct Summary: Sendable, Equatable {
        /// Length of the smoothed track [metres].
        public var distanceMeters = 0.0
        /// From the first fix to the last [seconds of measurement time].
        public var durationSeconds = 0.0
        /// The first route's walking time: its length at 1.3 m/s [seconds]; nil without a route.
        public var routeWalkingSeconds: Double?
        /// The first route's length [metres].
        public var routeLengthMeters: Double?
        /// Time the route controller reported the walker off the route or going the wrong way [seconds].
        public var offCourseSeconds = 0.0
        /// Turn cues that began (left, right, around after anything else) [count].
        public var turnCueOnsets = 0
        /// Routes after the first [count].
        public var reroutes = 0
        /// Signal-lost cues: the sink's input went stale and it stopped every motor [count].
        public var failSafeEvents = 0
        /// Changes of output device [count].
        public var deviceSwitches = 0
        /// The route controller said the walker arrived.
        public var arrived = false
        /// The experimenter's stops [count].
        public var experimenterStops = 0
        /// Stops the condition lock made (the condition's device lost) [count].
        public var conditionLockStops = 0
        /// Turn-around cues that began: the walker going the wrong way [count].
        public var wrongWayCues = 0
        /// The experimenter's marks' texts, in order.
        public var marks: [String] = []
        /// Turn events announcing a manoeuvre, each once however often it was sent [count].
        public var turnAnnouncements = 0
        /// Turn events saying *now* at a manoeuvre's junction [count].
        public var turnNows = 0
        /// Turn events saying *straight on* at a junction passed through [count].
        public var turnStraightOns = 0
        /// Turn events a haptic sink rendered [count]; nil when the session holds no sink's messages (no cues).
        public var turnsRendered: Int?

        /// Turn-cue onsets a minute of walking [1/min].
        public var cueOnsetsPerMinute: Double {
            self.durationSeconds > 0 ? Double(self.turnCueOnsets) / (self.durationSeconds / 60) : 0
        }
    }

    /// A point in time on the timeline, in the session's measurement time [seconds since 1970-01-01T00:00:00Z].
    struct Event {
        var time: Double
        var label: String
    }

    /// The walk's figures.
    public static func summary(_ session: SessionExport.Session) -> Summary {
        var summary = Summary()
        let smoothed = session.smoothed.filter { $0.latitude.isFinite && $0.longitude.isFinite }
        for (a, b) in zip(smoothed, smoothed.dropFirst()) where !b.reset {
            summary.distanceMeters += FlatProjection.distance(
                Coordinate(latitude: a.latitude, longitude: a.longitude),
                Coordinate(latitude: b.latitude, longitude: b.longitude))
        }
        let times = session.fixes.map(\.timeSeconds) + smoothed.map(\.timeSeconds)
        if let first = times.min(), let last = times.max() { summary.durationSeconds = last - first }
        var offSince: Double?
        var routeIDs: [UInt32] = []
        var previousCue: CueKind = .silent
        for record in session.records {
            switch record.message {
            case let .progress(progress):
                let off = progress.state == .offRoute || progress.state == .wrongWay
                if off, offSince == nil { offSince = progress.timeSeconds }
                if !off, let since = offSince {
                    summary.offCourseSeconds += max(0, progress.timeSeconds - since)
                    offSince = nil
                }
                if progress.state == .arrived { summary.arrived = true }
            case let .route(route):
                if !routeIDs.contains(route.routeID) { routeIDs.append(route.routeID) }
            case let .cue(cue):
                let turn = cue.kind == .turnLeft || cue.kind == .turnRight || cue.kind == .turnAround
                if turn, cue.kind != previousCue { summary.turnCueOnsets += 1 }
                if cue.kind == .turnAround, cue.kind != previousCue { summary.wrongWayCues += 1 }
                if cue.kind == .signalLost { summary.failSafeEvents += 1 }
                previousCue = cue.kind
            case let .status(status) where status.message.hasPrefix("output: "):
                summary.deviceSwitches += 1
            case let .control(event):
                if event.command == .stop {
                    if event.sender == StopState.conditionLockSender {
                        summary.conditionLockStops += 1
                    } else {
                        summary.experimenterStops += 1
                    }
                }
                if event.command == .mark { summary.marks.append(event.text) }
            default: break
            }
        }
        if let since = offSince, let last = times.max() { summary.offCourseSeconds += max(0, last - since) }
        summary.reroutes = max(0, routeIDs.count - 1)
        if let first = session.routes.first {
            summary.routeLengthMeters = first.lengthMeters
            // At 1.3 m/s, the walking pace of the evaluations: the route controller's first ETA rests on a speed
            // measured over the first few fixes, from a standing start, and varies too much to compare trials by.
            summary.routeWalkingSeconds = first.lengthMeters / 1.3
        }
        // The first output choice is a start, not a switch.
        summary.deviceSwitches = max(0, summary.deviceSwitches - 1)
        let turns = self.turns(session)
        summary.turnAnnouncements = turns.filter { $0.event.phase == .announce }.count
        summary.turnNows = turns.filter { $0.event.phase == .now }.count
        summary.turnStraightOns = turns.filter { $0.event.phase == .straightOn }.count
        if !session.cues.isEmpty { summary.turnsRendered = turns.filter { $0.rendered == true }.count }
        return summary
    }

    /// The page.
    public static func html(_ session: SessionExport.Session, title: String, ways: WalkingGraph? = nil) -> String {
        let summary = self.summary(session)
        let map = MapDrawing(session: session, ways: ways)
        let timeline = self.timeline(session)
        func minutes(_ seconds: Double) -> String {
            let total = Int(seconds.rounded())
            return "\(total / 60) min \(total % 60) s"
        }
        var rows: [(String, String)] = [
            ("Distance walked", "\(decimal(summary.distanceMeters, 0)) m"),
            ("Time", minutes(summary.durationSeconds)),
        ]
        if let walking = summary.routeWalkingSeconds, let length = summary.routeLengthMeters {
            rows.append(
                (
                    "Route's walking time",
                    "\(minutes(walking)) for \(decimal(length, 0)) m; time taken \(walking > 0 ? decimal(summary.durationSeconds / walking, 2) : "–") ×"
                ))
        }
        rows += [
            ("Time off course", minutes(summary.offCourseSeconds)),
            ("Turn cues a minute", decimal(summary.cueOnsetsPerMinute, 1) + " (\(summary.turnCueOnsets) onsets)"),
            ("Reroutes", "\(summary.reroutes)"),
            ("Fail-safe events (signal lost)", "\(summary.failSafeEvents)"),
            ("Output device switches", "\(summary.deviceSwitches)"),
            ("Arrived", summary.arrived ? "yes" : "no"),
            ("Experimenter's stops", "\(summary.experimenterStops)"),
        ]
        let turnCount = summary.turnAnnouncements + summary.turnNows + summary.turnStraightOns
        rows.append(
            (
                "Turn events",
                turnCount == 0
                    ? "none"
                    : "\(summary.turnAnnouncements) announcement\(summary.turnAnnouncements == 1 ? "" : "s"), \(summary.turnNows) now, \(summary.turnStraightOns) straight on"
                        + (summary.turnsRendered.map { "; \($0) of \(turnCount) rendered by the sink" } ?? "")
            ))
        if !summary.marks.isEmpty {
            rows.append(("Marks", summary.marks.map { "“\($0)”" }.joined(separator: ", ")))
        }
        if session.badLines > 0 { rows.append(("Records that could not be read", "\(session.badLines)")) }
        if !session.cutFiles.isEmpty {
            rows.append(("Parts not closed (recorder stopped first)", "\(session.cutFiles.count)"))
        }
        let table = rows.map { "<tr><th>\(xmlEscaped($0.0))</th><td>\(xmlEscaped($0.1))</td></tr>" }.joined(
            separator: "\n")
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(xmlEscaped(title))</title>
            <style>
            body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
            h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
            table { border-collapse: collapse; } th, td { text-align: left; padding: 3px 12px 3px 0; }
            th { font-weight: normal; color: #555; }
            svg { border: 1px solid #ccc; background: #fafafa; }
            .legend span { display: inline-block; margin-right: 16px; font-size: 13px; }
            .legend i { display: inline-block; width: 18px; height: 4px; margin-right: 4px; vertical-align: middle; }
            </style></head><body>
            <h1>\(xmlEscaped(title))</h1>
            <table id="summary">
            \(table)
            </table>
            <h2>Map</h2>
            <div class="legend"><span><i style="background:#d6d6d6"></i>walkable ways</span><span><i style="background:#9aa"></i>route (earlier: dashed)</span><span><i style="background:#f29c38"></i>GPS fixes</span><span><i style="background:#1f5fbf"></i>smoothed track</span><span><i style="background:#e0301e"></i>off course</span><span><i style="background:#8e44ad"></i>reroute</span><span><i style="background:#222"></i>waypoint</span></div>
            \(map.svg)
            <h2>Timeline</h2>
            <div class="legend"><span><i style="background:#1f5fbf"></i>deviation (°)</span><span><i style="background:#d9822b"></i>cue left (below) / right (above), height = intensity</span><span><i style="background:#8e44ad"></i>device switch</span><span><i style="background:#e0301e"></i>signal lost</span><span><i style="background:#127a8a"></i>turn event: ▼ announced, line now, ○ straight on (faint: not rendered)</span></div>
            \(timeline)
            \(self.turnList(session))
            </body></html>

            """
    }

    /// The map: every coordinate through one local projection, scaled to fit.
    struct MapDrawing {
        static let width = 900.0
        static let height = 640.0
        static let margin = 20.0
        let projection: FlatProjection
        let metersPerPixel: Double
        let centerEast: Double
        let centerNorth: Double
        private(set) var svg = ""

        init(session: SessionExport.Session, ways: WalkingGraph? = nil) {
            // The frame holds the smoothed track and the routes; raw fixes only when there is nothing else (a receiver's
            // wild fix, at 0° 0° say, would otherwise shrink the walk to a dot). Fixes outside are clipped.
            var points = session.smoothed.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) }
            for route in session.routes { points += route.points }
            if points.isEmpty {
                points = session.fixes.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) }
            }
            points = points.filter { $0.latitude.isFinite && $0.longitude.isFinite }
            let origin = points.first ?? Coordinate(latitude: 0, longitude: 0)
            let projection = FlatProjection(origin: origin)
            let local = points.map { projection.project($0) }
            let minEast = local.map(\.east).min() ?? 0
            let maxEast = local.map(\.east).max() ?? 0
            let minNorth = local.map(\.north).min() ?? 0
            let maxNorth = local.map(\.north).max() ?? 0
            let scale = max(
                (maxEast - minEast) / (Self.width - 2 * Self.margin),
                (maxNorth - minNorth) / (Self.height - 2 * Self.margin), 0.01)
            self.projection = projection
            self.metersPerPixel = scale
            self.centerEast = (minEast + maxEast) / 2
            self.centerNorth = (minNorth + maxNorth) / 2
            self.svg = self.draw(session, ways: ways)
        }

        func xy(_ point: Coordinate) -> (Double, Double) {
            let local = self.projection.project(point)
            return (
                Self.width / 2 + (local.east - self.centerEast) / self.metersPerPixel,
                Self.height / 2 - (local.north - self.centerNorth) / self.metersPerPixel
            )
        }

        func polyline(_ points: [Coordinate]) -> String {
            points.map { point in
                let (x, y) = self.xy(point)
                return "\(round2(x)),\(round2(y))"
            }.joined(separator: " ")
        }

        private func draw(_ session: SessionExport.Session, ways: WalkingGraph?) -> String {
            var body: [String] = []
            // The walkable ways under everything.
            if let ways {
                body.append(WaysDrawing.path(ways, xy: self.xy, bounds: (Self.width, Self.height)))
            }
            for (index, route) in session.routes.enumerated() {
                let last = index == session.routes.count - 1
                body.append(
                    "<polyline class=\"route\" data-route=\"\(route.routeID)\" points=\"\(self.polyline(route.points))\" fill=\"none\" stroke=\"#9aa\" stroke-width=\"\(last ? 6 : 3)\" stroke-linejoin=\"round\"\(last ? "" : " stroke-dasharray=\"6 4\"")/>"
                )
            }
            if let route = session.routes.last {
                for waypoint in route.waypoints {
                    let (x, y) = self.xy(waypoint.coordinate)
                    body.append(
                        "<circle class=\"waypoint\" cx=\"\(round2(x))\" cy=\"\(round2(y))\" r=\"3.5\" fill=\"#222\"><title>\(xmlEscaped(waypoint.instruction))</title></circle>"
                    )
                }
            }
            for fix in session.fixes where fix.latitude.isFinite && fix.longitude.isFinite {
                let (x, y) = self.xy(Coordinate(latitude: fix.latitude, longitude: fix.longitude))
                body.append(
                    "<circle class=\"fix\" cx=\"\(round2(x))\" cy=\"\(round2(y))\" r=\"1.8\" fill=\"#f29c38\"/>")
            }
            let smoothed = session.smoothed.filter { $0.latitude.isFinite && $0.longitude.isFinite }
            body.append(
                "<polyline id=\"smoothed-track\" points=\"\(self.polyline(smoothed.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) }))\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"3\" stroke-linejoin=\"round\"/>"
            )
            // Off course: the smoothed track while the route controller said off route or wrong way.
            var off: [[Coordinate]] = []
            var current: [Coordinate]?
            var state: RouteState = .onRoute
            for record in session.records {
                switch record.message {
                case let .progress(progress): state = progress.state
                case let .smoothed(fix) where fix.latitude.isFinite && fix.longitude.isFinite:
                    let point = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
                    if state == .offRoute || state == .wrongWay {
                        current = (current ?? []) + [point]
                    } else if let segment = current {
                        off.append(segment + [point])
                        current = nil
                    }
                default: break
                }
            }
            if let segment = current { off.append(segment) }
            for segment in off where segment.count >= 1 {
                body.append(
                    "<polyline class=\"off-course\" points=\"\(self.polyline(segment))\" fill=\"none\" stroke=\"#e0301e\" stroke-width=\"6\" stroke-opacity=\"0.75\" stroke-linecap=\"round\"/>"
                )
            }
            for route in session.routes.dropFirst() {
                guard let start = route.points.first else { continue }
                let (x, y) = self.xy(start)
                body.append(
                    "<rect class=\"reroute\" x=\"\(round2(x - 6))\" y=\"\(round2(y - 6))\" width=\"12\" height=\"12\" transform=\"rotate(45 \(round2(x)) \(round2(y)))\" fill=\"#8e44ad\"><title>reroute \(route.routeID) by \(xmlEscaped(route.provider))</title></rect>"
                )
            }
            let scaleMeters = niceLength(self.metersPerPixel * 150)
            let scalePixels = scaleMeters / self.metersPerPixel
            body.append(
                "<g class=\"scale\"><line x1=\"20\" y1=\"\(Self.height - 14)\" x2=\"\(round2(20 + scalePixels))\" y2=\"\(Self.height - 14)\" stroke=\"#333\" stroke-width=\"2\"/><text x=\"20\" y=\"\(Self.height - 20)\" font-size=\"12\">\(Int(scaleMeters)) m</text></g>"
            )
            let origin = self.projection.origin
            return """
                <svg id="map" xmlns="http://www.w3.org/2000/svg" width="\(Int(Self.width))" height="\(Int(Self.height))" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" data-origin-latitude="\(origin.latitude)" data-origin-longitude="\(origin.longitude)" data-meters-per-pixel="\(self.metersPerPixel)" data-center-east="\(self.centerEast)" data-center-north="\(self.centerNorth)">
                \(body.joined(separator: "\n"))
                </svg>
                """
        }
    }

    /// The turn events in words, with their time from the session's start; empty when there are none.
    static func turnList(_ session: SessionExport.Session) -> String {
        let turns = self.turns(session)
        guard let first = turns.first else { return "" }
        let start = session.fixes.first?.timeSeconds ?? session.smoothed.first?.timeSeconds ?? first.event.timeSeconds
        let showRendered = turns.contains { $0.rendered != nil }
        let rows = turns.map { turn in
            let seconds = Int(max(0, turn.event.timeSeconds - start).rounded())
            let time = "\(seconds / 60):" + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60)"
            var cells = [
                time, turn.event.phase.name, "\(turn.event.routeID)/\(turn.event.manoeuvre)",
                TurnWords.text(turn.event),
            ]
            if showRendered { cells.append(turn.rendered == true ? "yes" : "no") }
            return "<tr class=\"turn \(turn.event.phase.name)\">"
                + cells.map { "<td>\(xmlEscaped($0))</td>" }.joined() + "</tr>"
        }
        let header = ["time", "event", "route/manoeuvre", "words"] + (showRendered ? ["rendered"] : [])
        return """
            <h2>Turn events</h2>
            <table id="turns">
            <tr>\(header.map { "<th>\($0)</th>" }.joined())</tr>
            \(rows.joined(separator: "\n"))
            </table>
            """
    }

    /// The timeline: deviation over time, cues as bars (left below the axis, right above, height the intensity),
    /// device switches and signal-lost events as marked lines, turn events as marks along the top.
    static func timeline(_ session: SessionExport.Session) -> String {
        let width = 900.0
        let height = 300.0
        let left = 50.0
        let right = 10.0
        let top = 10.0
        let bottom = 30.0
        // Session time: the newest measurement time so far in the recorded order (status messages carry the
        // sender's wall clock, which a replay faster than real time does not share).
        var now: Double?
        var deviations: [(Double, Double)] = []
        var cues: [(Double, HapticCue)] = []
        var switches: [Event] = []
        var lost: [Double] = []
        var controls: [(time: Double, event: ControlEvent)] = []
        for record in session.records {
            let time: Double?
            switch record.message {
            case let .fix(fix): time = fix.timeSeconds
            case let .smoothed(fix): time = fix.timeSeconds
            case let .heading(sample): time = sample.timeSeconds
            case let .cue(cue): time = cue.kind == .signalLost ? nil : cue.timeSeconds
            case let .progress(progress): time = progress.timeSeconds
            default: time = nil
            }
            if let time, time.isFinite { now = max(now ?? time, time) }
            guard let at = now else { continue }
            switch record.message {
            case let .cue(cue):
                if cue.kind == .signalLost {
                    lost.append(at)
                } else {
                    cues.append((cue.timeSeconds, cue))
                    if cue.kind != .arrival { deviations.append((cue.timeSeconds, cue.deviationDegrees)) }
                }
            case let .status(status) where status.message.hasPrefix("output: "):
                switches.append(Event(time: at, label: status.message))
            case let .control(event):
                controls.append((at, event))
            default: break
            }
        }
        let turns = self.turns(session).filter { $0.event.timeSeconds.isFinite }
        let times =
            deviations.map(\.0) + cues.map(\.0) + switches.map(\.time) + lost + controls.map(\.time)
            + turns.map(\.event.timeSeconds)
        let start = session.fixes.first?.timeSeconds ?? times.min() ?? 0
        let end = max(start + 1, session.fixes.last?.timeSeconds ?? 0, times.max() ?? 0)
        func x(_ time: Double) -> Double { left + (time - start) / (end - start) * (width - left - right) }
        let plotHeight = height - top - bottom
        let middle = top + plotHeight / 2
        func y(_ degrees: Double) -> Double { middle - max(-180, min(180, degrees)) / 180 * (plotHeight / 2) }
        var body: [String] = []
        for degrees in [-180.0, -90, 0, 90, 180] {
            body.append(
                "<line x1=\"\(left)\" y1=\"\(round2(y(degrees)))\" x2=\"\(width - right)\" y2=\"\(round2(y(degrees)))\" stroke=\"#ddd\"/><text x=\"4\" y=\"\(round2(y(degrees) + 4))\" font-size=\"11\">\(Int(degrees))°</text>"
            )
        }
        for (time, cue) in cues where cue.kind == .turnLeft || cue.kind == .turnRight || cue.kind == .turnAround {
            let barHeight = cue.intensity * plotHeight / 2
            let up = cue.kind == .turnRight
            body.append(
                "<rect class=\"cue \(cue.kind.name)\" x=\"\(round2(x(time)))\" y=\"\(round2(up ? middle - barHeight : middle))\" width=\"1.5\" height=\"\(round2(barHeight))\" fill=\"#d9822b\" fill-opacity=\"0.7\"/>"
            )
        }
        body.append(
            "<polyline id=\"deviation\" points=\"\(deviations.map { "\(round2(x($0.0))),\(round2(y($0.1)))" }.joined(separator: " "))\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.2\"/>"
        )
        for event in switches {
            body.append(
                "<line class=\"device-switch\" x1=\"\(round2(x(event.time)))\" y1=\"\(top)\" x2=\"\(round2(x(event.time)))\" y2=\"\(height - bottom)\" stroke=\"#8e44ad\" stroke-dasharray=\"4 3\"><title>\(xmlEscaped(event.label))</title></line>"
            )
        }
        // The experimenter's stops as shaded spans until the resume (or the end), marks as labelled lines.
        var stoppedSince: (time: Double, by: String)?
        func shade(until time: Double) {
            guard let since = stoppedSince else { return }
            body.append(
                "<rect class=\"experimenter-stop\" x=\"\(round2(x(since.time)))\" y=\"\(top)\" width=\"\(round2(max(1, x(time) - x(since.time))))\" height=\"\(plotHeight)\" fill=\"#e0301e\" fill-opacity=\"0.12\"><title>outputs stopped by \(xmlEscaped(since.by))</title></rect>"
            )
            stoppedSince = nil
        }
        for (time, event) in controls {
            switch event.command {
            case .stop: if stoppedSince == nil { stoppedSince = (time, event.sender) }
            case .resume: shade(until: time)
            case .mark:
                body.append(
                    "<line class=\"mark\" x1=\"\(round2(x(time)))\" y1=\"\(top)\" x2=\"\(round2(x(time)))\" y2=\"\(height - bottom)\" stroke=\"#2e8b57\" stroke-width=\"1.5\"><title>mark: \(xmlEscaped(event.text))</title></line><text class=\"mark\" x=\"\(round2(x(time) + 3))\" y=\"\(top + 12)\" font-size=\"11\" fill=\"#2e8b57\">\(xmlEscaped(String(event.text.prefix(30))))</text>"
                )
            }
        }
        shade(until: end)
        // Turn events along the top, at the time of the fix each is for; faint when the sink did not render it.
        for turn in turns {
            let at = round2(x(turn.event.timeSeconds))
            let opacity = turn.rendered == false ? "0.35" : "1"
            let title =
                "<title>\(xmlEscaped(TurnWords.text(turn.event)))\(turn.rendered == false ? " (not rendered)" : "")</title>"
            switch turn.event.phase {
            case .announce:
                body.append(
                    "<path class=\"turn announce\" d=\"M \(round2(at - 5)) \(top) L \(round2(at + 5)) \(top) L \(at) \(top + 9) Z\" fill=\"#127a8a\" fill-opacity=\"\(opacity)\">\(title)</path>"
                )
            case .now:
                body.append(
                    "<line class=\"turn now\" x1=\"\(at)\" y1=\"\(top)\" x2=\"\(at)\" y2=\"\(height - bottom)\" stroke=\"#127a8a\" stroke-width=\"2\" stroke-opacity=\"\(opacity)\">\(title)</line>"
                )
            case .straightOn:
                body.append(
                    "<circle class=\"turn straightOn\" cx=\"\(at)\" cy=\"\(top + 5)\" r=\"4\" fill=\"none\" stroke=\"#127a8a\" stroke-width=\"1.5\" stroke-opacity=\"\(opacity)\">\(title)</circle>"
                )
            }
        }
        for time in lost {
            body.append(
                "<line class=\"signal-lost\" x1=\"\(round2(x(time)))\" y1=\"\(top)\" x2=\"\(round2(x(time)))\" y2=\"\(height - bottom)\" stroke=\"#e0301e\" stroke-width=\"2\"><title>signal lost</title></line>"
            )
        }
        let duration = end - start
        let step = niceLength(duration / 8)
        var tick = 0.0
        while tick <= duration + 1e-9 {
            body.append(
                "<text x=\"\(round2(x(start + tick) - 8))\" y=\"\(height - 10)\" font-size=\"11\">\(Int(tick)) s</text>"
            )
            tick += step
        }
        return """
            <svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))">
            \(body.joined(separator: "\n"))
            </svg>
            """
    }
}

/// 1, 2 or 5 times a power of ten, at most `value` (at least 1).
private func niceLength(_ value: Double) -> Double {
    guard value > 1 else { return 1 }
    var power = 1.0
    while power * 10 <= value { power *= 10 }
    for factor in [5.0, 2, 1] where factor * power <= value { return factor * power }
    return power
}

private func round2(_ value: Double) -> Double { (value * 100).rounded() / 100 }
