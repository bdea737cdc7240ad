public import NavCore
/// Where the walker is on the walking network: which way, where along it, going which way, and how sure that is.
///
/// A particle filter over the walking graph (Rao–Blackwellised): each particle is a place on a way of the graph and a
/// direction along it, and carries its own estimate of the position's error as a correlated state (a Gauss–Markov
/// bias, as a GNSS receiver's error is over tens of seconds: multipath, the satellites in view), filtered exactly
/// given the particle's place. Between two positions each particle walks the distance the walker's speed says, along
/// its way; at a junction it takes a branch, likelier the closer its direction to the walker's course over ground (the
/// receiver's velocity, which the position's bias does not move); now and then it turns back. Each position then
/// weighs the particles by how well their place plus their bias explains it, and their direction by the course. So a
/// turn at a junction is recognised from the course's change, and the bias that carried the fix across the street
/// is learnt from the ways the walker keeps to, and unlearnt as it decorrelates.
///
/// The estimate is the way most of the weight agrees on; it is *sure* when at least `sureShare` of the weight lies
/// on that way near its point (within `agreeMeters` across it and `alongMeters` along it) and the bias it needs is
/// within the gate. Where no way is within reach of the fixes (no map there), the filter says it does not know (nil)
/// and starts again when the ways come back within reach.
public struct NetworkPlace: Sendable {
    /// Its settings.
    public struct Options: Sendable, Equatable {
        /// The settings a route stage reads (`place: network`), each with its key, unit, default and range.
        public enum Setting {
            public static let particles = SettingSpec(
                "placeParticles", default: 256.0, in: 16...10_000,
                "place network: particles (the cost per fix grows with them)")
            public static let biasSigmaMeters = SettingSpec(
                "placeBiasMeters", unit: "m", default: 4.0, in: 0.1...100,
                "place network: the smoothed fix's slowly varying error, one σ per axis (at least its accuracy)")
            public static let biasTimeConstantSeconds = SettingSpec(
                "placeBiasSeconds", unit: "s", default: 30.0, in: 1...3600,
                "place network: that error's correlation time")
            public static let noiseSigmaMeters = SettingSpec(
                "placeNoiseMeters", unit: "m", default: 1.0, in: 0.1...100,
                "place network: the smoothed fix's error beside it, one σ per axis")
            public static let courseSigmaDegrees = SettingSpec(
                "placeCourseDegrees", unit: "°", default: 25.0, in: 1...90,
                "place network: the course's error against the way's direction, one σ")

            public static let gateSigmas = SettingSpec(
                "placeGateSigmas", default: 3.0, in: 0.5...100,
                "place network: the place is used only while the error it takes the smoothed fix to have is within this many times that error's σ (a walker farther from the ways is not placed on them)"
            )

            public static let odometry = SettingDoc(
                key: "placeOdometry", defaultText: "speed", rangeText: "speed, steps",
                summary:
                    "place network: how far the walker went between two fixes: `speed`, the smoothed speed (the receiver's Doppler velocity); `steps`, the wearer's steps (the `step` topic) times the step length learnt from the speed, each particle carrying its own scale of that length, the speed where no steps come"
            )

            public static let all: [SettingDoc] = [
                particles.doc, biasSigmaMeters.doc, biasTimeConstantSeconds.doc, noiseSigmaMeters.doc,
                courseSigmaDegrees.doc, gateSigmas.doc, odometry,
            ]
        }

