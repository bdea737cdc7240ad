import Foundation
import Testing

extension ProcessSuites.Data {
    /// `hapticnav bench pipeline` on the real stage processes, briefly: it measures and ends with its machine line.
    @Suite struct PipelineBenchTests {
        @Test func theBenchmarkMeasuresHeadingToBandFrameAndEndsWithItsMachineLine() async throws {
            let bench = try ChildProcess(
                try hapticnavExecutable(),
                [
                    "bench", "pipeline", "--seconds", "3", "--transport", "ipc", "--route",
                    repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path,
                ])
            defer { bench.ensureStopped() }
            #expect(await bench.wait(seconds: 60) == 0, "\(bench.stderr.suffix(500))")
            let lines = bench.stdout.split(separator: "\n")
            let last = try #require(lines.last.map(String.init))
            #expect(last.hasPrefix("PIPELINE transport=ipc p50_ms="), "\(last)")
            func value(_ key: String) -> Double? {
                last.split(separator: " ").first { $0.hasPrefix("\(key)=") }.flatMap {
                    Double($0.split(separator: "=")[1])
                }
            }
            let p50 = try #require(value("p50_ms")), p99 = try #require(value("p99_ms"))
            #expect(p50 > 0 && p99 >= p50 && p99 < 50, "a heading becomes a band frame in milliseconds: \(last)")
            #expect(value("lost") == 0)
            #expect(
                (value("rss_mb_max") ?? 0) > 1 && (value("cpu_pct_max") ?? 0) > 0, "per-stage load was read: \(last)")
            #expect(bench.stdout.contains("heading → band frame"))
        }
    }
}

extension ProcessSuites.Data {
    /// What a stage process loads: Foundation's essentials only, not full Foundation with its ICU data, nor
    /// FoundationNetworking with libcurl and its TLS stack (together 11 MB of each stage's resident memory). With the
    /// Swift runtime linked in (the release build `scripts/test` and the package use), the same holds of what the
    /// executable holds: its symbols name Foundation's essentials and nothing of full Foundation, FoundationNetworking or
    /// ICU's data.
    @Suite struct FootprintTests {
        /// How often `text` occurs in `file`, by grep (a 50 MB executable is read in a moment).
        private func occurrences(of text: String, in file: String) async throws -> Int {
            let grep = try ChildProcess("/usr/bin/grep", ["-a", "-c", "-F", "--", text, file])
            defer { grep.ensureStopped() }
            _ = await grep.wait(seconds: 30)
            return Int(grep.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }

        @Test func theExecutableLinksNeitherFullFoundationNorCurl() async throws {
            let executable = try hapticnavExecutable()
            let ldd = try ChildProcess("/usr/bin/ldd", [executable])
            defer { ldd.ensureStopped() }
            #expect(await ldd.wait(seconds: 30) == 0, "\(ldd.stderr)")
            let libraries = ldd.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            for unwanted in ["libFoundation.so", "libFoundationNetworking.so", "lib_FoundationICU.so", "libcurl"] {
                #expect(!libraries.contains { $0.hasPrefix(unwanted) }, "\(unwanted) is linked: \(ldd.stdout)")
            }
            if libraries.contains(where: { $0.hasPrefix("libswiftCore.so") }) {
                #expect(libraries.contains { $0.hasPrefix("libFoundationEssentials.so") }, "\(ldd.stdout)")
            } else {
                // The runtime linked in: Swift's mangled names carry their module (`20FoundationEssentials`,
                // `10Foundation`), and ICU's data is one symbol (`icudt76_dat`).
                #expect(try await self.occurrences(of: "20FoundationEssentials", in: executable) > 0)
                for unwanted in ["10Foundation", "20FoundationNetworking", "icudt"] {
                    let count = try await self.occurrences(of: unwanted, in: executable)
                    #expect(count == 0, "\(executable) holds \(unwanted) (\(count) times)")
                }
            }
        }
    }
}
