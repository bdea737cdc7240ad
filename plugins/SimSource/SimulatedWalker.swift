import MapFiles
import Parsers
#if canImport(Glibc)
import Glibc
#endif
import SystemIO
public import NavCore
import MapLogic

/// A simulated walker following a route file at a steady pace, with seeded GPS and compass noise.
///
/// Emits a ``LocationFix`` every fix interval and a ``HeadingSample`` and ``Attitude`` every heading
/// interval, all stamped with simulated time, and returns when the walker reaches the end.
/// Also, from the seed: a phone-in-pocket heading offset, and episodes of tilt in which the phone stands
/// nearly upright and its compass flips, as phones in pockets do.
public struct SimulatedWalker: MessageSource {
    public static let id = "sim"

    public var nominalPeriods: [BusMessage.Kind: Double] {
        guard self.options.pace > 0 else { return [:] }
        return [
            .fix: self.options.fixIntervalSeconds / self.options.pace,
            .heading: self.options.headingIntervalSeconds / self.options.pace,
            .attitude: self.options.headingIntervalSeconds / self.options.pace,
        ]
    }

    /// The walker's settings.
    public struct Options: Sendable {
        /// The path walked, start first.
        public var path: [Coordinate]
        /// Walking speed [metres per second, > 0].
        public var speedMetersPerSecond = SimulatedWalker.Setting.speedMetersPerSecond.defaultValue
        /// Time between fixes [seconds, > 0].
        public var fixIntervalSeconds = SimulatedWalker.Setting.fixIntervalSeconds.defaultValue
        /// Time between heading and attitude samples [seconds, > 0].
        public var headingIntervalSeconds = SimulatedWalker.Setting.headingIntervalSeconds.defaultValue
        /// Standard deviation of the GPS position error [metres, ≥ 0].
        public var gpsNoiseMeters = SimulatedWalker.Setting.gpsNoiseMeters.defaultValue
        /// Horizontal accuracy that fixes report [metres, > 0].
        public var reportedAccuracyMeters = SimulatedWalker.Setting.reportedAccuracyMeters.defaultValue
        /// Standard deviation of the compass error [degrees, ≥ 0].
        public var compassNoiseDegrees = SimulatedWalker.Setting.compassNoiseDegrees.defaultValue
        /// How far the phone in the pocket points away from the walking direction [degrees, clockwise].
        public var pocketOffsetDegrees = SimulatedWalker.Setting.pocketOffsetDegrees.defaultValue
        /// Playback rate: 1 is real time, 10 is ten times faster, 0 is as fast as possible.
        public var pace = SimulatedWalker.Setting.pace.defaultValue
        /// Seed of the noise; the same seed repeats the same walk.
        public var seed = UInt64(SimulatedWalker.Setting.seed.defaultValue)
        /// Simulated time of the start [seconds since 1970-01-01T00:00:00Z].
        public var startTimeSeconds = SimulatedWalker.Setting.startTimeSeconds.defaultValue
        /// Walk the path again from its start after reaching its end, until stopped.
        public var loop = SimulatedWalker.Setting.loop.defaultValue ?? false
        /// The phone's usual pitch [degrees, positive = top up]: about 0 held flat, more in a pocket.
        public var phonePitchDegrees = SimulatedWalker.Setting.phonePitchDegrees.defaultValue
        /// Episodes when the phone stands nearly upright and the compass flips: (start, duration) [seconds from the start].
        public var tiltEpisodes: [(start: Double, duration: Double)] = []
        /// Pitch during a tilt episode [degrees].
        public var tiltPitchDegrees = SimulatedWalker.Setting.tiltPitchDegrees.defaultValue
        /// Before walking, play the calibration routine: turn to north with the phone held flat (from 200°,
        /// 30° a second), hold it flat there a second, then stand `calibrationStandSeconds` in all while the phone
        /// goes into the pocket.
        public var calibrationRoutine = SimulatedWalker.Setting.calibrationRoutine.defaultValue ?? false
        /// How long the walker stands before walking, in the calibration routine [seconds].
        public var calibrationStandSeconds = SimulatedWalker.Setting.calibrationStandSeconds.defaultValue

        /// Creates options for a path.
        public init(path: [Coordinate]) {
            self.path = path
        }
    }

    /// The settings in use.
    public let options: Options
    private let line: Polyline

    /// The walk's length along the path [metres].
    public var lengthMeters: Double { self.line.lengthMeters }

    /// Creates a walker; the path needs at least two points.
    public init(options: Options) throws(ConfigError) {
        guard options.path.count >= 2 else {
            throw .invalidValue(
                path: "sim.route", expected: "a path of at least 2 points", found: "\(options.path.count)")
        }
        self.options = options
        self.line = Polyline(options.path)
    }

