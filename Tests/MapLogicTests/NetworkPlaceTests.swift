import Foundation
import NavCore
import Testing
@testable import MapLogic

/// A city grid of streets 60 m apart (nodes every 10 m, as a map's ways bend), and a walker who goes along a street,
/// turns at a junction, and on; their fixes with GPS error through the smoother, as the route stage has them.
struct GridWalk: Sendable {
    /// 64 particles (a quarter of the default): the debug build's tests walk thousands of fixes beside the rest of
    /// the suite, and `hapticnav bench place` measures 64 as near the walker as 256.
    static let options: NetworkPlace.Options = {
        var options = NetworkPlace.Options()
        options.particles = 64
        return options
    }()
    let plane = FlatProjection(origin: Coordinate(latitude: 43.73, longitude: 7.42))
    let graph: WalkingGraph
    /// The walker's path: corners in metres (east, north).
    let corners: [(Double, Double)] = [(0, 120), (180, 120), (180, 240), (300, 240), (300, 60), (120, 60)]

    init() {
        var nodes: [Coordinate] = []
        var index: [String: Int32] = [:]
        func node(_ east: Int, _ north: Int) -> Int32 {
            if let known = index["\(east),\(north)"] { return known }
            nodes.append(
                FlatProjection(origin: Coordinate(latitude: 43.73, longitude: 7.42)).unproject(
                    ENU(east: Double(east), north: Double(north))))
            index["\(east),\(north)"] = Int32(nodes.count - 1)
            return Int32(nodes.count - 1)
        }
        var edges: [(a: Int32, b: Int32, name: Int32)] = []
        for line in 0...6 {
            for step in 0..<36 {
                // Streets running east (name = line) and north (name = 7 + line), every 60 m.
                edges.append((node(step * 10, line * 60), node(step * 10 + 10, line * 60), Int32(line)))
                edges.append((node(line * 60, step * 10), node(line * 60, step * 10 + 10), Int32(7 + line)))
            }
        }
        self.graph = WalkingGraph(
            nodes: nodes, edges: edges, names: (0..<14).map { "street \($0)" }, warnings: [])
    }

    /// The path's length, and the point `s` metres along it with its direction [degrees].
    var length: Double {
        zip(self.corners, self.corners.dropFirst()).map { hypot($1.0 - $0.0, $1.1 - $0.1) }.reduce(0, +)
    }

    func point(_ s: Double) -> (east: Double, north: Double, bearing: Double) {
        var left = s
        for (a, b) in zip(self.corners, self.corners.dropFirst()) {
            let leg = hypot(b.0 - a.0, b.1 - a.1)
            let bearing = Angle.normalized(atan2(b.0 - a.0, b.1 - a.1) * 180 / .pi)
            if left <= leg {
                return (a.0 + (b.0 - a.0) * left / leg, a.1 + (b.1 - a.1) * left / leg, bearing)
            }
            left -= leg
        }
        let last = self.corners[self.corners.count - 1]
        return (last.0, last.1, 0)
    }

