#if canImport(Glibc)
import Stages
import Glibc
#endif
import LocationSources
public import Logging
import NavCore
import Synchronization
import SystemIO
import HapticLogic
import StageHaptic
public import Runtime

/// Before a walk: every live part of a config checked for real, with a go or no-go for each (`hapticnav preflight`).
/// The source runs for a few seconds (the phone answers, fixes and headings at their rates, the phone's clock, GPS
/// accuracy, the compass against the model, the heading against the GPS course while the person walks), each output
/// device of the haptic stage is started and must answer (the band acknowledging its watchdog), and the keys, the run
/// folders and the recording's disk are looked at.
public enum Preflight {
    /// One line of the table.
    public struct Row: Sendable, Equatable {
        public var check: String
        /// true: go; false: no-go; nil: not checked (not applicable, or waiting for the person to walk).
        public var go: Bool?
        public var detail: String
    }

    /// The limits a part must meet.
    public struct Limits: Sendable {
        public var minimumFixesPerSecond = 0.5
        public var minimumHeadingsPerSecond = 8.0
        public var maximumSampleAgeSeconds = 1.0
        public var maximumAccuracyMeters = 20.0
        public var maximumCourseDifferenceDegrees = 30.0
        public var minimumFreeBytes: UInt64 = 500_000_000
        public init() {}
    }

    /// Runs every check of `config`, the source for `seconds`.
    public static func run(
        config: PipelineConfig, seconds: Double, limits: Limits = Limits(), logger: Logger
    ) async throws -> [Row] {
        var rows: [Row] = []
        var offset = 0.0
        if let haptic = config.stages.first(where: { $0.role == .haptic }) {
            let (devices, options) = try HapticStageDevices.make(
                haptic, logger: logger, check: false, calibrationMayBeMissing: true)
            offset = options.guidance.offsetDegrees
            rows += await self.devices(devices)
        }
        if let stage = config.stages.first(where: { $0.role == .source }) {
            let source = try PluginRegistry.makeSource(stage, logger: logger)
            rows =
                await self.source(
                    source, plugin: stage.plugin, seconds: seconds, offset: offset, place: config.declinationPlace,
                    limits: limits)
                + rows
        }
        rows += self.keys(config) + self.folders(config, limits: limits)
        return rows
    }

    /// The table, one row a line, and the verdict.
    public static func table(_ rows: [Row]) -> String {
        let width = max(5, rows.map(\.check.count).max() ?? 5)
        var lines = rows.map { row in
            let mark = row.go.map { $0 ? "go" : "NO-GO" } ?? "—"
            return row.check.padding(toLength: width) + "  " + mark.padding(toLength: 5) + "  " + row.detail
        }
        let verdict = self.isGo(rows) ? "GO" : "NO-GO"
        lines.append("preflight: \(verdict) (\(rows.filter { $0.go == false }.count) no-go of \(rows.count) checks)")
        return lines.joined(separator: "\n")
    }

    /// Go when nothing says no-go.
    public static func isGo(_ rows: [Row]) -> Bool { !rows.contains { $0.go == false } }

    private final class Collected: Sendable {
        let items = Mutex<[(received: Double, message: BusMessage)]>([])
    }