    /// Reads the settings of a config's `sim` plugin.
    public init(settings: Settings) throws {
        var settings = settings
        let path: [Coordinate]
        let map = try settings.inputFile(Setting.map)
        let from = try settings.value(Setting.from), to = try settings.value(Setting.to)
        if let file = try settings.inputFile(Setting.route) {
            path = try RouteFile.load(file: file).points
        } else if let map {
            // A walk from `from` to `to` along the shortest walking route over an OSM extract.
            guard let from, let to else {
                throw ConfigError.missingKey(path: settings.path, key: "from and to ([latitude, longitude]) with map")
            }
            path = try OSMLoader.load(file: map).shortestRoute(from: from, to: to).points
        } else {
            throw ConfigError.missingKey(path: settings.path, key: "route (a route file), or map with from and to")
        }
        var options = Options(path: path)
        options.speedMetersPerSecond = try settings.value(Setting.speedMetersPerSecond)
        options.fixIntervalSeconds = try settings.value(Setting.fixIntervalSeconds)
        options.headingIntervalSeconds = try settings.value(Setting.headingIntervalSeconds)
        options.gpsNoiseMeters = try settings.value(Setting.gpsNoiseMeters)
        options.reportedAccuracyMeters = try settings.value(Setting.reportedAccuracyMeters)
        options.compassNoiseDegrees = try settings.value(Setting.compassNoiseDegrees)
        options.pocketOffsetDegrees = try settings.value(Setting.pocketOffsetDegrees)
        options.pace = try settings.value(Setting.pace)
        options.seed = UInt64(try settings.value(Setting.seed))
        options.startTimeSeconds = try settings.value(Setting.startTimeSeconds)
        options.loop = try settings.value(Setting.loop)
        options.phonePitchDegrees = try settings.value(Setting.phonePitchDegrees)
        options.calibrationRoutine = try settings.value(Setting.calibrationRoutine)
        options.calibrationStandSeconds = try settings.value(Setting.calibrationStandSeconds)
        options.tiltPitchDegrees = try settings.value(Setting.tiltPitchDegrees)
        // Tilt episodes: explicit [start, duration] pairs, and/or random ones at a rate, from the seed.
        if case let .array(items)? = settings.value(Setting.tiltEpisodes.key) {
            for (index, item) in items.enumerated() {
                guard case let .array(pair) = item, pair.count == 2, case let .number(start) = pair[0],
                    case let .number(duration) = pair[1], start >= 0, duration > 0
                else {
                    throw ConfigError.invalidValue(
                        path: "\(settings.path).tiltEpisodes[\(index)]",
                        expected: "[start seconds, duration seconds]", found: "\(item)")
                }
                options.tiltEpisodes.append((start, duration))
            }
        }
        let rate = try settings.value(Setting.tiltEpisodesPerMinute)
        let episodeSeconds = try settings.value(Setting.tiltEpisodeSeconds)
        try settings.finish()
        if rate > 0 {
            var random = SeededGenerator(seed: options.seed &+ 0x7157)
            let total = path.count > 1 ? Polyline(path).lengthMeters / options.speedMetersPerSecond : 0
            var t = 0.0
            while true {
                // Exponential gaps: a Poisson process of episodes.
                t += -60 / rate * log(Double.random(in: Double.ulpOfOne..<1, using: &random))
                guard t < total else { break }
                options.tiltEpisodes.append((t, episodeSeconds))
                t += episodeSeconds
            }
        }
        try self.init(options: options)
    }

    /// Where the walker is after walking `distance` metres, and the bearing it walks in.
    public func position(atDistance distance: Double) -> (coordinate: Coordinate, bearingDegrees: Double) {
        self.line.point(atDistance: distance) ?? (self.options.path[0], 0)
    }

