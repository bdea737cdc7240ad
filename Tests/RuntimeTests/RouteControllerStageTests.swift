import FoundationEssentials
import Glibc
import Links
import Logging
import NavCore
import Routers
import Stages
import TestSupport
import Testing
import MapLogic
import StageRoute

/// A walker's smoothed fix at `position`, with fix time and receive time `time`.
private func fix(_ position: Coordinate, at time: Double, course: Double = 90) -> Arrival<SmoothedFix> {
    Arrival(
        SmoothedFix(
            timeSeconds: time, latitude: position.latitude, longitude: position.longitude,
            horizontalAccuracyMeters: 3, speedMetersPerSecond: 1.4, courseDegrees: course, reset: false),
        sender: "smoother", receivedSeconds: time)
}

private func moved(_ from: Coordinate, _ bearing: Double, _ meters: Double) -> Coordinate {
    Geodesic.wgs84.direct(from: from, azimuthDegrees: bearing, distanceMeters: meters).coordinate
}

/// A routing engine that accepts connections and never answers: a real listening TCP socket on loopback whose
/// connections the kernel completes and nobody reads.
private final class SilentEngine: Sendable {
    let descriptor: Int32
    let url: String

    init() throws {
        let (fd, port) = Loopback.boundSocket()
        guard fd >= 0, listen(fd, 64) == 0 else { throw TestProcessError("listen on 127.0.0.1 failed") }
        self.descriptor = fd
        self.url = "http://127.0.0.1:\(port)"
    }

    deinit { close(self.descriptor) }
}

/// A provider whose first answer waits until the test opens its gate; later answers come at once. Routes are
/// straight lines from the start to the destination.
private final class GatedProvider: RouteProvider, @unchecked Sendable {
    static let id = "gated"
    let name = "gated"
    private let gate: AsyncStream<Void>
    let open: AsyncStream<Void>.Continuation
    private let firstCall = FirstCall()

    init() {
        (self.gate, self.open) = AsyncStream.makeStream(of: Void.self)
    }

    func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        if self.firstCall.takeFirst() {
            for await _ in self.gate { break }
        }
        return RoutePlan(points: [start, destination])
    }
}

/// True once, then false: which call is the first.
private final class FirstCall: @unchecked Sendable {
    private var taken = false
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&self.mutex, nil) }
    func takeFirst() -> Bool {
        pthread_mutex_lock(&self.mutex)
        defer { pthread_mutex_unlock(&self.mutex) }
        let first = !self.taken
        self.taken = true
        return first
    }
}

@Suite struct RouteControllerStageTests {
    private static func routes(_ messages: [BusMessage]) -> [Route] {
        messages.compactMap { if case let .route(r) = $0 { r } else { nil } }
    }
    private static func statuses(_ messages: [BusMessage]) -> [StageStatus] {
        messages.compactMap { if case let .status(s) = $0 { s } else { nil } }
    }
    private static func targets(_ messages: [BusMessage]) -> [GuidanceTarget] {
        messages.compactMap { if case let .target(g) = $0 { g } else { nil } }
    }
    private static func progress(_ messages: [BusMessage]) -> [RouteProgress] {
        messages.compactMap { if case let .progress(p) = $0 { p } else { nil } }
    }