        /// Particles [count]: the cost per position grows with them (see `hapticnav bench place`).
        public var particles = Int(Setting.particles.defaultValue)
        /// The position's slowly varying error, one σ per axis [metres], at least the position's accuracy…
        public var biasSigmaMeters = Setting.biasSigmaMeters.defaultValue
        /// …and its correlation time [seconds].
        public var biasTimeConstantSeconds = Setting.biasTimeConstantSeconds.defaultValue
        /// The position's error beside the bias, one σ per axis [metres].
        public var noiseSigmaMeters = Setting.noiseSigmaMeters.defaultValue
        /// The course's error against the way's direction, one σ [degrees] (sway, the smoother's lag, a way drawn
        /// a little off the pavement).
        public var courseSigmaDegrees = Setting.courseSigmaDegrees.defaultValue
        /// Below this speed the course says nothing [m/s].
        public var minimumCourseSpeed = 0.5
        /// The walked distance's error: a share of it, one σ, and a constant part per position [metres].
        public var distanceErrorShare = 0.15
        public var distanceErrorMeters = 0.3
        /// How the walked distance is measured between two positions.
        public enum Odometry: String, Sendable, CaseIterable {
            /// The smoothed speed times the time between them.
            case speed
            /// The steps taken between them times the learnt step length, each particle scaling that length by a
            /// factor of its own (learnt as the particles that walk it best survive); the speed over the part since
            /// the last step, and wherever steps do not come.
            case steps
        }
        public var odometry = Odometry.speed
        /// With steps: the step length's scale, one σ about 1 at a start, its drift per position, and the distance's
        /// error per position (a share and a constant part, one σ: steps of unequal length) [metres].
        public var stepScaleSigma = 0.05
        public var stepScaleDrift = 0.003
        public var stepDistanceErrorShare = 0.05
        public var stepDistanceErrorMeters = 0.1
        /// A walker going across the way a particle is on may have turned at a node this far from the particle,
        /// and the distance walked since the last position [metres].
        public var turnReachMeters = 5.0
        /// The bias's σ is learnt from the fixes' distance across the way the walker is on, over this long
        /// [seconds] (a street canyon's error is larger than an open street's).
        public var learnSeconds = 60.0
        /// Steps: the length is learnt while the speed is at least `stepLearnSpeed` [m/s], each fix's share fading
        /// over `stepLearnSeconds` [seconds], and used once `minimumLearntSteps` are learnt from; steps none of which
        /// came for `stepsStaleSeconds` [seconds] are not relied on while the speed says the walker moves.
        public var stepLearnSpeed = 0.8
        public var stepLearnSeconds = 120.0
        public var minimumLearntSteps = 20.0
        public var stepsStaleSeconds = 10.0
        /// No step for this long before a fix: the walker stands [seconds] (a step detector tells a step some tenths
        /// of a second after it).
        public var standSeconds = 1.5
        /// The chance that a particle turns back between two positions, walking and standing.
        public var turnBackWalking = 0.01
        public var turnBackStanding = 0.05
        /// Ways within this distance of a position are where a new start puts particles [metres] (at least three
        /// times the accuracy).
        public var searchMeters = 30.0
        /// The estimate is sure when this share of the weight lies within `agreeMeters` across its way and
        /// `alongMeters` along it…
        public var sureShare = 0.6
        public var agreeMeters = 3.0
        public var alongMeters = 15.0
        /// …and when the bias it needs to explain the fix is at most this many times the bias's σ, and at least
        /// `gateMeters` [metres]: a walker farther from the ways than GPS error explains is not placed on them.
        public var gateSigmas = Setting.gateSigmas.defaultValue
        public var gateMeters = 4.0
        /// A bias this many times that starts the filter again.
        public var lostGateFactor = 1.5
        /// A position this many σ from every particle's explanation, `lostPositions` times in a row, starts the
        /// filter again.
        public var lostSigmas = 4.0
        public var lostPositions = 3
        /// A gap longer than this between two positions starts the filter again [seconds].
        public var maximumGapSeconds = 10.0

        public init() {}
    }

    /// A place on the network.
    public struct Estimate: Sendable, Equatable {
        /// The point on the way.
        public var point: Coordinate
        /// The direction of travel along the way [degrees, true north].
        public var directionDegrees: Double
        /// The share of the particles' weight on the way near the point [0…1].
        public var share: Double
        /// Whether the share reaches `sureShare`.
        public var sure: Bool
        /// The position's error as the filter has it [metres east, north], the weighted mean over the particles.
        public var biasEast: Double
        public var biasNorth: Double
        /// How far the smoothed fix may be from the walker, one σ per axis, as the filter has learnt it (its slowly
        /// varying error and the error beside it) [metres].
        public var errorSigmaMeters = 0.0
    }

    /// A particle: a place on a directed edge of the graph, and its estimate of the position's bias.
    struct Particle {
        var from: Int32
        var to: Int32
        /// Metres from `from` toward `to`.
        var along: Double
        var length: Double
        var biasEast: Double
        var biasNorth: Double
        var logWeight: Double
        /// The step length's scale this particle walks by (1 with the speed's odometry).
        var scale = 1.0
    }

