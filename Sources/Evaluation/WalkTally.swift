import NavCore

/// A walk's figures as it goes: the cues felt, the estimate's error, how far off the route the walker went, the
/// branches taken at junctions on the route, and the arrival; then the ``WalkerEvaluation/Walk`` they make.
struct WalkTally {
    private var lastKind: CueKind = .silent
    private var turnOnsets = 0
    private var wrongWayCues = 0
    private var worstOffMeters = 0.0
    private var squaredErrors: [Double] = []
    /// The route controller's place against the walker's, along the route and across it [metres].
    private var alongErrors: [Double] = []
    private var placeErrors: [Double] = []
    /// From each heading sent to its cue's arrival [ms].
    var latenciesMilliseconds: [Double] = []
    private var judgedChoices = 0
    private var junctionsOnRoute = 0
    private var wrongJunctions: [WalkerEvaluation.WrongJunction] = []
    /// Turn events felt [count].
    private var turnEvents = 0
    private var arrivedNear = false
    private var arrivedFar = false
    /// The last place error along the route and the walker's last distance from it, for the turn-arounds' context.
    private var lastAlongError = Double.nan
    private var lastOffMeters = Double.nan
    private var turnArounds: [WalkerEvaluation.TurnAround] = []
    /// When the walker first came within 5 m of the destination [seconds into the walk], and the arrival cue's time.
    private var nearDestinationAt: Double?
    private var arrivalAt: Double?

    /// The cue in force at a step: a turn cue's onset, a turn-around's onset.
    mutating func felt(_ kind: CueKind, at seconds: Double) {
        let isTurn = [.turnLeft, .turnRight, .turnAround].contains(kind)
        if isTurn && kind != self.lastKind { self.turnOnsets += 1 }
        if kind == .turnAround && self.lastKind != .turnAround {
            self.wrongWayCues += 1
            self.turnArounds.append(
                WalkerEvaluation.TurnAround(
                    atSeconds: seconds,
                    alongErrorMeters: self.lastAlongError.isFinite ? (self.lastAlongError * 10).rounded() / 10 : nil,
                    offRouteMeters: self.lastOffMeters.isFinite ? (self.lastOffMeters * 10).rounded() / 10 : nil))
        }
        self.lastKind = kind
    }

    /// Turn events felt (as the sink rendered them).
    mutating func heard(_ events: [TurnEvent]) {
        self.turnEvents += events.count
    }

    /// A smoothed fix against where the walker truly was.
    mutating func estimated(_ fix: SmoothedFix, truth: Coordinate) {
        let error = FlatProjection.distance(truth, Coordinate(latitude: fix.latitude, longitude: fix.longitude))
        self.squaredErrors.append(error * error)
    }

    /// The route controller's progress (where it places the walker on the route in force, `line`) against where the
    /// walker truly was: the error along the route, and the whole error (along and across).
    mutating func placed(_ progress: RouteProgress, truth: Coordinate, on line: Polyline) {
        let along = progress.distanceAlongMeters
        guard let projection = line.project(truth, alongRange: (along - 50)...(along + 50)) ?? line.project(truth)
        else { return }
        let alongError = along - projection.distanceAlongMeters
        let acrossError = progress.crossTrackMeters - projection.crossTrackMeters
        self.alongErrors.append(alongError)
        self.lastAlongError = alongError
        self.placeErrors.append((alongError * alongError + acrossError * acrossError).squareRoot())
    }

    /// Where the walker is, against the route in force.
    mutating func track(_ position: Coordinate, on line: Polyline) {
        if let projection = line.project(position) {
            self.worstOffMeters = max(self.worstOffMeters, projection.distanceMeters)
            self.lastOffMeters = projection.distanceMeters
        }
    }

    /// The branches chosen since the last call, each judged against the route in force (a junction off the route
    /// counts nothing).
    mutating func judge(_ choices: [NetworkParticipant.Choice], against line: Polyline?, at seconds: Double) {
        guard choices.count > self.judgedChoices else { return }
        for choice in choices[self.judgedChoices...] {
            guard let line, let kept = WalkerEvaluation.keptToRoute(choice, line: line) else { continue }
            self.junctionsOnRoute += 1
            if !kept {
                self.wrongJunctions.append(
                    WalkerEvaluation.WrongJunction(
                        latitude: choice.junction.latitude, longitude: choice.junction.longitude, atSeconds: seconds,
                        stopped: choice.stopped, basis: choice.basis))
            }
        }
        self.judgedChoices = choices.count
    }

    /// Where the walker is against the destination: the first time they come within 5 m of it.
    mutating func approach(_ position: Coordinate, destination: Coordinate, at seconds: Double) {
        if self.nearDestinationAt == nil && FlatProjection.distance(position, destination) <= 5 {
            self.nearDestinationAt = seconds
        }
    }

    /// The arrival cue, where the walker was when it came: an arrival within 10 m, or a false one.
    mutating func arrived(at position: Coordinate, destination: Coordinate, at seconds: Double) {
        self.approach(position, destination: destination, at: seconds)
        self.arrivedNear = FlatProjection.distance(position, destination) <= 10
        self.arrivedFar = !self.arrivedNear
        self.arrivalAt = seconds
    }

    /// The walk these figures make.
    func walk(
        route: Int, seed: UInt64, condition: String, firstRoute: Route?, reroutes: Int, seconds: Double,
        speedMetersPerSecond: Double, timeouts: Int
    ) -> WalkerEvaluation.Walk {
        var walk = WalkerEvaluation.Walk(
            route: route, seed: seed, condition: condition, arrived: self.arrivedNear,
            onRoute: self.worstOffMeters <= 10 && firstRoute != nil, maximumOffRouteMeters: self.worstOffMeters,
            turnOnsets: self.turnOnsets, wrongWayCues: self.wrongWayCues, reroutes: reroutes, seconds: seconds,
            routeSeconds: (firstRoute?.lengthMeters ?? 0) / speedMetersPerSecond,
            smoothedRMSMeters: self.squaredErrors.isEmpty
                ? .nan : (self.squaredErrors.reduce(0, +) / Double(self.squaredErrors.count)).squareRoot(),
            latenciesMilliseconds: self.latenciesMilliseconds, timeouts: timeouts)
        walk.falseArrival = self.arrivedFar
        walk.junctionsOnRoute = self.junctionsOnRoute
        walk.wrongBranches = self.wrongJunctions.count
        walk.wrongJunctions = self.wrongJunctions
        walk.turnArounds = self.turnArounds
        walk.turnEvents = self.turnEvents
        // From within 5 m of the destination to the arrival cue, or to the walk's end without it.
        walk.destinationWaitSeconds = self.nearDestinationAt.map { max(0, (self.arrivalAt ?? seconds) - $0) }
        walk.alongErrorsMeters = self.alongErrors.map { ($0 * 100).rounded() / 100 }
        walk.placeErrorsMeters = self.placeErrors.map { ($0 * 100).rounded() / 100 }
        return walk
    }
}
