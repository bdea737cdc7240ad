public import MapLogic
public import Logging
public import NavCore
public import ServiceLifecycle
public import Stages

/// A route controller's settings.
public struct RouteControllerOptions: Sendable {
    /// Where the walker is going.
    public var destination: Coordinate
    /// Tracking thresholds.
    public var tracker = RouteTracker.Options()
    /// The route controller's own settings, each with its key, unit, default and range (the tracker's are in
    /// ``RouteTracker/Options/Setting``).
    public enum Setting {
        public static let turnThresholdDegrees = SettingSpec(
            "turnThresholdDegrees", unit: "°", default: 30.0, in: 5...170,
            "a waypoint goes where the route turns by more")
        public static let republishSeconds = SettingSpec(
            "republishSeconds", unit: "s", default: 5.0, in: 0.5...3600,
            "the route is published again this often (fix time), for late joiners")
        public static let place = SettingDoc(
            key: "place", defaultText: "smoothed", rangeText: "smoothed, ways, network",
            summary:
                "where the walker is taken to be: the smoothed fix as it is; `ways`, placed on the walkable ways of the offline router's map by an online hidden-Markov matcher; `network`, by a particle filter over its walking graph that learns the fix's correlated error and recognises turns from the course (the smoothed fix where it is not sure); the last two need an `osm` router among the providers"
        )
        public static let providerTimeoutSeconds = SettingSpec(
            "providerTimeoutSeconds", unit: "s", default: 10.0, in: 0.1...600,
            "a provider's answer (its own retries included) is awaited this long before the next is asked")
        public static let providerBackoffSeconds = SettingSpec(
            "providerBackoffSeconds", unit: "s", default: 5.0, in: 0...3600,
            "a provider that failed is asked first again after this, doubling with each failure in a row")
        public static let destinationLegMeters = DestinationLeg.Setting.legMeters
        public static let providerBackoffMaxSeconds = SettingSpec(
            "providerBackoffMaxSeconds", unit: "s", default: 300.0, in: 0...86_400,
            "the longest such wait")
        /// The providers after the first, documented beside the numbers.
        public static let fallback = SettingDoc(
            key: "fallback", defaultText: "[]", rangeText: "[{ plugin, settings }]",
            summary: "route providers asked in this order when the stage's own plugin fails or times out")
        /// Where to go, documented beside the numbers.
        public static let destination = SettingDoc(
            key: "destination", defaultText: "required", rangeText: "[latitude, longitude]",
            summary: "where the walker is going")

        /// Every setting of a route stage's `options`, the tracker's among them, in documentation order.
        public static let all: [SettingDoc] =
            [destination] + RouteTracker.Options.Setting.all + [
                place
            ] + NetworkPlace.Options.Setting.all + [
                turnThresholdDegrees.doc, republishSeconds.doc, destinationLegMeters.doc,
                InputTimeGuard.Setting.latenessLimitSeconds.doc, fallback,
                providerTimeoutSeconds.doc, providerBackoffSeconds.doc, providerBackoffMaxSeconds.doc,
            ]
    }

    /// A waypoint goes where the route turns by more than this [degrees].
    public var turnThresholdDegrees = Setting.turnThresholdDegrees.defaultValue
    /// The route is published again this often, in fix time [seconds].
    public var republishSeconds = Setting.republishSeconds.defaultValue
    /// The longest straight last leg from where a router's route ends to the destination [metres].
    public var destinationLegMeters = Setting.destinationLegMeters.defaultValue
    /// A smoothed fix or step later than this behind its stream's usual transit is dropped [seconds]; nil keeps late
    /// ones (a replay's lossless inputs).
    public var latenessLimitSeconds: Double? = InputTimeGuard.Setting.latenessLimitSeconds.defaultValue
    /// After a failed first route, try again this often, in fix time [seconds].
    public var retrySeconds = 5.0
    /// Where the walker is taken to be.
    public enum Place: String, Sendable, CaseIterable {
        /// The smoothed fix as it is.
        case smoothed
        /// The smoothed fix placed on the nearest likely way (``WaysMatcher``).
        case ways
        /// The place on the network (``NetworkPlace``), where it is sure; the smoothed fix elsewhere.
        case network
    }

