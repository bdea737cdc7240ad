import Foundation
import NavCore
import Testing
@_exported import TestSupport

/// The built `hapticnav` executable: `HAPTICNAV_BIN`, or the one beside the test bundle.
func hapticnavExecutable() throws -> String {
    if let path = ProcessInfo.processInfo.environment["HAPTICNAV_BIN"] { return path }
    let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    var folder = URL(fileURLWithPath: bundle).deletingLastPathComponent()
    if folder.lastPathComponent == "MacOS" || folder.pathExtension == "xctest" {
        folder = folder.deletingLastPathComponent()
    }
    let candidate = folder.appendingPathComponent("hapticnav").path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw TestProcessError("no hapticnav at \(candidate); run `swift build` first or set HAPTICNAV_BIN")
    }
    return candidate
}

/// The suites that start processes, in three lanes that run side by side (and beside the in-process suites); within a
/// lane, one suite after another. Most of a process test's time is waiting (a walk at its pace, a restart's delay, a
/// stale limit), not computing, so three at once leave the machine mostly idle; more at once would crowd a 2-core
/// machine. `scripts/test` runs them on the release build, the program as it ships.
@Suite enum ProcessSuites {
    /// Every suite that makes network namespaces, one at a time: the kernel serialises making, entering and removing
    /// them, and these suites time stops and heals across them (beside two busy loops, two of them in different
    /// lanes waited 7 s in the same run, one for a heal and one for a `control stop`, where 0.1 s is usual). With the
    /// fail-safe's kills (about 230 s).
    @Suite(.serialized) enum Hosts {}
    /// Stages on one host: crashes and restarts, engines, preflight, the band's links, encryption (about 230 s).
    @Suite(.serialized) enum Stages {}
    /// Data through the stages: studies, sessions, evaluations, calibration, latency (about 240 s).
    @Suite(.serialized) enum Data {}
}

/// One line of the band emulator's log: a frame it received, or a stop it made by itself (`event`).
struct BandLogEntry {
    var time: Double
    /// The frame's type, or nil for an event line.
    var type: String?
    /// `watchdog` or `disconnected` for a stop the band made by itself.
    var event: String?
    var left: Int
    var right: Int
    /// The frame's payload.
    var payload: [Int] = []
}

/// The band emulator's log, read from its file.
func bandLog(_ file: String) -> [BandLogEntry] {
    let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let motors = object["motors"] as? [String: Int]
        else { return nil }
        if let type = object["type"] as? String, let time = object["receiveTimeSeconds"] as? Double {
            return BandLogEntry(
                time: time, type: type, left: motors["left"] ?? 0, right: motors["right"] ?? 0,
                payload: object["payload"] as? [Int] ?? [])
        }
        if let event = object["event"] as? String, let time = object["timeSeconds"] as? Double {
            return BandLogEntry(time: time, event: event, left: motors["left"] ?? 0, right: motors["right"] ?? 0)
        }
        return nil
    }
}

/// The frames of the band emulator's log, without its events.
func bandFrames(_ file: String) -> [(time: Double, type: String, left: Int, right: Int)] {
    bandLog(file).compactMap { entry in entry.type.map { (entry.time, $0, entry.left, entry.right) } }
}

/// A pipeline whose walker holds the phone 60° off its walking direction while the sink assumes no offset — a turn
/// cue, and so a running motor, almost all the time — with an emulated band, in a folder of its own.
struct MotorPipeline {
    let folder: String
    let log: String
    let binary: String
    let config: String
    let band: ChildProcess

