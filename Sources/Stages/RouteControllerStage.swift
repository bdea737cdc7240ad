public import Logging
public import NavCore
public import ServiceLifecycle

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
        /// Where to go, documented beside the numbers.
        public static let destination = SettingDoc(
            key: "destination", defaultText: "required", rangeText: "[latitude, longitude]",
            summary: "where the walker is going")

        /// Every setting of a route stage's `options`, the tracker's among them, in documentation order.
        public static let all: [SettingDoc] =
            [destination] + RouteTracker.Options.Setting.all + [turnThresholdDegrees.doc, republishSeconds.doc]
    }

    /// A waypoint goes where the route turns by more than this [degrees].
    public var turnThresholdDegrees = Setting.turnThresholdDegrees.defaultValue
    /// The route is published again this often, in fix time [seconds].
    public var republishSeconds = Setting.republishSeconds.defaultValue
    /// After a failed first route, try again this often, in fix time [seconds].
    public var retrySeconds = 5.0
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

/// The route controller ("Group 1"): smoothed fixes in; route, progress and guidance target out.
///
/// Routes from the first good fix to the destination, republishes the route periodically so that a late
/// joiner catches up, tracks progress and waypoints, and reroutes when the walker leaves the route. When the
/// provider fails (an engine down or slow), the last good route stays in use and the status says so.
public actor RouteControllerStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == Arrival<SmoothedFix> {
    private let name: String
    private let input: Input
    private let output: Output
    private let provider: any RouteProvider
    private let options: RouteControllerOptions
    private let logger: Logger
    private var tracker: RouteTracker
    private var routeID: UInt32 = 0
    private var lastPublished = -Double.infinity
    private var lastAttempt = -Double.infinity
    private var arrivedReported = false
    private var lastTarget: GuidanceTarget?
    private var repeatsLeft = 0
    private var timeCheck: InputTimeCheck
    /// The transport's counters for this stage's input (bad frames, gaps), for status.
    private let inputCounters: @Sendable () -> [StatusCounter]

    /// Creates the stage.
    public init(
        name: String, input: Input, output: Output, provider: any RouteProvider, options: RouteControllerOptions,
        logger: Logger,
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }
    ) {
        self.inputCounters = inputCounters
        self.name = name
        self.input = input
        self.output = output
        self.provider = provider
        self.options = options
        self.logger = logger
        self.timeCheck = InputTimeCheck(
            owner: "route '\(name)'", options: .init(latenessLimitSeconds: nil), logger: logger)
        self.tracker = RouteTracker(options: options.tracker)
    }

    private func status(_ health: StageHealth, _ message: String) async throws {
        try await self.output.publish(
            .status(
                StageStatus(
                    timeSeconds: WallClock.nowSeconds(), stage: self.name, health: health, message: message,
                    counters: [
                        StatusCounter(name: "routes", value: UInt64(self.routeID)),
                        StatusCounter(name: "reroutes", value: UInt64(self.tracker.reroutes)),
                    ]
                        + self.timeCheck.statusCounters + self.inputCounters())))
    }

    public func run() async throws {
        try await self.status(.running, "waiting for a fix to route from (\(self.provider.name))")
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await arrival in self.input.cancelOnGracefulShutdown() {
                        try await self.handle(arrival)
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(self.options.targetRepeatIntervalSeconds))
                        try await self.repeatTarget()
                    }
                }
                // The input's end ends the stage.
                try await group.next()
                group.cancelAll()
            }
        } catch is CancellationError {}
    }

    /// Handles one smoothed fix (exposed for in-process composition and tests): its time is checked first
    /// (``InputTimeGuard``), so that a fix dated ahead or before its stream is counted and dropped.
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
                try await self.status(.degraded, "guiding; \(self.timeCheck.dropSummary)")
            }
            return
        }
        guard fix.latitude.isFinite, fix.longitude.isFinite else { return }
        let here = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
        if self.tracker.route == nil {
            guard fix.timeSeconds - self.lastAttempt >= self.options.retrySeconds else { return }
            self.lastAttempt = fix.timeSeconds
            guard try await self.makeRoute(from: here, at: fix.timeSeconds, reason: "route") else {
                try await self.output.publish(
                    .target(
                        GuidanceTarget(
                            timeSeconds: fix.timeSeconds, routeID: 0, coordinate: here,
                            bearingDegrees: 0, distanceMeters: 0, kind: .none)))
                return
            }
        }
        guard let update = self.tracker.update(with: fix), let route = self.tracker.route else { return }
        if fix.timeSeconds - self.lastPublished >= self.options.republishSeconds {
            self.lastPublished = fix.timeSeconds
            try await self.output.publish(.route(route))
        }
        for index in update.completedWaypoints {
            self.logger.info(
                "waypoint \(index) of route \(route.routeID) reached: \(route.waypoints[index].instruction)")
        }
        try await self.output.publish(.progress(update.progress))
        try await self.output.publish(.target(update.target))
        self.lastTarget = update.target
        self.repeatsLeft = self.options.targetRepeats
        if update.arrived && !self.arrivedReported {
            self.arrivedReported = true
            try await self.status(.running, "arrived")
        }
        if let from = update.rerouteFrom {
            try await self.status(.running, "off route: recalculating")
            if try await !self.makeRoute(from: from, at: fix.timeSeconds, reason: "reroute") {
                self.tracker.rerouteFailed()
            }
        }
    }

    /// Sends the latest target again, unchanged (same time: a sink does not take it for newer data).
    private func repeatTarget() async throws {
        guard self.repeatsLeft > 0, let target = self.lastTarget else { return }
        self.repeatsLeft -= 1
        try await self.output.publish(.target(target))
    }

    /// Asks the provider; on success follows and publishes the new route. Returns whether it worked.
    private func makeRoute(from start: Coordinate, at time: Double, reason: String) async throws -> Bool {
        do {
            let plan = try await self.provider.route(from: start, to: self.options.destination)
            self.routeID += 1
            let route = RouteBuilder.route(
                from: plan, routeID: self.routeID, timeSeconds: time, provider: self.provider.name,
                turnThresholdDegrees: self.options.turnThresholdDegrees)
            self.tracker.setRoute(route)
            self.lastPublished = time
            try await self.output.publish(.route(route))
            self.logger.info(
                "\(reason) \(route.routeID) by \(self.provider.name): \(Int(route.lengthMeters)) m, \(route.waypoints.count) waypoints"
            )
            try await self.status(.running, "\(reason) \(route.routeID): \(Int(route.lengthMeters)) m")
            return true
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            self.logger.warning("\(reason) failed: \(error)")
            try await self.status(
                .degraded, "\(reason) failed: \(error)" + (self.tracker.route != nil ? "; keeping the last route" : ""))
            return false
        }
    }
}
