import NavCore
import Testing

@Suite struct AngleTests {
    private static let samples: [Double] = {
        var random = SeededGenerator(seed: 9)
        return (0..<500).map { _ in Double.random(in: -1080...1080, using: &random) }
            + [0, 360, -360, 180, -180, 359.999_999, -0.000_001, 720, 1e-12, -1e-12]
    }()

    @Test func normalizedIsInZeroTo360AndKeepsTheDirection() {
        for x in Self.samples {
            let n = Angle.normalized(x)
            #expect(n >= 0 && n < 360, "\(x) → \(n)")
            let turns = (x - n) / 360
            #expect(abs(turns - turns.rounded()) < 1e-9, "\(x) and \(n) differ by whole turns")
        }
    }

    @Test func signedDifferenceIsTheSmallestRotationInMinus180To180() {
        for a in Self.samples.prefix(100) {
            for b in Self.samples.suffix(100) {
                let d = Angle.signedDifference(from: a, to: b)
                #expect(d > -180 && d <= 180)
                #expect(Angle.separation(Angle.normalized(a + d), b) < 1e-9)
                // Antisymmetric, except at exactly 180° where both directions give +180.
                let back = Angle.signedDifference(from: b, to: a)
                #expect(abs(d + back) < 1e-9 || abs(abs(d) - 180) < 1e-9)
            }
        }
    }

    @Test(arguments: [
        (350.0, 10.0, -20.0), (10, 350, 20), (359, 1, -2), (0, 180, 180), (180, 0, 180), (90, 270, 180),
        (-10, 10, -20), (725, 5, 0),
    ])
    func signedDifferenceAcrossTheWrap(_ to: Double, _ from: Double, _ expected: Double) {
        #expect(abs(Angle.signedDifference(from: from, to: to) - expected) < 1e-12)
    }

    @Test func windowsThatWrapThroughNorth() {
        #expect(Angle.isInWindow(355, from: 350, to: 10))
        #expect(Angle.isInWindow(5, from: 350, to: 10))
        #expect(Angle.isInWindow(0, from: 350, to: 10))
        #expect(Angle.isInWindow(350, from: 350, to: 10))
        #expect(Angle.isInWindow(10, from: 350, to: 10))
        #expect(!Angle.isInWindow(180, from: 350, to: 10))
        #expect(!Angle.isInWindow(11, from: 350, to: 10))
        #expect(!Angle.isInWindow(349, from: 350, to: 10))
        #expect(Angle.isInWindow(-5, from: 350, to: 10))
        #expect(Angle.isInWindow(90, from: 80, to: 100))
        #expect(!Angle.isInWindow(355, from: 80, to: 100))
    }

    @Test func theCircularMeanOf350And10IsNorth() throws {
        let stats = Angle.circularStatistics([350.0, 10])
        let mean = try #require(stats.meanDegrees)
        #expect(Angle.separation(mean, 0) < 1e-9)
        #expect(abs(stats.spreadDegrees - 10.03) < 0.01)
    }

    @Test func theCircularMeanIsRotationInvariant() throws {
        var random = SeededGenerator(seed: 4)
        for _ in 0..<200 {
            let centre = Double.random(in: 0..<360, using: &random)
            let values = (0..<20).map { _ in centre + random.gaussian(standardDeviation: 15) }
            let stats = Angle.circularStatistics(values)
            let rotated = Angle.circularStatistics(values.map { $0 + 123.4 })
            let mean = try #require(stats.meanDegrees), rotatedMean = try #require(rotated.meanDegrees)
            #expect(Angle.separation(mean + 123.4, rotatedMean) < 1e-9)
            #expect(abs(stats.spreadDegrees - rotated.spreadDegrees) < 1e-9)
            #expect(Angle.separation(mean, centre) < 15)
        }
    }

    @Test func oppositeDirectionsHaveNoMean() {
        let stats = Angle.circularStatistics([0.0, 180])
        #expect(stats.meanDegrees == nil)
        #expect(stats.spreadDegrees == .infinity)
        #expect(Angle.circularStatistics([Double]()).meanDegrees == nil)
    }

    @Test func spreadOfIdenticalHeadingsIsZeroAndGrowsWithScatter() {
        #expect(Angle.circularStatistics([42.0, 42, 42]).spreadDegrees < 1e-6)
        #expect(
            Angle.circularStatistics([40.0, 44]).spreadDegrees < Angle.circularStatistics([30.0, 54]).spreadDegrees)
    }
}