    /// The source's own checks over `seconds` of its messages, its headings turned true as its stage turns them
    /// (``TrueNorthIntake``, before the first fix at `place`).
    static func source(
        _ source: any MessageSource, plugin: String, seconds: Double, offset: Double, place: Coordinate? = nil,
        limits: Limits
    ) async -> [Row] {
        let collected = Collected()
        let task = Task {
            let intake = Mutex(TrueNorthIntake(place: place))
            try await source.run { message in
                let message = intake.withLock { $0.take(message) }
                collected.items.withLock { $0.append((SystemClock.wallSeconds(), message)) }
            }
        }
        try? await Task.sleep(for: .seconds(seconds))
        let condition = await source.condition()
        let report = await (source as? any PhoneReporting)?.phoneReport()
        task.cancel()
        _ = await task.result
        let items = collected.items.withLock { $0 }
        var fixes: [(Double, LocationFix)] = [], headings: [(Double, HeadingSample)] = []
        for (received, message) in items {
            switch message {
            case let .fix(fix): fixes.append((received, fix))
            case let .heading(heading): headings.append((received, heading))
            default: break
            }
        }
        var rows: [Row] = []
        let stale = condition?.health == .stale
        rows.append(
            Row(
                check: "phone answers", go: !items.isEmpty && !stale,
                detail: "\(plugin): \(items.count) messages in \(fixedDecimal(seconds, digits: 0)) s"
                    + (condition.map { "; \($0.message)" } ?? "")))
        let fixRate = Double(fixes.count) / seconds, headingRate = Double(headings.count) / seconds
        rows.append(
            Row(
                check: "fixes", go: fixRate >= limits.minimumFixesPerSecond,
                detail: "\(fixedDecimal(fixRate, digits: 2)) a second (at least \(limits.minimumFixesPerSecond))"))
        rows.append(
            Row(
                check: "headings", go: headingRate >= limits.minimumHeadingsPerSecond,
                detail: "\(fixedDecimal(headingRate, digits: 1)) a second (at least \(limits.minimumHeadingsPerSecond))"
            ))
        // The phone's clock: how long after their own time the samples arrive (clock offset plus delay).
        let ages = (fixes.map { $0.0 - $0.1.timeSeconds } + headings.map { $0.0 - $0.1.timeSeconds }).sorted()
        if let age = report?.sampleAgeSeconds ?? (ages.isEmpty ? nil : ages[ages.count / 2]) {
            rows.append(
                Row(
                    check: "phone clock", go: abs(age) <= limits.maximumSampleAgeSeconds,
                    detail: "samples arrive \(fixedDecimal(age, digits: 2)) s after their time stamps (median; "
                        + "within ±\(limits.maximumSampleAgeSeconds) s: the phone's clock and the network)"))
        } else {
            rows.append(Row(check: "phone clock", go: false, detail: "no samples to compare"))
        }
        let accuracies = fixes.map(\.1.horizontalAccuracyMeters).sorted()
        if accuracies.isEmpty {
            rows.append(Row(check: "GPS accuracy", go: false, detail: "no fixes"))
        } else {
            let median = accuracies[accuracies.count / 2]
            rows.append(
                Row(
                    check: "GPS accuracy", go: median <= limits.maximumAccuracyMeters,
                    detail: "median \(fixedDecimal(median, digits: 1)) m (at most \(limits.maximumAccuracyMeters) m)"))
        }
        if let compass = report?.compass {
            rows.append(
                Row(
                    check: "compass", go: !compass.outOfLimits,
                    detail: "field \(fixedDecimal(compass.strengthNanoTesla / 1000, digits: 1)) µT (model "
                        + "\(fixedDecimal(compass.modelStrengthNanoTesla / 1000, digits: 1))), dip "
                        + "\(fixedDecimal(compass.dipDegrees, digits: 1))° (model \(fixedDecimal(compass.modelDipDegrees, digits: 1))°)"
                ))
        } else {
            rows.append(
                Row(check: "compass", go: nil, detail: "no field readings from this source (headings only)"))
        }
        rows.append(self.course(fixes.map(\.1), headings.map(\.1), offset: offset, limits: limits))
        return rows
    }

    /// The heading (true, less the pocket offset) against the GPS course of the fixes taken while walking; a heading
    /// still magnetic (no place to turn it true) is not compared.
    static func course(_ fixes: [LocationFix], _ headings: [HeadingSample], offset: Double, limits: Limits) -> Row {
        var differences: [Double] = []
        var headingIndex = 0
        let sorted = headings.sorted { $0.timeSeconds < $1.timeSeconds }
        for fix in fixes.sorted(by: { $0.timeSeconds < $1.timeSeconds }) {
            guard let course = fix.courseDegrees, (fix.speedMetersPerSecond ?? 0) >= 0.8 else { continue }
            while headingIndex + 1 < sorted.count,
                abs(sorted[headingIndex + 1].timeSeconds - fix.timeSeconds)
                    <= abs(sorted[headingIndex].timeSeconds - fix.timeSeconds)
            {
                headingIndex += 1
            }
            guard headingIndex < sorted.count else { continue }
            let heading = sorted[headingIndex]
            guard abs(heading.timeSeconds - fix.timeSeconds) < 0.5, heading.reference == .trueNorth else { continue }
            differences.append(abs(Angle.signedDifference(from: course, to: heading.headingDegrees - offset)))
        }
        guard differences.count >= 3 else {
            return Row(
                check: "heading vs course", go: nil,
                detail: "not checked: walk a few steps (fewer than 3 fixes at walking speed with a course)")
        }
        let median = differences.sorted()[differences.count / 2]
        return Row(
            check: "heading vs course", go: median <= limits.maximumCourseDifferenceDegrees,
            detail: "median \(fixedDecimal(median, digits: 0))° over \(differences.count) walking fixes "
                + "(pocket offset \(fixedDecimal(offset, digits: 1))°; at most \(limits.maximumCourseDifferenceDegrees)°)"
        )
    }

