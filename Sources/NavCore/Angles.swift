/// Angle arithmetic on the circle. Headings are never averaged arithmetically: 350° and 10° average to 0°.
public enum Angle {
    /// `degrees` in [0, 360).
    public static func normalized(_ degrees: Double) -> Double {
        guard degrees.isFinite else { return degrees }
        let r = _fmod(degrees, 360)
        let wrapped = r < 0 ? r + 360 : r
        return wrapped >= 360 ? 0 : wrapped
    }

    /// The signed smallest rotation from `from` to `to` [degrees, (−180, 180], positive = clockwise].
    public static func signedDifference(from: Double, to: Double) -> Double {
        let d = self.normalized(to - from)
        return d > 180 ? d - 360 : d
    }

    /// True when `degrees` lies in the clockwise window from `start` to `end` (inclusive), which may
    /// wrap through north: the window 350° to 10° holds 355° and 5° but not 180°.
    public static func isInWindow(_ degrees: Double, from start: Double, to end: Double) -> Bool {
        let width = self.normalized(end - start)
        return self.normalized(degrees - start) <= width
    }

    /// The smallest angle between two directions [degrees, 0...180].
    public static func separation(_ a: Double, _ b: Double) -> Double {
        abs(self.signedDifference(from: a, to: b))
    }

    /// Statistics of a set of directions.
    public struct CircularStatistics: Equatable, Sendable {
        /// The circular mean [degrees, 0..<360]; nil when the directions cancel out.
        public var meanDegrees: Double?
        /// Mean resultant length [0...1]: 1 when all agree, 0 when they cancel.
        public var resultantLength: Double
        /// Circular standard deviation, √(−2 ln R) [degrees]; infinite when they cancel.
        public var spreadDegrees: Double
    }

    /// Circular mean and spread of `degrees`.
    public static func circularStatistics<S: Sequence>(_ degrees: S) -> CircularStatistics where S.Element == Double {
        var sumSin = 0.0, sumCos = 0.0, count = 0
        for value in degrees {
            let radians = value * .pi / 180
            sumSin += _sin(radians)
            sumCos += _cos(radians)
            count += 1
        }
        guard count > 0 else {
            return CircularStatistics(meanDegrees: nil, resultantLength: 0, spreadDegrees: .infinity)
        }
        let length = min(1, (sumSin * sumSin + sumCos * sumCos).squareRoot() / Double(count))
        guard length > 1e-12 else {
            return CircularStatistics(meanDegrees: nil, resultantLength: 0, spreadDegrees: .infinity)
        }
        let mean = self.normalized(_atan2(sumSin, sumCos) * 180 / .pi)
        let spread = (-2 * _log(length)).squareRoot() * 180 / .pi
        return CircularStatistics(meanDegrees: mean, resultantLength: length, spreadDegrees: spread)
    }
}