    /// Turns to north with the phone flat, then stands; returns the routine's length [seconds].
    private func calibrationRoutine(
        random: inout SeededGenerator, pacer: inout Pacer,
        emit: @Sendable (BusMessage) async throws -> Void
    ) async throws -> Double {
        let start = self.options.path[0]
        var heading = 200.0
        var t = 0.0
        var nextFix = 0.0
        let turnEnd = (360 - heading) / 30
        let total = turnEnd + self.options.calibrationStandSeconds
        while t < total {
            try await pacer.wait(until: t)
            let time = self.options.startTimeSeconds + t
            if t >= nextFix {
                try await emit(
                    .fix(
                        LocationFix(
                            timeSeconds: time, latitude: start.latitude, longitude: start.longitude,
                            horizontalAccuracyMeters: self.options.reportedAccuracyMeters,
                            speedMetersPerSecond: 0, courseDegrees: nil)))
                nextFix += self.options.fixIntervalSeconds
            }
            // Held flat while turning, and for a second after, facing north; then going into the pocket, where it
            // reads the pocket offset.
            let flat = t < turnEnd + 1
            heading = t < turnEnd ? 200 + 30 * t : 0
            let reading = flat ? heading : (t < turnEnd + 2 ? 0 : self.options.pocketOffsetDegrees)
            try await emit(
                .heading(
                    HeadingSample(
                        timeSeconds: time,
                        headingDegrees: Angle.normalized(
                            reading + random.gaussian(standardDeviation: self.options.compassNoiseDegrees)),
                        accuracyDegrees: self.options.compassNoiseDegrees)))
            try await emit(
                .attitude(
                    Attitude(
                        timeSeconds: time,
                        pitchDegrees: flat ? random.gaussian(standardDeviation: 2) : self.options.phonePitchDegrees,
                        rollDegrees: random.gaussian(standardDeviation: 2))))
            t += self.options.headingIntervalSeconds
        }
        return total
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        let duration = self.lengthMeters / self.options.speedMetersPerSecond
        // In real time (or a multiple of it), the walk runs on a thread of its own that wakes it at each tick.
        let executor = self.options.pace > 0 ? PacingExecutor(name: "sim-walker") : nil
        defer { executor?.shutdown() }
        try await withTaskExecutorPreference(executor) {
            var random = SeededGenerator(seed: self.options.seed)
            var pacer = Pacer(pace: self.options.pace, executor: executor)
            try await self.walk(random: &random, duration: duration, pacer: &pacer, emit: emit)
        }
    }

    /// The walk itself: the calibration routine if asked for, then the path, once or in laps.
    private func walk(
        random: inout SeededGenerator, duration: Double, pacer: inout Pacer,
        emit: @Sendable (BusMessage) async throws -> Void
    ) async throws {
        var lap = 0.0
        if self.options.calibrationRoutine {
            lap = try await self.calibrationRoutine(random: &random, pacer: &pacer, emit: emit)
        }
        repeat {
            var nextFix = 0.0
            var nextHeading = 0.0
            while true {
                let elapsed = min(nextFix, nextHeading)
                if elapsed > duration + 1e-9 { break }
                try await pacer.wait(until: lap + elapsed)
                let time = self.options.startTimeSeconds + lap + elapsed
                let distance = elapsed * self.options.speedMetersPerSecond
                let tilted = self.options.tiltEpisodes.contains {
                    elapsed >= $0.start && elapsed < $0.start + $0.duration
                }
                if nextFix <= nextHeading {
                    let (truth, bearing) = self.position(atDistance: distance)
                    let noisy = FlatProjection(origin: truth).unproject(
                        ENU(
                            east: random.gaussian(standardDeviation: self.options.gpsNoiseMeters),
                            north: random.gaussian(standardDeviation: self.options.gpsNoiseMeters)))
                    try await emit(
                        .fix(
                            LocationFix(
                                timeSeconds: time, latitude: noisy.latitude, longitude: noisy.longitude,
                                horizontalAccuracyMeters: self.options.reportedAccuracyMeters,
                                speedMetersPerSecond: self.options.speedMetersPerSecond, courseDegrees: bearing)))
                    nextFix += self.options.fixIntervalSeconds
                } else {
                    // Near vertical the compass heading flips: it reads the opposite way.
                    let bearing = self.line.bearing(atDistance: distance) ?? 0
                    let raw =
                        bearing + self.options.pocketOffsetDegrees + (tilted ? 180 : 0)
                        + random.gaussian(standardDeviation: self.options.compassNoiseDegrees)
                    let heading = (raw.truncatingRemainder(dividingBy: 360) + 360).truncatingRemainder(dividingBy: 360)
                    try await emit(
                        .heading(
                            HeadingSample(
                                timeSeconds: time, headingDegrees: heading,
                                accuracyDegrees: self.options.compassNoiseDegrees)))
                    let pitch =
                        (tilted ? self.options.tiltPitchDegrees : self.options.phonePitchDegrees)
                        + random.gaussian(standardDeviation: 2)
                    try await emit(
                        .attitude(
                            Attitude(
                                timeSeconds: time, pitchDegrees: min(90, max(-90, pitch)),
                                rollDegrees: random.gaussian(standardDeviation: 2))))
                    nextHeading += self.options.headingIntervalSeconds
                }
            }
            lap += duration + self.options.fixIntervalSeconds
        } while self.options.loop
    }
}