    public let graph: WalkingGraph
    public let options: Options
    private var particles: [Particle] = []
    private var plane: FlatProjection?
    private var lastTime: Double?
    private var lostCount = 0
    /// The bias's variance per axis, the same for every particle (their measurement model is the same).
    private var biasVariance = 0.0
    /// The fixes' squared distance across the estimated way, averaged over `learnSeconds` [m²]; nil before any;
    /// the product of each such distance with the one before (its autocovariance a fix apart), and the last.
    private var acrossVariance: Double?
    private var acrossLagged: Double?
    private var lastAcross: (timeSeconds: Double, meters: Double)?
    private var random: SeededGenerator
    /// The wearer's steps since the last position, the newest step's time, and the step length as learnt from the
    /// speed: the distance the speed says was walked over the steps taken meanwhile, while walking, each fix's share
    /// fading over `stepLearnSeconds` [metres, count].
    private var pendingSteps = 0
    private var lastStepTime: Double?
    private var learntMeters = 0.0
    private var learntSteps = 0.0
    /// Steps heard [count].
    public private(set) var stepsHeard = 0
    /// At the last position, the distance the speed says was walked since the last step heard then [metres].
    private var aheadOfSteps = 0.0

    /// The distance walked between two positions: by steps (to be scaled by each particle's step scale) and
    /// otherwise, and whether it came from steps.
    struct Walk {
        var steps = 0.0
        var other = 0.0
        var fromSteps = false
        var meters: Double { self.steps + self.other }
    }

    /// A particle's own scale of the learnt step length, kept within a stride's plausible spread of it (0.8 to 1.25).
    private static func stepScale(_ scale: Double) -> Double { min(1.25, max(0.8, scale)) }

    /// The step length learnt so far [metres]; nil before `minimumLearntSteps` steps' worth.
    public var stepLengthMeters: Double? {
        guard self.learntSteps >= self.options.minimumLearntSteps else { return nil }
        return min(1.2, max(0.3, self.learntMeters / self.learntSteps))
    }

    /// Forgets the steps' times (their stream's time line started again): the next step is taken whatever its time,
    /// and the walk is the speed's until steps come on the new line.
    public mutating func rebaseSteps() {
        self.lastStepTime = nil
        self.pendingSteps = 0
        self.aheadOfSteps = 0
    }

    /// Takes one of the wearer's steps (from the phone's step detector).
    public mutating func step(_ step: StepCount) {
        guard step.timeSeconds.isFinite else { return }
        if let last = self.lastStepTime, step.timeSeconds <= last { return }
        self.lastStepTime = step.timeSeconds
        self.pendingSteps += 1
        self.stepsHeard += 1
    }

    /// The distance the speed says was walked since the newest step heard, while steps come (within `standSeconds`
    /// of it); nothing once they have stopped, so that a walk measured by the speed meanwhile is not undone when they
    /// come again [metres].
    private func walkedSinceLastStep(speed: Double, time: Double) -> Double {
        guard let last = self.lastStepTime, time >= last, time - last <= self.options.standSeconds else { return 0 }
        return speed * (time - last)
    }

