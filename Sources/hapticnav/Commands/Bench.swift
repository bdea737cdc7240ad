import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Devices
import Evaluation
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks that print their figures.",
        subcommands: [
            BusBench.self, RoutesBench.self, PipelineBench.self, ReplayBench.self, WalkersBench.self, PlaceBench.self,
        ])

    struct PipelineBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pipeline",
            abstract:
                "The real stage processes at 50 Hz headings and 10 Hz fixes: heading → band frame latency, losses, "
                + "each stage's CPU and memory, and a raw libzmq hop for reference.")

        @Option(help: "Seconds to measure, after a 3 s warm-up.")
        var seconds = 20.0

        @Option(help: "ipc, tcp or both.")
        var transport = "both"

        @Option(
            help:
                "How the band is reached: pty (a pseudo-terminal), or ble (Bluetooth LE on virtual controllers, measured beside pty in the same run)."
        )
        var band = "pty"

        @Option(help: "The route the simulated walker follows (GeoJSON).")
        var route = "data/routes/monaco-demo-walk.geojson"

        @Flag(help: "Print the figures as JSON.")
        var json = false

        func run() async throws {
            let transports = self.transport == "both" ? ["ipc", "tcp"] : [self.transport]
            guard transports.allSatisfy({ ["ipc", "tcp"].contains($0) }) else {
                throw ValidationError("--transport: ipc, tcp or both")
            }
            guard ["pty", "ble"].contains(self.band) else { throw ValidationError("--band: pty or ble") }
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let route = URL(fileURLWithPath: self.route).standardizedFileURL.path
            guard FileManager.default.fileExists(atPath: route) else {
                throw CommandFailure(
                    "--route \(self.route): no such file (the default is the repository's demo walk: run from the repository's root, or give --route)"
                )
            }
            var reports: [PipelineBenchmark.Report] = []
            // Over BLE, the pseudo-terminal's run first: the baseline of the same run on the same machine.
            let bands = self.band == "ble" ? ["pty", "ble"] : ["pty"]
            for transport in transports {
                for band in bands {
                    let folder = "/tmp/hapticnav-bench-\(getpid())-\(transport)-\(band)"
                    defer { try? FileManager.default.removeItem(atPath: folder) }
                    reports.append(
                        try await PipelineBenchmark.run(
                            executable: executable, route: route, transport: transport, band: band,
                            seconds: self.seconds, folder: folder))
                }
            }
            if self.json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(reports), as: UTF8.self))
            }
            for report in reports {
                let l = report.latencyMilliseconds, r = report.rawHopMilliseconds
                let over = report.band == "ble" ? ", the band over BLE (virtual link)" : ""
                print(
                    "pipeline over \(report.transport)://\(over), \(Int(report.seconds)) s: \(report.headings) headings, "
                        + "\(report.frames) band frames with a cue, \(report.lost) message(s) lost")
                print(
                    String(
                        cFormat: "  heading → band frame: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d samples)",
                        l.p50, l.p99, l.max, l.count))
                print(String(cFormat: "  raw libzmq hop, same transport: p50 %.3f ms, p99 %.3f ms", r.p50, r.p99))
                for stage in report.stages {
                    let name = stage.stage.padded(to: 9)
                    let load = String(
                        cFormat: "CPU %5.2f %% of a core, resident memory up to %.1f MB", stage.cpuPercent,
                        stage.residentMegabytesMax)
                    print("  \(name) \(load)")
                }
            }
            for report in reports { print(report.line) }
        }
    }

    struct BusBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bus",
            abstract: "One hop's latency over ipc:// through the transport and through raw libzmq, in the same run.")

        @Option(help: "Messages per series.")
        var messages = 10_000

        @Option(help: "Messages per second.")
        var rate = 1000.0

        @Option(help: "Alternating blocks of raw and transport hops.")
        var rounds = 20

        @Option(help: "ipc (a socket file) or tcp (loopback).")
        var transport = "ipc"

        @Flag(help: "Also measure the transport hop over CURVE (encrypted and authenticated) in each round.")
        var curve = false

        func validate() throws {
            guard ["ipc", "tcp"].contains(self.transport) else { throw ValidationError("--transport: ipc or tcp") }
        }

        @Flag(help: "Print the figures as JSON.")
        var json = false

        func run() async throws {
            let folder = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/hapticnav-bench-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let report = try await BusBenchmark.run(
                messages: self.messages, rateHz: self.rate, rounds: self.rounds,
                folder: folder, transport: self.transport, curve: self.curve)
            if self.json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
                return
            }
            func row(_ name: String, _ s: LatencySummary) -> String {
                name.padded(to: 22)
                    + String(cFormat: "%8d %10.1f %10.1f %10.1f", s.count, s.p50, s.p99, s.max)
            }
            print(
                "bus latency, one hop over \(self.transport):// at \(Int(self.rate)) Hz, libzmq \(zmqVersion()), "
                    + "payload \(report.payloadBytes) bytes, \(self.rounds) alternating rounds")
            print("series                    count    p50 µs     p99 µs     max µs")
            print(row("raw libzmq PUB→SUB", report.raw))
            print(row("hapticnav transport", report.transport))
            print(row("  of which to decode", report.receiveThread))
            print(row("  after the first frame", report.afterFirstFrame))
            if let curve = report.curve { print(row("hapticnav over CURVE", curve)) }
            print(
                String(
                    cFormat:
                        "ratio transport/raw p50: %.2f over all samples; median of the %d paired rounds: %.2f (goal ≤ 1.20, release build)",
                    report.ratioP50, self.rounds, report.medianRoundRatioP50))
            if let ratio = report.medianRoundCurveRatioP50, let curve = report.curve {
                print(
                    String(
                        cFormat: "cost of encryption: CURVE/plain p50 %.2f (median of the paired rounds), +%.1f µs",
                        ratio, curve.p50 - report.transport.p50))
            }
        }
    }
}

