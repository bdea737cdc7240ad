import Foundation
import NavCore
import Testing
import MapLogic

@Suite struct SmootherTests {
    private let origin = Coordinate(latitude: 43.7319, longitude: 7.4216)

    private func fix(_ t: Double, east: Double = 0, north: Double = 0, accuracy: Double = 5) -> LocationFix {
        let point = FlatProjection(origin: self.origin).unproject(ENU(east: east, north: north))
        return LocationFix(
            timeSeconds: 1000 + t, latitude: point.latitude, longitude: point.longitude,
            horizontalAccuracyMeters: accuracy)
    }

    private func allFinite(_ s: SmoothedFix) -> Bool {
        s.latitude.isFinite && s.longitude.isFinite && s.horizontalAccuracyMeters.isFinite
            && s.speedMetersPerSecond.isFinite && (s.courseDegrees?.isFinite ?? true)
    }

    @Test func theFirstFixStartsTheFilterAtThatFix() throws {
        var smoother = KalmanSmoother()
        let first = try smoother.update(with: self.fix(0, east: 3, north: 4)).get()
        #expect(first.reset)
        #expect(
            FlatProjection.distance(
                Coordinate(latitude: first.latitude, longitude: first.longitude),
                FlatProjection(origin: self.origin).unproject(ENU(east: 3, north: 4))) < 1e-6)
    }

    @Test func aWalkerAtSteadySpeedIsTrackedWithSpeedAndCourse() throws {
        var smoother = KalmanSmoother()
        var last: SmoothedFix?
        for t in 0..<60 {
            last = try smoother.update(with: self.fix(Double(t), east: 1.4 * Double(t), accuracy: 3)).get()
        }
        let estimate = try #require(last)
        #expect(abs(estimate.speedMetersPerSecond - 1.4) < 0.05)
        #expect(Angle.separation(try #require(estimate.courseDegrees), 90) < 2)
        #expect(estimate.horizontalAccuracyMeters < 3, "smoothing shrinks the uncertainty")
    }

    @Test func irregularTimeStepsAreHandled() throws {
        var smoother = KalmanSmoother()
        var t = 0.0
        for step in [1.0, 0.2, 3.5, 0.05, 2, 7.9, 0.5] {
            t += step
            let estimate = try smoother.update(with: self.fix(t, east: 1.4 * t)).get()
            #expect(self.allFinite(estimate))
        }
    }

    @Test func twoFixesWithTheSameTimestampDoNotDivideByZero() throws {
        var smoother = KalmanSmoother()
        _ = try smoother.update(with: self.fix(0)).get()
        let a = try smoother.update(with: self.fix(1, east: 1)).get()
        let b = try smoother.update(with: self.fix(1, east: 2)).get()
        #expect(self.allFinite(a) && self.allFinite(b))
        #expect(b.timeSeconds == a.timeSeconds)
        #expect(
            b.horizontalAccuracyMeters < a.horizontalAccuracyMeters,
            "a second measurement at the same time still informs")
    }

    @Test func timeThatGoesBackwardsIsDropped() throws {
        var smoother = KalmanSmoother()
        _ = try smoother.update(with: self.fix(0)).get()
        _ = try smoother.update(with: self.fix(5, east: 7)).get()
        #expect(smoother.update(with: self.fix(4, east: 100)) == .failure(.timeWentBackwards))
        #expect(smoother.counters.rejected[.timeWentBackwards] == 1)
        let next = try smoother.update(with: self.fix(6, east: 8.4)).get()
        #expect(!next.reset)
    }

    @Test(arguments: [
        (0.0, FixRejection.accuracyNotPositive), (-3, .accuracyNotPositive), (100.5, .accuracyAboveLimit),
        (Double.nan, .nonFinite), (Double.infinity, .nonFinite),
    ])
    func badAccuraciesAreRejected(_ accuracy: Double, _ reason: FixRejection) throws {
        var smoother = KalmanSmoother()
        _ = try smoother.update(with: self.fix(0)).get()
        #expect(smoother.update(with: self.fix(1, accuracy: accuracy)) == .failure(reason))
        #expect(smoother.counters.rejected[reason] == 1)
        #expect(self.allFinite(try smoother.update(with: self.fix(2)).get()))
    }

    @Test func theAccuracyLimitIsConfigurable() {
        var options = KalmanSmoother.Options()
        options.maximumAccuracyMeters = 20
        var smoother = KalmanSmoother(options: options)
        #expect(smoother.update(with: self.fix(0, accuracy: 25)) == .failure(.accuracyAboveLimit))
    }

    @Test func nanOrInfiniteValuesAreRejectedAndNeverEmitted() throws {
        var smoother = KalmanSmoother()
        _ = try smoother.update(with: self.fix(0)).get()
        var bad = [LocationFix]()
        for (t, lat, lon) in [(Double.nan, 43.7, 7.4), (2, .nan, 7.4), (3, 43.7, .infinity), (.infinity, 43.7, 7.4)] {
            bad.append(LocationFix(timeSeconds: t, latitude: lat, longitude: lon, horizontalAccuracyMeters: 5))
        }
        for fix in bad {
            #expect(smoother.update(with: fix) == .failure(.nonFinite))
        }
        #expect(
            smoother.update(
                with: LocationFix(timeSeconds: 1005, latitude: 91, longitude: 7, horizontalAccuracyMeters: 5))
                == .failure(.outOfRange))
        #expect(self.allFinite(try smoother.update(with: self.fix(6, east: 8)).get()))
    }

    @Test func aLongGapRestartsTheFilter() throws {
        var smoother = KalmanSmoother()
        for t in 0..<10 { _ = try smoother.update(with: self.fix(Double(t), east: 1.4 * Double(t))).get() }
        let after = try smoother.update(with: self.fix(40, east: 500)).get()
        #expect(after.reset)
        #expect(smoother.counters.resets == 1)
        let position = FlatProjection(origin: self.origin).project(
            Coordinate(latitude: after.latitude, longitude: after.longitude))
        #expect(abs(position.east - 500) < 1e-6, "a restart trusts the new fix, not a stale velocity")
    }

    @Test func theFrameFollowsALongWalkWithoutLosingAccuracy() throws {
        // 5 km due north at 1.4 m/s with exact fixes: re-centring must not shift the estimate.
        var smoother = KalmanSmoother()
        var worst = 0.0
        for t in stride(from: 0.0, through: 3600, by: 1) {
            let truth = Geodesic.wgs84.direct(from: self.origin, azimuthDegrees: 0, distanceMeters: 1.4 * t).coordinate
            let estimate = try smoother.update(
                with: LocationFix(
                    timeSeconds: t, latitude: truth.latitude,
                    longitude: truth.longitude,
                    horizontalAccuracyMeters: 2)
            ).get()
            worst = max(
                worst,
                FlatProjection.distance(truth, Coordinate(latitude: estimate.latitude, longitude: estimate.longitude)))
        }
        #expect(worst < 2.5)
    }
}