    /// How far the walker went in `dt` before the position at `time`: nothing while the steps say they stand, else
    /// the speed's, or with the steps' odometry the steps' and the speed's since the last step. Learns the step length
    /// as it goes.
    mutating func walked(speed: Double, course: Double?, dt: Double, time: Double) -> Walk {
        var ahead = self.walkedSinceLastStep(speed: speed, time: time)
        let aheadBefore = self.aheadOfSteps
        let steps = self.pendingSteps
        defer {
            self.pendingSteps = 0
            self.aheadOfSteps = ahead
        }
        let stepsFlow = self.lastStepTime.map { time - $0 <= self.options.stepsStaleSeconds } ?? false
        if course != nil, speed >= self.options.stepLearnSpeed, self.pendingSteps > 0, stepsFlow {
            let keep = _exp(-max(0, dt) / self.options.stepLearnSeconds)
            self.learntMeters = keep * self.learntMeters + speed * dt
            self.learntSteps = keep * self.learntSteps + Double(self.pendingSteps)
        }
        // Steps heard, and none for `standSeconds` before this fix (by the steps' own times, however late each was
        // told): the walker stands (the smoothed speed lags a stop by seconds). Unless none came for
        // `stepsStaleSeconds` while the speed says they walk: then the phone's detector has stopped. Otherwise the
        // speed, which the receiver's Doppler velocity measures better than a step length learnt from it (measured:
        // the cadence times the learnt length placed the walker a little worse).
        if let last = self.lastStepTime, time - last > self.options.standSeconds,
            time - last <= self.options.stepsStaleSeconds || speed < self.options.stepLearnSpeed
        {
            // With the steps' odometry, where the speed carried the place past the last step, it goes back there:
            // a walker who stops stands where their last step landed.
            ahead = 0
            guard self.options.odometry == .steps, let length = self.stepLengthMeters else { return Walk() }
            // The steps told since the last fix were walked before the stop (a detector tells them late).
            return Walk(steps: Double(steps) * length, other: -aheadBefore, fromSteps: true)
        }
        // The steps' odometry: the steps since the last position at the learnt length (each particle scales it), and
        // the speed's part before the newest step heard then and since the newest step heard now (a detector tells
        // a step some tenths of a second after it).
        if self.options.odometry == .steps, let length = self.stepLengthMeters, let last = self.lastStepTime,
            time >= last, time - last <= self.options.standSeconds
        {
            return Walk(steps: Double(steps) * length, other: ahead - aheadBefore, fromSteps: true)
        }
        return Walk(other: speed * dt)
    }

    /// Starts (the first, and each one after the filter lost the walker) [count].
    public private(set) var starts = 0

    public init(graph: WalkingGraph, options: Options = Options(), seed: UInt64 = 1) {
        self.graph = graph
        self.options = options
        self.random = SeededGenerator(seed: seed)
    }

    /// Forgets the walker: the next position starts again.
    public mutating func reset() {
        self.particles = []
        self.lastTime = nil
        self.lostCount = 0
    }

    private func enu(_ node: Int32) -> ENU { self.plane!.project(self.graph.nodes[Int(node)]) }

    private func position(of particle: Particle) -> ENU {
        let a = self.enu(particle.from), b = self.enu(particle.to)
        let f = particle.length > 0 ? particle.along / particle.length : 0
        return ENU(east: a.east + f * (b.east - a.east), north: a.north + f * (b.north - a.north))
    }

    private func bearing(_ from: Int32, _ to: Int32) -> Double {
        let a = self.enu(from), b = self.enu(to)
        return Angle.normalized(_atan2(b.east - a.east, b.north - a.north) * 180 / .pi)
    }

    /// The likelihood factor of travelling toward `bearing` when the course is `course` (a floor keeps a way drawn
    /// off its pavement, or a course from the smoother's lag, from ruling a particle out).
    private func courseFactor(_ bearing: Double, _ course: Double?) -> Double {
        guard let course else { return 1 }
        let sigma = self.options.courseSigmaDegrees * .pi / 180
        let kappa = 1 / (sigma * sigma)
        let difference = (bearing - course) * .pi / 180
        return 0.95 * _exp(kappa * (_cos(difference) - 1)) + 0.05
    }