    init() throws {
        self.folder = try scratchFolder()
        self.log = "\(self.folder)/band.jsonl"
        self.binary = try hapticnavExecutable()
        let port = freeTCPPort()
        let route = repositoryRoot.appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
        let folder = self.folder
        let config = """
            {
              bus: { joinGraceSeconds: 0.3 },
              stages: {
                source: { plugin: "sim", publish: "ipc://\(folder)/source.sock",
                          settings: { route: "\(route)", pace: 1, loop: true, pocketOffsetDegrees: 60, compassNoiseDegrees: 1, seed: 5 } },
                smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "ipc://\(folder)/smoother.sock" },
                route: { plugin: "file", inputs: ["smoother"], topics: ["smoothed"], publish: "ipc://\(folder)/route.sock",
                         settings: { file: "\(route)" }, options: { destination: [43.72977, 7.416504] } },
                haptic: { plugin: "band", inputs: ["source", "route"], topics: ["heading", "target", "progress"],
                          publish: "ipc://\(folder)/haptic.sock", settings: { tcp: "127.0.0.1:\(port)" },
                          options: { offsetDegrees: 0, staleAfterSeconds: 2.5 } },
              },
            }
            """
        self.config = "\(folder)/pipeline.json5"
        try config.store(toFile: self.config)
        self.band = try ChildProcess(self.binary, ["band-emulator", "--tcp", "127.0.0.1:\(port)", "--log", self.log])
    }

    /// Starts the named stages, each its own process.
    func start(_ names: [String], environment: [String: String] = [:]) throws -> [ChildProcess] {
        try names.map {
            try ChildProcess(self.binary, ["stage", $0, "--config", self.config], environment: environment)
        }
    }
}

/// Writes a phyphox CSV export (`Location.csv`, `Accelerometer.csv`, `Magnetometer.csv`, as the app exports them) of
/// a phone lying flat: a fix every second from `fix(t)` (position, speed, course; 4 m accuracy), and the
/// accelerometer and magnetometer at 50 Hz for a phone facing `heading(t)` [degrees, true], in the Earth's field at
/// `place` from the World Magnetic Model. For `phone-standin` to serve.
func writePhyphoxRecording(
    folder: String, seconds: Double, at place: Coordinate, heading: (Double) -> Double,
    fix: (Double) -> (position: Coordinate, speed: Double, course: Double)
) throws {
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let field = try #require(
        MagneticModel.wmm2025.field(latitude: place.latitude, longitude: place.longitude, year: 2026.9))
    let horizontal = field.horizontalNanoTesla / 1000, down = field.downNanoTesla / 1000
    var location = "\"Time (s)\",\"Latitude (°)\",\"Longitude (°)\",\"Height (m)\",\"Velocity (m/s)\","
    location += "\"Direction (°)\",\"Horizontal Accuracy (m)\",\"Vertical Accuracy (m)\"\n"
    for second in 0..<Int(seconds) {
        let t = Double(second) + 0.5
        let (position, speed, course) = fix(t)
        location += "\(t),\(position.latitude),\(position.longitude),40,\(speed),\(course),4,6\n"
    }
    var accelerometer = "\"Time (s)\",\"X (m/s^2)\",\"Y (m/s^2)\",\"Z (m/s^2)\"\n"
    var magnetometer = "\"Time (s)\",\"X (µT)\",\"Y (µT)\",\"Z (µT)\"\n"
    for index in 0..<Int(seconds * 50) {
        let t = Double(index) / 50 + 0.001
        // Device axes: x right, y to the top edge, z out of the screen (up when flat).
        let h = (heading(t) - field.declinationDegrees) * .pi / 180
        accelerometer += "\(t),0.01,-0.02,9.81\n"
        magnetometer += "\(t),\(-horizontal * sin(h)),\(horizontal * cos(h)),\(-down)\n"
    }
    try location.store(toFile: folder + "/Location.csv")
    try accelerometer.store(toFile: folder + "/Accelerometer.csv")
    try magnetometer.store(toFile: folder + "/Magnetometer.csv")
}

/// Starts `hapticnav phone-standin` on `port` serving `recording`; returns it and the phone's clock at the
/// experiment's start (what the stand-in prints) once it serves.
func startPhoneStandIn(_ binary: String, recording: String, port: Int) async throws -> (ChildProcess, Double) {
    let phone = try ChildProcess(binary, ["phone-standin", "--recording", recording, "--listen", "127.0.0.1:\(port)"])
    _ = await eventually(within: 20) { phone.stdout.contains("started at") }
    let line = phone.stdout.split(separator: "\n").first { $0.contains("started at") } ?? ""
    guard let startedAt = line.split(separator: " ").compactMap({ Double($0) }).first(where: { $0 > 1e9 }) else {
        phone.ensureStopped()
        throw TestProcessError("phone-standin did not start: \(phone.stdout) \(phone.stderr)")
    }
    return (phone, startedAt)
}
