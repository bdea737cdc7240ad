import Evaluation
import Testing

@Suite struct StudyStatisticsTests {
    /// Hollander & Wolfe's depression scores (R's `wilcox.test` example): V = 40, exact p = 0.03906.
    @Test func theSignedRankTestGivesRsExactAnswer() throws {
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
        let test = StudyStatistics.signedRank(zip(x, y).map { $0 - $1 })
        #expect(test.n == 9 && test.wPlus == 40 && test.wMinus == 5)
        #expect(abs(try #require(test.p) - 0.0390625) < 1e-12)
        #expect(abs(try #require(test.rankBiserial) - 35.0 / 45.0) < 1e-12)
        // Ties take their mid-ranks, zeros are dropped: |d| 1, 1, 1 → 2 each; 2, 2 → 4.5 each.
        let tied = StudyStatistics.signedRank([1, 1, -1, 2, 2, 0])
        #expect(tied.n == 5 && tied.wPlus == 13 && tied.wMinus == 2)
        #expect(tied.p == 0.25)
        #expect(tied.medianDifference == 1)
        // No pair, and all pairs equal: no p.
        #expect(StudyStatistics.signedRank([]).p == nil && StudyStatistics.signedRank([0, 0]).p == nil)
        // Thirty pairs, all positive: the normal approximation, far below 0.001.
        let many = StudyStatistics.signedRank((1...30).map(Double.init))
        #expect(try #require(many.p) < 1e-5 && many.rankBiserial == 1)
    }

    @Test func quantilesAreRsDefault() {
        #expect(StudyStatistics.quantile([4, 1, 3, 2], 0.5) == 2.5)
        #expect(StudyStatistics.quantile([4, 1, 3, 2], 0.25) == 1.75)
        #expect(StudyStatistics.quantile([], 0.5) == nil)
        #expect(StudyStatistics.quantile([7], 0.75) == 7)
    }
}