    /// The walking graph to place the walker on before tracking the route (by ``place``); nil to track the smoothed
    /// position as it is.
    public var ways: WalkingGraph?
    /// The walking graph of the map, when the host has one (its `osm` router's): the route's junctions are found
    /// on it, for the tracker's `junctionChord`.
    public var graph: WalkingGraph?
    /// How the walker is placed (the host gives ``ways`` from its `osm` router for `ways` and `network`).
    public var place = Place.smoothed
    /// The network place's settings.
    public var network = NetworkPlace.Options()
    /// A provider's answer, its own retries included, is awaited this long before the next is asked
    /// [seconds, wall clock].
    public var providerTimeoutSeconds = Setting.providerTimeoutSeconds.defaultValue
    /// When a failed provider is asked first again [seconds, receive time].
    public var providerBackoff = ProviderSchedule.Options(
        backoffSeconds: Setting.providerBackoffSeconds.defaultValue,
        maximumBackoffSeconds: Setting.providerBackoffMaxSeconds.defaultValue)
    /// While a route is awaited, the status says so this often [seconds, receive time].
    public var waitingStatusIntervalSeconds = 1.0
    /// Each new guidance target is sent again this many times, `targetRepeatIntervalSeconds` apart, so that a sink
    /// that has just (re)connected has a target within a fraction of the fix interval [count].
    public var targetRepeats = 3
    /// See `targetRepeats` [seconds].
    public var targetRepeatIntervalSeconds = 0.25

    /// Options for a destination.
    public init(destination: Coordinate) {
        self.destination = destination
    }
}

/// What a route controller reads: smoothed fixes, and the wearer's steps (for the network place).
public enum RouteInput: Sendable {
    case fix(SmoothedFix)
    case step(StepCount)
}

extension Arrival where Value == SmoothedFix {
    /// The same arrival as a route controller's input.
    public var routeInput: Arrival<RouteInput> { self.map { .fix($0) } }
}

