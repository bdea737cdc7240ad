#if canImport(Glibc)
import Glibc
#endif
public import NavCore

/// A simulated participant who knows only the cues: walks at a steady pace; on a turn cue stops, waits, and turns
/// toward the cued side until the cue stops; turns around on a turn-around cue; stops for good at the arrival cue.
/// The phone sits in a pocket at an angle to the walking direction. Pure: the harness feeds it cues and time.
public struct Participant: Sendable {
    /// How the participant behaves.
    public struct Behaviour: Sendable, Equatable {
        /// Walking speed [m/s].
        public var speedMetersPerSecond = 1.3
        /// The pause between a turn cue and turning [seconds].
        public var pauseSeconds = 0.5
        /// Turning rate [degrees per second].
        public var turnRateDegreesPerSecond = 90.0
        /// The phone's heading in the pocket, relative to the walking direction [degrees, clockwise].
        public var pocketOffsetDegrees = 70.0

        /// The defaults of the evaluation (issue: 1.3 m/s, 0.5 s, 90°/s, 70°).
        public init() {}
    }

    /// What the participant is doing.
    public enum Phase: Sendable, Equatable {
        case walking
        /// Stopped on a turn cue, since a time [seconds].
        case pausing(since: Double)
        /// Turning toward a side (+1 right, −1 left) while the cue lasts.
        case turning(direction: Double)
        /// Turning around: degrees still to turn, and the side.
        case turningAround(remaining: Double, direction: Double)
        case arrived
    }

    public let behaviour: Behaviour
    /// Where the participant is.
    public private(set) var position: Coordinate
    /// The walking direction [degrees, true north, clockwise].
    public private(set) var bodyHeadingDegrees: Double
    public private(set) var phase: Phase = .walking
    /// Whether the participant has started (they wait for the first guidance).
    public private(set) var started = false

    /// A participant at `start`, facing `heading`.
    public init(at start: Coordinate, facing heading: Double, behaviour: Behaviour = Behaviour()) {
        self.position = start
        self.bodyHeadingDegrees = Angle.normalized(heading)
        self.behaviour = behaviour
    }

    /// The phone's true heading [degrees].
    public var phoneHeadingDegrees: Double {
        Angle.normalized(self.bodyHeadingDegrees + self.behaviour.pocketOffsetDegrees)
    }

    /// Moving now [m/s].
    public var speedMetersPerSecond: Double {
        self.started && self.phase == .walking ? self.behaviour.speedMetersPerSecond : 0
    }

    /// The participant starts walking (guidance is there).
    public mutating func start() { self.started = true }

    /// Takes the cue felt at `time` and moves on by `dt` seconds.
    public mutating func step(feeling cue: CueKind, at time: Double, dt: Double) {
        guard self.started else { return }
        switch (self.phase, cue) {
        case (.arrived, _):
            return
        case (_, .arrival):
            self.phase = .arrived
            return
        case (.walking, .turnLeft), (.walking, .turnRight):
            self.phase = .pausing(since: time)
        case (.walking, .turnAround), (.pausing, .turnAround), (.turning, .turnAround):
            self.phase = .turningAround(remaining: 180, direction: 1)
        case let (.pausing(since), .turnLeft), let (.pausing(since), .turnRight):
            if time - since >= self.behaviour.pauseSeconds {
                self.phase = .turning(direction: cue == .turnRight ? 1 : -1)
            }
        case (.pausing, _):
            self.phase = .walking  // the cue stopped before the turn began
        case (.turning, .turnLeft), (.turning, .turnRight):
            self.phase = .turning(direction: cue == .turnRight ? 1 : -1)
        case (.turning, _):
            self.phase = .walking
        case (.turningAround, _), (.walking, _):
            break
        }
        switch self.phase {
        case .walking:
            let distance = self.behaviour.speedMetersPerSecond * dt
            let radians = self.bodyHeadingDegrees * .pi / 180
            self.position = FlatProjection(origin: self.position).unproject(
                ENU(east: distance * sin(radians), north: distance * cos(radians)))
        case let .turning(direction):
            self.bodyHeadingDegrees = Angle.normalized(
                self.bodyHeadingDegrees + direction * self.behaviour.turnRateDegreesPerSecond * dt)
        case let .turningAround(remaining, direction):
            let turn = min(remaining, self.behaviour.turnRateDegreesPerSecond * dt)
            self.bodyHeadingDegrees = Angle.normalized(self.bodyHeadingDegrees + direction * turn)
            self.phase =
                remaining - turn <= 0 ? .walking : .turningAround(remaining: remaining - turn, direction: direction)
        case .pausing, .arrived:
            break
        }
    }
}