    /// Takes the next position (a smoothed fix: its time, place, accuracy, speed and course); the place on the
    /// network after it, nil where the filter does not know (no way within reach of the position and its bias).
    public mutating func update(
        timeSeconds: Double, position: Coordinate, accuracyMeters: Double, speedMetersPerSecond: Double,
        courseDegrees: Double?, restart: Bool = false
    ) -> Estimate? {
        guard timeSeconds.isFinite, position.latitude.isFinite, position.longitude.isFinite else { return nil }
        let accuracy = accuracyMeters.isFinite && accuracyMeters > 0 ? accuracyMeters : 1
        let speed = speedMetersPerSecond.isFinite && speedMetersPerSecond >= 0 ? min(speedMetersPerSecond, 5) : 0
        let course = speed >= self.options.minimumCourseSpeed ? courseDegrees.flatMap { $0.isFinite ? $0 : nil } : nil
        let dt = self.lastTime.map { timeSeconds - $0 }
        if restart || self.particles.isEmpty || dt == nil || dt! < 0 || dt! > self.options.maximumGapSeconds {
            guard self.start(at: position, accuracy: accuracy, course: course) else {
                self.reset()
                return nil
            }
            self.lastTime = timeSeconds
            // Steps before a start are walked already: the next position's walk counts from here. Steps dated after
            // the fix are of another time line (the fixes' started again): forgotten.
            if let last = self.lastStepTime, last > timeSeconds + self.options.standSeconds { self.rebaseSteps() }
            self.pendingSteps = 0
            self.aheadOfSteps = self.walkedSinceLastStep(speed: speed, time: timeSeconds)
            self.weigh(position: position, accuracy: accuracy, course: course, dt: 0)
            return self.estimate(accuracy: accuracy)
        }
        self.lastTime = timeSeconds
        let walk = self.walked(speed: speed, course: course, dt: dt!, time: timeSeconds)
        self.move(walk, course: course, dt: dt!)
        let unexplained = self.weigh(position: position, accuracy: accuracy, course: course, dt: dt!)
        // Lost: no particle explains the fix, or the bias the particles need to is more than GPS error can be (the
        // walker has left the ways: an open square, a car park).
        if unexplained || self.meanBias().meters > self.options.lostGateFactor * self.gate(accuracy: accuracy) {
            self.lostCount += 1
            if self.lostCount >= self.options.lostPositions {
                guard self.start(at: position, accuracy: accuracy, course: course) else {
                    self.reset()
                    return nil
                }
                self.lastTime = timeSeconds
                self.weigh(position: position, accuracy: accuracy, course: course, dt: 0)
            }
        } else {
            self.lostCount = 0
        }
        let estimate = self.estimate(accuracy: accuracy)
        if let estimate, estimate.sure {
            // The fix's distance across the way, less the noise beside the bias: what the bias is made of.
            let z = self.plane!.project(position), p = self.plane!.project(estimate.point)
            let radians = estimate.directionDegrees * .pi / 180
            let across = (z.east - p.east) * _cos(radians) - (z.north - p.north) * _sin(radians)
            let sample = across * across
            let weight = 1 - _exp(-max(0, dt!) / self.options.learnSeconds)
            self.acrossVariance = self.acrossVariance.map { $0 + weight * (sample - $0) } ?? sample
            if let last = self.lastAcross, timeSeconds - last.timeSeconds <= 2 {
                let lagged = across * last.meters
                self.acrossLagged = self.acrossLagged.map { $0 + weight * (lagged - $0) } ?? lagged
            }
            self.lastAcross = (timeSeconds, across)
        } else {
            self.lastAcross = nil
        }
        return estimate
    }

    /// Particles spread over the ways within reach of `position` (by their length, both directions, the course's
    /// likelier), with no bias learnt yet. False when no way is within reach.
    private mutating func start(at position: Coordinate, accuracy: Double, course: Double?) -> Bool {
        let sigma = self.biasSigma(accuracy: accuracy)
        let reach = min(4 * self.options.searchMeters, max(self.options.searchMeters, 3 * sigma))
        let snaps = self.graph.snaps(near: position, maximumMeters: reach).prefix(64)
        guard !snaps.isEmpty else { return false }
        self.plane = FlatProjection(origin: position)
        self.starts += 1
        self.lostCount = 0
        let lengths = snaps.map { max(0.5, self.graph.segmentLength($0.segment)) }
        let total = lengths.reduce(0, +)
        self.particles = []
        self.particles.reserveCapacity(self.options.particles)
        for index in 0..<self.options.particles {
            // Evenly over the total length (a stratified draw): every way within reach gets its share.
            var pick =
                (Double(index) + Double.random(in: 0..<1, using: &self.random)) / Double(self.options.particles)
                * total
            var which = 0
            while which < lengths.count - 1 && pick > lengths[which] {
                pick -= lengths[which]
                which += 1
            }
            let segment = self.graph.segments[snaps[which].segment]
            let length = self.graph.segmentLength(snaps[which].segment)
            let forward = self.courseFactor(self.bearing(segment.a, segment.b), course)
            let backward = self.courseFactor(self.bearing(segment.b, segment.a), course)
            let ahead = Double.random(in: 0..<1, using: &self.random) * (forward + backward) < forward
            let along = min(length, max(0, pick))
            let scale =
                self.options.odometry == .steps
                ? Self.stepScale(1 + self.random.gaussian(standardDeviation: self.options.stepScaleSigma)) : 1
            self.particles.append(
                Particle(
                    from: ahead ? segment.a : segment.b, to: ahead ? segment.b : segment.a,
                    along: ahead ? along : length - along, length: length, biasEast: 0, biasNorth: 0, logWeight: 0,
                    scale: scale))
        }
        self.biasVariance = sigma * sigma
        return true
    }

