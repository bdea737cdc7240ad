/// A small seeded generator (SplitMix64): the same seed gives the same run on every machine.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator from a seed.
    public init(seed: UInt64) {
        self.state = seed
    }

    public mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A normally distributed value with the given mean and standard deviation (Box–Muller).
    public mutating func gaussian(mean: Double = 0, standardDeviation: Double) -> Double {
        guard standardDeviation > 0 else { return mean }
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &self)
        let u2 = Double.random(in: 0..<1, using: &self)
        let radius = (-2 * _log(u1)).squareRoot()
        return mean + standardDeviation * radius * _cos(2 * Double.pi * u2)
    }
}
