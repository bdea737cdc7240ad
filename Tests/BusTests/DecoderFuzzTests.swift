@testable import Bus
import Foundation
import NavCore
import Testing
import TestSupport

/// A small seeded generator (SplitMix64), so that a failing fuzz run can be repeated exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct DecoderFuzzTests {
    /// Mutates a valid frame the ways wire damage and hostile senders do: flipped bits, overwritten bytes,
    /// extreme integers (counts, lengths, sequence numbers), cuts, extensions and pure noise.
    private static func mutate(_ frame: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        var bytes = frame
        switch Int.random(in: 0..<8, using: &random) {
        case 0:  // flip a few bits
            for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] ^=
                    UInt8(1) << UInt8.random(in: 0...7, using: &random)
            }
        case 1:  // overwrite bytes with 0x00 or 0xFF runs (lengths and counts of 0 or maximum)
            if !bytes.isEmpty {
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, start + Int.random(in: 1...8, using: &random))
                let value: UInt8 = Bool.random(using: &random) ? 0xFF : 0
                for index in start..<end { bytes[index] = value }
            }
        case 2:  // truncate
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
        case 3:  // extend with noise
            for _ in 0..<Int.random(in: 1...32, using: &random) {
                bytes.append(UInt8.random(in: 0...255, using: &random))
            }
        case 4:  // pure noise of a similar length
            bytes = (0..<Int.random(in: 0...max(1, frame.count * 2), using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
        case 5:  // non-finite doubles at a random 8-byte offset
            if bytes.count >= 8 {
                let offset = Int.random(in: 0...(bytes.count - 8), using: &random)
                let value = [Double.nan, .infinity, -.infinity, .greatestFiniteMagnitude, -0.0].randomElement(
                    using: &random)!
                withUnsafeBytes(of: value.bitPattern.littleEndian) { raw in
                    for index in 0..<8 { bytes[offset + index] = raw[index] }
                }
            }
        case 6:  // invalid UTF-8 sprayed in (0xC0, 0xFF, lone continuation bytes)
            for _ in 0..<Int.random(in: 1...6, using: &random) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = [0xC0, 0xFF, 0x80, 0xED].randomElement(
                    using: &random)!
            }
        default:  // duplicate a slice (repeated fields, counts that now lie)
            if bytes.count > 2 {
                let start = Int.random(in: 0..<(bytes.count - 1), using: &random)
                let end = Int.random(in: (start + 1)...bytes.count, using: &random)
                bytes.insert(contentsOf: bytes[start..<end], at: Int.random(in: 0...bytes.count, using: &random))
            }
        }
        return bytes
    }

    /// What the damaged frames came to.
    private struct Tally: Sendable {
        var decoded = 0
        var dropped: [DropReason: Int] = [:]
        var restarts = 0
        var gaps: UInt64 = 0
        /// Errors that are not a counted drop.
        var uncounted: [String] = []
    }

    /// Decodes `frames` damaged frames as a subscriber does, with its sequence bookkeeping.
    private static func decodeDamaged(frames: Int) -> Tally {
        var tally = Tally()
        var random = SeededGenerator(seed: 0x5AFE_0001)
        let valid = BusMessage.examples.enumerated().map { index, message in
            Envelope.frames(
                for: message, sequence: UInt64(index), stage: "fuzz", sendTimeNanoseconds: 1_767_225_600_000_000_000)
        }
        let topics = BusMessage.Kind.allCases.map { Array($0.topic.utf8) } + [Array("_hb".utf8), [0xFF, 0xFE]]
        var lastSequence: [String: UInt64] = [:]
        for round in 0..<frames {
            let original = valid[round % valid.count]
            var topic = original[0]
            var header = original[1]
            var payload = original[2]
            // Damage one, two or all three frames; keep some intact so that valid decoding is exercised too.
            switch Int.random(in: 0..<6, using: &random) {
            case 0: header = Self.mutate(header, &random)
            case 1, 2: payload = Self.mutate(payload, &random)
            case 3: topic = topics.randomElement(using: &random)!
            case 4:
                header = Self.mutate(header, &random)
                payload = Self.mutate(payload, &random)
            default: break
            }
            let topicString = String(decoding: topic, as: UTF8.self)
            do {
                let parsed = try header.withUnsafeBytes { bytes throws(DecodeFailure) in
                    try Envelope.decodeHeader(bytes)
                }
                _ = try payload.withUnsafeBytes { bytes throws(DecodeFailure) in
                    try Envelope.decodePayload(topic: topicString, header: parsed, payload: bytes)
                }
                // The subscriber's sequence bookkeeping on whatever numbers arrive.
                if let last = lastSequence[parsed.stage] {
                    switch SequenceTracking.classify(last: last, next: parsed.sequence) {
                    case .next: break
                    case let .gap(missing): tally.gaps = tally.gaps.addingClamped(missing)
                    case .restart: tally.restarts += 1
                    }
                }
                lastSequence[parsed.stage] = parsed.sequence
                tally.decoded += 1
            } catch let failure as DecodeFailure {
                tally.dropped[failure.reason, default: 0] += 1
            } catch {
                tally.uncounted.append("\(error)")
            }
        }
        return tally
    }

    @Test func aMillionDamagedFramesAreEachDecodedOrCountedNeverATrap() async throws {
        let frames = 1_000_000
        // Seconds of a core: decoded on a thread of their own, not on the pool the other suites' stages wait for.
        let tally = try await offThePool { Self.decodeDamaged(frames: frames) }
        let (decoded, dropped, restarts, gaps) = (tally.decoded, tally.dropped, tally.restarts, tally.gaps)
        #expect(tally.uncounted.isEmpty, "errors that are not a counted drop: \(tally.uncounted.prefix(5))")
        let droppedTotal = dropped.values.reduce(0, +)
        #expect(decoded + droppedTotal == frames, "every frame is either decoded or counted")
        #expect(decoded > frames / 10, "intact frames still decode: \(decoded)")
        #expect(
            dropped[.malformed, default: 0] > 0 && dropped[.truncated, default: 0] > 0
                && dropped[.unknownVersion, default: 0] > 0)
        print(
            "fuzz: \(frames) frames, \(decoded) decoded, dropped \(dropped.map { "\($0.key.rawValue) \($0.value)" }.sorted()), sequence restarts \(restarts), gap total \(gaps)"
        )
    }

    @Test(arguments: [
        (UInt64(5), UInt64(6), SequenceTracking.Step.next),
        (UInt64.max, 0, .next),
        (UInt64.max, 1, .restart),
        (UInt64.max, UInt64.max, .restart),
        (10, 3, .restart),
        (0, UInt64.max, .gap(missing: UInt64.max - 1)),
        (2, 6, .gap(missing: 3)),
    ])
    func sequenceNumbersAreClassifiedWithoutOverflow(_ last: UInt64, _ next: UInt64, _ expected: SequenceTracking.Step)
    {
        #expect(SequenceTracking.classify(last: last, next: next) == expected)
    }

    @Test func aSequenceWrapIsARestartAndTheStreamGoesOn() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("inproc")
        let sender = try RawSender(context: context, bind: endpoint)
        let subscriber = try BusSubscriber(context: context, connect: [endpoint])
        defer {
            sender.close()
            subscriber.close()
        }
        let message = BusMessage.heading(HeadingSample(timeSeconds: 1, headingDegrees: 90))
        var iterator = subscriber.makeAsyncIterator()
        for sequence: UInt64 in [UInt64.max - 1, UInt64.max, 1, 2, 0, UInt64.max, 7] {
            try sender.send(Envelope.frames(for: message, sequence: sequence, stage: "wrap", sendTimeNanoseconds: 1))
        }
        var count = 0
        while count < 7, let event = await nextEvent(&iterator, within: 2) {
            if case .message = event { count += 1 }
        }
        #expect(count == 7)
        let counters = subscriber.snapshot
        // max−1 → max (next), max → 1 (restart), 1 → 2 (next), 2 → 0 (restart), 0 → max (gap of max − 1), max → 7 (restart)
        #expect(counters.senderRestarts == 3)
        #expect(counters.sequenceGaps == UInt64.max - 1)
    }
}
