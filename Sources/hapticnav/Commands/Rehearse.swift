import ArgumentParser
import Evaluation
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import LocationSources
import NavCore
import Runtime
import SessionFiles
import Synchronization
import SystemIO
import MapLogic
import Lab

/// `hapticnav rehearse`: a field session rehearsed on one machine, closed loop. A simulated participant (the network
/// participant of `eval walkers`, held to the map's ways, following the cues and turn events it feels) carries a
/// simulated phone that the real `phyphox` source polls over HTTP, and wears the band, emulated as a Bluetooth LE
/// peripheral on virtual controllers, whose motors it feels from the band's own frames. Every stage runs as
/// `hapticnav run --group 1` and `--group 2` run them from the field config; preflight, the calibration with the
/// phone live, the walk, the experimenter's stop and resume, and the session's report are the real commands.
struct RehearseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rehearse",
        abstract:
            "A field session on one machine, closed loop: a simulated participant with a simulated phone (phyphox) and the band over BLE (virtual controllers), through preflight, calibration, the walk with a stop and resume, and the report.",
        discussion: """
            It walks in real time (the phone's clock is the host's): a few minutes. Its figures and checks are printed, \
            its folder (--out) keeps every process's output, the band's frames, the session and its report. Exit 0 \
            only when every check passes (see docs/FIELD.md, "Rehearsal at the desk").
            """)

    @Option(help: "The field config (its route stage's map and destination are the walk's).")
    var config = "configs/field-phone.json5"

    @Option(help: "Where the rehearsal's files go (emptied first).")
    var out = "out/rehearsal"

    @Option(
        help:
            "Where the participant starts, LAT,LON (default: a point of the map's ways 120–170 m from the destination)."
    )
    var start: String?

    @Option(help: "The participant's, the phone's and the start's seed.")
    var seed: UInt64 = 1

    @Option(help: "Seconds of walking before the experimenter's stop.")
    var stopAfter = 40.0

    @Option(help: "How long the stop lasts [seconds].")
    var stopSeconds = 8.0

    @Option(help: "The longest the walk may take [seconds].")
    var walkTimeout = 600.0

    func run() async throws {
        // Stopped by a signal (a CI job's timeout, `kill`): the processes it started stop with it, the band's motors
        // with them, instead of walking on as orphans.
        let signals = StopSignals {
            FieldRehearsal.stopChildren()
            Glibc.exit(143)
        }
        defer { signals.cancel() }
        var rehearsal = try FieldRehearsal(
            config: self.config, folder: self.out, start: self.start, seed: self.seed, stopAfter: self.stopAfter,
            stopSeconds: self.stopSeconds, walkTimeout: self.walkTimeout)
        let passed = try await rehearsal.run()
        if !passed { throw ExitCode(1) }
    }
}

/// The rehearsal's parts and its steps (see ``RehearseCommand``).
struct FieldRehearsal {
    /// What the participant does now, which the simulation loop acts out.
    enum Activity: Sendable, Equatable {
        /// Standing at the start, the phone in the hand.
        case standing
        /// Walking to and fro along the start's way, the phone in the hand (preflight's heading against course).
        case pacing
        /// The calibration: turning in place with the phone flat until the ticks stop, then the phone into the pocket,
        /// the countdown, and walking straight ahead.
        case calibrating
        /// Led back to the start after the calibration, the phone in the pocket.
        case returning
        /// The walk: following what the band says.
        case walking
        /// The experimenter stopped the outputs: standing still until resumed.
        case stopped
    }

    /// What the simulation loop and the steps share.
    final class Shared: Sendable {
        struct State {
            var activity = Activity.standing
            var band = FeltBand()
            var frames: [FeltBand.Frame] = []
            var position = Coordinate(latitude: 0, longitude: 0)
            var walkedSeconds = 0.0
            /// The phone's true heading, each step [time, degrees].
            var trueHeadings: [(time: Double, degrees: Double)] = []
        }
        let state = Mutex(State())
    }

    /// The name the emulated band advertises.
    static let bandName = "HN-Rehearsal"
    let configFile: String
    let folder: String
    let seed: UInt64
    let stopAfter: Double
    let stopSeconds: Double
    let walkTimeout: Double
    let graph: WalkingGraph
    let destination: Coordinate
    let start: Coordinate
    let binary: String
    var checks: [(name: String, passed: Bool, detail: String)] = []
    var figures: [String] = []