extension Bench {
    struct RoutesBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "routes",
            abstract:
                "The osm router against the 25 Monaco reference routes, its map loading (XML, PBF, compiled cache), and each provider's query times (osm, a live Valhalla, a live OSRM) in one run."
        )

        @Option(help: "The OSM extract (XML or PBF) routed on.")
        var map = "data/maps/monaco-highways.osm"

        @Option(help: "Maps whose loading to time (repeatable; default: the bundled Monaco XML and PBF).")
        var load: [String] = ["data/maps/monaco-highways.osm", "data/maps/monaco.osm.pbf"]

        @Option(help: "The reference routes.")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "A running Valhalla to time in the same run (scripts/valhalla-serve starts one).")
        var valhallaURL: String?

        @Option(help: "A running OSRM to time in the same run (scripts/osrm-serve starts one).")
        var osrmURL: String?

        @Option(help: "Queries per pair and engine.")
        var repeats = 5

        func run() async throws {
            print(try RouteBenchmark.loading(maps: self.load))
            let osm = try OSMRouteProvider(map: self.map, logger: Logger(label: "bench"))
            var live: [any RouteProvider] = []
            do {
                if let url = self.valhallaURL {
                    live.append(try EngineRouteProvider(.valhalla, url: url, timeoutSeconds: 10, retries: 0))
                }
            } catch { throw ValidationError("--valhalla-url: \(error)") }
            do {
                if let url = self.osrmURL {
                    live.append(try EngineRouteProvider(.osrm, url: url, timeoutSeconds: 10, retries: 0))
                }
            } catch { throw ValidationError("--osrm-url: \(error)") }
            print(
                try await RouteBenchmark.run(
                    pairs: try RouteBenchmark.pairs(file: self.pairs), osm: osm, live: live,
                    repeats: self.repeats))
        }
    }
}
