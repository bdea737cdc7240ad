public import HapticLogic
public import Logging
public import NavCore
public import ServiceLifecycle
public import Stages

/// The haptic sink's settings.
public struct HapticSinkOptions: Sendable {
    /// The sink's own settings, each with its key, unit, default and range (guidance's are in
    /// ``Guidance/Options/Setting``).
    public enum Setting {
        public static let staleAfterSeconds = SettingSpec(
            "staleAfterSeconds", unit: "s", default: 1.0, in: 0.1...30,
            "a guidance target older than this (from receipt, plus its lateness) is stale: every motor stops; at least 2.5 periods of the target input"
        )
        public static let headingStaleAfterSeconds = SettingSpec(
            "headingStaleAfterSeconds", unit: "s", default: 1.0, in: 0.1...30,
            "the same for headings; when absent, staleAfterSeconds")
        public static let maximumHeadingAccuracyDegrees = SettingSpec(
            "maximumHeadingAccuracyDegrees", unit: "°", default: 30.0, in: 5...180,
            "a heading whose accuracy is worse than this (a disturbed compass says so) is not acted on: it does not count as fresh, so the sink goes quiet after headingStaleAfterSeconds and says why"
        )
        /// How to navigate: a calibration or an explicit offset, documented beside the numbers.
        public static let calibrationFile = SettingDoc(
            key: "calibrationFile", defaultText: "—", rangeText: "a path",
            summary:
                "the phone-in-pocket offset saved by `hapticnav calibrate` (or give offsetDegrees, navigating uncalibrated)"
        )
        public static let offsetDegrees = SettingDoc(
            key: "offsetDegrees", unit: "°", defaultText: "—", rangeText: "any",
            summary: "an explicit offset instead of a calibration")
        public static let fallback = SettingDoc(
            key: "fallback", defaultText: "[]", rangeText: "[{ plugin, settings }]",
            summary: "devices after the stage's own plugin, in order of preference")
        public static let echoEveryHeading = SettingDoc(
            key: "echoEveryHeading", defaultText: "false", rangeText: "true, false",
            summary:
                "for evaluation harnesses (`hapticnav eval walkers`): publish the cue in force after every heading, changed or not, dated with the heading"
        )
        public static let lockDevice = SettingDoc(
            key: "lockDevice", defaultText: "false", rangeText: "true, false",
            summary:
                "a study's condition lock (`hapticnav study run` sets it): cues go to the stage's own device only; when it is lost every output stops, as on the experimenter's stop, the sink says so and publishes a `control` stop by `condition-lock`, and stays stopped until resumed; it never falls back"
        )

        /// Every setting of a haptic stage's `options`, guidance's among them, in documentation order.
        public static let all: [SettingDoc] =
            [calibrationFile, offsetDegrees, fallback] + Guidance.Options.Setting.all
            + [
                staleAfterSeconds.doc, headingStaleAfterSeconds.doc, maximumHeadingAccuracyDegrees.doc,
                echoEveryHeading, lockDevice,
            ]
    }

    /// Guidance thresholds, the calibrated offset among them.
    public var guidance = Guidance.Options()
    /// A guidance target older than this, counted from its receipt less its lateness, is stale: every motor
    /// stops [seconds].
    public var staleAfterSeconds = Setting.staleAfterSeconds.defaultValue
    /// The same for headings [seconds]; nil: `staleAfterSeconds`.
    public var headingStaleAfterSeconds: Double?
    /// A heading less accurate than this is not acted on [degrees, one standard deviation].
    public var maximumHeadingAccuracyDegrees = Setting.maximumHeadingAccuracyDegrees.defaultValue
    /// How often the sink asks its devices whether they are available [seconds]: a band gone is replaced by the
    /// next device within this and the band's acknowledgement limit. Stale input is not judged at this pace, but at
    /// the moment it goes stale, by a loop of its own that never waits for a device's availability.
    public var deviceCheckIntervalSeconds = 0.25
    /// How long the sink waits for a device's answer (that it stopped, whether it is there, its summary) before it
    /// goes on without it [seconds]: a device that has not said whether it is there by then counts as away.
    public var deviceAnswerLimitSeconds = 2.0
    /// How often the sink reports its status and counters while nothing changes [seconds].
    public var statusIntervalSeconds = 1.0
    /// How far a heading's or target's time may jump ahead of its stream [seconds].
    public var aheadLimitSeconds = 2.0
    /// Publish the cue in force after every heading, dated with the heading, so that a lockstep harness knows each
    /// heading was handled (a changed cue is published either way).
    public var echoEveryHeading = false
    /// The condition lock: never fall back; losing the stage's own device stops every output until resumed.
    public var lockDevice = false
    /// Under the lock, how long the device may be away while connecting (at the start, after a resume) before the
    /// lock stops everything as if it were lost [seconds].
    public var lockGraceSeconds = 5.0