    init(
        config: String, folder: String, start: String?, seed: UInt64, stopAfter: Double, stopSeconds: Double,
        walkTimeout: Double
    ) throws {
        self.configFile = Paths.absolute(config)
        self.folder = Paths.absolute(folder)
        self.seed = seed
        self.stopAfter = stopAfter
        self.stopSeconds = stopSeconds
        self.walkTimeout = walkTimeout
        self.binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        try? FileManager.default.removeItem(atPath: self.folder)
        try Paths.createFolders(self.folder + "/run", permissions: 0o700)
        // What the field config takes from the environment, for this process and every one it starts.
        setenv("HAPTICNAV_SESSION", self.folder + "/session", 1)
        setenv("HAPTICNAV_RUN_DIR", self.folder + "/run", 1)
        setenv("HAPTICNAV_CALIBRATION", self.folder + "/calibration.json", 1)
        setenv("HAPTICNAV_BAND_BLE", Self.bandName, 1)
        unsetenv("HAPTICNAV_BAND_DEVICE")
        // Every command runs in the folder: what one leaves behind (a speaker's sound file) stays there.
        guard chdir(self.folder) == 0 else { throw CommandFailure("rehearse: cannot enter \(self.folder)") }
        let pipeline = try loadConfig(self.configFile, calibrationMayBeMissing: true)
        guard var options = pipeline.stages.first(where: { $0.role == .route })?.options,
            let destination = try options.coordinate("destination")
        else { throw CommandFailure("rehearse: \(config) has no route stage with a destination") }
        guard let map = WalkableWays.map(config: self.configFile) else {
            throw CommandFailure("rehearse: \(config) names no map")
        }
        self.destination = destination
        self.graph = try WalkableWays.graph(map: map)
        if let start {
            let parts = start.split(separator: ",").compactMap { Double($0.filter { $0 != " " }) }
            guard parts.count == 2 else { throw ValidationError("--start: LAT,LON") }
            self.start = Coordinate(latitude: parts[0], longitude: parts[1])
        } else {
            // A junction-rich walk of a few minutes: a point of the ways whose walking route to the destination is
            // 150–250 m long, the seed choosing among them.
            let candidates = self.graph.nodes.filter { (50...180).contains(FlatProjection.distance($0, destination)) }
            var chosen: Coordinate?
            for offset in 0..<min(candidates.count, 400) {
                let candidate = candidates[
                    (Int(seed % UInt64(max(1, candidates.count))) + offset * 7919) % candidates.count]
                guard
                    let plan = try? self.graph.shortestRoute(
                        from: candidate, to: destination, snapMeters: 50, connectMeters: 50)
                else { continue }
                let length = zip(plan.points, plan.points.dropFirst()).reduce(0) {
                    $0 + FlatProjection.distance($1.0, $1.1)
                }
                if (150...250).contains(length) {
                    chosen = candidate
                    break
                }
            }
            guard let chosen else {
                throw CommandFailure("rehearse: no start 150–250 m from the destination; give --start")
            }
            self.start = chosen
        }
    }

