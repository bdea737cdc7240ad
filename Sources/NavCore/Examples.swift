extension BusMessage {
    /// One realistic message of every kind (a walker in Monaco), for documentation, client checks
    /// (`hapticnav bus publish --examples`) and round-trip tests.
    public static let examples: [BusMessage] = {
        let time = 1_767_225_600.25
        let start = Coordinate(latitude: 43.7384, longitude: 7.4246)
        let turn = Coordinate(latitude: 43.7379, longitude: 7.4261)
        let end = Coordinate(latitude: 43.7371, longitude: 7.4263)
        return [
            .fix(
                LocationFix(
                    timeSeconds: time, latitude: 43.738_412_3, longitude: 7.424_611_9, altitudeMeters: 61.5,
                    horizontalAccuracyMeters: 4.8, speedMetersPerSecond: 1.36, courseDegrees: 112.4)),
            .fix(
                LocationFix(
                    timeSeconds: time + 1, latitude: 43.738_4, longitude: 7.424_7,
                    horizontalAccuracyMeters: 12)),
            .heading(
                HeadingSample(
                    timeSeconds: time, headingDegrees: 358.5, reference: .magneticNorth,
                    accuracyDegrees: 4)),
            .attitude(Attitude(timeSeconds: time, pitchDegrees: -12.5, rollDegrees: 3.25)),
            .smoothed(
                SmoothedFix(
                    timeSeconds: time, latitude: 43.738_41, longitude: 7.424_62,
                    horizontalAccuracyMeters: 2.9, speedMetersPerSecond: 1.38, courseDegrees: 110,
                    reset: false)),
            .route(
                Route(
                    routeID: 2, timeSeconds: time, provider: "osm", lengthMeters: 221.7,
                    points: [start, turn, end],
                    waypoints: [
                        Waypoint(
                            coordinate: start, distanceAlongMeters: 0, outgoingBearingDegrees: 115.7,
                            turnDegrees: 0, kind: .start, instruction: "Head east-southeast"),
                        Waypoint(
                            coordinate: turn, distanceAlongMeters: 130.4, outgoingBearingDegrees: 169.9,
                            turnDegrees: 54.2, kind: .turn, instruction: "Turn right onto Rue Grimaldi"),
                        Waypoint(
                            coordinate: end, distanceAlongMeters: 221.7, outgoingBearingDegrees: 169.9,
                            turnDegrees: 0, kind: .arrival, instruction: "Arrive – Café de Paris"),
                    ])),
            .progress(
                RouteProgress(
                    timeSeconds: time, routeID: 2, distanceAlongMeters: 45.2,
                    distanceRemainingMeters: 176.5, crossTrackMeters: -3.1, nextWaypointIndex: 1,
                    bearingToNextDegrees: 117.2, distanceToNextMeters: 85.4, etaSeconds: 128,
                    state: .onRoute)),
            .target(
                GuidanceTarget(
                    timeSeconds: time, routeID: 2, coordinate: turn, bearingDegrees: 117.2,
                    distanceMeters: 15, kind: .lookAhead)),
            .cue(HapticCue(timeSeconds: time, kind: .turnLeft, intensity: 0.42, deviationDegrees: -78.5)),
            .calibrationState(
                CalibrationState(
                    timeSeconds: time, step: .findNorth,
                    prompt: "Hold the phone flat and turn slowly until it is quiet",
                    cueIntensity: 0.25, progress: 0)),
            .calibrationResult(
                CalibrationResult(
                    timeSeconds: time, succeeded: true, offsetDegrees: 93.5,
                    spreadDegrees: 6.2, sampleCount: 50, reason: "")),
            .control(
                ControlEvent(
                    timeSeconds: time, command: .mark, text: "crossing Boulevard des Moulins", sender: "experimenter",
                    requestID: "5f1c2a9e", sentSeconds: time - 0.012, stopped: false)),
            .turn(
                TurnEvent(
                    timeSeconds: time, routeID: 2, manoeuvre: 0, phase: .announce, turnDegrees: 54.2,
                    junctionsBefore: 1, distanceMeters: 85.4, outgoingBearingDegrees: 169.9, street: "Rue Grimaldi")),
            .step(StepCount(timeSeconds: time, count: 168, cadenceHz: 1.85)),
            .status(
                StageStatus(
                    timeSeconds: time, stage: "source", health: .running, message: "sim running",
                    counters: [StatusCounter(name: "published.fix", value: 120)])),
        ]
    }()
}