    /// Runs a route stage over `fixes`: the first asks for the route, the rest follow once what the stage published
    /// meets `condition` or `within` seconds passed; whether it did, and what the stage published.
    private static func run(
        _ fixes: [Arrival<SmoothedFix>], provider: any RouteProvider, options: RouteControllerOptions,
        within seconds: Double = 60, until condition: ([BusMessage]) -> Bool
    ) async throws -> (met: Bool, messages: [BusMessage]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival<RouteInput>.self)
        let output = MemoryPublisher()
        let stage = RouteControllerStage(
            name: "route", input: stream, output: output, provider: provider, options: options,
            logger: Logger(label: "test"))
        async let running: Void = stage.run()
        continuation.yield(fixes[0].routeInput)
        let met = await eventually(within: seconds) { condition(await output.messages) }
        for arrival in fixes.dropFirst() { continuation.yield(arrival.routeInput) }
        continuation.finish()
        try await running
        return (met, await output.messages)
    }

    /// Runs a route stage over `fixes`: the first asks for the route, the rest follow once it has come; what the
    /// stage published.
    private static func walk(
        _ fixes: [Arrival<SmoothedFix>], provider: any RouteProvider, options: RouteControllerOptions
    ) async throws -> [BusMessage] {
        // The route is asked for beside the fix path: the first fix asks, the route comes a moment later. (The bound
        // is generous: when the whole test run starts, the pool's two threads can be busy for fifteen seconds.)
        let (routed, messages) = try await Self.run(fixes, provider: provider, options: options) {
            !Self.routes($0).isEmpty
        }
        #expect(routed)
        return messages
    }

    /// Runs a route stage over `fixes` until its status is degraded (a provider failed or was refused), as `run`.
    private static func untilDegraded(
        _ fixes: [Arrival<SmoothedFix>], provider: any RouteProvider, options: RouteControllerOptions,
        within seconds: Double
    ) async throws -> (degraded: Bool, messages: [BusMessage]) {
        let (degraded, messages) = try await Self.run(fixes, provider: provider, options: options, within: seconds) {
            Self.statuses($0).contains { $0.health == .degraded }
        }
        return (degraded, messages)
    }

    @Test func routesFromTheFirstFixTracksProgressAndArrivesOnce() async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let corner = moved(start, 90, 120)
        let end = moved(corner, 0, 80)
        let provider = FileRouteProvider(plan: RoutePlan(points: [start, corner, end]))
        var fixes: [Arrival<SmoothedFix>] = []
        var t = 0.0
        var position = start
        for (bearing, meters) in [(90.0, 120.0), (0.0, 85.0)] {
            for _ in 0..<Int(meters / 1.4) {
                position = moved(position, bearing, 1.4)
                t += 1
                fixes.append(fix(position, at: t, course: bearing))
            }
        }
        let messages = try await Self.walk(
            fixes, provider: provider, options: RouteControllerOptions(destination: end))
        let routes = Self.routes(messages)
        let progress = messages.compactMap { if case let .progress(p) = $0 { p } else { nil } }
        #expect(!routes.isEmpty && routes.allSatisfy { $0.routeID == 1 }, "one route, republished")
        #expect(routes.count >= 2, "republished for late joiners")
        #expect(progress.count == fixes.count - 1)
        #expect(progress.filter { $0.state == .arrived }.count >= 1)
        #expect(progress.first { $0.state == .arrived }.map { $0.distanceRemainingMeters < 6 } == true)
        #expect(Self.targets(messages).last?.kind == .arrived)
        #expect(Self.statuses(messages).filter { $0.message == "arrived" }.count == 1)
    }

    /// A backlog (the smoother paused, or a link that healed, for five seconds): the fixes it held arrive together,
    /// each sent when it was current. Those later than the lateness limit are dropped and counted, so that no target
    /// or progress is built from where the walker was seconds ago while looking current to the haptic stage; the
    /// walk goes on from the first fix within the limit.
    @Test func fixesThatArriveLateFromABacklogAreDroppedAndCounted() async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let end = moved(start, 90, 200)
        let provider = FileRouteProvider(plan: RoutePlan(points: [start, end]))
        let epoch = 1_800_000_000.0  // the sender's wall clock at fix time 0
        var fixes: [Arrival<SmoothedFix>] = []
        for second in 1...30 {
            let t = Double(second)
            var arrival = fix(moved(start, 90, 1.4 * t), at: t)
            // Fixes 16-20 arrive together at 20.5 s: 4.5, 3.5, 2.5, 1.5 and 0.5 s late.
            arrival.receivedSeconds = (16...20).contains(second) ? 20.5 : t
            arrival.sentSeconds = epoch + t - 0.01
            fixes.append(arrival)
        }
        var options = RouteControllerOptions(destination: end)
        options.latenessLimitSeconds = 2
        let messages = try await Self.walk(fixes, provider: provider, options: options)
        let progressTimes = Set(Self.progress(messages).map(\.timeSeconds))
        let targetTimes = Set(Self.targets(messages).map(\.timeSeconds))
        for late in [16.0, 17, 18] {
            #expect(!progressTimes.contains(late) && !targetTimes.contains(late), "nothing built from fix \(late)")
        }
        for current in [15.0, 19, 20, 21, 30] {
            #expect(progressTimes.contains(current), "the fix at \(current) s is followed")
        }
        // The first drop is said at once (later ones within the second are counted for the next status).
        let report = Self.statuses(messages).first { $0.health == .degraded }
        #expect(report?.message == "guiding; dropped 1 arrived late")
        #expect(report?.counters.first { $0.name == "time.dropped.late" }?.value == 1)
    }

    /// Placed on the ways (`place: ways`, and as much `network`), fixes that stray 6 m to either side of a street the route follows are followed on it
    /// (cross-track 0 while the smoothed position is 6 m off).
    @Test(arguments: [RouteControllerOptions.Place.ways, .network])
    func placedOnTheWaysAFixBesideTheRouteIsFollowedOnTheWay(place: RouteControllerOptions.Place) async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let nodes = (0...20).map { moved(start, 90, Double($0) * 10) }
        let graph = WalkingGraph(
            nodes: nodes, edges: (0..<20).map { (Int32($0), Int32($0 + 1), Int32(-1)) }, names: [], warnings: [])
        let provider = FileRouteProvider(plan: RoutePlan(points: [nodes[0], nodes[20]]))
        var fixes: [Arrival<SmoothedFix>] = []
        for step in 0..<120 {
            let along = moved(start, 90, 10 + Double(step) * 1.4)
            fixes.append(fix(moved(along, step % 2 == 0 ? 0 : 180, 6), at: Double(step + 1)))
        }
        var options = RouteControllerOptions(destination: nodes[20])
        options.ways = graph
        options.place = place
        let messages = try await Self.walk(fixes, provider: provider, options: options)
        let progress = messages.compactMap { if case let .progress(p) = $0 { p } else { nil } }
        #expect(progress.count > 100)
        // The route starts at the first fix, 6 m off the street: past its first few metres, every fix is on the way.
        let crossTrack = progress.dropFirst(5).map { abs($0.crossTrackMeters) }
        // The network place says where it is not sure (then the smoothed fix is followed): almost never here.
        let onWay = crossTrack.filter { $0 < 0.5 }.count
        #expect(
            crossTrack.count > 100 && Double(onWay) >= (place == .ways ? 1 : 0.95) * Double(crossTrack.count),
            "\(crossTrack.count - onWay) of \(crossTrack.count) fixes beside the way, up to \(crossTrack.max() ?? -1) m"
        )
    }

    /// Placed on the route's way by the network place while pacing back and forth on it without getting along (as a
    /// walker does on a way beside the route that the place took for it): the first stall asks for a new route; the
    /// second in a row, on the new route, starts the place again (its status counts it).
    @Test func stallingTwiceInARowStartsTheNetworkPlaceAgain() async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let nodes = (0...20).map { moved(start, 90, Double($0) * 10) }
        var options = RouteControllerOptions(destination: nodes[20])
        options.ways = WalkingGraph(
            nodes: nodes, edges: (0..<20).map { (Int32($0), Int32($0 + 1), Int32(-1)) }, names: [], warnings: [])
        options.place = .network
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival<RouteInput>.self)
        let output = MemoryPublisher()
        let stage = RouteControllerStage(
            name: "route", input: stream, output: output,
            provider: FileRouteProvider(plan: RoutePlan(points: [nodes[0], nodes[20]])), options: options,
            logger: Logger(label: "test"))
        async let running: Void = stage.run()
        func restarts() async -> UInt64 {
            Self.statuses(await output.messages).compactMap {
                $0.counters.first { $0.name == "place.restarts_on_stall" }?.value
            }.max() ?? 0
        }
        func routeIDs() async -> Set<UInt32> { Set(Self.routes(await output.messages).map(\.routeID)) }
        var time = 0.0
        var asked = 1
        pacing: for leg in 0..<12 {
            for step in 0..<10 {
                let east = leg % 2 == 0 ? Double(step) * 1.3 : Double(9 - step) * 1.3
                time += 1
                continuation.yield(fix(moved(start, 90, east), at: time, course: leg % 2 == 0 ? 90 : 270).routeInput)
                // Each fix handled (and each route asked for come) before the next: the stage's time is the fixes'.
                // The bound only ends a test that hangs: at the suite's start, every suite's tasks on the two
                // cores' pool, the first fix once waited more than 30 s (in the project's CI).
                let handled = await eventually(within: 120) {
                    let routes = await routeIDs()
                    return Self.progress(await output.messages).count >= Int(time) - 1 && routes.count >= asked
                }
                guard handled else {
                    Issue.record(
                        "fix \(Int(time)) not handled: \(Self.progress(await output.messages).count) progress, routes \(await routeIDs()), \(asked) asked"
                    )
                    break pacing
                }
                let recalculating = Self.statuses(await output.messages).filter {
                    $0.message.hasPrefix("off route: recalculating")
                }.count
                asked = 1 + recalculating
            }
        }
        continuation.finish()
        try await running
        #expect(asked >= 3, "two stalls, each asking for a new route")
        let restarted = await restarts()
        #expect(restarted >= 1)
    }

    @Test func anEngineThatIsDownLeavesAClearStatusAndNoTarget() async throws {
        // Nothing listens on this port: the client retries, then gives up with a clear status.
        let provider = try EngineRouteProvider(.valhalla, url: "http://127.0.0.1:9", timeoutSeconds: 0.5, retries: 1)
        // The stage gives the engine 2 s (not the default 10); the wait is long, since on a loaded machine (the whole
        // suite starting at once on two cores) the status came after more than 20 s.
        var options = RouteControllerOptions(destination: Coordinate(latitude: 43.74, longitude: 7.42))
        options.providerTimeoutSeconds = 2
        let (failed, messages) = try await Self.untilDegraded(
            [fix(Coordinate(latitude: 43.73, longitude: 7.42), at: 1)], provider: provider, options: options,
            within: 90)
        let degraded = Self.statuses(messages).filter { $0.health == .degraded }
        #expect(failed)
        #expect(degraded.first?.message.contains("did not answer") == true, "\(degraded)")
        #expect(degraded.first?.message.contains("valhalla") == true, "names the engine: \(degraded)")
        #expect(Self.targets(messages).allSatisfy { $0.kind == .none })
    }

    /// The bundled Monaco map as the offline router, as the demo routes over it.
    private static func monaco() throws -> OSMRouteProvider {
        try OSMRouteProvider(
            map: repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm").path, cache: false,
            logger: Logger(label: "test"))
    }

    /// A destination 15 m from the nearest way (a building's door off the street): the offline router's route ends
    /// on the way, and a straight last leg takes it to the destination, where the arrival waypoint is.
    @Test func aRouteThatEndsShortOfTheDestinationGetsAStraightLastLegToIt() async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let destination = Coordinate(latitude: 43.7335, longitude: 7.4285)
        let messages = try await Self.walk(
            [fix(start, at: 1), fix(start, at: 2)], provider: try Self.monaco(),
            options: RouteControllerOptions(destination: destination))
        let route = try #require(Self.routes(messages).first)
        let wayEnd = route.points[route.points.count - 2]
        #expect(FlatProjection.distance(wayEnd, destination) > 10, "the way ends short of the destination")
        #expect(FlatProjection.distance(route.points.last!, destination) < 0.01)
        let arrival = try #require(route.waypoints.last)
        #expect(arrival.kind == .arrival)
        #expect(FlatProjection.distance(arrival.coordinate, destination) < 0.01)
        #expect(abs(arrival.distanceAlongMeters - route.lengthMeters) < 0.01)
    }

    /// The same door 15 m off the street, walked to with the place on the ways or on the network, which hold the
    /// walker on them: at the ways' end the last leg is followed by the smoothed fix, and the walker is told they have
    /// arrived at the door (held at the ways' end, the place never reached it).
    @Test(arguments: [RouteControllerOptions.Place.smoothed, .ways, .network])
    func aWalkerPlacedOnTheWaysCrossesTheLastLegAndArrivesAtTheDoor(place: RouteControllerOptions.Place) async throws {
        let provider = try Self.monaco()
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let destination = Coordinate(latitude: 43.7335, longitude: 7.4285)
        // The route the stage follows: the router's, then straight to the door.
        let plan = try await provider.route(from: start, to: destination)
        let line = Polyline(plan.points + [destination])
        var fixes = [fix(start, at: 0)]
        for step in 1...Int(line.lengthMeters / 1.4) + 3 {
            let point = try #require(line.point(atDistance: Double(step) * 1.4))
            fixes.append(fix(point.coordinate, at: Double(step), course: point.bearingDegrees))
        }
        var options = RouteControllerOptions(destination: destination)
        options.ways = provider.graph
        options.graph = provider.graph
        options.place = place
        let messages = try await Self.walk(fixes, provider: provider, options: options)
        let arrival = try #require(Self.progress(messages).first { $0.state == .arrived }, "arrived (\(place))")
        let walked = arrival.timeSeconds * 1.4
        #expect(walked >= line.lengthMeters - 3, "at the door: \(walked) m of \(line.lengthMeters) m (\(place))")
    }

    /// A destination 110 m from the nearest way (in the harbour): the route would end there and call it the
    /// destination. It is refused with a status that says why, and nothing is guided.
    @Test func aRouteThatEndsFarFromTheDestinationIsRefusedWithAClearStatus() async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let (refused, messages) = try await Self.untilDegraded(
            (1...4).map { fix(start, at: Double($0)) }, provider: try Self.monaco(),
            options: RouteControllerOptions(destination: Coordinate(latitude: 43.7360, longitude: 7.4250)), within: 60)
        let degraded = Self.statuses(messages).filter { $0.health == .degraded }
        #expect(refused)
        #expect(
            degraded.first?.message.contains("the route ends 110 m from the destination") == true, "\(degraded)")
        #expect(Self.routes(messages).isEmpty)
        #expect(Self.targets(messages).allSatisfy { $0.kind == .none })
    }

    /// The walk of the silent-engine tests: east along the route until `leaveAt`, then 40 m to its north, walking east.
    private static func silentEngineWalk(start: Coordinate, time: Double, leaveAt: Double) -> Coordinate {
        time < leaveAt ? moved(start, 90, 1.4 * time) : moved(moved(start, 90, 1.4 * time), 0, 40)
    }

    @Test func aSilentEngineNeverStallsTheFixPathAndTheNextProviderAnswersWithinItsTimeout() async throws {
        let engine = try SilentEngine()
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let destination = moved(start, 90, 400)
        // The fallback: a saved route straight east (a reroute joins the walker to it).
        let providers: [any RouteProvider] = [
            try EngineRouteProvider(.valhalla, url: engine.url, timeoutSeconds: 30, retries: 0),
            FileRouteProvider(plan: RoutePlan(points: [start, destination])),
        ]
        var options = RouteControllerOptions(destination: destination)
        options.providerTimeoutSeconds = 2
        options.providerBackoff = .init(backoffSeconds: 0, maximumBackoffSeconds: 0)  // the engine is asked every time
        options.tracker.rerouteMinimumSeconds = 0
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival<RouteInput>.self)
        let output = MemoryPublisher()
        // The stage's time is a manual clock's (its wall clock the same seconds): the provider's 2 s timeout passes
        // when the test has fed 2 s of fixes, however slowly the machine runs them.
        let clock = ManualClock()
        let stage = RouteControllerStage(
            name: "route", input: stream, output: output, providers: providers, options: options,
            logger: Logger(label: "test"), time: StageTime(clock: clock, wallEpochSeconds: 0))
        async let running: Void = stage.run()
        // Fixes at 10 Hz of the stage's time, fix time = receive time, each fed once the last one's target is out,
        // until the reroute's answer came (or 60 s of fixes). The walker leaves the route a second after the first
        // route came.
        var fed: [Double] = []
        var leaveAt = Double.infinity
        for step in 0..<600 {
            let now = Double(step) / 10
            if leaveAt.isInfinite, Self.routes(await output.messages).contains(where: { $0.routeID == 1 }) {
                leaveAt = now + 1
            }
            continuation.yield(
                fix(Self.silentEngineWalk(start: start, time: now, leaveAt: leaveAt), at: now).routeInput)
            fed.append(now)
            let handled = await eventually(within: 30) {
                Self.targets(await output.messages).contains { $0.timeSeconds == now }
            }
            try #require(handled, "the fix at \(now) s got its target")
            if Self.routes(await output.messages).contains(where: { $0.routeID == 2 }) { break }
            // Once the reroute is asked, time moves only when the provider's timeout is asleep on the clock (beside
            // the target's repeat), and once the timeout has passed the fallback's route is awaited before the next
            // fix: the answer's time is then the clock's, however the tasks were scheduled.
            let askedAt = Self.progress(await output.messages).first { $0.state == .rerouting }?.timeSeconds
            if askedAt != nil {
                _ = await eventually(within: 10) { clock.sleeperCount >= 2 }
            }
            clock.advance(by: .milliseconds(100))
            if let askedAt, now + 0.1 - askedAt >= 2 - 1e-9 {
                _ = await eventually(within: 10) {
                    Self.routes(await output.messages).contains(where: { $0.routeID == 2 })
                }
            }
        }
        continuation.finish()
        try await running
        let messages = await output.messages
        let routes = Self.routes(messages)
        let first = try #require(routes.first { $0.routeID == 1 }, "the first route, from the fallback")
        let second = try #require(routes.first { $0.routeID == 2 }, "the reroute, from the fallback")
        #expect(first.provider == "file" && second.provider == "file")
        let progress = messages.compactMap { if case let .progress(p) = $0 { p } else { nil } }
        let askedAt = try #require(progress.first { $0.state == .rerouting }?.timeSeconds)
        let waited = second.timeSeconds - askedAt
        print("silent engine: reroute answered by the fallback \(fixedDecimal(waited, digits: 2)) s after it was asked")
        // The timeout passes as the clock reaches 2 s after the request; the route carries the time of the newest
        // fix then, the one fed 0.1 s before.
        #expect(abs(waited - 1.9) < 1e-6, "the fallback answered as the 2 s timeout passed")
        // Every fix while the engine was silent got its progress and target, on the old route.
        let fixesMeanwhile = fed.filter { $0 > askedAt && $0 < second.timeSeconds }.count
        let targetsMeanwhile = Set(
            Self.targets(messages).filter { $0.timeSeconds > askedAt && $0.timeSeconds < second.timeSeconds }
                .map(\.timeSeconds))
        #expect(fixesMeanwhile >= 5)
        #expect(
            targetsMeanwhile.count == fixesMeanwhile, "\(targetsMeanwhile.count) targets for \(fixesMeanwhile) fixes")
        let progressMeanwhile = progress.filter { $0.timeSeconds > askedAt && $0.timeSeconds < second.timeSeconds }
        #expect(progressMeanwhile.count == fixesMeanwhile && progressMeanwhile.allSatisfy { $0.routeID == 1 })
        // The status said what it waited for, and the route said where it came from.
        let statuses = Self.statuses(messages).map(\.message)
        #expect(statuses.contains { $0.hasPrefix("rerouting: waited") && $0.hasSuffix("for valhalla") }, "\(statuses)")
        #expect(
            statuses.contains {
                $0.hasPrefix("reroute 2 by file") && $0.contains("valhalla did not answer within 2.0 s")
            },
            "\(statuses)")
    }

    @Test func anAnswerThatComesAfterTheWalkerMovedAwayIsNotFollowed() async throws {
        let provider = GatedProvider()
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let destination = moved(start, 90, 500)
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival<RouteInput>.self)
        let output = MemoryPublisher()
        let stage = RouteControllerStage(
            name: "route", input: stream, output: output, provider: provider,
            options: RouteControllerOptions(destination: destination), logger: Logger(label: "test"))
        async let running: Void = stage.run()
        // The first route is asked from here; while it is awaited the walker goes 100 m south.
        for second in 0..<10 {
            continuation.yield(
                fix(moved(start, 180, Double(second) * 10), at: Double(second + 1), course: 180).routeInput)
        }
        // Every fix handled (each without a route gets its "none" target) before the answer comes.
        let waiting = await eventually(within: 60) {
            let messages = await output.messages
            return Self.statuses(messages).contains { $0.message.hasPrefix("routing: waited") }
                && Self.targets(messages).count == 10
        }
        provider.open.yield()
        let routed = await eventually(within: 60) { !Self.routes(await output.messages).isEmpty }
        continuation.finish()
        try await running
        #expect(waiting && routed)
        let routes = Self.routes(await output.messages)
        let route = try #require(routes.first)
        // The answer from the old start was dropped; the route followed starts where the walker is now.
        #expect(route.routeID == 1)
        let here = moved(start, 180, 90)
        #expect(FlatProjection.distance(route.points[0], here) < 1, "the route starts where the walker is now")
        let counters = Self.statuses(await output.messages).last?.counters ?? []
        #expect(counters.first { $0.name == "stale_answers" }?.value == 1)
    }
}