    /// The particle on a branch leaving `node` other than toward `avoiding`, drawn by the course, at its start;
    /// back the way it came at a dead end.
    private mutating func branched(_ particle: Particle, at node: Int32, avoiding: Int32, course: Double?) -> Particle {
        var moved = particle
        let onward = self.graph.neighbours(of: node).filter { $0.node != avoiding }
        guard var next = onward.first else {
            moved.from = node
            moved.to = avoiding
            moved.length =
                self.graph.neighbours(of: node).first { $0.node == avoiding }?.lengthMeters ?? particle.length
            moved.along = 0
            return moved
        }
        if onward.count > 1 {
            let factors = onward.map { self.courseFactor(self.bearing(node, $0.node), course) }
            var draw = Double.random(in: 0..<1, using: &self.random) * factors.reduce(0, +)
            for (choice, factor) in zip(onward, factors) {
                next = choice
                draw -= factor
                if draw <= 0 { break }
            }
        }
        moved.from = node
        moved.to = next.node
        moved.length = next.lengthMeters
        moved.along = 0
        return moved
    }

    /// Each particle walks the distance walked (its steps at its own scale, with its error) along its way, taking a
    /// branch at each junction; now and then it turns back.
    private mutating func move(_ walk: Walk, course: Double?, dt: Double) {
        let meters = walk.meters
        let share = walk.fromSteps ? self.options.stepDistanceErrorShare : self.options.distanceErrorShare
        let constant = walk.fromSteps ? self.options.stepDistanceErrorMeters : self.options.distanceErrorMeters
        let turnBack = course == nil ? self.options.turnBackStanding : self.options.turnBackWalking
        for index in self.particles.indices {
            var particle = self.particles[index]
            if Double.random(in: 0..<1, using: &self.random) < turnBack {
                swap(&particle.from, &particle.to)
                particle.along = particle.length - particle.along
            }
            // Walking across its edge near one of its ends: the walker may have turned there (or the particle
            // overshot the junction while the walker slowed to turn). Half such particles take a branch of that node
            // (drawn by the course) when one fits the course better; the rest keep to the edge, and the fixes tell.
            let off = course.map { Angle.separation($0, self.bearing(particle.from, particle.to)) } ?? 0
            if let course, off > 45, Double.random(in: 0..<1, using: &self.random) < 0.5 {
                let reach = meters + self.options.turnReachMeters
                let node: (at: Int32, avoiding: Int32)? =
                    particle.length - particle.along <= reach
                    ? (particle.to, particle.from) : particle.along <= reach ? (particle.from, particle.to) : nil
                if let node {
                    let turned = self.branched(particle, at: node.at, avoiding: node.avoiding, course: course)
                    if Angle.separation(course, self.bearing(turned.from, turned.to)) < off - 20 {
                        particle = turned
                    }
                }
            }
            if walk.fromSteps && walk.steps > 0 {
                particle.scale = Self.stepScale(
                    particle.scale + self.random.gaussian(standardDeviation: self.options.stepScaleDrift))
            }
            let own = walk.steps * particle.scale + walk.other
            let walked =
                own * (1 + self.random.gaussian(standardDeviation: share))
                + self.random.gaussian(standardDeviation: constant)
            if walked < 0 {
                // Back a little along the way (not past its start: a short shuffle, not a turn).
                particle.along = max(0, particle.along + walked)
                self.particles[index] = particle
                continue
            }
            particle.along += walked
            var hops = 0
            while particle.along > particle.length && hops < 64 {
                hops += 1
                let over = particle.along - particle.length
                particle = self.branched(particle, at: particle.to, avoiding: particle.from, course: course)
                particle.along = over
            }
            particle.along = min(particle.along, particle.length)
            self.particles[index] = particle
        }
    }