/// GPS position error: white (independent each fix), or correlated as in a street canyon (first-order
/// Gauss–Markov with a time constant), with the same standard deviation per axis.
public struct GPSError: Sendable {
    /// One sigma per axis [metres].
    public let sigmaMeters: Double
    /// The correlation time [seconds]; nil for white error.
    public let timeConstantSeconds: Double?
    private var east = 0.0, north = 0.0
    private var started = false

    public init(sigmaMeters: Double, timeConstantSeconds: Double? = nil) {
        self.sigmaMeters = sigmaMeters
        self.timeConstantSeconds = timeConstantSeconds
    }

    /// The error of the next fix, `dt` seconds after the last [metres east, north].
    public mutating func next(dt: Double, random: inout SeededGenerator) -> (east: Double, north: Double) {
        guard let tau = self.timeConstantSeconds, self.started else {
            self.started = true
            self.east = random.gaussian(standardDeviation: self.sigmaMeters)
            self.north = random.gaussian(standardDeviation: self.sigmaMeters)
            return (self.east, self.north)
        }
        let a = exp(-dt / tau)
        let spread = self.sigmaMeters * (1 - a * a).squareRoot()
        self.east = a * self.east + random.gaussian(standardDeviation: spread)
        self.north = a * self.north + random.gaussian(standardDeviation: spread)
        return (self.east, self.north)
    }
}

extension GPSError {
    /// A receiver's fix at `time` of a walker at `position` moving at `speed` [m/s] toward `headingDegrees`: the
    /// position with this error's next value (a fix a second), and speed and course from the receiver's Doppler
    /// velocity with `velocityNoise` [m/s] per axis; no course below 0.5 m/s; the accuracy σ, at least 1 m.
    mutating func fix(
        time: Double, position: Coordinate, speed: Double, headingDegrees: Double, velocityNoise: Double,
        random: inout SeededGenerator
    ) -> LocationFix {
        let error = self.next(dt: 1, random: &random)
        let noisy = FlatProjection(origin: position).unproject(ENU(east: error.east, north: error.north))
        let radians = headingDegrees * .pi / 180
        let velocityEast = speed * sin(radians) + random.gaussian(standardDeviation: velocityNoise)
        let velocityNorth = speed * cos(radians) + random.gaussian(standardDeviation: velocityNoise)
        let measuredSpeed = (velocityEast * velocityEast + velocityNorth * velocityNorth).squareRoot()
        return LocationFix(
            timeSeconds: time, latitude: noisy.latitude, longitude: noisy.longitude,
            horizontalAccuracyMeters: max(1, self.sigmaMeters), speedMetersPerSecond: measuredSpeed,
            courseDegrees: measuredSpeed >= 0.5 ? Angle.normalized(atan2(velocityEast, velocityNorth) * 180 / .pi) : nil
        )
    }
}

/// A simulated participant's phone's accelerometer: the magnitude of what it reads (gravity's reaction, and a bump at
/// each heel strike while they walk, a step of their own length at their pace), 50 samples a second with sensor
/// noise, and the phone's step detector (``StepCounter``) on it.
struct SimulatedPedometer {
    /// This participant's step length [metres]: 0.72 ± 0.05 m (one sigma), drawn per walk.
    let stepLengthMeters: Double
    private var phase = 0.0
    private var time: Double?
    private var counter = StepCounter()
    static let sampleSeconds = 0.02

    init(random: inout SeededGenerator) {
        self.stepLengthMeters = min(0.9, max(0.55, 0.72 + random.gaussian(standardDeviation: 0.05)))
    }

    /// The samples from the last call up to `time`, moving at `speed` [m/s]; the steps the phone's detector tells.
    mutating func advance(to time: Double, speed: Double, random: inout SeededGenerator) -> [StepCount] {
        var told: [StepCount] = []
        var t = (self.time ?? time - Self.sampleSeconds) + Self.sampleSeconds
        while t <= time + 1e-9 {
            let cadence = speed > 0 ? speed / self.stepLengthMeters : 0
            self.phase += cadence * Self.sampleSeconds
            // A heel strike's bump once a cycle (about 0.15 s wide), on gravity's reaction, with sensor noise.
            let cycle = self.phase - self.phase.rounded(.down)
            let bump = cadence > 0 ? 4 * exp(-pow((cycle - 0.5) / 0.12, 2)) : 0
            told += self.counter.add(
                timeSeconds: t, magnitude: 9.81 + bump + random.gaussian(standardDeviation: 0.3))
            self.time = t
            t += Self.sampleSeconds
        }
        return told
    }
}