    /// Walks the path at 1.3 m/s with a stop of 4 s at each corner; GPS error of `sigma` per axis (correlated over
    /// `tau` seconds, white when nil), Doppler velocity ±0.3 m/s, through the smoother; each fix's truth (metres
    /// along the path), the smoothed fix and the place.
    func walk(
        sigma: Double, tau: Double?, seed: UInt64, options: NetworkPlace.Options = GridWalk.options,
        stepLength: Double? = nil, report: (NetworkPlace) -> Void = { _ in }
    ) -> [(truth: Double, smoothed: SmoothedFix, place: NetworkPlace.Estimate?)] {
        var random = SeededGenerator(seed: seed)
        var smootherOptions = KalmanSmoother.Options()
        smootherOptions.velocityNoise = 0.2
        var smoother = KalmanSmoother(options: smootherOptions)
        var place = NetworkPlace(graph: self.graph, options: options, seed: seed)
        var errorEast = random.gaussian(standardDeviation: sigma)
        var errorNorth = random.gaussian(standardDeviation: sigma)
        var s = 0.0
        var pause = 0.0
        var stepPhase = 0.0
        var stepCount: UInt32 = 0
        var results: [(truth: Double, smoothed: SmoothedFix, place: NetworkPlace.Estimate?)] = []
        let cornersAt = zip(self.corners, self.corners.dropFirst()).reduce(into: [0.0]) {
            $0.append($0.last! + hypot($1.1.0 - $1.0.0, $1.1.1 - $1.0.1))
        }
        for second in 0..<2000 {
            if let tau {
                let a = exp(-1 / tau)
                errorEast = a * errorEast + random.gaussian(standardDeviation: sigma * (1 - a * a).squareRoot())
                errorNorth = a * errorNorth + random.gaussian(standardDeviation: sigma * (1 - a * a).squareRoot())
            } else if second > 0 {
                errorEast = random.gaussian(standardDeviation: sigma)
                errorNorth = random.gaussian(standardDeviation: sigma)
            }
            let here = self.point(s)
            let speed = pause > 0 ? 0.0 : 1.3
            let radians = here.bearing * .pi / 180
            let velocityEast = speed * sin(radians) + random.gaussian(standardDeviation: 0.3)
            let velocityNorth = speed * cos(radians) + random.gaussian(standardDeviation: 0.3)
            let measured = hypot(velocityEast, velocityNorth)
            let fix = LocationFix(
                timeSeconds: 1_000 + Double(second),
                latitude: 0, longitude: 0, horizontalAccuracyMeters: max(1, sigma), speedMetersPerSecond: measured,
                courseDegrees: measured >= 0.5 ? Angle.normalized(atan2(velocityEast, velocityNorth) * 180 / .pi) : nil)
            let position = self.plane.unproject(ENU(east: here.east + errorEast, north: here.north + errorNorth))
            // The wearer's steps over the second before this fix (none while they pause).
            if let stepLength, second > 0, pause <= 0 || pause == 4 {
                let before = stepPhase
                stepPhase += 1.3 / stepLength
                for index in Int(before.rounded(.down))
                    + 1...max(Int(before.rounded(.down)), Int(stepPhase.rounded(.down)))
                {
                    guard Double(index) <= stepPhase else { break }
                    stepCount += 1
                    let at = 1_000 + Double(second) - 1 + (Double(index) - before) / (stepPhase - before)
                    place.step(StepCount(timeSeconds: at, count: stepCount, cadenceHz: 1.3 / stepLength))
                }
            }
            var located = fix
            located.latitude = position.latitude
            located.longitude = position.longitude
            guard case let .success(smoothed) = smoother.update(with: located) else { continue }
            let estimate = place.update(
                timeSeconds: smoothed.timeSeconds,
                position: Coordinate(latitude: smoothed.latitude, longitude: smoothed.longitude),
                accuracyMeters: smoothed.horizontalAccuracyMeters, speedMetersPerSecond: smoothed.speedMetersPerSecond,
                courseDegrees: smoothed.courseDegrees, restart: smoothed.reset)
            results.append((s, smoothed, estimate))
            if pause > 0 {
                pause -= 1
            } else {
                let next = s + 1.3
                if let corner = cornersAt.first(where: { $0 > s && $0 <= next }) {
                    s = corner
                    pause = 4
                } else {
                    s = next
                }
            }
            if second % 100 == 0 || s >= self.length - 1.3 { report(place) }
            if s >= self.length - 0.01 { break }
        }
        return results
    }

    /// The error along the path of a point near `truth` metres along it: the nearest point of the path within 30 m
    /// of the truth's place along it.
    func alongError(_ point: Coordinate, truth: Double) -> Double {
        let local = self.plane.project(point)
        let window = (from: max(0, truth - 30), to: min(self.length, truth + 30))
        var best = (distance: Double.infinity, along: truth)
        var legStart = 0.0
        // Leg by leg (the path is straight between corners): the point of the leg within the window nearest to it.
        for (a, b) in zip(self.corners, self.corners.dropFirst()) {
            let leg = hypot(b.0 - a.0, b.1 - a.1)
            defer { legStart += leg }
            let from = max(window.from, legStart), to = min(window.to, legStart + leg)
            guard from <= to else { continue }
            let projected = legStart + ((local.east - a.0) * (b.0 - a.0) + (local.north - a.1) * (b.1 - a.1)) / leg
            let along = min(to, max(from, projected))
            let share = (along - legStart) / leg
            let distance = hypot(a.0 + (b.0 - a.0) * share - local.east, a.1 + (b.1 - a.1) * share - local.north)
            if distance < best.distance { best = (distance, along) }
        }
        return best.along - truth
    }
}

/// Runs `body` on a thread of its own: a walk of thousands of fixes through the filter takes seconds of a core, and
/// on the test pool's threads it would hold back the tests that wait on a clock or a socket meanwhile.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