/// The slowly drifting part of GPS error as a state of the filter, told from movement by the Doppler velocity.
@Suite struct SmootherBiasTests {
    /// RMS error of the smoothed position over a 10-minute walk with turns, at 1.3 m/s, one fix a second: GPS
    /// error white or first-order correlated (τ 30 s), σ 5 m per axis; Doppler velocity error σ 0.3 m/s per axis.
    static func rms(biasSigma: Double, correlated: Bool, seed: UInt64) -> Double {
        var options = KalmanSmoother.Options()
        options.velocityNoise = 0.3
        options.biasSigmaMeters = biasSigma
        var filter = KalmanSmoother(options: options)
        var random = SeededGenerator(seed: seed)
        let origin = Coordinate(latitude: 43.73, longitude: 7.42)
        let plane = FlatProjection(origin: origin)
        var east = 0.0, north = 0.0, heading = 0.0
        var errorEast = 0.0, errorNorth = 0.0
        var squares = 0.0, count = 0
        let a = correlated ? 0.967_216 : 0  // exp(−1/30)
        for second in 0..<600 {
            if second % 60 == 59 { heading += 90 }  // a turn a minute
            let radians = heading * .pi / 180
            let ve = 1.3 * sin(radians), vn = 1.3 * cos(radians)
            east += ve
            north += vn
            let spread = 5 * (1 - a * a).squareRoot()
            errorEast = a * errorEast + random.gaussian(standardDeviation: spread)
            errorNorth = a * errorNorth + random.gaussian(standardDeviation: spread)
            let measured = plane.unproject(ENU(east: east + errorEast, north: north + errorNorth))
            let me = ve + random.gaussian(standardDeviation: 0.3), mn = vn + random.gaussian(standardDeviation: 0.3)
            let speed = (me * me + mn * mn).squareRoot()
            let fix = LocationFix(
                timeSeconds: Double(second), latitude: measured.latitude, longitude: measured.longitude,
                horizontalAccuracyMeters: 5, speedMetersPerSecond: speed,
                courseDegrees: Angle.normalized(atan2(me, mn) * 180 / .pi))
            guard case let .success(estimate) = filter.update(with: fix) else { continue }
            #expect(estimate.latitude.isFinite && estimate.longitude.isFinite)
            guard second >= 60 else { continue }
            let truth = plane.unproject(ENU(east: east, north: north))
            squares += pow(
                FlatProjection.distance(truth, Coordinate(latitude: estimate.latitude, longitude: estimate.longitude)),
                2)
            count += 1
        }
        return (squares / Double(count)).squareRoot()
    }