    /// Where an experimenter's stop is kept, so that it holds across a restart of the sink; nil: not kept.
    public var stopStore: (any StopStateStore)?

    /// The defaults.
    public init() {}
}

/// An experimenter's stop in force: every output silent until resumed.
public struct StopState: Codable, Equatable, Sendable {
    /// The sender a study's condition lock stops the outputs as (``HapticSinkOptions/lockDevice``).
    public static let conditionLockSender = "condition-lock"

    /// Who stopped the outputs (a sender key's name).
    public var by: String
    /// When [seconds since 1970-01-01T00:00:00Z, UTC; the sink's wall clock].
    public var sinceSeconds: Double
    /// A note for the status (why a stop is assumed, for an unreadable state file).
    public var note: String

    public init(by: String, sinceSeconds: Double, note: String = "") {
        self.by = by
        self.sinceSeconds = sinceSeconds
        self.note = note
    }
}

/// Keeps the stop in force where a restarted sink finds it.
public protocol StopStateStore: Sendable {
    /// The stop in force when the sink starts, nil when none. A store it cannot read says stopped (and why).
    func load() -> StopState?
    /// Keeps `state` (nil: guiding); throws when it cannot.
    func save(_ state: StopState?) throws
}

/// The haptic sink ("Group 2"): heading and guidance target in, cues out to its output devices and the bus.
///
/// Fail-safe (``SinkFailSafe``): when no fresh heading or no fresh target is at hand for `staleAfterSeconds`, or
/// a publisher is lost, every device stops and a signal-lost cue plays once per loss. Freshness counts from receipt
/// (so that a replay of an old recording does not trip it) less how late a message arrived (so that a backlog after
/// a cut or a pause is not acted on); messages whose times are not sane are dropped first (``InputTimeGuard``). Fallback: cues go to the first available device of the ordered list; when it
/// becomes unavailable the next takes over at the next check, and the first takes over again when it returns.
/// On shutdown every device is stopped before the stage returns.
public actor HapticSinkStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == Arrival<SinkInput> {
    private let name: String
    private let input: Input
    private let output: Output
    private let devices: [any OutputDevice]
    private let options: HapticSinkOptions
    private let logger: Logger
    private let time: StageTime
    private var guidance: Guidance
    private var target: GuidanceTarget?
    private var failSafe: SinkFailSafe
    private var timeCheck: InputTimeCheck
    /// Its status: on every change, and every `statusIntervalSeconds` between.
    private var reporter: StatusReporter<Output>
    private var selection = OutputSelection()
    private var active: Int? { self.selection.active }
    private var lastCue: HapticCue?
    private var lastState: RouteState?
    private var cuesSent = 0
    /// The oldest input a cue was computed from, since the start [seconds]: the fail-safe keeps it within the limit.
    private var oldestInputActedOn = 0.0
    /// Magnetic headings refused: headings are turned true where they enter (the source stage), and a bearing is
    /// never compared with a magnetic heading [count].
    private var magneticHeadings: UInt64 = 0
    /// Headings not acted on because their accuracy was worse than the limit [count].
    private var inaccurateHeadings: UInt64 = 0
    /// The experimenter's stop in force: every output silent, nothing rendered, until resumed.
    private var stop: StopState?
    /// Under the condition lock: since when the condition's device has not been playing [seconds, the check clock].
    private var withoutDeviceSince: Double?
    /// When the input check loop's wait ends, on the monotonic clock, and the wait: an input whose staleness falls
    /// before it (one that came late) ends the wait early.
    private var plannedCheck = Double.infinity
    private var checkWait: Task<Void, Never>?
    /// The devices' availability is being read (a check waits on them): another check leaves the devices to it, so
    /// that an older reading is never applied after a newer one.
    private var checkingDevices = false
    /// The sink is ending: its last stop has begun, and nothing may play after it (a fallback's pick-up or a turn
    /// event that came in while a device was being stopped would otherwise leave that device playing).
    private var shuttingDown = false

    /// Stopped by the experimenter (or the condition lock), or ending: no output may play.
    private var outputsHeld: Bool { self.stop != nil || self.shuttingDown }

    /// Control commands carried out [count].
    private var controls: UInt64 = 0
    /// The turn events rendered lately (a repeat of one is not rendered again).
    private var renderedTurns: [TurnEvent] = []
    /// Turn events rendered, and those not rendered because the outputs were stopped or silent [count].
    private var turnsRendered: UInt64 = 0
    private var turnsWithheld: UInt64 = 0
    /// Turn events dropped for their time [count].
    private var turnsDropped: UInt64 = 0

    /// Creates the stage with devices in order of preference, on `time`: its monotonic clock is the one arrivals'
    /// receive times are on, its waits between checks are on the same clock, and its wall clock dates cues and
    /// status (a test passes a manual clock's).
    public init(
        name: String, input: Input, output: Output, devices: [any OutputDevice], options: HapticSinkOptions,
        logger: Logger, time: StageTime = .system,
        inputCounters: @escaping @Sendable () -> [StatusCounter] = { [] }
    ) {
        self.time = time
        self.reporter = StatusReporter(
            stage: name, output: output, time: time, intervalSeconds: options.statusIntervalSeconds,
            inputCounters: inputCounters)
        self.name = name
        self.input = input
        self.output = output
        self.devices = devices
        self.options = options
        self.logger = logger
        self.guidance = Guidance(options: options.guidance)
        self.failSafe = SinkFailSafe(
            options: .init(
                staleAfterSeconds: options.staleAfterSeconds,
                headingStaleAfterSeconds: options.headingStaleAfterSeconds))
        self.stop = options.stopStore?.load()
        self.timeCheck = InputTimeCheck(
            owner: "sink '\(name)'",
            options: .init(
                aheadLimitSeconds: options.aheadLimitSeconds, latenessLimitSeconds: options.staleAfterSeconds),
            logger: logger)
    }

    private func status(_ health: StageHealth, _ message: String) async {
        self.reporter.sent(at: self.time.monotonicSeconds())
        var counters = [
            StatusCounter(name: "cues", value: UInt64(self.cuesSent)),
            StatusCounter(name: "signalLost", value: UInt64(self.failSafe.signalLostCount)),
            StatusCounter(
                name: "oldestInputActedOnMilliseconds",
                value: UInt64(max(0, min(1e9, (self.oldestInputActedOn * 1000).rounded())))),
        ]
        if let active = self.active { counters.append(StatusCounter(name: "activeDevice", value: UInt64(active))) }
        counters.append(StatusCounter(name: "heading.inaccurate", value: self.inaccurateHeadings))
        counters.append(StatusCounter(name: "control.commands", value: self.controls))
        counters.append(StatusCounter(name: "turns.rendered", value: self.turnsRendered))
        counters.append(StatusCounter(name: "turns.withheld", value: self.turnsWithheld))
        counters.append(StatusCounter(name: "turns.dropped", value: self.turnsDropped))
        counters.append(StatusCounter(name: "stopped", value: self.stop == nil ? 0 : 1))
        counters.append(StatusCounter(name: "heading.magneticRefused", value: self.magneticHeadings))
        try? await self.reporter.publish(health, message, counters: counters, timeCheck: self.timeCheck)
    }

    public func run() async throws {
        await self.status(
            .running,
            "devices: \(self.devices.map(\.name).joined(separator: ", ")); offset \(fixedDecimal(self.options.guidance.offsetDegrees, digits: 1))°"
        )
        if self.stop != nil {
            self.logger.warning("sink '\(self.name)': \(self.stoppedText) (kept from before this start)")
            await self.status(.degraded, self.stoppedText)
        }
        await withTaskGroup(of: Void.self) { group in
            for device in self.devices {
                group.addTask {
                    do { try await device.run() } catch is CancellationError {} catch {
                        self.logger.warning("device \(device.name) stopped: \(error)")
                    }
                    // A device with nothing to maintain returns at once; only the input's end stops the sink.
                    while !Task.isCancelled { try? await self.time.sleep(.seconds(3600)) }
                }
            }
            group.addTask {
                // The input's age: woken when something can change without input (input going stale, a loss
                // re-arming, the status), not on a timer (20 wakes a second cost about 1 % of a core on a small
                // machine). It never waits on a device's availability.
                while !Task.isCancelled {
                    let wait = await self.waitForNextInputCheck()
                    await withTaskCancellationHandler {
                        await wait.value
                    } onCancel: {
                        wait.cancel()
                    }
                    // Stopping: the outputs were stopped, and nothing may play after that.
                    if Task.isCancelled { break }
                    await self.checkInput()
                }
            }
            group.addTask {
                // The devices' availability (the fallback) and the condition lock's grace: read at once (cues
                // from the first input on have a device to play on), then at the interval.
                while !Task.isCancelled {
                    await self.checkDevices()
                    try? await self.time.sleep(.seconds(max(0.01, self.options.deviceCheckIntervalSeconds)))
                }
            }
            group.addTask {
                do {
                    // (Not `cancelOnGracefulShutdown()`, whose task of its own leaves the preferred thread per message.)
                    try await cancelWhenGracefulShutdown {
                        for try await arrival in self.input { await self.handle(arrival) }
                    }
                } catch {}
                // Input ended or shutdown: stop everything, then the other tasks.
            }
            await group.next()
            // Stop every motor while the devices' links are still up, then end their tasks. Nothing plays from here
            // on: the other tasks run on this actor while each device stops.
            self.shuttingDown = true
            await self.stopDevices()
            group.cancelAll()
        }
        var summaries: [String] = []
        let answers = await self.askDevices(Array(self.devices.indices)) { await $0.summary() }
        for (device, summary) in zip(self.devices, answers) {
            summaries.append("\(device.name): \(summary ?? "no answer")")
        }
        self.logger.info("sink '\(self.name)' stopped; \(summaries.joined(separator: "; "))")
        await self.status(.stopping, summaries.joined(separator: "; "))
    }

    /// Stops the devices at `indices` (every device unless given: the fail-safe's silence, the sink's end), logging
    /// each that could not be stopped; returns them.
    @discardableResult
    private func stopDevices(_ indices: [Int]? = nil) async -> [String] {
        let failures = await self.stopAllDevices(indices)
        for failure in failures { self.logger.error("sink '\(self.name)': could not stop \(failure)") }
        return failures
    }

    /// Checks a timed message's times; returns when its content was current [seconds, monotonic], or nil to drop it.
    private func admit(_ arrival: Arrival<SinkInput>, topic: String, measurementSeconds: Double) async -> Double? {
        let lateness =
            topic == "heading"
            ? self.options.headingStaleAfterSeconds ?? self.options.staleAfterSeconds
            : self.options.staleAfterSeconds
        switch self.timeCheck.admit(
            arrival, topic: topic, measurementSeconds: measurementSeconds, latenessLimitSeconds: .some(lateness))
        {
        case let .accept(lateness):
            return arrival.receivedSeconds - lateness
        case let .rebase(lateness):
            if topic == "heading" { self.guidance.reset() }
            return arrival.receivedSeconds - lateness
        case .drop:
            if self.timeCheck.dropReportDue(at: arrival.receivedSeconds) {
                await self.status(
                    self.failSafe.isSilent ? .stale : .running,
                    self.failSafe.isSilent ? "silent: \(self.failSafe.silenceReason)" : self.guidingText)
            }
            return nil
        }
    }

    /// Handles one input (exposed for tests).
    public func handle(_ arrival: Arrival<SinkInput>) async {
        await self.act(on: arrival)
        // Input that came late goes stale sooner than the input check loop's wait allows for: it is woken for it.
        if let deadline = self.failSafe.nextDeadline, deadline + Self.pastDeadline < self.plannedCheck {
            self.checkWait?.cancel()
        }
    }

    private func act(on arrival: Arrival<SinkInput>) async {
        switch arrival.value {
        case let .heading(sample):
            let sent = self.cuesSent
            await self.handleHeading(sample, arrival)
            if self.options.echoEveryHeading, self.cuesSent == sent {
                // The cue in force, dated with the heading (none while the fail-safe holds the motors: silent).
                var echo =
                    self.lastCue ?? HapticCue(timeSeconds: 0, kind: .silent, intensity: 0, deviationDegrees: 0)
                echo.timeSeconds = sample.timeSeconds
                try? await self.output.publish(.cue(echo))
            }
        case let .target(target):
            // A repeat of the target at hand is no newer: the time check counts its age from the first copy.
            guard let current = await self.admit(arrival, topic: "target", measurementSeconds: target.timeSeconds)
            else { return }
            self.target = target
            await self.apply(self.failSafe.target(currentAt: current, now: self.time.monotonicSeconds()))
        case let .progress(progress):
            guard await self.admit(arrival, topic: "progress", measurementSeconds: progress.timeSeconds) != nil else {
                return
            }
            for device in self.devices { await device.observe(.progress(progress)) }
            if progress.state != self.lastState, self.stop == nil {
                if progress.state == .rerouting { await self.announce("Recalculating route") }
                if progress.state == .arrived { await self.announce("You have arrived") }
                if progress.state == .wrongWay { await self.announce("Wrong way. Turn around") }
                self.lastState = progress.state
            }
        case let .turn(event):
            // Turn events are sparse (minutes apart), so the time guard's pace check does not fit them: each is dated
            // with its fix and is acted on only when it is of the target's time line (a fix older than the target in
            // hand by more than the staleness limit, or ahead of it by more than the ahead limit and one, is dropped).
            let reference = self.target?.timeSeconds ?? event.timeSeconds
            guard event.timeSeconds.isFinite, event.turnDegrees.isFinite,
                event.timeSeconds >= reference - self.options.staleAfterSeconds,
                event.timeSeconds <= reference + self.options.aheadLimitSeconds + self.options.staleAfterSeconds
            else {
                self.turnsDropped &+= 1
                return
            }
            await self.renderTurn(event)
        case .attitude:
            break
        case let .context(message):
            for device in self.devices { await device.observe(message) }
        case let .publisherLost(stage):
            self.logger.warning("sink '\(self.name)': publisher '\(stage)' lost")
            // When it comes back (perhaps restarted, with a new time line) its first messages count at once.
            self.timeCheck.forgetTimeLines(of: stage)
            await self.apply(self.failSafe.publisherLost(stage, now: self.time.monotonicSeconds()))
        }
    }

    private func handleHeading(_ raw: HeadingSample, _ arrival: Arrival<SinkInput>) async {
        guard let current = await self.admit(arrival, topic: "heading", measurementSeconds: raw.timeSeconds)
        else { return }
        // Bearings are true, and so are the headings the source stage lets through once it knows where it is: a
        // magnetic one (the source had no position yet, or a client that publishes headings of its own) is not used.
        guard raw.reference == .trueNorth else {
            self.magneticHeadings &+= 1
            self.failSafe.headingUnusable("magnetic heading (the source turns headings true once it has a position)")
            return
        }
        let sample = raw
        // A heading that says it may be far off (a disturbed compass) is not acted on, nor counted as fresh.
        if let accuracy = sample.accuracyDegrees, accuracy > self.options.maximumHeadingAccuracyDegrees {
            self.inaccurateHeadings &+= 1
            self.failSafe.headingUnusable(
                "compass unreliable (accuracy \(fixedDecimal(accuracy, digits: 0))° > \(fixedDecimal(self.options.maximumHeadingAccuracyDegrees, digits: 0))°)"
            )
            return
        }
        await self.apply(self.failSafe.heading(currentAt: current, now: self.time.monotonicSeconds()))
        guard !self.failSafe.isSilent, !self.outputsHeld,
            let cue = self.guidance.update(heading: sample, target: self.target)
        else {
            return
        }
        if let age = self.failSafe.inputAge(now: self.time.monotonicSeconds()) {
            self.oldestInputActedOn = max(self.oldestInputActedOn, age)
        }
        await self.send(cue)
    }

    /// Carries out what the fail-safe decided.
    private func apply(_ transition: SinkFailSafe.Transition?) async {
        switch transition {
        case nil:
            return
        case .resume:
            self.guidance.reset()
            await self.status(self.stop == nil ? .running : .degraded, self.guidingText)
        case let .silence(reason, playSignalLost):
            self.guidance.reset()
            self.target = nil
            self.lastCue = nil
            let unstopped = await self.stopDevices()
            // A stopped sink plays nothing, not even the loss of its input (its status says both).
            if playSignalLost, !self.outputsHeld {
                let cue = HapticCue(
                    timeSeconds: self.time.wallSeconds(), kind: .signalLost, intensity: 1, deviationDegrees: 0)
                if let active = self.active {
                    try? await self.devices[active].render(cue)
                    await self.holdStop(active)
                }
                try? await self.output.publish(.cue(cue))
            }
            let stopped =
                unstopped.isEmpty ? "motors stopped" : "could not stop \(unstopped.joined(separator: "; "))"
            self.logger.warning("sink '\(self.name)': silent: \(reason); \(stopped)")
            await self.status(.stale, "silent: \(reason); \(stopped)")
        }
    }

    /// The status while guiding, naming the device that plays the cues (or the experimenter's stop).
    private var guidingText: String {
        if self.stop != nil { return self.stoppedText }
        return "guiding on \(self.active.map { self.devices[$0].name } ?? "no device")"
    }

    /// The status while the experimenter's stop holds.
    private var stoppedText: String {
        guard let stop = self.stop else { return "" }
        let note = stop.note.isEmpty ? "" : " (\(stop.note))"
        let who = stop.by == StopState.conditionLockSender ? "the condition lock" : "experimenter (\(stop.by))"
        return "stopped by \(who); every output silent until resumed\(note)"
    }

    /// How far past a stale deadline the check comes: at the deadline exactly, the input is still fresh [seconds].
    private static var pastDeadline: Double { 0.001 }

    /// The input check loop's next wait, begun: until the earliest time something may change without input (input
    /// going stale, a loss re-arming, the status), at most the shorter stale limit (input that arrives meanwhile and
    /// goes stale sooner ends the wait: ``handle(_:)``), and never a busy loop.
    private func waitForNextInputCheck() -> Task<Void, Never> {
        let now = self.time.monotonicSeconds()
        let limit = min(self.failSafe.options.staleAfterSeconds, self.failSafe.options.headingStaleAfterSeconds)
        var due = now + max(0.01, limit)
        if let deadline = self.failSafe.nextDeadline { due = min(due, deadline + Self.pastDeadline) }
        due = min(due, self.reporter.nextDue)
        due = max(due, now + 0.002)
        self.plannedCheck = due
        // Until the time itself, however late the task begins.
        let time = self.time
        let wait = Task<Void, Never> {
            let left = due - time.monotonicSeconds()
            if left > 0 { _ = try? await time.sleep(.seconds(left)) }
        }
        self.checkWait = wait
        return wait
    }

    /// Checks for stale input and for the active device (exposed for tests).
    public func check() async {
        await self.checkInput()
        await self.checkDevices()
    }

    /// Judges the input's age, and reports the status when due.
    private func checkInput() async {
        await self.apply(self.failSafe.evaluate(now: self.time.monotonicSeconds()))
        if self.reporter.due(at: self.time.monotonicSeconds()) {
            let silent = self.failSafe.isSilent
            if self.stop != nil {
                await self.status(
                    self.stopHealth, self.stoppedText + (silent ? "; input: \(self.failSafe.silenceReason)" : ""))
            } else {
                await self.status(
                    silent ? .stale : (self.active == 0 ? .running : .degraded),
                    silent ? "silent: \(self.failSafe.silenceReason)" : self.guidingText)
            }
        }
    }

    /// Asks the devices whether they are available, moves the output to the first that is, and applies the
    /// condition lock's grace; one reading at a time.
    private func checkDevices() async {
        guard !self.checkingDevices else { return }
        self.checkingDevices = true
        defer { self.checkingDevices = false }
        // Fallback: the first available device of the list (OutputSelection decides). A device that does not say
        // within the limit is not available (and is not asked again until it has answered).
        var available = await self.askDevices(Array(self.devices.indices), oncePer: "availability") {
            await $0.isAvailable()
        }.map { $0 ?? false }
        // The sink began to end meanwhile: nothing is chosen any more (nor a stop kept for a device lost).
        guard !self.shuttingDown, !Task.isCancelled else { return }
        // Locked to the condition's device: no other is ever chosen.
        if self.options.lockDevice { available = available.indices.map { $0 == 0 && available[0] } }
        if let change = self.selection.choose(available: available) {
            let previous = change.from.map { self.devices[$0].name } ?? "none"
            let next = change.to.map { self.devices[$0].name } ?? "none"
            self.logger.warning("sink '\(self.name)': output moves from \(previous) to \(next)")
            if let old = change.from { await self.stopDevices([old]) }
            await self.status(
                self.stop != nil ? self.stopHealth : (change.degraded ? .degraded : .running), "output: \(next)")
            // The new device picks up what plays now.
            if let cue = self.lastCue, let chosen = change.to, !self.failSafe.isSilent, !self.outputsHeld {
                try? await self.devices[chosen].render(cue)
                await self.holdStop(chosen)
            }
            if self.options.lockDevice, change.from == 0 { await self.conditionLockStop(lost: previous) }
        }
        // Locked to a device that never came (or has not come back since a resume): stopped as if lost, after a grace.
        if self.options.lockDevice {
            if self.active == 0 || self.stop != nil {
                self.withoutDeviceSince = nil
            } else if let since = self.withoutDeviceSince {
                if self.time.monotonicSeconds() - since >= self.options.lockGraceSeconds {
                    await self.conditionLockStop(lost: "\(self.devices[0].name) (not available)")
                    self.withoutDeviceSince = nil
                }
            } else {
                self.withoutDeviceSince = self.time.monotonicSeconds()
            }
        }
    }

    /// The health a stop in force reports: failed for the condition lock (the trial is spoiled), degraded for the
    /// experimenter's.
    private var stopHealth: StageHealth {
        self.stop?.by == StopState.conditionLockSender ? .failed : .degraded
    }

    /// Stops the devices at `indices` (every device unless given) at once and returns what failed (`name: reason`).
    /// None waits for a slow other: a device stuck in its stop (its audio thread, its link) delays neither the
    /// others' stop nor, beyond the options' limit, what the sink does next (the signal-lost cue, its status, the
    /// experimenter's reply, the fallback, its own end); it is named instead.
    private func stopAllDevices(_ indices: [Int]? = nil) async -> [String] {
        let indices = indices ?? Array(self.devices.indices)
        let answers = await self.askDevices(indices) { device -> String? in
            do {
                try await device.stopAll()
                return nil
            } catch {
                return "\(device.name): \(error)"
            }
        }
        let limit = fixedDecimal(self.options.deviceAnswerLimitSeconds, digits: 1)
        var failures: [String] = []
        for (index, answer) in zip(indices, answers) {
            switch answer {
            case nil: failures.append("\(self.devices[index].name): no answer within \(limit) s")
            case let .some(failure?): failures.append(failure)
            case .some(nil): break
            }
        }
        return failures
    }

    /// Per question asked once at a time (by its name), the devices that have not answered it yet [their indices].
    private var unanswered: [String: Set<Int>] = [:]

    /// Asks the devices at `indices` `question` at once, each on a task of its own, and gathers their answers (in the
    /// order of `indices`): nil for a device that has not answered within the options' limit. The wait is not cut
    /// short by the caller's cancellation (a stop at the sink's end waits for its answers like any other). Asked
    /// `oncePer` a name, a device that has not yet answered that question asked before is not asked again (nil at
    /// once): a device that hangs is not asked again and again.
    private func askDevices<T: Sendable>(
        _ indices: [Int], oncePer name: String? = nil, _ question: @escaping @Sendable (any OutputDevice) async -> T
    ) async -> [T?] {
        let pending = name.flatMap { self.unanswered[$0] } ?? []
        let asked = indices.filter { !pending.contains($0) }
        guard !asked.isEmpty else { return indices.map { _ in nil } }
        let (stream, answer) = AsyncStream.makeStream(of: (index: Int, value: T)?.self)
        for index in asked {
            if let name { self.unanswered[name, default: []].insert(index) }
            let device = self.devices[index]
            Task {
                let value = await question(device)
                if let name { self.unanswered[name]?.remove(index) }
                answer.yield((index, value))
            }
        }
        let (time, limit) = (self.time, self.options.deviceAnswerLimitSeconds)
        let timer = Task {
            try? await time.sleep(.seconds(limit))
            answer.yield(nil)  // the limit
        }
        // Gathered by a task of its own, which the caller's cancellation does not reach.
        let gathered = await Task { () -> [Int: T] in
            var answers: [Int: T] = [:]
            for await next in stream {
                guard let (index, value) = next else { break }
                answers[index] = value
                if answers.count == asked.count { break }
            }
            return answers
        }.value
        timer.cancel()
        answer.finish()
        return indices.map { gathered[$0] }
    }

    /// The condition's device is lost: every output stops and stays so until the experimenter resumes (a device that
    /// comes back does not start guiding on its own); the stop is kept like the experimenter's, published as a
    /// `control` stop (recordings, the live monitor, the LSL marker stream) and said in the status.
    private func conditionLockStop(lost device: String) async {
        let wall = self.time.wallSeconds()
        let reason = "\(device) lost; the condition allows no other device"
        if self.stop == nil {
            self.stop = StopState(by: StopState.conditionLockSender, sinceSeconds: wall, note: reason)
        }
        self.guidance.reset()
        self.lastCue = nil
        for failure in await self.stopAllDevices() {
            self.logger.error("sink '\(self.name)': condition lock: could not stop \(failure)")
        }
        do { try self.options.stopStore?.save(self.stop) } catch {
            self.logger.error("sink '\(self.name)': the stop state could not be kept: \(error)")
        }
        self.logger.error("sink '\(self.name)': condition lock: \(reason); every output stopped until resumed")
        try? await self.output.publish(
            .control(
                ControlEvent(
                    timeSeconds: wall, command: .stop, text: reason, sender: StopState.conditionLockSender,
                    requestID: "", sentSeconds: wall, stopped: true)))
        await self.status(.failed, self.stoppedText)
    }

    private func send(_ cue: HapticCue) async {
        self.lastCue = cue
        self.cuesSent += 1
        if let active = self.active {
            do { try await self.devices[active].render(cue) } catch {
                self.logger.warning("device \(self.devices[active].name) failed to render: \(error)")
            }
            await self.holdStop(active)
        }
        try? await self.output.publish(.cue(cue))
    }

    /// Renders a turn event once (the route controller sends each a few times, for a sink that has just joined) on the
    /// active device, and publishes it as rendered; never while stopped or while the fail-safe holds the outputs
    /// silent (an event about a place the walker may no longer be at is not acted on late).
    private func renderTurn(_ event: TurnEvent) async {
        guard !self.renderedTurns.contains(event) else { return }
        self.renderedTurns.append(event)
        if self.renderedTurns.count > 16 { self.renderedTurns.removeFirst() }
        guard !self.outputsHeld, !self.failSafe.isSilent else {
            self.turnsWithheld &+= 1
            return
        }
        self.turnsRendered &+= 1
        if let active = self.active {
            do { try await self.devices[active].renderTurn(event) } catch {
                self.logger.warning("device \(self.devices[active].name) failed to render a turn event: \(error)")
            }
            await self.holdStop(active)
        }
        try? await self.output.publish(.turn(event))
    }

    private func announce(_ text: String) async {
        guard !self.outputsHeld else { return }
        if let active = self.active {
            try? await self.devices[active].announce(text)
            await self.holdStop(active)
        }
    }

    /// After an await on a device: a stop that came in meanwhile (the actor took the command, or the sink began to
    /// end, while the device worked) may have been overtaken by what the device was doing, so it is applied to that
    /// device once more.
    private func holdStop(_ index: Int) async {
        if self.outputsHeld { await self.stopDevices([index]) }
    }

    /// Carries out an experimenter's command from `sender` and answers it: stop silences every device at once (and
    /// keeps it so, also across a restart, until resume); resume guides again from the next heading; mark only
    /// records. Each is published as a `control` message for recordings and live views.
    public func control(_ request: ControlRequest, sender: String) async -> ControlReply {
        self.controls &+= 1
        var problems: [String] = []
        let wall = self.time.wallSeconds()
        switch request.command {
        case .stop:
            if self.stop == nil { self.stop = StopState(by: sender, sinceSeconds: wall) }
            self.guidance.reset()
            self.lastCue = nil
            // Every device at once, not only the active one (a fallback may still be finishing a sound), and none
            // waiting for a slow other.
            problems += await self.stopAllDevices()
            self.logger.warning("sink '\(self.name)': stopped by experimenter (\(sender))")
        case .resume:
            self.stop = nil
            self.guidance.reset()
            self.logger.warning("sink '\(self.name)': resumed by experimenter (\(sender))")
        case .mark:
            self.logger.info("sink '\(self.name)': mark by \(sender): \(request.text)")
        }
        if request.command != .mark {
            do { try self.options.stopStore?.save(self.stop) } catch {
                problems.append("not kept for a restart: \(error)")
                self.logger.error("sink '\(self.name)': the stop state could not be kept: \(error)")
            }
        }
        try? await self.output.publish(
            .control(
                ControlEvent(
                    timeSeconds: wall, command: request.command, text: request.text, sender: sender,
                    requestID: request.requestID, sentSeconds: request.sentSeconds, stopped: self.stop != nil)))
        let text: String
        switch request.command {
        case .stop: text = "stopped: every output silent (\(self.devices.map(\.name).joined(separator: ", ")))"
        case .resume:
            text =
                self.failSafe.isSilent
                ? "resumed; silent until input is fresh: \(self.failSafe.silenceReason)"
                : "resumed: \(self.guidingText)"
        case .mark: text = "marked"
        }
        let message = problems.isEmpty ? text : "\(text); \(problems.joined(separator: "; "))"
        await self.status(
            self.stop != nil ? self.stopHealth : (self.failSafe.isSilent ? .stale : .running),
            self.stop != nil
                ? self.stoppedText
                : (self.failSafe.isSilent ? "silent: \(self.failSafe.silenceReason)" : self.guidingText))
        return ControlReply(
            requestID: request.requestID, stage: self.name, accepted: true, stopped: self.stop != nil, message: message)
    }
}
