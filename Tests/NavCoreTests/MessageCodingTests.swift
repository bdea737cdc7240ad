import Foundation
import NavCore
import Testing

@Suite struct MessageCodingTests {
    @Test(arguments: BusMessage.examples)
    func everyMessageSurvivesAWireRoundTrip(_ message: BusMessage) throws {
        var writer = WireWriter()
        message.encodePayload(to: &writer)
        let decoded = try writer.bytes.withUnsafeBytes { try BusMessage.decode(kind: message.kind, payload: $0) }
        #expect(decoded == message)
    }

    @Test(arguments: BusMessage.examples)
    func everyMessageSurvivesAJSONRoundTrip(_ message: BusMessage) throws {
        let data = try JSONEncoder().encode(message)
        #expect(try JSONDecoder().decode(BusMessage.self, from: data) == message)
    }

    @Test func examplesCoverEveryKind() {
        #expect(Set(BusMessage.examples.map(\.kind)) == Set(BusMessage.Kind.allCases))
    }

    @Test(arguments: BusMessage.examples)
    func everyTruncationIsRejected(_ message: BusMessage) {
        var writer = WireWriter()
        message.encodePayload(to: &writer)
        let bytes = writer.bytes
        for length in 0..<bytes.count {
            let prefix = Array(bytes[..<length])
            #expect(throws: WireDecodingError.self, "a \(length)-byte prefix of \(bytes.count) decoded") {
                try prefix.withUnsafeBytes { try BusMessage.decode(kind: message.kind, payload: $0) }
            }
        }
    }

    @Test(arguments: BusMessage.examples)
    func trailingBytesAreRejected(_ message: BusMessage) {
        var writer = WireWriter()
        message.encodePayload(to: &writer)
        let bytes = writer.bytes + [0]
        #expect(throws: WireDecodingError.trailingBytes(count: 1)) {
            try bytes.withUnsafeBytes { try BusMessage.decode(kind: message.kind, payload: $0) }
        }
    }

    @Test func outOfDomainEnumsAndFlagsAreRejected() throws {
        var writer = WireWriter()
        BusMessage.cue(HapticCue(timeSeconds: 1, kind: .turnLeft, intensity: 0.5, deviationDegrees: -40))
            .encodePayload(to: &writer)
        var bytes = writer.bytes
        bytes[8] = 200  // the cue kind
        #expect(throws: WireDecodingError.invalidValue(field: "kind", detail: "unknown case 200")) {
            try bytes.withUnsafeBytes { try BusMessage.decode(kind: .cue, payload: $0) }
        }
    }

    @Test func aNaNHeadingIsRejectedOnTheWire() {
        var writer = WireWriter()
        BusMessage.heading(HeadingSample(timeSeconds: 1, headingDegrees: .nan)).encodePayload(to: &writer)
        #expect(throws: WireDecodingError.self) {
            try writer.bytes.withUnsafeBytes { try BusMessage.decode(kind: .heading, payload: $0) }
        }
    }

    @Test func aHugeArrayCountFailsWithoutAllocating() {
        var writer = WireWriter()
        writer.write(UInt32(1))
        writer.write(1.0)
        writer.write("osm")
        writer.write(100.0)
        writer.write(UInt32.max)  // points: far more than the bytes that follow
        #expect(throws: WireDecodingError.self) {
            try writer.bytes.withUnsafeBytes { try BusMessage.decode(kind: .route, payload: $0) }
        }
    }

    @Test func layoutOfAHeadingSampleIsLittleEndianAsDocumented() {
        var writer = WireWriter()
        BusMessage.heading(
            HeadingSample(
                timeSeconds: 1, headingDegrees: 90, reference: .magneticNorth,
                accuracyDegrees: nil)
        ).encodePayload(to: &writer)
        // f64 1.0, f64 90.0, u8 reference 1, u8 presence 0 (docs/PROTOCOL.md).
        #expect(writer.bytes == [0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0, 0, 0, 0, 0, 0x80, 0x56, 0x40, 1, 0])
    }

    @Test func topicsAreDistinctAndNoneIsAPrefixOfAnother() {
        let topics = BusMessage.Kind.allCases.map(\.topic) + ["_hb"]
        for a in topics {
            for b in topics where a != b {
                #expect(!b.hasPrefix(a), "\(a) is a prefix of \(b)")
            }
        }
    }
}

@Suite struct SettingsTests {
    @Test func anUnknownKeyIsNamedWithTheValidOnes() throws {
        var settings = try Settings(
            .object(["speed": .number(1), "sed": .number(3)]), path: "stages.source.settings",
            baseDirectory: "/x")
        _ = try settings.double("speed", default: 1)
        _ = try settings.int("seed", default: 1)
        #expect(throws: ConfigError.unknownKey(path: "stages.source.settings", key: "sed", valid: ["seed", "speed"])) {
            try settings.finish()
        }
        let message = "\(ConfigError.unknownKey(path: "stages.source.settings", key: "sed", valid: ["speed", "seed"]))"
        #expect(message == "unknown key 'sed' in stages.source.settings; valid keys: seed, speed")
    }

    @Test func aValueOutOfRangeOrOfTheWrongTypeIsAnError() throws {
        var settings = try Settings(.object(["speed": .number(-1), "name": .number(2)]), path: "s", baseDirectory: "")
        #expect(throws: ConfigError.self) { try settings.double("speed", default: 1, in: 0...10) }
        #expect(throws: ConfigError.self) { try settings.string("name") }
    }

    @Test func relativePathsResolveAgainstTheConfigFolder() throws {
        var settings = try Settings(
            .object(["file": .string("../data/x.geojson")]), path: "s", baseDirectory: "/repo/configs")
        #expect(try settings.path("file") == "/repo/configs/../data/x.geojson")
    }

    @Test(arguments: [
        (1.25, 1, "1.3"), (-0.004, 2, "0.00"), (-3.25, 2, "-3.25"), (7.4246119, 7, "7.4246119"),
        (12, 0, "12"), (0.05, 1, "0.1"),
    ])
    func fixedDecimalFormatsLikePrintf(_ value: Double, _ digits: Int, _ expected: String) {
        #expect(fixedDecimal(value, digits: digits) == expected)
    }
}
