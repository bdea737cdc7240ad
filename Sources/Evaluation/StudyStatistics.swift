import NavCore
#if canImport(Glibc)
import Glibc
#endif

/// The statistics a study report needs: medians and quartiles, and the Wilcoxon signed-rank test on paired
/// within-participant differences with its matched-pairs rank-biserial effect size.
public enum StudyStatistics {
    /// The q-quantile of `values` (linear between order statistics, as R's default type 7); nil when empty.
    public static func quantile(_ values: [Double], _ q: Double) -> Double? {
        let sorted = values.filter(\.isFinite).sorted()
        guard !sorted.isEmpty else { return nil }
        let position = q * Double(sorted.count - 1)
        let low = Int(position.rounded(.down))
        let high = min(sorted.count - 1, low + 1)
        return sorted[low] + (sorted[high] - sorted[low]) * (position - Double(low))
    }

    /// A Wilcoxon signed-rank test's result.
    public struct SignedRank: Sendable, Equatable {
        /// Pairs with a difference other than zero (zeros are dropped, as in Wilcoxon's original test).
        public var n: Int
        /// The sum of the ranks of the positive differences, and of the negative ones.
        public var wPlus: Double
        public var wMinus: Double
        /// Two-sided p: exact (every sign pattern of the ranks, ties by their mid-ranks) up to 25 pairs, else the
        /// normal approximation with the tie correction; nil with no pair.
        public var p: Double?
        /// The matched-pairs rank-biserial correlation (W+ − W−) / (W+ + W−): −1 … 1, positive when the first
        /// condition's values are larger.
        public var rankBiserial: Double?
        /// The median of the differences.
        public var medianDifference: Double?
    }

    /// The test on `differences` (first condition minus second, one per participant).
    public static func signedRank(_ differences: [Double]) -> SignedRank {
        let values = differences.filter { $0.isFinite }
        let nonzero = values.filter { $0 != 0 }
        let n = nonzero.count
        var result = SignedRank(
            n: n, wPlus: 0, wMinus: 0, p: nil, rankBiserial: nil, medianDifference: self.quantile(values, 0.5))
        guard n > 0 else { return result }
        // Mid-ranks of |d|, doubled so that they are whole numbers.
        let order = nonzero.indices.sorted { abs(nonzero[$0]) < abs(nonzero[$1]) }
        var doubledRanks = [Int](repeating: 0, count: n)
        var start = 0
        var tieTerm = 0.0
        while start < n {
            var end = start
            while end + 1 < n, abs(nonzero[order[end + 1]]) == abs(nonzero[order[start]]) { end += 1 }
            let doubled = (start + 1) + (end + 1)  // twice the mean of ranks start+1 … end+1
            for k in start...end { doubledRanks[order[k]] = doubled }
            let t = Double(end - start + 1)
            tieTerm += t * t * t - t
            start = end + 1
        }
        for (index, value) in nonzero.enumerated() {
            if value > 0 {
                result.wPlus += Double(doubledRanks[index]) / 2
            } else {
                result.wMinus += Double(doubledRanks[index]) / 2
            }
        }
        let total = result.wPlus + result.wMinus
        result.rankBiserial = total > 0 ? (result.wPlus - result.wMinus) / total : nil
        let observed = Int((min(result.wPlus, result.wMinus) * 2).rounded())
        if n <= 25 {
            // The number of sign patterns giving each doubled W+: a subset-sum count over the doubled ranks.
            let maximum = doubledRanks.reduce(0, +)
            var counts = [Double](repeating: 0, count: maximum + 1)
            counts[0] = 1
            for rank in doubledRanks {
                for sum in stride(from: maximum, through: rank, by: -1) { counts[sum] += counts[sum - rank] }
            }
            let patterns = counts.reduce(0, +)
            let tail = counts[0...min(maximum, observed)].reduce(0, +) / patterns
            result.p = min(1, 2 * tail)
        } else {
            let nn = Double(n)
            let mean = nn * (nn + 1) / 4
            let variance = nn * (nn + 1) * (2 * nn + 1) / 24 - tieTerm / 48
            let z = (Double(observed) / 2 - mean + 0.5) / variance.squareRoot()  // continuity correction
            result.p = min(1, 2 * self.normalCDF(z))
        }
        return result
    }

    /// The standard normal distribution function.
    static func normalCDF(_ z: Double) -> Double {
        0.5 * erfc(-z / 2.0.squareRoot())
    }
}
