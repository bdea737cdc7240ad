import Bus
import Devices
import Links
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import NavCore
import Synchronization

/// `hapticnav bench pipeline`: the real stage processes — source → smoother → route controller → haptic sink → a
/// band emulator on a pseudo-terminal — at 50 Hz headings and 10 Hz fixes, over ipc:// or tcp://. It measures how
/// long a heading takes to become a band frame (the heading's send time in its header against the emulator's
/// receive time: one host, one clock), what was lost, and each stage's CPU share and resident memory.
public enum PipelineBenchmark {
    /// What one run measured.
    public struct Report: Sendable, Codable {
        /// The transport between the stages ("ipc" or "tcp").
        public var transport: String
        /// How the band is reached: "pty" (a pseudo-terminal) or "ble" (Bluetooth LE through the Bumble bridge, on
        /// virtual controllers).
        public var band: String = "pty"
        /// Seconds measured, after the warm-up.
        public var seconds: Double
        /// Heading → band frame [milliseconds].
        public var latencyMilliseconds: LatencySummary
        /// Messages missing by sequence numbers, summed over every stage's input [count].
        public var lost: UInt64
        /// Headings published during the measurement [count].
        public var headings: Int
        /// Band frames that carried a cue during the measurement [count].
        public var frames: Int
        /// Per stage: share of one core over the measurement [%] and largest resident memory [MB].
        public var stages: [StageLoad]
        /// One raw libzmq hop over the same transport, for reference [milliseconds].
        public var rawHopMilliseconds: LatencySummary

        /// The machine-readable last line.
        public var line: String {
            func f(_ value: Double) -> String { fixedDecimal(value, digits: 3) }
            let rss = self.stages.map(\.residentMegabytesMax).max() ?? .nan
            let cpu = self.stages.map(\.cpuPercent).max() ?? .nan
            return "PIPELINE transport=\(self.transport) p50_ms=\(f(self.latencyMilliseconds.p50)) "
                + "p99_ms=\(f(self.latencyMilliseconds.p99)) max_ms=\(f(self.latencyMilliseconds.max)) lost=\(self.lost) "
                + "rss_mb_max=\(fixedDecimal(rss, digits: 1)) cpu_pct_max=\(fixedDecimal(cpu, digits: 2)) band=\(self.band)"
        }
    }

    /// One stage process's load.
    public struct StageLoad: Sendable, Codable {
        /// The stage's name.
        public var stage: String
        /// Share of one core [%].
        public var cpuPercent: Double
        /// Largest resident memory seen [MB].
        public var residentMegabytesMax: Double
    }

