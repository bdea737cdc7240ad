import Foundation
import NavCore
@testable import Fuzzing
import Testing
import TestSupport

/// The fuzzer's targets keep their promises on their seeds (`scripts/fuzz`'s starting corpus) and on inputs mutated
/// from them with a seeded generator (the same on every run); the coverage-guided search runs in `scripts/fuzz`.
@Suite(.serialized) struct FuzzingTests {
    static let seedFolder = repositoryRoot.appendingPathComponent("Tests/FuzzingTests/Seeds").path

    @Test(arguments: FuzzTargets.all.map(\.name))
    func aTargetKeepsItsPromisesOnItsSeedsAndTheirMutations(_ name: String) async throws {
        let target = try FuzzTargets.make(name)
        let seeds = try FuzzTargets.seeds(in: "\(Self.seedFolder)/\(name)")
        #expect(seeds.count >= 2, "seeds for \(name)")
        // The inputs block (a connection is served on the calling thread): on a thread of their own, not on the
        // cooperative pool the suites beside this one share.
        let broken: [String] = try await offThePool {
            var broken: [String] = []
            for (index, seed) in seeds.enumerated() {
                if let violation = target.run(seed) { broken.append("seed \(index): \(violation)") }
            }
            for (index, input) in Mutations(of: seeds, count: 1000, seed: 2026).enumerated() {
                if let violation = target.run(input) {
                    broken.append("mutation \(index) (\(input.count) bytes): \(violation)")
                }
            }
            return broken
        }
        #expect(broken.isEmpty, "\(broken.count) broken: \(broken.prefix(5).joined(separator: "\n"))")
    }
}

/// The promises' checks find what they are for: a broken answer, a message out of range.
@Suite struct FuzzInvariantTests {
    @Test func answersCutShortOrNotHTTPAreCaught() throws {
        let whole = Array(
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8)
        #expect(try HTTPAnswers.statuses(whole) == [200, 404])
        #expect(throws: FuzzViolation.self) { try HTTPAnswers.statuses(Array(whole.dropLast(40))) }
        #expect(throws: FuzzViolation.self) { try HTTPAnswers.statuses(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) }
        #expect(throws: FuzzViolation.self) { try HTTPAnswers.statuses(Array("hello\r\n\r\n".utf8)) }
    }

    /// The phone stand-in ends its stream at once after an answer whose end a client cannot tell without it.
    @Test func answersWholeWithoutTheStreamsEndAreTold() {
        func whole(_ text: String) -> Bool { Conversation.isWhole(Array(text.utf8)) }
        #expect(whole("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        #expect(!whole("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nok"))
        #expect(!whole("HTTP/1.1 200 OK\r\n\r\nuntil the end"))
        #expect(whole("HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(whole("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
        #expect(!whole("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n"))
        #expect(!whole("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"))
        #expect(!whole("garbage\r\n\r\n"))
    }

    @Test func messagesOutOfRangeAreCaught() {
        let fix = LocationFix(timeSeconds: 1, latitude: 43.7, longitude: 7.4, horizontalAccuracyMeters: 5)
        #expect(MessageInvariants.broken(.fix(fix)) == nil)
        var bad = fix
        bad.latitude = .nan
        #expect(MessageInvariants.broken(.fix(bad)) != nil)
        bad = fix
        bad.horizontalAccuracyMeters = 0
        #expect(MessageInvariants.broken(.fix(bad)) != nil)
        #expect(MessageInvariants.broken(.heading(HeadingSample(timeSeconds: 1, headingDegrees: 360))) != nil)
        #expect(MessageInvariants.broken(.heading(HeadingSample(timeSeconds: 1, headingDegrees: 359.5))) == nil)
    }

    @Test func percentEscapesAreReadAsAQueryReadsThem() {
        #expect(percentDecodedLoosely(Array("a%2Db+c%zz".utf8)) == Array("a-b c%zz".utf8))
    }
}
