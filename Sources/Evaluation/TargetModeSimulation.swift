import HapticLogic
public import MapLogic
public import NavCore

/// Walkers who obey cues, following a route to its end: how far they stray under each guidance-target rule.
/// Aiming at far waypoints makes walkers cut corners; the look-ahead target keeps them on the route.
public enum TargetModeSimulation {
    /// The outcome of one walk.
    public struct Walk: Sendable {
        /// Largest distance from the route during the walk [metres].
        public var maximumOffRouteMeters: Double
        /// True when the walker arrived before the time ran out.
        public var arrived: Bool
    }

    /// Walks `route` from its start with a cue-obeying walker; `seed` sets the compass noise and drift.
    public static func walk(
        route: Route, mode: RouteTracker.TargetMode, seed: UInt64,
        walker: GuidanceSimulation.Walker = GuidanceSimulation.Walker(), speed: Double = 1.4
    ) -> Walk {
        var random = SeededGenerator(seed: seed)
        var trackerOptions = RouteTracker.Options()
        trackerOptions.targetMode = mode
        // Rerouting would hide the straying that this measures: the walker follows the first route.
        trackerOptions.offRouteFixes = Int.max
        var tracker = RouteTracker(options: trackerOptions)
        tracker.setRoute(route)
        var guidance = Guidance()
        let line = Polyline(route.points)
        var position = route.points[0]
        var heading = route.waypoints.first?.outgoingBearingDegrees ?? 0
        let dt = 1 / walker.sampleRateHz
        var target: GuidanceTarget?
        var worst = 0.0
        var pending: [(time: Double, cue: HapticCue)] = []
        var felt = HapticCue(timeSeconds: 0, kind: .silent, intensity: 0, deviationDegrees: 0)
        var t = 0.0
        let limit = 3 * route.lengthMeters / speed + 60
        while t < limit {
            // A fix a second: progress and a new target.
            if (t * walker.sampleRateHz).rounded().truncatingRemainder(dividingBy: walker.sampleRateHz) == 0 {
                let fix = SmoothedFix(
                    timeSeconds: t, latitude: position.latitude, longitude: position.longitude,
                    horizontalAccuracyMeters: 3, speedMetersPerSecond: speed, courseDegrees: heading, reset: false)
                if let update = tracker.update(with: fix) {
                    target = update.target
                    if update.arrived || update.progress.state == .arrived {
                        return Walk(maximumOffRouteMeters: worst, arrived: true)
                    }
                }
            }
            let measured = Angle.normalized(heading + random.gaussian(standardDeviation: walker.compassNoiseDegrees))
            if let cue = guidance.update(
                heading: HeadingSample(timeSeconds: t, headingDegrees: measured), target: target)
            {
                pending.append((t + walker.reactionSeconds, cue))
            }
            while let first = pending.first, first.time <= t {
                felt = first.cue
                pending.removeFirst()
            }
            heading = walker.heading(after: heading, feeling: felt, for: dt, random: &random)
            position = FlatProjection(origin: position).unproject(
                ENU(east: speed * dt * _sin(heading * .pi / 180), north: speed * dt * _cos(heading * .pi / 180)))
            if let projection = line.project(position) { worst = max(worst, projection.distanceMeters) }
            t += dt
        }
        return Walk(maximumOffRouteMeters: worst, arrived: false)
    }
}
