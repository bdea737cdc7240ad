#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import SystemIO

/// Inputs made from seeds the way a mutation fuzzer makes them (bytes flipped, inserted, deleted, repeated, cut,
/// spliced from another seed), from a seeded generator: the same inputs on every run, for the test suite. The
/// coverage-guided search is libFuzzer's (`scripts/fuzz`).
public struct Mutations: Sequence, IteratorProtocol {
    private let seeds: [[UInt8]]
    private var random: SeededGenerator
    private var left: Int

    /// `count` inputs from `seeds` (at least one), drawn with `seed`.
    public init(of seeds: [[UInt8]], count: Int, seed: UInt64) {
        self.seeds = seeds.isEmpty ? [[]] : seeds
        self.random = SeededGenerator(seed: seed)
        self.left = count
    }

    public mutating func next() -> [UInt8]? {
        guard self.left > 0 else { return nil }
        self.left -= 1
        var bytes = self.seeds[Int.random(in: 0..<self.seeds.count, using: &self.random)]
        for _ in 0..<Int.random(in: 1...4, using: &self.random) { self.mutate(&bytes) }
        return bytes
    }

    /// Bytes a parser of text protocols cares about.
    private static let interesting: [UInt8] = Array("\r\n:; ,\"{}[]0-9%+&=?/\u{1E}".utf8) + [0, 0x7F, 0x80, 0xFF]

    private mutating func mutate(_ bytes: inout [UInt8]) {
        func position(_ limit: Int) -> Int { limit <= 0 ? 0 : Int.random(in: 0..<limit, using: &self.random) }
        switch Int.random(in: 0..<8, using: &self.random) {
        case 0 where !bytes.isEmpty:  // a bit flipped
            let index = position(bytes.count)
            bytes[index] ^= 1 << UInt8(position(8))
        case 1:  // a byte inserted
            let byte =
                Bool.random(using: &self.random)
                ? Self.interesting[position(Self.interesting.count)] : UInt8.random(in: 0...255, using: &self.random)
            bytes.insert(byte, at: position(bytes.count + 1))
        case 2 where !bytes.isEmpty:  // a run deleted
            let start = position(bytes.count)
            bytes.removeSubrange(start..<Swift.min(bytes.count, start + 1 + position(16)))
        case 3 where !bytes.isEmpty:  // a run repeated
            let start = position(bytes.count)
            let run = bytes[start..<Swift.min(bytes.count, start + 1 + position(64))]
            bytes.insert(contentsOf: Array(repeating: Array(run), count: 1 + position(8)).joined(), at: start)
        case 4 where !bytes.isEmpty:  // cut short
            bytes.removeLast(position(bytes.count))
        case 5:  // spliced with another seed
            let other = self.seeds[position(self.seeds.count)]
            let cut = position(bytes.count + 1)
            bytes = Array(bytes[..<cut]) + Array(other[position(other.count + 1)...])
        case 6 where !bytes.isEmpty:  // a digit run replaced by a large or odd number
            let start = position(bytes.count)
            let numbers = [
                "-1", "0", "99999999999999999999", "1e308", "NaN", "-0", "4294967296", "18446744073709551616",
            ]
            bytes.replaceSubrange(
                start..<Swift.min(bytes.count, start + 1 + position(4)),
                with: Array(numbers[position(numbers.count)].utf8))
        default:  // random bytes
            bytes.insert(
                contentsOf: (0..<(1 + position(32))).map { _ in UInt8.random(in: 0...255, using: &self.random) },
                at: position(bytes.count + 1))
        }
    }
}

extension FuzzTargets {
    /// The seed inputs in `folder` (each file one input), in name order.
    public static func seeds(in folder: String) throws -> [[UInt8]] {
        try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map {
            try InputFile.contents(of: "\(folder)/\($0)")
        }
    }
}