    /// Why a run could not be made.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs the pipeline for `warmUp` + `seconds` and measures the last `seconds`; the band on a pseudo-terminal, or
    /// (`band: "ble"`) over Bluetooth LE: the emulator as a peripheral through the Bumble bridge and the plugin's bridge
    /// as the central, each on a virtual controller (tools/hapticnav_ble_controllers.py).
    public static func run(
        executable: String, route: String, transport: String, band: String = "pty", seconds: Double,
        warmUp: Double = 3, folder: String
    ) async throws -> Report {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let ports = (0..<4).map { _ in Loopback.freePort() }
        func endpoint(_ name: String, _ index: Int) -> String {
            transport == "tcp" ? "tcp://127.0.0.1:\(ports[index])" : "ipc://\(folder)/\(name).sock"
        }
        let bandLink = "\(folder)/band"
        let frames = Mutex<[(time: Double, type: String)]>([])
        let log: @Sendable (String) -> Void = { line in
            guard let object = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)),
                let time = object["receiveTimeSeconds"]?.doubleValue, let type = object["type"]?.stringValue
            else { return }
            frames.withLock { $0.append((time, type)) }
        }
        // The band on a pseudo-terminal, or as a BLE peripheral on virtual controllers.
        let overBLE = band == "ble"
        var bandSettings = "device: \"\(bandLink)\""
        let virtual: VirtualBLEBand?
        var ptyEmulator: BandEmulator?
        if overBLE {
            let made = try VirtualBLEBand(name: "HN-Bench", log: log)
            virtual = made
            bandSettings = "bleName: \"HN-Bench\", bleTransport: \"\(made.hostTransport)\""
        } else {
            virtual = nil
            let emulator = BandEmulator(listen: .pty(link: bandLink), log: log)
            ptyEmulator = emulator
            let ready = DispatchSemaphore(value: 0)
            SystemThread.start(name: "band-emulator") {
                try? emulator.serve { _ in ready.signal() }
            }
            guard ready.wait(timeout: .now() + 5) == .success else {
                throw Failure(description: "the band emulator did not start")
            }
        }
        defer {
            virtual?.stop()
            ptyEmulator?.stop()
        }

        // A walker 40° off its walking direction with a noisy compass, the sink assuming no offset: the cue changes
        // (and so the band gets a frame) many times a second, each right after the heading that caused it.
        let config = """
            {
              bus: { joinGraceSeconds: 0.5 },
              stages: {
                source: { plugin: "sim", publish: "\(endpoint("source", 0))",
                          settings: { route: "\(route)", pace: 1, loop: true, headingIntervalSeconds: 0.02,
                                      fixIntervalSeconds: 0.1, pocketOffsetDegrees: 40, compassNoiseDegrees: 15, seed: 7 } },
                smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "\(endpoint("smoother", 1))" },
                route: { plugin: "file", inputs: ["smoother"], topics: ["smoothed"], publish: "\(endpoint("route", 2))",
                         settings: { file: "\(route)" }, options: { destination: \(try Self.lastPoint(route)) } },
                haptic: { plugin: "band", inputs: ["source", "route"], topics: ["heading", "target", "progress"],
                          publish: "\(endpoint("haptic", 3))", settings: { \(bandSettings) },
                          options: { offsetDegrees: 0, debounceSeconds: 0 } },
              },
            }
            """
        let configFile = "\(folder)/pipeline.json5"
        try config.write(toFile: configFile, atomically: true, encoding: .utf8)
        var processes: [(String, ChildProcess)] = []
        defer {
            for (_, process) in processes where process.isRunning { process.signal(SIGTERM) }
            for (_, process) in processes { process.wait() }
        }
        for name in ["haptic", "route", "smoother", "source"] {
            let process = try ChildProcess(
                executable: executable, arguments: ["stage", name, "--config", configFile, "--log-level", "error"])
            processes.append((name, process))
        }

        // Headings as the sink receives them (the header's send time), and the stages' statuses (their counters).
        let context = ZMQContext()
        defer { context.terminate() }
        let subscriber = try BusSubscriber(
            context: context, connect: (0..<4).map { endpoint(["source", "smoother", "route", "haptic"][$0], $0) },
            options: SubscriberOptions(topics: ["heading", "status"]))
        defer { subscriber.close() }
        let headings = Mutex<[Double]>([])
        let gaps = Mutex<[String: UInt64]>([:])
        let reader = Task.detached {
            for await received in subscriber.messages {
                switch received.message {
                case .heading:
                    headings.withLock { $0.append(Double(received.header.sendTimeNanoseconds) / 1e9) }
                case let .status(status):
                    if let counter = status.counters.first(where: { $0.name == "bus.sequenceGaps" }) {
                        gaps.withLock { $0[status.stage] = counter.value }
                    }
                default: break
                }
            }
        }
        defer { reader.cancel() }

        // Over BLE the band is looked for and connected first (a second or two).
        try await Task.sleep(for: .seconds(warmUp + (overBLE ? 4 : 0)))
        guard processes.allSatisfy({ $0.1.isRunning }) else { throw Failure(description: "a stage process stopped") }
        let gapsBefore = gaps.withLock { $0 }
        let start = Date().timeIntervalSince1970
        let before = processes.map { Self.cpuSeconds(pid: $0.1.pid) }
        var rss = [Double](repeating: 0, count: processes.count)
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            for (index, entry) in processes.enumerated() {
                rss[index] = max(rss[index], Self.residentMegabytes(pid: entry.1.pid))
            }
        }
        let end = Date().timeIntervalSince1970
        let after = processes.map { Self.cpuSeconds(pid: $0.1.pid) }
        // Statuses come every second: wait for one more round so that the counters cover the window.
        try await Task.sleep(for: .milliseconds(1200))
        let gapsAfter = gaps.withLock { $0 }

        let sent = headings.withLock { $0 }.sorted()
        let cueFrames = frames.withLock { $0 }.filter { $0.type == "setMotors" && $0.time >= start && $0.time <= end }
        var latencies: [Double] = []
        for frame in cueFrames {
            // The heading that caused a frame is the last one sent before it.
            var low = 0, high = sent.count
            while low < high {
                let middle = (low + high) / 2
                if sent[middle] <= frame.time { low = middle + 1 } else { high = middle }
            }
            if low > 0 { latencies.append((frame.time - sent[low - 1]) * 1000) }
        }
        let loads = processes.enumerated().map { index, entry in
            StageLoad(
                stage: entry.0, cpuPercent: (after[index] - before[index]) / (end - start) * 100,
                residentMegabytesMax: rss[index])
        }
        let lost = gapsAfter.reduce(UInt64(0)) { total, entry in total &+ (entry.value &- (gapsBefore[entry.key] ?? 0))
        }
        let raw = try await BusBenchmark.rawHop(transport: transport, folder: folder, messages: 2000)
        return Report(
            transport: transport, band: band, seconds: end - start, latencyMilliseconds: LatencySummary(latencies),
            lost: lost, headings: sent.filter { $0 >= start && $0 <= end }.count, frames: cueFrames.count,
            stages: loads, rawHopMilliseconds: raw)
    }

    private static func lastPoint(_ route: String) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: route))
        let feature = try JSONDecoder().decode(JSONValue.self, from: data)
        guard let last = feature["geometry"]?["coordinates"]?.arrayValue?.last,
            let longitude = last[0]?.doubleValue, let latitude = last[1]?.doubleValue
        else { throw Failure(description: "\(route): not a GeoJSON LineString") }
        return "[\(latitude), \(longitude)]"
    }

    /// User and system time a process has used [seconds], from /proc.
    static func cpuSeconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3 of the whole line, utime 14 and stime 15 (1-based).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A process's resident memory [MB], from /proc.
    static func residentMegabytes(pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return kilobytes / 1024
    }
}