    /// Weighs every particle by the position (and the course), updates its bias, and resamples when the weight has
    /// gathered on few. True when no particle explains the position within `lostSigmas`.
    @discardableResult
    private mutating func weigh(position: Coordinate, accuracy: Double, course: Double?, dt: Double) -> Bool {
        let sigma = self.biasSigma(accuracy: accuracy)
        let decay = _exp(-max(0, dt) / self.biasSeconds)
        let predicted = decay * decay * self.biasVariance + sigma * sigma * (1 - decay * decay)
        let noise = self.options.noiseSigmaMeters * self.options.noiseSigmaMeters
        let innovationVariance = predicted + noise
        let gain = predicted / innovationVariance
        self.biasVariance = (1 - gain) * predicted
        let z = self.plane!.project(position)
        var best = Double.infinity
        for index in self.particles.indices {
            var particle = self.particles[index]
            let place = self.position(of: particle)
            let east = z.east - place.east - decay * particle.biasEast
            let north = z.north - place.north - decay * particle.biasNorth
            let squared = (east * east + north * north) / innovationVariance
            best = min(best, squared)
            particle.logWeight +=
                -0.5 * squared + _log(self.courseFactor(self.bearing(particle.from, particle.to), course))
            particle.biasEast = decay * particle.biasEast + gain * east
            particle.biasNorth = decay * particle.biasNorth + gain * north
            self.particles[index] = particle
        }
        self.normalise()
        let effective = 1 / self.particles.reduce(0) { $0 + _exp($1.logWeight) * _exp($1.logWeight) }
        if effective < Double(self.particles.count) / 2 { self.resample() }
        return best > self.options.lostSigmas * self.options.lostSigmas
    }

    /// The bias's σ per axis: as learnt across the way where there is enough to learn from (never below a metre or
    /// above the configured σ or the accuracy, whichever more), the configured one before [metres].
    private func biasSigma(accuracy: Double) -> Double {
        let ceiling = max(self.options.biasSigmaMeters, accuracy)
        guard let learnt = self.acrossVariance else { return ceiling }
        return min(ceiling, max(1, learnt.squareRoot()))
    }

    /// The largest bias the estimate is sure with: `gateSigmas` times the bias's σ, at least `gateMeters` [metres].
    private func gate(accuracy: Double) -> Double {
        max(self.options.gateMeters, self.options.gateSigmas * self.biasSigma(accuracy: accuracy))
    }

    /// The bias's correlation time: as learnt from how alike the fixes' distances across the way are a fix apart
    /// (between 2 s and the configured time), the configured one before [seconds].
    private var biasSeconds: Double {
        guard let variance = self.acrossVariance, let lagged = self.acrossLagged, variance > 0 else {
            return self.options.biasTimeConstantSeconds
        }
        let correlation = min(0.999, max(0.01, lagged / variance))
        return min(self.options.biasTimeConstantSeconds, max(2, -1 / _log(correlation)))
    }

    /// The position's error as the particles have it, their weighted mean [metres east, north, and its size].
    private func meanBias() -> (east: Double, north: Double, meters: Double) {
        var east = 0.0, north = 0.0
        for particle in self.particles {
            let weight = _exp(particle.logWeight)
            east += weight * particle.biasEast
            north += weight * particle.biasNorth
        }
        return (east, north, (east * east + north * north).squareRoot())
    }

    /// Log weights so that the weights sum to one.
    private mutating func normalise() {
        let top = self.particles.map(\.logWeight).max() ?? 0
        let sum = self.particles.reduce(0) { $0 + _exp($1.logWeight - top) }
        let offset = top + _log(sum)
        for index in self.particles.indices { self.particles[index].logWeight -= offset }
    }

    /// Systematic resampling: particles in proportion to their weights, with equal weights after.
    private mutating func resample() {
        let count = self.particles.count
        let step = 1 / Double(count)
        var target = Double.random(in: 0..<step, using: &self.random)
        var cumulative = 0.0
        var chosen: [Particle] = []
        chosen.reserveCapacity(count)
        let equal = -_log(Double(count))
        for particle in self.particles {
            cumulative += _exp(particle.logWeight)
            while target < cumulative && chosen.count < count {
                var copy = particle
                copy.logWeight = equal
                chosen.append(copy)
                target += step
            }
        }
        while chosen.count < count {
            var copy = self.particles[self.particles.count - 1]
            copy.logWeight = equal
            chosen.append(copy)
        }
        self.particles = chosen
    }