    /// Each output device started, given its time to answer (three seconds; a BLE band its scan's and five more),
    /// and asked to say "preflight".
    static func devices(_ devices: [any OutputDevice]) async -> [Row] {
        var rows: [Row] = []
        for device in devices {
            let task = Task { try await device.run() }
            var available = false
            let within = device.answerWithinSeconds
            let deadline = SystemClock.monotonicSeconds() + within
            while SystemClock.monotonicSeconds() < deadline {
                // Available: a band only once it has answered on its link now (connected alone is not a go).
                if await device.isAvailable() {
                    available = true
                    break
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            var spoke = ""
            if available {
                do { try await device.announce("preflight") } catch { spoke = "; the announcement failed: \(error)" }
            }
            let summary = await device.summary() + spoke
            try? await device.stopAll()
            task.cancel()
            _ = await task.result
            rows.append(
                Row(
                    check: "device \(device.name)", go: available && spoke.isEmpty,
                    detail: (available ? "answers: " : "does not answer within \(fixedDecimal(within, digits: 0)) s: ")
                        + summary))
        }
        return rows
    }

    static func keys(_ config: PipelineConfig) -> [Row] {
        guard let security = config.security else {
            return [Row(check: "keys", go: nil, detail: "not encrypted (loopback or one host)")]
        }
        var problems: [String] = []
        var present = 0
        for key in Set(config.stages.compactMap(\.key)).sorted() {
            do {
                _ = try security.keyPair(key)
                present += 1
            } catch {
                problems.append("\(key): \(error)")
            }
        }
        return [
            Row(
                check: "keys", go: problems.isEmpty,
                detail: problems.isEmpty
                    ? "\(present) key pair(s) present, secrets private" : problems.joined(separator: "; "))
        ]
    }

    static func folders(_ config: PipelineConfig, limits: Limits) -> [Row] {
        var rows: [Row] = []
        let runFolders = Set(
            config.stages.flatMap { $0.publish + $0.inputs }.filter { $0.hasPrefix("ipc://") }
                .map { Paths.folder(of: String($0.dropFirst("ipc://".count))) })
        var problems: [String] = []
        for folder in runFolders.sorted() {
            var info = stat()
            if stat(folder, &info) == 0 {
                if info.st_mode & 0o022 != 0 { problems.append("\(folder) is writable by others") }
                if access(folder, W_OK) != 0 { problems.append("\(folder) is not writable") }
            }
        }
        rows.append(
            Row(
                check: "run folders", go: problems.isEmpty,
                detail: problems.isEmpty
                    ? (runFolders.isEmpty
                        ? "no ipc endpoints" : runFolders.sorted().joined(separator: ", ") + " private")
                    : problems.joined(separator: "; ")))
        // The recording's disk.
        for stage in config.stages where stage.role == .recorder {
            var settings = stage.settings
            guard let file = (try? settings.path("file")) ?? (try? settings.path("folder")) else { continue }
            var folder = Paths.folder(of: file)
            while !folder.isEmpty, access(folder, F_OK) != 0 { folder = Paths.folder(of: folder) }
            var info = statvfs()
            guard statvfs(folder.isEmpty ? "." : folder, &info) == 0 else {
                rows.append(Row(check: "disk", go: false, detail: "cannot read the free space of \(folder)"))
                continue
            }
            let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
            rows.append(
                Row(
                    check: "disk", go: free >= limits.minimumFreeBytes && access(folder, W_OK) == 0,
                    detail:
                        "\(free / 1_000_000) MB free for \(file) (at least \(limits.minimumFreeBytes / 1_000_000) MB)"
                ))
        }
        return rows
    }
}

extension String {
    fileprivate func padding(toLength length: Int) -> String {
        self.count >= length ? self : self + String(repeating: " ", count: length - self.count)
    }
}