    /// Runs every step; true when every check passed.
    mutating func run() async throws -> Bool {
        let shared = Shared()
        let bandLog = try OutputFile(path: self.folder + "/band.jsonl", mode: .truncate)
        let band = try VirtualBLEBand(name: Self.bandName) { line in
            bandLog.write(line + "\n")
            shared.state.withLock { state in
                if let frame = state.band.take(line: line) { state.frames.append(frame) }
            }
        }
        defer { band.stop() }
        var phoneOptions = PhyphoxStandIn.Options()
        phoneOptions.measuring = false  // the source presses ▶
        let standIn = try PhyphoxStandIn(liveOn: "127.0.0.1", options: phoneOptions)
        defer { standIn.close() }
        setenv("HAPTICNAV_PHONE", standIn.url, 1)
        setenv("HAPTICNAV_BLE_TRANSPORT", band.hostTransport, 1)

        var behaviour = Participant.Behaviour()
        behaviour.pocketOffsetDegrees = 70
        var rules = NetworkParticipant.Rules()
        rules.followsEvents = true
        guard
            let participant = NetworkParticipant(
                graph: self.graph, at: self.start, facing: 0, behaviour: behaviour, rules: rules, seed: self.seed)
        else { throw CommandFailure("rehearse: the start is not near a way") }
        say(
            "rehearse: the participant starts at \(fixedDecimal(participant.position.latitude, digits: 6)),\(fixedDecimal(participant.position.longitude, digits: 6)), "
                + "\(Int(FlatProjection.distance(participant.position, self.destination))) m from the destination as the crow flies; the band over BLE as '\(band.name)'; the phone at \(standIn.url)"
        )
        let phone = SimulatedPhone(standIn: standIn, seed: self.seed)
        let truth = try OutputFile(path: self.folder + "/participant.jsonl", mode: .truncate)
        let loop = Task.detached {
            await Self.simulate(participant: participant, phone: phone, shared: shared, truth: truth)
        }
        defer { loop.cancel() }

        // Group 1: the phone, smoother, route controller, recorder.
        let group1 = try self.start("group1", ["run", "--config", self.configFile, "--group", "1"])
        defer { Self.stop(group1) }
        guard await Self.waitFor(seconds: 60, { standIn.requests > 20 }) else {
            return self.fail("the phyphox source never polled the phone (see \(self.folder)/group1.err)")
        }
        // Preflight, walking to and fro with the phone in the hand.
        shared.state.withLock { $0.activity = .pacing }
        try await Task.sleep(for: .seconds(4))
        let preflight = try await self.command(
            "preflight", ["preflight", "--config", self.configFile, "--seconds", "15"])
        say(preflight.output)
        self.check(
            "preflight says go", preflight.code == 0 && preflight.output.contains("preflight: GO"),
            "exit \(preflight.code)")
        // The calibration with the phone live.
        shared.state.withLock { $0.activity = .calibrating }
        let calibration = try await self.command(
            "calibrate", ["calibrate", "--config", self.configFile, "--timeout", "150"])
        say(calibration.output)
        let offset = calibration.output.split(separator: "\n").first { $0.hasPrefix("calibrated: offset ") }
            .flatMap { Double($0.dropFirst("calibrated: offset ".count).prefix { $0 != "°" }) }
        self.check(
            "calibration finds the pocket offset",
            offset.map { Angle.separation($0, behaviour.pocketOffsetDegrees) <= 10 } ?? false,
            offset.map { "\(fixedDecimal($0, digits: 1))° for the pocket's \(Int(behaviour.pocketOffsetDegrees))°" }
                ?? "no offset (exit \(calibration.code))")
        guard offset != nil else { return self.finish() }
        shared.state.withLock { $0.activity = .returning }
        guard await Self.waitFor(seconds: 60, { shared.state.withLock { $0.activity == .standing } }) else {
            return self.fail("the participant did not get back to the start")
        }
        // Group 2: the band (then the speaker, then the console). It connects to the band over BLE.
        let connections = Self.frames(shared, "watchdog").count
        let group2 = try self.start("group2", ["run", "--config", self.configFile, "--group", "2"])
        defer { Self.stop(group2) }
        guard await Self.waitFor(seconds: 60, { Self.frames(shared, "watchdog").count > connections }) else {
            return self.fail("the haptic stage never reached the band over BLE (see \(self.folder)/group2.err)")
        }
        try await Task.sleep(for: .seconds(2))
        let walkStart = SystemClock.wallSeconds()
        shared.state.withLock { $0.activity = .walking }
        say("rehearse: walking")
        // The experimenter's stop, mid-walk, and the resume.
        _ = await Self.waitFor(seconds: self.stopAfter + 30) {
            shared.state.withLock { $0.walkedSeconds >= self.stopAfter || $0.band.arrived }
        }
        if !shared.state.withLock({ $0.band.arrived }) {
            let stopSent = SystemClock.wallSeconds()
            shared.state.withLock { $0.activity = .stopped }
            let stop = try await self.command("control-stop", ["control", "stop", "--config", self.configFile])
            let stoppedAt = SystemClock.wallSeconds()
            say(stop.output.trimmed)
            try await Task.sleep(for: .seconds(self.stopSeconds))
            let resumeSent = SystemClock.wallSeconds()
            let resume = try await self.command("control-resume", ["control", "resume", "--config", self.configFile])
            say(resume.output.trimmed)
            shared.state.withLock { $0.activity = .walking }
            let frames = shared.state.withLock { $0.frames }
            let firstStop = frames.first { $0.time >= stopSent && $0.type == "stopAll" }
            let busy = frames.filter {
                $0.time > stoppedAt && $0.time < resumeSent && ($0.left > 0 || $0.right > 0 || $0.type == "pulse")
            }
            self.check(
                "the experimenter's stop is acknowledged", stop.code == 0 && resume.code == 0,
                "stop exit \(stop.code), resume exit \(resume.code)")
            self.check(
                "the motors are silent while stopped", firstStop != nil && busy.isEmpty,
                "\(busy.count) frame(s) running a motor or a pattern in the \(Int(self.stopSeconds)) s stop")
            if let firstStop {
                self.figures.append(
                    "stop: the band's stopAll \(fixedDecimal((firstStop.time - stopSent) * 1000, digits: 0)) ms after `control stop` started (the command's own start included)"
                )
            }
        }
        // To the destination, saying where the participant is every 30 s.
        var arrived = false
        let deadline = ContinuousClock.now + .seconds(self.walkTimeout)
        while !arrived && ContinuousClock.now < deadline {
            arrived = await Self.waitFor(seconds: 30) { shared.state.withLock { $0.band.arrived } }
            let (position, seconds) = shared.state.withLock { ($0.position, $0.walkedSeconds) }
            say(
                "rehearse: \(Int(seconds)) s walked, \(Int(FlatProjection.distance(position, self.destination))) m from the destination as the crow flies"
            )
        }
        let walked = SystemClock.wallSeconds() - walkStart
        let end = shared.state.withLock { $0.position }
        let left = FlatProjection.distance(end, self.destination)
        self.check(
            "the participant arrives", arrived && left <= 25,
            "\(arrived ? "arrival felt" : "no arrival within \(Int(self.walkTimeout)) s"), \(Int(left)) m from the destination after \(Int(walked)) s"
        )
        try await Task.sleep(for: .seconds(2))
        Self.stop(group2)
        Self.stop(group1)
        loop.cancel()
        let frames = shared.state.withLock { $0.frames }.filter { $0.time >= walkStart }
        let cues = zip(frames, frames.dropFirst()).filter { previous, frame in
            frame.type == "setMotors" && (frame.left > 0 || frame.right > 0) && previous.left == 0
                && previous.right == 0
        }.count
        let patterns = frames.filter { $0.type == "pulse" }.count
        self.figures.append(
            "walk: \(Int(walked)) s with the stop; \(cues) turn cue(s) felt (a motor starting), \(patterns) pattern(s) (turn events, turn-around, arrival)"
        )
        // The session: true-north headings, the track over the ways, and its report.
        self.checkSession(trueHeadings: shared.state.withLock { $0.trueHeadings })
        let report = try await self.command(
            "report",
            [
                "report", self.folder + "/session", "--out", self.folder + "/report.html", "--title",
                "HapticNav rehearsal",
            ])
        say(report.output.trimmed)
        self.check(
            "the report draws the track over the walkable ways",
            report.code == 0 && report.output.contains("walkable way segments under the tracks"), "exit \(report.code)")
        return self.finish()
    }