@Suite struct NetworkPlaceTests {
    static func rms(_ values: [Double]) -> Double {
        (values.map { $0 * $0 }.reduce(0, +) / Double(max(1, values.count))).squareRoot()
    }

    /// On a grid of streets, the walker pausing at each corner before they turn: with GPS error correlated over 30 s
    /// (σ 5 m) the place on the network is on the walker's street almost always and far nearer the walker than the
    /// smoothed fix (which the error carries across the street); with white error, on their street and no farther
    /// from them than the smoothed fix (which has little error to remove).
    @Test(arguments: [(5.0, 30.0 as Double?, 0.6), (5.0, nil, 1.0)])
    func theWalkersStreetAndPlaceAlongItUnderGPSError(sigma: Double, tau: Double?, ratio: Double) async throws {
        let grid = GridWalk()
        var placeErrors: [Double] = [], smoothedErrors: [Double] = []
        var rightWay = 0, sure = 0, fixes = 0
        let walks = await onOwnThread {
            (1...3 as ClosedRange<UInt64>).map { grid.walk(sigma: sigma, tau: tau, seed: $0) }
        }
        for walk in walks {
            for step in walk {
                fixes += 1
                let truth = grid.point(step.truth)
                let smoothed = Coordinate(latitude: step.smoothed.latitude, longitude: step.smoothed.longitude)
                let local = grid.plane.project(smoothed)
                smoothedErrors.append(hypot(local.east - truth.east, local.north - truth.north))
                guard let place = step.place, place.sure else { continue }
                sure += 1
                let p = grid.plane.project(place.point)
                placeErrors.append(hypot(p.east - truth.east, p.north - truth.north))
                // On the walker's street: within a metre of the path (at a corner, either street).
                if grid.alongError(place.point, truth: step.truth).magnitude < 30,
                    hypot(p.east - truth.east, p.north - truth.north) < 8
                        && (abs(p.east - truth.east) < 1 || abs(p.north - truth.north) < 1)
                {
                    rightWay += 1
                }
            }
        }
        let placeRMS = Self.rms(placeErrors), smoothedRMS = Self.rms(smoothedErrors)
        print(
            "σ \(sigma) \(tau.map { "corr \($0) s" } ?? "white"): place RMS \(placeRMS) m, smoothed \(smoothedRMS) m; sure \(sure) of \(fixes), right way \(rightWay)"
        )
        #expect(Double(sure) >= 0.9 * Double(fixes))
        #expect(Double(rightWay) >= 0.95 * Double(sure))
        #expect(placeRMS < ratio * smoothedRMS)
    }

    /// With the wearer's steps, the step length is learnt from the speed (within 5 % of the walker's own), and the
    /// place, which stands still while no step comes, is about as near the walker as from the speed alone.
    @Test func theStepLengthIsLearntAndAStandingWalkerStaysPut() async {
        let grid = GridWalk()
        let without = await onOwnThread { grid.walk(sigma: 5, tau: 30, seed: 3) }
        for length in [0.62, 0.78] {
            let (withSteps, learnt) = await onOwnThread {
                var learnt: Double?
                let walk = grid.walk(
                    sigma: 5, tau: 30, seed: 3, stepLength: length, report: { learnt = $0.stepLengthMeters })
                return (walk, learnt)
            }
            func rms(_ steps: [(truth: Double, smoothed: SmoothedFix, place: NetworkPlace.Estimate?)]) -> Double {
                Self.rms(
                    steps.compactMap { step in
                        step.place.map { place in
                            let p = grid.plane.project(place.point), t = grid.point(step.truth)
                            return hypot(p.east - t.east, p.north - t.north)
                        }
                    })
            }
            let learntLength = learnt ?? 0
            print(
                "step length \(length) m: learnt \(learntLength) m; place RMS \(rms(withSteps)) m with steps, \(rms(without)) m without"
            )
            #expect(abs(learntLength - length) <= 0.05 * length)
            #expect(rms(withSteps) <= 1.1 * rms(without))
        }
    }

