import Foundation
import TestSupport
import Testing

extension ProcessSuites.Stages {
    /// `hapticnav preflight` against live parts in their own processes: a go with a walker and an answering band, a
    /// no-go with the phone stand-in serving the bundled indoor phyphox recording (GPS accuracy of an indoor fix, few
    /// fixes) with its clock an hour ahead, and a band that is not there.
    @Suite struct PreflightTests {
        private let binary: String
        private let folder: String
        init() throws {
            self.binary = try hapticnavExecutable()
            self.folder = try scratchFolder()
        }

        private func write(_ name: String, source: String, band: Int) throws -> String {
            try self.write(name, source: source, bandSettings: "tcp: \"127.0.0.1:\(band)\"")
        }

        private func write(_ name: String, source: String, bandSettings: String) throws -> String {
            let config = """
                {
                  stages: {
                    source: { \(source), publish: "ipc://\(self.folder)/source.sock" },
                    haptic: { plugin: "band", inputs: ["source"], topics: ["heading"],
                              publish: "ipc://\(self.folder)/haptic.sock", settings: { \(bandSettings) },
                              options: { offsetDegrees: 0, fallback: [{ plugin: "console", settings: {} }] } },
                    recorder: { role: "recorder", plugin: "jsonl", inputs: ["source"],
                                settings: { file: "\(self.folder)/recording.jsonl" } },
                  },
                }
                """
            let file = "\(self.folder)/\(name).json5"
            try config.store(toFile: file)
            return file
        }

        @Test func aWalkerAndAnAnsweringBandAreAGo() async throws {
            let port = freeTCPPort()
            let band = try ChildProcess(
                self.binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)", "--log", "\(self.folder)/band.jsonl"])
            defer { band.ensureStopped() }
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let config = try self.write(
                "go",
                source: "plugin: \"sim\", settings: { route: \"\(route)\", pace: 1, compassNoiseDegrees: 2, seed: 3, "
                    + "startTimeSeconds: \(Int(Date().timeIntervalSince1970) + 1) }",
                band: port)
            let preflight = try ChildProcess(self.binary, ["preflight", "--config", config, "--seconds", "6"])
            let status = await preflight.wait(seconds: 40)
            print(preflight.stdout)
            #expect(status == 0, "\(preflight.stdout)\n\(preflight.stderr.suffix(2000))")
            for check in [
                "phone answers", "fixes", "headings", "phone clock", "GPS accuracy", "device band", "device console",
                "run folders", "disk",
            ] {
                let output: String = preflight.stdout
                let lines = output.split(separator: "\n")
                #expect(lines.contains { $0.hasPrefix(check) && $0.contains(" go ") }, "\(check): \(output)")
            }
            #expect(preflight.stdout.contains("preflight: GO"))
        }

        /// A band over Bluetooth LE (the emulator as a peripheral on a virtual controller): found, connected,
        /// acknowledging, its battery and signal strength in its row; then, switched off, a no-go that says it was
        /// not found.
        @Test func aBLEBandIsAGoWithItsBatteryAndSignalAndANoGoWhenItIsNotThere() async throws {
            let ble = try await VirtualBLE(slots: 2)
            defer { ble.stop() }
            let band = try ChildProcess(
                self.binary,
                [
                    "band-emulator", "--ble", "--ble-transport", ble.transport(1), "--ble-name", "HN-Preflight",
                    "--log", "\(self.folder)/ble-band.jsonl",
                ])
            defer { band.ensureStopped() }
            let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
            let source =
                "plugin: \"sim\", settings: { route: \"\(route)\", pace: 1, compassNoiseDegrees: 2, seed: 3, "
                + "startTimeSeconds: \(Int(Date().timeIntervalSince1970) + 1) }"
            let config = try self.write(
                "ble", source: source,
                bandSettings: "bleName: \"HN-Preflight\", bleTransport: \"\(ble.transport(0))\", bleScanSeconds: 5")
            let preflight = try ChildProcess(self.binary, ["preflight", "--config", config, "--seconds", "4"])
            _ = await preflight.wait(seconds: 60)
            print(preflight.stdout)
            let output: String = preflight.stdout
            let row = output.split(separator: "\n").first { $0.hasPrefix("device band") } ?? ""
            // The band's row (the walker's clock checks start after the band answered, a time the config cannot know).
            #expect(row.contains(" go "), "\(row)\n\(preflight.stderr.suffix(2000))")
            for detail in ["battery 87 %", "BLE HN-Preflight", "signal -50 dBm"] {
                #expect(row.contains(detail), "\(detail): \(row)")
            }
            // Acknowledged: at least one of its frames.
            let acknowledged = row.split(separator: ",").compactMap { part -> Int? in
                let words = part.split(separator: " ")
                return words.count == 2 && words[1] == "acknowledged" ? Int(words[0]) : nil
            }.first
            #expect((acknowledged ?? 0) >= 1, "\(row)")
            band.signal(SIGKILL)
            _ = await band.wait(seconds: 5)
            let again = try ChildProcess(self.binary, ["preflight", "--config", config, "--seconds", "2"])
            _ = await again.wait(seconds: 60)
            let later: String = again.stdout
            let missing = later.split(separator: "\n").first { $0.hasPrefix("device band") } ?? ""
            print(missing)
            #expect(missing.contains("NO-GO") && missing.contains("no device with name 'HN-Preflight'"), "\(later)")
        }

        @Test func anIndoorPhoneAndNoBandAreANoGoNamingEach() async throws {
            let phonePort = freeTCPPort()
            let recording = repositoryRoot.appendingPathComponent("data/walks/phyphox-indoor-loop-116m").path
            let phone = try ChildProcess(
                self.binary,
                [
                    "phone-standin", "--recording", recording, "--listen", "127.0.0.1:\(phonePort)", "--clock-offset",
                    "3600",
                ])
            defer { phone.ensureStopped() }
            #expect(await eventually(within: 20) { phone.stdout.contains("serving") }, "\(phone.stderr)")
            let config = try self.write(
                "no-go", source: "plugin: \"phyphox\", settings: { url: \"http://127.0.0.1:\(phonePort)\" }",
                band: freeTCPPort())
            let preflight = try ChildProcess(self.binary, ["preflight", "--config", config, "--seconds", "8"])
            let status = await preflight.wait(seconds: 40)
            print(preflight.stdout)
            #expect(status == 1, "\(preflight.stdout)\n\(preflight.stderr.suffix(2000))")
            let output: String = preflight.stdout
            let lines = output.split(separator: "\n")
            func row(_ check: String) -> Substring? { lines.first { $0.hasPrefix(check) } }
            #expect(row("phone answers")?.contains(" go ") == true, "the stand-in answers")
            #expect(row("headings")?.contains(" go ") == true, "ten headings a second from the phone's sensors")
            #expect(row("device band")?.contains("NO-GO") == true, "no band")
            // An hour off, give or take the network's delay (the median may be -3600.02 or -3599.99 s).
            let age = row("phone clock").flatMap { line in
                line.split(separator: " ").first { $0.hasPrefix("-") }.flatMap { Double($0) }
            }
            #expect(
                row("phone clock")?.contains("NO-GO") == true && age.map { abs($0 + 3600) < 5 } == true,
                "an hour off: \(row("phone clock") ?? "")")
            #expect(row("fixes")?.contains("NO-GO") == true, "indoors: a fix every few seconds")
            #expect(row("compass")?.contains("field") == true, "the field against the model")
            #expect(preflight.stdout.contains("preflight: NO-GO"))
        }
    }
}