    // MARK: the participant

    /// Acts out the participant's activity at 20 steps a second, in real time, until cancelled: the body, the phone
    /// it holds and what the phone measures.
    /// The simulation loop: the participant's activity acted out every 50 ms, the phone advanced with it, and the
    /// participant's true place, heading and what it feels written to `truth` twice a second (participant.jsonl).
    static func simulate(
        participant start: NetworkParticipant, phone start_: SimulatedPhone, shared: Shared, truth: OutputFile
    ) async {
        var participant = start
        var phone = start_
        let home = participant.position
        var position = home
        var heading = participant.bodyHeadingDegrees
        var speed = 0.0
        var hold = PhoneHold.inHand
        let pocket = PhoneHold.pocket(offset: participant.behaviour.pocketOffsetDegrees)
        // Pacing: to and fro along the start's way.
        let paceBearing = participant.bodyHeadingDegrees
        var paceOut = true
        // Calibration: turning, then quiet, then the pocket, then walking.
        var turnSign = 1.0
        var risingTicks = 0
        var lastLevel: Int?
        var quietSince: Double?
        var pocketedAt: Double?
        var last = SystemClock.wallSeconds()
        var lastTruth = 0.0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
            let now = SystemClock.wallSeconds()
            let step = min(0.2, now - last)
            last = now
            let (activity, band) = shared.state.withLock { ($0.activity, $0.band) }
            switch activity {
            case .standing:
                speed = 0
            case .pacing:
                hold = .inHand
                heading = paceOut ? paceBearing : Angle.normalized(paceBearing + 180)
                speed = 1.3
                position = FlatProjection(origin: position).unproject(
                    ENU(east: speed * step * sin(heading * .pi / 180), north: speed * step * cos(heading * .pi / 180)))
                let away = FlatProjection.distance(position, home)
                if paceOut && away >= 8 { paceOut = false }
                if !paceOut && (away <= 0.5 || away > 9) { paceOut = true }
            case .calibrating:
                if pocketedAt == nil && quietSince == nil {
                    // Phone flat in the hand, turning slowly while the ticks come; back the other way when they grow.
                    hold = .inHand
                    speed = 0
                    if let tick = band.lastTick, now - tick.time < 0.4 {
                        if let previous = lastLevel, tick.level > previous {
                            risingTicks += 1
                        } else if lastLevel != tick.level {
                            risingTicks = 0
                        }
                        if risingTicks >= 3 {
                            turnSign = -turnSign
                            risingTicks = 0
                        }
                        lastLevel = tick.level
                        heading = Angle.normalized(heading + turnSign * 30 * step)
                    } else if lastLevel != nil {
                        quietSince = now  // the ticks stopped: facing north
                    }
                } else if pocketedAt == nil, let quiet = quietSince, now - quiet >= 1 {
                    hold = pocket
                    pocketedAt = now
                } else if let pocketed = pocketedAt, now - pocketed >= 7 {
                    // After the countdown: straight ahead, the way the body faces.
                    speed = 1.3
                    position = FlatProjection(origin: position).unproject(
                        ENU(
                            east: speed * step * sin(heading * .pi / 180),
                            north: speed * step * cos(heading * .pi / 180)))
                }
            case .returning:
                hold = pocket
                let away = FlatProjection.distance(position, home)
                if away <= 0.3 {
                    speed = 0
                    position = home
                    shared.state.withLock { $0.activity = .standing }
                } else {
                    heading = FlatProjection.bearing(from: position, to: home)
                    speed = 1.3
                    let move = min(away, speed * step)
                    position = FlatProjection(origin: position).unproject(
                        ENU(east: move * sin(heading * .pi / 180), north: move * cos(heading * .pi / 180)))
                }
            case .walking:
                hold = pocket
                if !participant.started { participant.start() }
                let events = shared.state.withLock { $0.band.drainEvents() }
                for event in events { participant.hear(event) }
                participant.step(feeling: band.cue(at: now), at: now, dt: step)
                position = participant.position
                heading = participant.bodyHeadingDegrees
                speed = participant.speedMetersPerSecond
                shared.state.withLock { $0.walkedSeconds += step }
            case .stopped:
                speed = 0
            }
            phone.advance(to: now, position: position, bodyHeadingDegrees: heading, speed: speed, hold: hold)
            let phoneHeading = Angle.normalized(heading + hold.headingOffsetDegrees)
            shared.state.withLock {
                $0.position = position
                $0.trueHeadings.append((now, phoneHeading))
            }
            if now - lastTruth >= 0.5 {
                lastTruth = now
                truth.write(
                    "{\"timeSeconds\":\(fixedDecimal(now, digits: 3)),\"activity\":\"\(activity)\",\"latitude\":\(fixedDecimal(position.latitude, digits: 7)),\"longitude\":\(fixedDecimal(position.longitude, digits: 7)),\"bodyHeadingDegrees\":\(fixedDecimal(heading, digits: 1)),\"speed\":\(fixedDecimal(speed, digits: 2)),\"felt\":\"\(band.cue(at: now))\"}\n"
                )
            }
        }
    }

    // MARK: processes

    /// Starts `hapticnav arguments…`, its output in the folder as NAME.out and NAME.err.
    func start(_ name: String, _ arguments: [String]) throws -> ChildProcess {
        let output = try OutputFile(path: "\(self.folder)/\(name).out", mode: .truncate)
        let error = try OutputFile(path: "\(self.folder)/\(name).err", mode: .truncate)
        defer {
            output.close()
            error.close()
        }
        return try ChildProcess(
            executable: self.binary, arguments: arguments, input: .null, output: .descriptor(output.openDescriptor),
            error: .descriptor(error.openDescriptor))
    }

    /// Runs `hapticnav arguments…` to its end: its exit code and standard output.
    func command(_ name: String, _ arguments: [String]) async throws -> (code: Int32, output: String) {
        let process = try self.start(name, arguments)
        let code = await SystemThread.run(name: name) { process.wait() }
        let output = (try? String(contentsOfFile: "\(self.folder)/\(name).out", encoding: .utf8)) ?? ""
        return (code, output)
    }

    /// Asks every process this one started (its children, by their parent in /proc) to stop, and waits up to 10 s for
    /// them to end: the `run` processes stop their stages, the band's bridge and the virtual controllers end.
    static func stopChildren() {
        func children() -> [Int32] {
            let me = getpid()
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap { entry -> Int32? in
                guard let pid = Int32(entry),
                    let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return nil }
                // After the command's name: state, parent id, …; an exited child not yet waited for is gone.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 1, fields[0] != "Z", Int32(fields[1]) == me else { return nil }
                return pid
            }
        }
        for pid in children() { kill(pid, SIGTERM) }
        let deadline = ContinuousClock.now + .seconds(10)
        while !children().isEmpty && ContinuousClock.now < deadline { SystemThread.sleep(seconds: 0.1) }
    }

    /// Asks a process to stop, and waits for it.
    static func stop(_ process: ChildProcess) {
        guard process.isRunning else { return }
        process.signal(SIGTERM)
        process.wait()
    }

    /// Waits up to `seconds` for `condition`, checking ten times a second.
    static func waitFor(seconds: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return condition()
    }

    /// The band's frames of `type` so far.
    static func frames(_ shared: Shared, _ type: String) -> [Double] {
        shared.state.withLock { $0.frames.filter { $0.type == type }.map(\.time) }
    }

    // MARK: checks

    mutating func check(_ name: String, _ passed: Bool, _ detail: String) {
        self.checks.append((name, passed, detail))
        say("rehearse: \(passed ? "PASS" : "FAIL")  \(name): \(detail)")
    }

    mutating func fail(_ reason: String) -> Bool {
        self.check("the rehearsal ran to its end", false, reason)
        return self.finish()
    }

    /// Prints the figures and the verdict; true when every check passed.
    func finish() -> Bool {
        for figure in self.figures { say("rehearse: \(figure)") }
        let failed = self.checks.filter { !$0.passed }
        say(
            "rehearse: \(failed.isEmpty ? "PASSED" : "FAILED") (\(self.checks.count - failed.count) of \(self.checks.count) checks); files in \(self.folder)"
        )
        return failed.isEmpty
    }

    /// The recorded session: the source's headings against the phone's true heading (true north), and the smoothed
    /// track against the map's ways.
    mutating func checkSession(trueHeadings: [(time: Double, degrees: Double)]) {
        let records: [RecordedMessage]
        do {
            records = try SessionReader.records(self.folder + "/session").records
        } catch {
            self.check("the session is recorded", false, "\(error)")
            return
        }
        var differences: [Double] = []
        var references = Set<String>()
        var magneticBeforeFix = 0
        var index = 0
        // Magnetic until the first fix gives the declination; true north from then on.
        let firstFix =
            records.first { if case .fix = $0.message { $0.stage == "source" } else { false } }?
            .receiveTimeSeconds ?? .infinity
        for record in records {
            guard case let .heading(sample) = record.message, record.stage == "source" else { continue }
            guard record.receiveTimeSeconds > firstFix + 1 else {
                magneticBeforeFix += sample.reference == .magneticNorth ? 1 : 0
                continue
            }
            references.insert("\(sample.reference)")
            while index + 1 < trueHeadings.count && trueHeadings[index + 1].time <= sample.timeSeconds { index += 1 }
            guard index < trueHeadings.count, abs(trueHeadings[index].time - sample.timeSeconds) < 0.1 else { continue }
            differences.append(Angle.separation(sample.headingDegrees, trueHeadings[index].degrees))
        }
        differences.sort()
        let median = differences.isEmpty ? Double.infinity : differences[differences.count / 2]
        self.check(
            "the source's headings are true north", references == ["trueNorth"] && median <= 5,
            "\(differences.count) headings after the first fix, median \(fixedDecimal(median, digits: 1))° from the phone's true heading; reference \(references.sorted()) (\(magneticBeforeFix) magnetic before it)"
        )
        var distances: [Double] = []
        for record in records {
            guard case let .smoothed(fix) = record.message else { continue }
            let point = Coordinate(latitude: fix.latitude, longitude: fix.longitude)
            distances.append(self.graph.snap(point, maximumMeters: 100)?.distance ?? 100)
        }
        distances.sort()
        let onWays = distances.isEmpty ? Double.infinity : distances[distances.count / 2]
        self.check(
            "the smoothed track lies over the ways", onWays <= 6,
            "\(distances.count) smoothed fixes, median \(fixedDecimal(onWays, digits: 1)) m from the nearest way")
    }
}

/// A line on standard output at once (a watcher, CI's log, follows the steps as they go).
private func say(_ text: String) {
    StandardStreams.writeOutput(text + "\n")
}

extension String {
    /// Without the spaces and line ends around it.
    fileprivate var trimmed: String {
        String(self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