/// The route controller ("Group 1"): smoothed fixes (and steps) in; route, progress and guidance target out.
///
/// Routes from the first good fix to the destination, republishes the route periodically so that a late
/// joiner catches up, tracks progress and waypoints, and reroutes when the walker leaves the route.
///
/// Route requests (the first route and every reroute) run beside the fix path: while an engine is slow or silent,
/// every fix is still tracked against the current route and its progress and target published, and the status
/// says what is awaited and for how long. The providers form an ordered list (the stage's own plugin, then its
/// `fallback`): each is given `providerTimeoutSeconds`, then the next is asked; one that failed backs off before it
/// is asked first again (``ProviderSchedule``). An answer is checked against where the walker is by then before it
/// is followed. When every provider fails, the last good route stays in use and the status says so.
public actor RouteControllerStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == Arrival<RouteInput> {
    /// One route asked for.
    struct Request: Sendable {
        /// The first route, or a reroute.
        enum Reason: String, Sendable {
            case route, reroute
            /// What the stage is doing while it waits: "routing", "rerouting".
            var doing: String {
                switch self {
                case .route: "routing"
                case .reroute: "rerouting"
                }
            }
        }

        /// Later requests supersede earlier ones [count].
        var serial: Int
        var start: Coordinate
        var reason: Reason
        /// The fix time of the fix that asked [seconds].
        var fixTimeSeconds: Double
        /// Its receive time [seconds, monotonic].
        var receivedSeconds: Double
    }

    private let name: String
    private let input: Input
    private let output: Output
    private let providers: [any RouteProvider]
    private let options: RouteControllerOptions
    private let logger: Logger
    private var tracker: RouteTracker
    private var matcher: WaysMatcher?
    private var network: NetworkPlace?
    /// Fixes the network place was sure of, and fixes tracked as they were [count].
    private var placedSure = 0
    private var placedUnsure = 0
    /// The network place starts again at the next fix: the walker stalled where it placed them.
    private var restartPlace = false
    private var placeRestartsOnStall = 0
    private var lastMatchTime: Double?
    /// The route's line, for the matcher's test of being on it (made once per route).
    private var line: (routeID: UInt32, line: Polyline)?
    /// Where along the route in force its straight last leg to the destination starts (where the ways end short of
    /// it), when it has one.
    private var lastLeg: (routeID: UInt32, fromMeters: Double)?
    /// Fixes placed on a way, and fixes with no way within reach (tracked as they were) [count].
    private var matched = 0
    private var unmatched = 0
    private var schedule: ProviderSchedule
    private var routeID: UInt32 = 0
    private var lastPublished = -Double.infinity
    private var lastAttempt = -Double.infinity
    private var arrivedReported = false
    private var lastTarget: GuidanceTarget?
    /// The newest fix's turn events, sent again with its target's repeats.
    private var lastTurnEvents: [TurnEvent] = []
    /// Turn events published [count].
    private var turnEvents = 0
    private var repeatsLeft = 0
    private var timeCheck: InputTimeCheck
    /// The newest fix: where the walker is, for checking late answers, and the time base of backoffs.
    private var latest: Arrival<SmoothedFix>?
    /// The request awaited, if any, and the provider being asked.
    private var awaited: Request?
    private var asking = ""
    private var lastWaitingStatus = -Double.infinity
    private var serial = 0
    /// Answers not followed because the walker had moved away from them by the time they came [count].
    private var staleAnswers = 0
    /// Provider failures and timeouts [count].
    private var providerFailures = 0
    private let requests: AsyncStream<Request>
    private let requestSink: AsyncStream<Request>.Continuation
    /// Its status (sent as things change).
    private let reporter: StatusReporter<Output>
    /// Its clocks: the wall clock dates status, the monotonic one times the target's repeat and a provider's answer.
    private let time: StageTime

    /// Creates the stage with an ordered list of providers: the first is asked first.
    public init(
        name: String, input: Input, output: Output, providers: [any RouteProvider], options: RouteControllerOptions,
        logger: Logger,
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }, time: StageTime = .system
    ) {
        precondition(!providers.isEmpty, "a route stage needs a provider")
        self.time = time
        self.reporter = StatusReporter(
            stage: name, output: output, time: time, intervalSeconds: .infinity, inputCounters: inputCounters)
        self.name = name
        self.input = input
        self.output = output
        self.providers = providers
        self.options = options
        self.logger = logger
        self.timeCheck = InputTimeCheck(
            owner: "route '\(name)'", options: .init(latenessLimitSeconds: options.latenessLimitSeconds), logger: logger
        )
        self.tracker = RouteTracker(options: options.tracker)
        if let graph = options.ways {
            switch options.place {
            case .ways: self.matcher = WaysMatcher(graph: graph)
            case .network: self.network = NetworkPlace(graph: graph, options: options.network)
            case .smoothed: break
            }
        }
        self.schedule = ProviderSchedule(names: providers.map(\.name), options: options.providerBackoff)
        (self.requests, self.requestSink) = AsyncStream.makeStream(
            of: Request.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Creates the stage with one provider.
    public init(
        name: String, input: Input, output: Output, provider: any RouteProvider, options: RouteControllerOptions,
        logger: Logger,
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }, time: StageTime = .system
    ) {
        self.init(
            name: name, input: input, output: output, providers: [provider], options: options, logger: logger,
            inputCounters: inputCounters, time: time)
    }

    /// Whether a place on the ways is where they end short of the destination: from there the walker crosses the last
    /// leg, off the ways, and is followed by the smoothed fix (a place held at the ways' end would never reach the
    /// destination, nor turn the target as they walk).
    private func atTheWaysEnd(_ point: Coordinate, on route: Route) -> Bool {
        guard let leg = self.lastLeg, leg.routeID == route.routeID,
            let along = self.routeLine(route).project(point)?.distanceAlongMeters
        else { return false }
        return along >= leg.fromMeters - 1
    }

    private func routeLine(_ route: Route) -> Polyline {
        if let line = self.line, line.routeID == route.routeID { return line.line }
        let line = Polyline(route.points)
        self.line = (route.routeID, line)
        return line
    }

    private var providerList: String { self.providers.map(\.name).joined(separator: ", then ") }

    private func status(_ health: StageHealth, _ message: String) async throws {
        try await self.reporter.publish(
            health, message,
            counters: [
                StatusCounter(name: "routes", value: UInt64(self.routeID)),
                StatusCounter(name: "reroutes", value: UInt64(self.tracker.reroutes)),
                StatusCounter(name: "arrivals_held_for_accuracy", value: UInt64(self.tracker.arrivalsHeldForAccuracy)),
                StatusCounter(name: "provider_failures", value: UInt64(self.providerFailures)),
                StatusCounter(name: "stale_answers", value: UInt64(self.staleAnswers)),
                StatusCounter(name: "turn_events", value: UInt64(self.turnEvents)),
            ]
                + (self.matcher == nil
                    ? []
                    : [
                        StatusCounter(name: "ways.matched", value: UInt64(self.matched)),
                        StatusCounter(name: "ways.unmatched", value: UInt64(self.unmatched)),
                    ])
                + (self.network == nil
                    ? []
                    : [
                        StatusCounter(name: "place.sure", value: UInt64(self.placedSure)),
                        StatusCounter(name: "place.unsure", value: UInt64(self.placedUnsure)),
                        StatusCounter(name: "place.starts", value: UInt64(self.network!.starts)),
                        StatusCounter(name: "place.restarts_on_stall", value: UInt64(self.placeRestartsOnStall)),
                        StatusCounter(name: "place.steps", value: UInt64(self.network!.stepsHeard)),
                    ]),
            timeCheck: self.timeCheck)
    }

    public func run() async throws {
        try await self.status(.running, "waiting for a fix to route from (\(self.providerList))")
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Not the input's `cancelOnGracefulShutdown()`: that sequence reads its base in a task of its own,
                    // which leaves the thread its reader prefers (a composed stage's hub) for every message.
                    try await cancelWhenGracefulShutdown {
                        for try await arrival in self.input {
                            switch arrival.value {
                            case let .fix(fix): try await self.handle(arrival.map { _ in fix })
                            case let .step(step): await self.handle(step: arrival.map { _ in step })
                            }
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await self.time.sleep(.seconds(self.options.targetRepeatIntervalSeconds))
                        try await self.repeatTarget()
                    }
                }
                group.addTask {
                    for await request in self.requests {
                        try await self.serve(request)
                    }
                }
                // The input's end ends the stage.
                try await group.next()
                self.requestSink.finish()
                group.cancelAll()
            }
        } catch is CancellationError {}
    }

    /// Handles one of the wearer's steps: the network place moves with them (dropped, and counted, when its time is
    /// not of its stream's time line).
    public func handle(step arrival: Arrival<StepCount>) {
        guard self.network != nil else { return }
        switch self.timeCheck.admit(arrival, topic: "step", measurementSeconds: arrival.value.timeSeconds) {
        case .accept: self.network!.step(arrival.value)
        case .rebase:
            self.network!.rebaseSteps()
            self.network!.step(arrival.value)
        case .drop: return
        }
    }

    /// Handles one smoothed fix (exposed for in-process composition and tests): its time is checked first
    /// (``InputTimeGuard``), so that a fix dated ahead or before its stream, or arriving later than the lateness
    /// limit (a backlog), is counted and dropped.
    public func handle(_ arrival: Arrival<SmoothedFix>) async throws {
        let fix = arrival.value
        switch self.timeCheck.admit(arrival, topic: "smoothed", measurementSeconds: fix.timeSeconds) {
        case .accept:
            break
        case .rebase:
            self.lastPublished = -.infinity
            self.lastAttempt = -.infinity
        case .drop:
            if self.timeCheck.dropReportDue(at: arrival.receivedSeconds) {
                try await self.status(.degraded, "guiding")
            }
            return
        }
        guard fix.latitude.isFinite, fix.longitude.isFinite else { return }
        self.latest = arrival
        let here = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        if self.tracker.route == nil {
            if self.awaited == nil, fix.timeSeconds - self.lastAttempt >= self.options.retrySeconds {
                self.lastAttempt = fix.timeSeconds
                self.ask(from: here, reason: .route, arrival: arrival)
            }
            // No route yet: say so to the sink on every fix (quiet, not stale).
            try await self.output.publish(
                .target(
                    GuidanceTarget(
                        timeSeconds: fix.timeSeconds, routeID: 0, coordinate: here,
                        bearingDegrees: 0, distanceMeters: 0, kind: .none)))
            try await self.reportWaiting(at: arrival.receivedSeconds)
            return
        }
        // On the ways, when matching: the position a walker following them has, not one beside them. A walker on a
        // way that is not the route's is off the route however near that way runs (a parallel footway, the other
        // side of a street), so that a new route starts along the way they are on.
        var tracked = fix
        var offRouteMeters: Double?
        var witness: RouteTracker.ArrivalWitness?
        if self.matcher != nil {
            let moved = self.lastMatchTime.map { max(0, fix.timeSeconds - $0) * fix.speedMetersPerSecond }
            self.lastMatchTime = fix.timeSeconds
            if let match = self.matcher!.match(here, accuracyMeters: fix.horizontalAccuracyMeters, movedMeters: moved),
                let route = self.tracker.route, !self.atTheWaysEnd(match.point, on: route)
            {
                tracked.latitude = match.point.latitude
                tracked.longitude = match.point.longitude
                let onRouteWay = (self.routeLine(route).project(match.point)?.distanceMeters ?? .infinity) <= 2
                if !onRouteWay { offRouteMeters = 2 }
                self.matched += 1
            } else {
                self.unmatched += 1
            }
        } else if self.network != nil {
            let estimate = self.network!.update(
                timeSeconds: fix.timeSeconds, position: here, accuracyMeters: fix.horizontalAccuracyMeters,
                speedMetersPerSecond: fix.speedMetersPerSecond, courseDegrees: fix.courseDegrees,
                restart: fix.reset || self.restartPlace)
            self.restartPlace = false
            if let estimate, estimate.sure, let route = self.tracker.route,
                !self.atTheWaysEnd(estimate.point, on: route)
            {
                tracked.latitude = estimate.point.latitude
                tracked.longitude = estimate.point.longitude
                witness = RouteTracker.ArrivalWitness(position: here, errorSigmaMeters: estimate.errorSigmaMeters)
                // Sure of a way that is not the route's: off the route, however near that way runs.
                let onRouteWay = (self.routeLine(route).project(estimate.point)?.distanceMeters ?? .infinity) <= 2
                if !onRouteWay { offRouteMeters = 2 }
                self.placedSure += 1
            } else {
                self.placedUnsure += 1
            }
        }
        guard
            let update = self.tracker.update(
                with: tracked, offRouteMeters: offRouteMeters, arrivalWitness: witness),
            let route = self.tracker.route
        else { return }
        if fix.timeSeconds - self.lastPublished >= self.options.republishSeconds {
            self.lastPublished = fix.timeSeconds
            try await self.output.publish(.route(route))
        }
        for index in update.completedWaypoints {
            self.logger.info(
                "waypoint \(index) of route \(route.routeID) reached: \(route.waypoints[index].instruction)")
        }
        try await self.output.publish(.progress(update.progress))
        // Turn events before the target they go with: a sink renders the announcement before the cue that follows it.
        for event in update.turnEvents {
            self.turnEvents += 1
            try await self.output.publish(.turn(event))
        }
        try await self.output.publish(.target(update.target))
        self.lastTarget = update.target
        // The fix's events are sent again with its target's repeats (the sink renders each once).
        self.lastTurnEvents = update.turnEvents
        self.repeatsLeft = self.options.targetRepeats
        if update.arrived && !self.arrivedReported {
            self.arrivedReported = true
            try await self.status(.running, "arrived")
        }
        if let from = update.rerouteFrom {
            // Stalled where the place on the ways put them, twice running (walking back and forth on a way beside
            // the route, which the place took for the route's, with the fix's correlated error across to it; a new
            // route from that place did not help): that place may be on the wrong way. It starts again at the next
            // fix, over the ways around it, and the weight gathers again on the way the walker's course and turns
            // fit. (Measured: at the first stall, it cost as much elsewhere as it saved; the new route from the fix
            // instead of the place did no better.)
            if update.stallsInARow >= 2, self.network != nil, witness != nil {
                self.restartPlace = true
                self.placeRestartsOnStall += 1
            }
            self.ask(from: from, reason: .reroute, arrival: arrival)
            try await self.status(.running, "off route: recalculating (asking \(self.providerList))")
        } else {
            try await self.reportWaiting(at: arrival.receivedSeconds)
        }
    }

    /// Sends the latest target again, unchanged (same time: a sink does not take it for newer data).
    private func repeatTarget() async throws {
        guard self.repeatsLeft > 0, let target = self.lastTarget else { return }
        self.repeatsLeft -= 1
        for event in self.lastTurnEvents { try await self.output.publish(.turn(event)) }
        try await self.output.publish(.target(target))
    }

    /// Queues a request; it supersedes any earlier one.
    private func ask(from start: Coordinate, reason: Request.Reason, arrival: Arrival<SmoothedFix>) {
        self.serial += 1
        let request = Request(
            serial: self.serial, start: start, reason: reason, fixTimeSeconds: arrival.value.timeSeconds,
            receivedSeconds: arrival.receivedSeconds)
        self.awaited = request
        self.lastWaitingStatus = arrival.receivedSeconds
        self.requestSink.yield(request)
    }

    /// While a route is awaited, the status says what for and how long, every `waitingStatusIntervalSeconds`.
    private func reportWaiting(at now: Double) async throws {
        guard let request = self.awaited, now - self.lastWaitingStatus >= self.options.waitingStatusIntervalSeconds
        else { return }
        self.lastWaitingStatus = now
        let waited = fixedDecimal(now - request.receivedSeconds, digits: 1)
        try await self.status(
            .running,
            "\(request.reason.doing): waited \(waited) s for \(self.asking.isEmpty ? "a provider" : self.asking)")
    }

    /// Now, on the time base of backoffs and waits: the newest fix's receive time [seconds, monotonic].
    private func now(for request: Request) -> Double { self.latest?.receivedSeconds ?? request.receivedSeconds }

    /// Asks the providers in turn for one request (the routing task; the fix path goes on meanwhile).
    private func serve(_ request: Request) async throws {
        var failures: [String] = []
        for index in self.schedule.order(at: self.now(for: request)) {
            guard self.awaited?.serial == request.serial else { return }  // superseded
            let provider = self.providers[index]
            self.asking = provider.name
            let waited = fixedDecimal(max(0, self.now(for: request) - request.receivedSeconds), digits: 1)
            try await self.status(
                failures.isEmpty ? .running : .degraded,
                "\(request.reason.doing): asking \(provider.name), waited \(waited) s"
                    + (failures.isEmpty ? "" : " (\(failures.joined(separator: "; ")))"))
            do {
                let (plan, lastLegFrom) = try self.reachingTheDestination(
                    try await Self.plan(
                        provider, from: request.start, to: self.options.destination,
                        timeoutSeconds: self.options.providerTimeoutSeconds, time: self.time),
                    by: provider)
                self.schedule.succeeded(index)
                try await self.follow(
                    plan, lastLegFrom: lastLegFrom, by: provider.name, for: request, after: failures)
                return
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                self.providerFailures += 1
                let wait = self.schedule.failed(index, at: self.now(for: request))
                let reason = "\(error)"
                failures.append(reason.hasPrefix(provider.name) ? reason : "\(provider.name): \(reason)")
                self.logger.warning(
                    "\(request.reason) from \(request.start.latitude), \(request.start.longitude) by \(provider.name) failed: \(error); asked first again in \(fixedDecimal(wait, digits: 0)) s"
                )
            }
        }
        guard self.awaited?.serial == request.serial else { return }
        self.awaited = nil
        self.asking = ""
        if request.reason == .reroute { self.tracker.rerouteFailed() }
        let summary = failures.joined(separator: "; ")
        self.logger.warning("\(request.reason) failed: \(summary)")
        try await self.status(
            .degraded,
            "\(request.reason) failed: \(summary)" + (self.tracker.route != nil ? "; keeping the last route" : ""))
    }

    /// One provider's answer within a deadline (on the stage's monotonic clock); the provider's call is cancelled at
    /// the deadline.
    private static func plan(
        _ provider: any RouteProvider, from start: Coordinate, to destination: Coordinate, timeoutSeconds: Double,
        time: StageTime
    ) async throws -> RoutePlan {
        try await withThrowingTaskGroup(of: RoutePlan?.self) { group in
            group.addTask { try await provider.route(from: start, to: destination) }
            group.addTask {
                try await time.sleep(.seconds(timeoutSeconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let plan = first else {
                throw RoutingError.providerFailed(
                    reason: "\(provider.name) did not answer within \(fixedDecimal(timeoutSeconds, digits: 1)) s")
            }
            return plan
        }
    }

    /// A router's route as the walker follows it (``DestinationLeg``): as it is, or with a straight last leg to the
    /// destination (and where along the route that leg starts); refused when it ends too far from the destination.
    private func reachingTheDestination(
        _ plan: RoutePlan, by provider: any RouteProvider
    ) throws(RoutingError) -> (plan: RoutePlan, lastLegFrom: Double?) {
        let reached = try DestinationLeg.reaching(
            self.options.destination, by: plan, routesToTheDestination: provider.routesToTheDestination,
            arrivalRadiusMeters: self.options.tracker.arrivalRadiusMeters,
            legMeters: self.options.destinationLegMeters, provider: provider.name)
        if let leg = reached.lastLeg {
            self.logger.info(
                "\(provider.name)'s route ends \(Int(leg.lengthMeters.rounded())) m from the destination: a straight last leg to it, off the ways"
            )
        }
        return (reached.plan, reached.lastLeg?.fromMeters)
    }

    /// Follows an answer, unless the walker has since moved away from it (then asks again from where they are).
    private func follow(
        _ plan: RoutePlan, lastLegFrom: Double?, by provider: String, for request: Request, after failures: [String]
    ) async throws {
        guard self.awaited?.serial == request.serial else { return }  // superseded while it was asked
        self.awaited = nil
        self.asking = ""
        if let latest = self.latest, self.movedAway(from: plan, since: request, now: latest.value) {
            self.staleAnswers += 1
            let here = Coordinate(latitude: latest.value.latitude, longitude: latest.value.longitude)
            self.logger.info("\(request.reason) by \(provider) came after the walker moved away from it: asking again")
            self.ask(from: here, reason: request.reason, arrival: latest)
            return
        }
        let time = self.latest?.value.timeSeconds ?? request.fixTimeSeconds
        self.routeID += 1
        let route = RouteBuilder.route(
            from: plan, routeID: self.routeID, timeSeconds: time, provider: provider,
            turnThresholdDegrees: self.options.turnThresholdDegrees)
        self.lastLeg = lastLegFrom.map { (self.routeID, $0) }
        self.tracker.setRoute(
            route,
            junctions: self.options.graph?.routeJunctions(
                along: route.points, branchMeters: self.options.tracker.chordMeters) ?? [])
        self.lastPublished = time
        try await self.output.publish(.route(route))
        let fellBack = failures.isEmpty ? "" : " (after \(failures.joined(separator: "; ")))"
        self.logger.info(
            "\(request.reason) \(route.routeID) by \(provider): \(Int(route.lengthMeters)) m, \(route.waypoints.count) waypoints\(fellBack)"
        )
        try await self.status(
            failures.isEmpty ? .running : .degraded,
            "\(request.reason) \(route.routeID) by \(provider): \(Int(route.lengthMeters)) m\(fellBack)")
    }

    /// Whether the walker is now further from a new route than where it was asked from, by more than the off-route
    /// distance: a route that came too late to be followed from here.
    private func movedAway(from plan: RoutePlan, since request: Request, now fix: SmoothedFix) -> Bool {
        let line = Polyline(plan.points)
        let here = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        guard let now = line.project(here), let then = line.project(request.start) else { return false }
        return now.distanceMeters
            > then.distanceMeters + self.options.tracker.offRouteThreshold(accuracyMeters: fix.horizontalAccuracyMeters)
    }
}