    @Test func theBiasIsNeverTakenLargerThanTheReceiverReportsItsErrorToBe() throws {
        // Exact fixes reporting 1 m, and a Doppler speed 10 % low (0.13 m/s, 8 m a minute): with a bias state of
        // 4.5 m the filter must not believe the dead reckoning over fixes that say they are within a metre.
        var options = KalmanSmoother.Options()
        options.velocityNoise = 0.3
        options.biasSigmaMeters = 4.5
        var filter = KalmanSmoother(options: options)
        let plane = FlatProjection(origin: Coordinate(latitude: 43.73, longitude: 7.42))
        var worst = 0.0
        for second in 0..<120 {
            let truth = plane.unproject(ENU(east: 1.3 * Double(second), north: 0))
            let fix = LocationFix(
                timeSeconds: Double(second), latitude: truth.latitude, longitude: truth.longitude,
                horizontalAccuracyMeters: 1, speedMetersPerSecond: 1.17, courseDegrees: 90)
            let estimate = try filter.update(with: fix).get()
            worst = max(
                worst,
                FlatProjection.distance(truth, Coordinate(latitude: estimate.latitude, longitude: estimate.longitude)))
        }
        #expect(worst < 1.5, "\(worst)")
    }

    @Test func aCorrelatedErrorIsFollowedLessWithABiasStateAtSomeCostUnderWhiteError() {
        var correlated: [(without: Double, with: Double)] = []
        var white: [(without: Double, with: Double)] = []
        for seed in UInt64(1)...8 {
            correlated.append(
                (
                    Self.rms(biasSigma: 0, correlated: true, seed: seed),
                    Self.rms(biasSigma: 2, correlated: true, seed: seed)
                ))
            white.append(
                (
                    Self.rms(biasSigma: 0, correlated: false, seed: seed),
                    Self.rms(biasSigma: 2, correlated: false, seed: seed)
                ))
        }
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(values.count) }
        let c = (mean(correlated.map(\.without)), mean(correlated.map(\.with)))
        let w = (mean(white.map(\.without)), mean(white.map(\.with)))
        print("smoother bias state: correlated σ5 τ30 RMS \(c.0) → \(c.1) m; white σ5 RMS \(w.0) → \(w.1) m")
        // At σ 2 m for the bias (of the fixes' 5 m): 5.7 → 5.0 m correlated, 1.7 → 2.0 m white (4 m: 4.6 and 2.7).
        #expect(c.1 < 0.9 * c.0)
        #expect(w.1 < 1.25 * w.0)
    }
}
