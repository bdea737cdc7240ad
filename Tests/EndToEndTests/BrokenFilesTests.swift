import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// Any bytes in an input file give a clear error (exit 1, a message naming the file) or are counted and skipped:
    /// never a signal.
    @Suite(.serialized) struct BrokenFilesTests {
        /// One broken variant of a real file.
        private struct Variant {
            let name: String
            let bytes: [UInt8]
        }

        /// Variants of `original`: invalid UTF-8 in the places given (element and attribute names among them) and at
        /// random places, truncated, binary, NUL-filled, and a huge line.
        private func variants(of original: [UInt8], replacing: [(String, [UInt8])], seed: UInt64) -> [Variant] {
            var random = seed
            func next() -> Int {
                random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int(truncatingIfNeeded: random >> 33)
            }
            var list: [Variant] = []
            for (index, (needle, replacement)) in replacing.enumerated() {
                let pattern = Array(needle.utf8)
                if let at = self.firstIndex(of: pattern, in: original) {
                    var bytes = original
                    bytes.replaceSubrange(at..<(at + pattern.count), with: replacement)
                    list.append(Variant(name: "invalid-utf8-\(index)", bytes: bytes))
                }
            }
            var sprayed = original
            for _ in 0..<20 where !sprayed.isEmpty {
                sprayed[next() % sprayed.count] = [0xFF, 0xC0, 0x80, 0xED, 0xF8][next() % 5]
            }
            list.append(Variant(name: "invalid-utf8-sprayed", bytes: sprayed))
            list.append(Variant(name: "truncated-half", bytes: Array(original.prefix(original.count / 2))))
            list.append(Variant(name: "truncated-17", bytes: Array(original.prefix(17))))
            list.append(Variant(name: "binary", bytes: (0..<65_536).map { _ in UInt8(truncatingIfNeeded: next()) }))
            list.append(Variant(name: "nul-filled", bytes: [UInt8](repeating: 0, count: 65_536)))
            var nulInside = original
            nulInside.insert(contentsOf: [UInt8](repeating: 0, count: 64), at: original.count / 3)
            list.append(Variant(name: "nul-inside", bytes: nulInside))
            list.append(
                Variant(
                    name: "huge-line",
                    bytes: Array(original.prefix(200)) + [UInt8](repeating: UInt8(ascii: "A"), count: 8 << 20)))
            list.append(Variant(name: "empty", bytes: []))
            return list
        }

        private func firstIndex(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
            guard pattern.count <= bytes.count else { return nil }
            for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
                if Array(bytes[start..<(start + pattern.count)]) == pattern { return start }
            }
            return nil
        }

        /// Runs `hapticnav arguments` on each variant written to `folder/NAME.extension`.
        private func check(
            _ variants: [Variant], extension ext: String, folder: String,
            arguments: (String) -> [String]
        ) async throws -> (clean: Int, refused: Int) {
            let binary = try hapticnavExecutable()
            var clean = 0, refused = 0
            for variant in variants {
                let file = "\(folder)/\(variant.name).\(ext)"
                try Data(variant.bytes).store(toFile: file)
                let process = try ChildProcess(binary, arguments(file), environment: ["SWIFT_BACKTRACE": "enable=no"])
                defer { process.ensureStopped() }
                let status = await process.wait(seconds: 60)
                #expect(status != nil, "\(variant.name).\(ext): finished within 60 s")
                guard status != nil else { continue }
                #expect(
                    process.process.terminationReason == .exit,
                    "\(variant.name).\(ext): ended by signal \(process.process.terminationStatus): \(process.stderr.suffix(500))"
                )
                #expect(status == 0 || status == 1, "\(variant.name).\(ext): exit \(status ?? -1)")
                if status == 0 {
                    clean += 1
                } else {
                    refused += 1
                    #expect(
                        process.stderr.contains(variant.name),
                        "\(variant.name).\(ext): the message names the file: \(process.stderr.suffix(300))")
                }
            }
            return (clean, refused)
        }

        @Test func brokenGPXNMEAAndCSVLogsNeverCrashHapticnavFixes() async throws {
            let folder = try scratchFolder()
            let fixtures = repositoryRoot.appendingPathComponent("Tests/LocationSourcesTests/Fixtures")
            let gpx = Array(
                try Data(contentsOf: fixtures.appendingPathComponent("walks/gpxpy-korita-zbevnica-hike.gpx")))
            let nmea = Array(
                try Data(contentsOf: fixtures.appendingPathComponent("walks/gnsslogger-pixel7-stanford-walk.nmea"))
                    .prefix(200_000))
            let csv = Array("time,heading,pitch,roll\n0.0,12.5,1,2\n0.1,13.0,1,2\n0.2,13.5,1,2\n".utf8)
            let results = [
                (
                    "gpx",
                    try await self.check(
                        self.variants(
                            of: gpx,
                            replacing: [
                                ("<trkpt ", Array("<trk\u{0}".utf8) + [0xFF] + Array("pt ".utf8)),
                                ("<trkpt ", [0x3C, 0xC0, 0xAF] + Array("trkpt ".utf8)),
                                ("lat=", [0x6C, 0xFF, 0x61, 0x74, 0x3D]),
                                ("<ele>", [0x3C, 0x65, 0xC0, 0x6C, 0x65, 0x3E]),
                            ], seed: 1),
                        extension: "gpx", folder: folder
                    ) { ["fixes", $0] }
                ),
                (
                    "nmea",
                    try await self.check(
                        self.variants(
                            of: nmea,
                            replacing: [
                                ("$GPGGA", [0x24, 0xFF, 0x50, 0x47, 0x47, 0x41]),
                                (",N,", [0x2C, 0xC0, 0x2C]),
                            ], seed: 2),
                        extension: "nmea", folder: folder
                    ) { ["fixes", $0] }
                ),
                (
                    "csv",
                    try await self.check(
                        self.variants(of: csv, replacing: [("heading", [0x68, 0xFF, 0x61, 0x64])], seed: 3),
                        extension: "csv", folder: folder
                    ) { ["fixes", $0] }
                ),
            ]
            for (kind, result) in results {
                print(
                    "broken files: \(kind): \(result.clean) read (bad parts skipped), \(result.refused) refused with a message"
                )
            }
            // A file whose read fails with EIO (reading /proc/self/mem at offset 0 does).
            let process = try ChildProcess(
                try hapticnavExecutable(), ["fixes", "/proc/self/mem"], environment: ["SWIFT_BACKTRACE": "enable=no"])
            #expect(await process.wait(seconds: 30) == 1)
            #expect(process.process.terminationReason == .exit)
            #expect(process.stderr.contains("Input/output error"), "\(process.stderr)")
        }

        @Test func brokenOSMMapsAndConfigsNeverCrash() async throws {
            let folder = try scratchFolder()
            let map = Array(
                try Data(contentsOf: repositoryRoot.appendingPathComponent("data/maps/monaco-highways.osm")))
            let osm = try await self.check(
                self.variants(
                    of: map,
                    replacing: [
                        ("<node ", [0x3C, 0x6E, 0x6F, 0xFF, 0x64, 0x65, 0x20]),
                        (" k=\"", [0x20, 0xC0, 0x6B, 0x3D, 0x22]),
                        ("<way ", [0x3C, 0x77, 0x61, 0x79, 0xED, 0xA0, 0x80, 0x20]),
                    ], seed: 4),
                extension: "osm", folder: folder
            ) { ["route", "--from", "43.7319,7.4216", "--to", "43.7298,7.4165", "--map", $0] }
            let demo = Array(try Data(contentsOf: repositoryRoot.appendingPathComponent("configs/demo.json5")))
            let configs = try await self.check(
                self.variants(
                    of: demo,
                    replacing: [
                        ("stages", [0x73, 0xFF, 0x74, 0x61, 0x67, 0x65, 0x73]),
                        ("plugin", [0x70, 0xC0, 0x6C, 0x75, 0x67, 0x69, 0x6E]),
                    ], seed: 5),
                extension: "json5", folder: folder
            ) { ["config", "check", $0] }
            print(
                "broken files: osm: \(osm.clean) routed, \(osm.refused) refused; configs: \(configs.clean) accepted, \(configs.refused) refused"
            )
            #expect(configs.clean == 0, "no broken config is accepted")
        }
    }
}