extension SimulatedWalker {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let speedMetersPerSecond = SettingSpec<Double>(
            "speedMetersPerSecond", unit: "m/s", default: 1.4, in: 0.05...20, "Walking speed.")
        public static let fixIntervalSeconds = SettingSpec<Double>(
            "fixIntervalSeconds", unit: "s", default: 1.0, in: 0.01...60, "Time between fixes.")
        public static let headingIntervalSeconds = SettingSpec<Double>(
            "headingIntervalSeconds", unit: "s", default: 0.1, in: 0.005...60, "Time between headings.")
        public static let gpsNoiseMeters = SettingSpec<Double>(
            "gpsNoiseMeters", unit: "m", default: 4.0, in: 0...500,
            "The GPS error added to each fix (standard deviation per axis).")
        public static let reportedAccuracyMeters = SettingSpec<Double>(
            "reportedAccuracyMeters", unit: "m", default: 5.0, in: 0.1...500, "The accuracy each fix reports.")
        public static let compassNoiseDegrees = SettingSpec<Double>(
            "compassNoiseDegrees", unit: "°", default: 3.0, in: 0...180,
            "The compass error added to each heading (standard deviation).")
        public static let pocketOffsetDegrees = SettingSpec<Double>(
            "pocketOffsetDegrees", unit: "°", default: 0, in: -360...360,
            "The phone's heading in the pocket against the walking direction.")
        public static let pace = SettingSpec<Double>(
            "pace", default: 1.0, in: 0...10_000,
            "1 in real time, 10 ten times faster, 0 as fast as the readers take it.")
        public static let seed = SettingSpec<Int>(
            "seed", default: 1, in: 0...Int.max, "The seed of every random draw: the same seed, the same walk.")
        public static let startTimeSeconds = SettingSpec<Double>(
            "startTimeSeconds", unit: "s", default: 1_767_225_600, in: 0...1e10,
            "The time of the first fix (seconds since 1970).")
        public static let phonePitchDegrees = SettingSpec<Double>(
            "phonePitchDegrees", unit: "°", default: 10, in: -90...90, "The phone's pitch in the pocket.")
        public static let calibrationStandSeconds = SettingSpec<Double>(
            "calibrationStandSeconds", unit: "s", default: 7, in: 0...120,
            "In the calibration routine: how long the walker stands at each step.")
        public static let tiltPitchDegrees = SettingSpec<Double>(
            "tiltPitchDegrees", unit: "°", default: 85, in: -90...90,
            "The pitch during a tilt episode, at which the compass flips.")
        public static let tiltEpisodesPerMinute = SettingSpec<Double>(
            "tiltEpisodesPerMinute", unit: "/min", default: 0, in: 0...60,
            "Random tilt episodes (a Poisson process from the seed), on average per minute.")
        public static let tiltEpisodeSeconds = SettingSpec<Double>(
            "tiltEpisodeSeconds", unit: "s", default: 2, in: 0.1...60, "How long a random tilt episode lasts.")
        public static let loop = ValueSpec<Bool>(
            "loop", default: false, "Walk the route again from its start at its end.")
        public static let calibrationRoutine = ValueSpec<Bool>(
            "calibrationRoutine", default: false,
            "Play the calibration's three steps (find north, put the phone away, walk) before the walk.")
        public static let map = ValueSpec<String>(
            "map", accepts: "a file (OSM XML or PBF)",
            "An OpenStreetMap extract to walk the shortest route over, from `from` to `to`.")
        public static let route = ValueSpec<String>(
            "route", accepts: "a file", "A route file to walk along (GPX, GeoJSON, a polyline, a directions response).")
        public static let from = ValueSpec<Coordinate>("from", "With `map`: where the walk starts.")
        public static let to = ValueSpec<Coordinate>("to", "With `map`: where it ends.")

        public static let tiltEpisodes = ValueSpec<String>(
            "tiltEpisodes", accepts: "[[start s, duration s], …]", "Tilt episodes at given times of the walk.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [
            tiltEpisodes.doc, speedMetersPerSecond.doc, fixIntervalSeconds.doc, headingIntervalSeconds.doc,
            gpsNoiseMeters.doc, reportedAccuracyMeters.doc, compassNoiseDegrees.doc, pocketOffsetDegrees.doc, pace.doc,
            seed.doc, startTimeSeconds.doc, phonePitchDegrees.doc, calibrationStandSeconds.doc, tiltPitchDegrees.doc,
            tiltEpisodesPerMinute.doc, tiltEpisodeSeconds.doc, loop.doc, calibrationRoutine.doc, map.doc, route.doc,
            from.doc, to.doc,
        ]
    }
}
