public import HapticLogic
public import NavCore

/// A walker who obeys cues, for measuring how often cues change: the plain rule (a cue whenever the
/// deviation is outside the tolerance) against ``Guidance`` with its debounce, release band and rate limit.
public enum GuidanceSimulation {
    /// The walker and the compass.
    public struct Walker: Sendable, Equatable {
        /// Compass noise [degrees, one sigma].
        public var compassNoiseDegrees = 6.0
        /// How the walker's heading wanders when no cue plays [degrees per √second].
        public var driftDegreesPerRootSecond = 3.0
        /// How fast the walker turns at full intensity [degrees per second].
        public var turnRateDegreesPerSecond = 40.0
        /// How long the walker takes to react to a cue [seconds].
        public var reactionSeconds = 0.4
        /// Heading samples per second.
        public var sampleRateHz = 10.0

        /// The defaults.
        public init() {}

        /// The walker's heading after `dt` seconds of feeling `cue`: turning to the cued side, faster the stronger
        /// it is, or drifting [degrees, 0..<360].
        public func heading(
            after heading: Double, feeling cue: HapticCue, for dt: Double,
            random: inout SeededGenerator
        ) -> Double {
            var next = heading
            switch cue.kind {
            case .turnLeft: next -= self.turnRateDegreesPerSecond * cue.intensity * dt
            case .turnRight: next += self.turnRateDegreesPerSecond * cue.intensity * dt
            case .turnAround: next += (cue.deviationDegrees >= 0 ? 1 : -1) * self.turnRateDegreesPerSecond * dt
            default: break
            }
            return Angle.normalized(
                next + random.gaussian(standardDeviation: self.driftDegreesPerRootSecond * dt.squareRoot()))
        }
    }

    /// Cue changes per minute over `minutes` of walking towards a fixed bearing.
    public static func cueChangesPerMinute(
        debounced: Bool, minutes: Double = 10, seed: UInt64 = 1,
        walker: Walker = Walker(), options: Guidance.Options = Guidance.Options()
    )
        -> Double
    {
        var random = SeededGenerator(seed: seed)
        var guidance = Guidance(options: options)
        let plain = Guidance(options: options)
        let target = GuidanceTarget(
            timeSeconds: 0, routeID: 1, coordinate: Coordinate(latitude: 0, longitude: 0),
            bearingDegrees: 90, distanceMeters: 100, kind: .lookAhead)
        let dt = 1 / walker.sampleRateHz
        var heading = 90.0
        var changes = 0
        var lastKind: CueKind = .silent
        var playing: [(time: Double, cue: HapticCue)] = []  // what the walker feels, after reacting
        var felt = HapticCue(timeSeconds: 0, kind: .silent, intensity: 0, deviationDegrees: 0)
        var t = 0.0
        while t < minutes * 60 {
            let measured = heading + random.gaussian(standardDeviation: walker.compassNoiseDegrees)
            let sample = HeadingSample(timeSeconds: t, headingDegrees: Angle.normalized(measured))
            let cue: HapticCue?
            if debounced {
                cue = guidance.update(heading: sample, target: target)
            } else {
                let immediate = plain.immediateCue(
                    deviation: plain.deviation(
                        rawHeading: sample.headingDegrees,
                        targetBearing: target.bearingDegrees), at: t)
                cue = immediate.kind != lastKind ? immediate : nil
            }
            if let cue, cue.kind != lastKind {
                changes += 1
                lastKind = cue.kind
            }
            if let cue { playing.append((t + walker.reactionSeconds, cue)) }
            while let first = playing.first, first.time <= t {
                felt = first.cue
                playing.removeFirst()
            }
            // The walker turns towards the cued side, or drifts.
            heading = walker.heading(after: heading, feeling: felt, for: dt, random: &random)
            t += dt
        }
        return Double(changes) / minutes
    }
}
