extension BusMessage {
    private func f(_ value: Double, _ digits: Int = 1) -> String {
        fixedDecimal(value, digits: digits)
    }

    private func f(_ value: Double?, _ digits: Int = 1) -> String {
        value.map { fixedDecimal($0, digits: digits) } ?? "-"
    }

    /// A one-line human summary of the message's fields, as `monitor` prints it.
    public var summary: String {
        switch self {
        case let .fix(fix):
            return
                "lat=\(f(fix.latitude, 7)) lon=\(f(fix.longitude, 7)) acc=\(f(fix.horizontalAccuracyMeters))m speed=\(f(fix.speedMetersPerSecond, 2))m/s course=\(f(fix.courseDegrees))°"
        case let .heading(sample):
            return
                "heading=\(f(sample.headingDegrees))° (\(sample.reference == .trueNorth ? "true" : "magnetic")) acc=\(f(sample.accuracyDegrees))°"
        case let .attitude(attitude):
            return "pitch=\(f(attitude.pitchDegrees))° roll=\(f(attitude.rollDegrees))°"
        case let .smoothed(fix):
            return
                "lat=\(f(fix.latitude, 7)) lon=\(f(fix.longitude, 7)) acc=\(f(fix.horizontalAccuracyMeters))m speed=\(f(fix.speedMetersPerSecond, 2))m/s course=\(f(fix.courseDegrees))°\(fix.reset ? " reset" : "")"
        case let .route(route):
            return
                "route \(route.routeID) by \(route.provider): \(f(route.lengthMeters))m, \(route.points.count) points, \(route.waypoints.count) waypoints"
        case let .progress(progress):
            return
                "\(progress.state) along=\(f(progress.distanceAlongMeters))m left=\(f(progress.distanceRemainingMeters))m xtrack=\(f(progress.crossTrackMeters))m next=#\(progress.nextWaypointIndex) \(f(progress.distanceToNextMeters))m @\(f(progress.bearingToNextDegrees))° eta=\(f(progress.etaSeconds, 0))s"
        case let .target(target):
            return "\(target.kind) bearing=\(f(target.bearingDegrees))° distance=\(f(target.distanceMeters))m"
        case let .cue(cue):
            return "\(cue.kind) intensity=\(f(cue.intensity, 2)) deviation=\(f(cue.deviationDegrees))°"
        case let .calibrationState(state):
            return "\(state.step) progress=\(f(state.progress, 2)) cue=\(f(state.cueIntensity, 2)) \"\(state.prompt)\""
        case let .calibrationResult(result):
            return result.succeeded
                ? "offset=\(f(result.offsetDegrees))° spread=\(f(result.spreadDegrees))° n=\(result.sampleCount)"
                : "aborted: \(result.reason)"
        case let .control(event):
            let text = event.text.isEmpty ? "" : " \"\(event.text)\""
            return "\(event.command)\(text) by \(event.sender) (\(event.stopped ? "outputs stopped" : "outputs live"))"
        case let .turn(event):
            return
                "\(event.phase) manoeuvre #\(event.manoeuvre) turn=\(f(event.turnDegrees))° after \(event.junctionsBefore) junction(s) in \(f(event.distanceMeters))m way=\(f(event.outgoingBearingDegrees))°\(event.street.isEmpty ? "" : " onto \"\(event.street)\"") \"\(TurnWords.text(event))\""
        case let .step(step):
            return "step #\(step.count) cadence=\(f(step.cadenceHz, 2)) Hz"
        case let .status(status):
            let counters = status.counters.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            return "\(status.health) \"\(status.message)\"\(counters.isEmpty ? "" : " " + counters)"
        }
    }
}

/// `value` with exactly `digits` decimals, without Foundation ("-3.25", "nan", "inf").
public func fixedDecimal(_ value: Double, digits: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value > 0 ? "inf" : "-inf") }
    var scale = 1.0
    for _ in 0..<max(0, digits) { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e15 else { return "\(value)" }
    let whole = UInt64(scaled)
    let factor = UInt64(scale)
    let integer = whole / factor
    var text = (value < 0 && whole != 0 ? "-" : "") + String(integer)
    if digits > 0 {
        let fraction = String(whole % factor)
        text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
    return text
}