    /// The steps' odometry (`placeOdometry: steps`): between two fixes the particles walk the wearer's steps at the
    /// length learnt from the speed, each at a scale of its own, rather than the speed's noisy distance; with white GPS
    /// error (σ 5 m) the place along the walker's way is nearer them. (Under error correlated over 30 s, where the
    /// fixes' bias along the way is what limits it, about as near: docs/GUIDANCE.md; not walked here, as each walk is
    /// seconds of a core in a debug build, beside suites that time what they wait for.)
    @Test func theStepsOdometryPlacesTheWalkerNearerAlongTheirWay() async {
        let grid = GridWalk()
        var steps = GridWalk.options
        steps.odometry = .steps
        func alongRMS(_ options: NetworkPlace.Options) async -> Double {
            await onOwnThread {
                Self.rms(
                    (1...3 as ClosedRange<UInt64>).flatMap {
                        grid.walk(sigma: 5, tau: nil, seed: $0, options: options, stepLength: 0.7).compactMap { step in
                            step.place.map { grid.alongError($0.point, truth: step.truth) }
                        }
                    })
            }
        }
        let bySpeed = await alongRMS(GridWalk.options)
        let bySteps = await alongRMS(steps)
        print("σ 5 white: along the way RMS \(bySteps) m by steps, \(bySpeed) m by speed")
        #expect(bySteps < 0.95 * bySpeed)
    }

    /// The steps' odometer fix by fix: a walker at 1.4 m/s with steps of 0.7 m, each told 0.6 s after it, a fix a
    /// second. Once the length is learnt the walks add up to the distance walked (each step once, the part since the
    /// newest step from the speed); a stop ends at the last step however the lagging speed goes on; and steps on a
    /// time line that started again are taken up after `rebaseSteps()`.
    @Test func theStepsOdometerAddsUpToTheWalk() {
        var options = GridWalk.options
        options.odometry = .steps
        var place = NetworkPlace(graph: GridWalk().graph, options: options)
        let length = 0.7, speed = 1.4
        // Steps every 0.5 s up to the stop at 30.3 s (the last at 30.0 s, 42 m along).
        let stepTimes = (1...60).map { Double($0) * length / speed }
        var told = 0
        func walk(at time: Double, speed: Double) -> NetworkPlace.Walk {
            while told < stepTimes.count, stepTimes[told] + 0.6 <= time {
                place.step(StepCount(timeSeconds: stepTimes[told], count: UInt32(told + 1), cadenceHz: 2))
                told += 1
            }
            return place.walked(speed: speed, course: 90, dt: 1, time: time)
        }
        var walked = 0.0
        for second in 1...30 {
            let step = walk(at: Double(second), speed: speed)
            guard second > 15 else { continue }
            #expect(step.fromSteps)
            walked += step.meters
            #expect(abs(walked - speed * Double(second - 15)) < 0.01, "at \(second) s")
        }
        // The walker stops at 30.3 s on their last step (42 m); the smoothed speed lags the stop by seconds.
        for (second, lagging) in [(31, 1.0), (32, 0.6), (33, 0.3), (34, 0.1), (35, 0.0)] {
            walked += walk(at: Double(second), speed: lagging).meters
        }
        // (Within 5 cm: the length learnt at the stop's first fix, from a speed that lags it, is a little short.)
        #expect(abs(walked - (stepTimes[59] * speed - speed * 15)) < 0.05)
        // The steps' time line starts again at 0 (a phone that restarted its clock): its steps, dated before the
        // newest heard, are taken up after a rebase (the first walk on it also holds the steps told before its first
        // fix).
        place.rebaseSteps()
        told = 0
        var again = 0.0
        for second in 1...10 {
            let step = walk(at: Double(second), speed: speed)
            #expect(step.fromSteps == (second > 1), "at \(second) s")
            if second > 2 { again += step.meters }
        }
        // (Within 1.5 %: the length is 1 % short after the stop and learnt again as the walk goes on.)
        #expect(abs(again - speed * 8) < 0.015 * speed * 8)
    }

    /// No way within reach: the filter does not know; back within reach, it places the walker again.
    @Test func farFromEveryWayItSaysItDoesNotKnow() {
        let grid = GridWalk()
        var place = NetworkPlace(graph: grid.graph)
        let far = grid.plane.unproject(ENU(east: 5_000, north: 5_000))
        #expect(
            place.update(
                timeSeconds: 0, position: far, accuracyMeters: 5, speedMetersPerSecond: 0, courseDegrees: nil) == nil)
        let near = grid.plane.unproject(ENU(east: 32, north: 61))
        let estimate = place.update(
            timeSeconds: 1, position: near, accuracyMeters: 5, speedMetersPerSecond: 1.3, courseDegrees: 90)
        #expect(estimate != nil)
        #expect(
            place.update(
                timeSeconds: .nan, position: near, accuracyMeters: 5, speedMetersPerSecond: 1.3, courseDegrees: 90)
                == nil)
    }
}