    /// The way most of the weight is on; the weighted mean place of the particles near it (on it and across the
    /// nodes it ends at, where the ways of a map bend every few metres), placed back on the nearest of their ways;
    /// and the share of the weight that agrees.
    private func estimate(accuracy: Double) -> Estimate? {
        guard !self.particles.isEmpty, let plane = self.plane else { return nil }
        func key(_ p: Particle) -> Int64 {
            let low = min(p.from, p.to), high = max(p.from, p.to)
            return Int64(low) << 32 | Int64(high)
        }
        var weights: [Int64: Double] = [:]
        for particle in self.particles { weights[key(particle), default: 0] += _exp(particle.logWeight) }
        guard let top = weights.max(by: { $0.value < $1.value })?.key else { return nil }
        let places = self.particles.map { self.position(of: $0) }
        func mean(where include: (Int) -> Bool) -> ENU? {
            var east = 0.0, north = 0.0, total = 0.0
            for index in self.particles.indices where include(index) {
                let weight = _exp(self.particles[index].logWeight)
                east += weight * places[index].east
                north += weight * places[index].north
                total += weight
            }
            return total > 0 ? ENU(east: east / total, north: north / total) : nil
        }
        guard let centre = mean(where: { key(self.particles[$0]) == top }) else { return nil }
        let near = 2 * self.options.agreeMeters
        func within(_ index: Int, _ point: ENU, _ radius: Double) -> Bool {
            let de = places[index].east - point.east, dn = places[index].north - point.north
            return de * de + dn * dn <= radius * radius
        }
        let cluster = mean(where: { within($0, centre, near) }) ?? centre
        // Back on the nearest of the cluster's ways, and the direction the weight there travels.
        var best = (distance: Double.infinity, point: cluster, from: Int32(0), to: Int32(0))
        var forward: [Int64: Double] = [:]
        for index in self.particles.indices where within(index, centre, near) {
            let particle = self.particles[index]
            let low = min(particle.from, particle.to)
            forward[key(particle), default: 0] += (particle.from == low ? 1 : -1) * _exp(particle.logWeight)
            let a = self.enu(particle.from), b = self.enu(particle.to)
            let de = b.east - a.east, dn = b.north - a.north
            let length2 = de * de + dn * dn
            let t =
                length2 > 0
                ? min(1, max(0, ((cluster.east - a.east) * de + (cluster.north - a.north) * dn) / length2)) : 0
            let point = ENU(east: a.east + t * de, north: a.north + t * dn)
            let distance =
                ((point.east - cluster.east) * (point.east - cluster.east)
                + (point.north - cluster.north) * (point.north - cluster.north)).squareRoot()
            if distance < best.distance { best = (distance, point, low, max(particle.from, particle.to)) }
        }
        let point = best.point
        // Agreeing on the way: within `agreeMeters` across it, and `alongMeters` along it, of the point.
        let wayEast = self.enu(best.to).east - self.enu(best.from).east
        let wayNorth = self.enu(best.to).north - self.enu(best.from).north
        let wayLength = max(1e-9, (wayEast * wayEast + wayNorth * wayNorth).squareRoot())
        let bias = self.meanBias()
        let biasSigma = self.biasSigma(accuracy: accuracy)
        var share = 0.0
        for index in self.particles.indices {
            let weight = _exp(self.particles[index].logWeight)
            let de = places[index].east - point.east, dn = places[index].north - point.north
            let along = (de * wayEast + dn * wayNorth) / wayLength
            let across = (de * wayNorth - dn * wayEast) / wayLength
            if abs(across) <= self.options.agreeMeters && abs(along) <= self.options.alongMeters { share += weight }
        }
        let low = best.from, high = best.to
        let direction = forward[Int64(low) << 32 | Int64(high), default: 0]
        return Estimate(
            point: plane.unproject(point),
            directionDegrees: direction >= 0 ? self.bearing(low, high) : self.bearing(high, low), share: share,
            sure: share >= self.options.sureShare && bias.meters <= self.gate(accuracy: accuracy),
            biasEast: bias.east, biasNorth: bias.north,
            errorSigmaMeters: (biasSigma * biasSigma + self.options.noiseSigmaMeters * self.options.noiseSigmaMeters)
                .squareRoot())
    }
}
