public import Logging
public import NavCore
public import ServiceLifecycle

/// The haptic sink's settings.
public struct HapticSinkOptions: Sendable {
    /// Guidance thresholds, the calibrated offset among them.
    public var guidance = Guidance.Options()
    /// Input older than this, counted from its receipt, is stale: every motor stops [seconds].
    public var staleAfterSeconds = 1.0
    /// How often the sink checks for stale input and device availability [seconds].
    public var checkIntervalSeconds = 0.05

    /// The defaults.
    public init() {}
}

/// The haptic sink ("Group 2"): heading and guidance target in, cues out to its output devices and the bus.
///
/// Fail-safe: when no heading or no target has been received for `staleAfterSeconds` (receipt time, so that
/// a replay of an old recording does not trip it), or a publisher is lost, every device stops and a
/// signal-lost cue plays once. Fallback: cues go to the first available device of the ordered list; when it
/// becomes unavailable the next takes over at the next check, and the first takes over again when it returns.
/// On shutdown every device is stopped before the stage returns.
public actor HapticSinkStage<Input: AsyncSequence & Sendable, Output: MessagePublisher>: Service
where Input.Element == SinkInput {
    private let name: String
    private let input: Input
    private let output: Output
    private let devices: [any OutputDevice]
    private let options: HapticSinkOptions
    private let logger: Logger
    private let clock = ContinuousClock()
    private var guidance: Guidance
    private var target: GuidanceTarget?
    private var lastHeading: ContinuousClock.Instant?
    private var lastTarget: ContinuousClock.Instant?
    private var stale = true
    private var signalLostPlayed = false
    private var active: Int?
    private var lastCue: HapticCue?
    private var lastState: RouteState?
    private var cuesSent = 0

    /// Creates the stage with devices in order of preference.
    public init(name: String, input: Input, output: Output, devices: [any OutputDevice], options: HapticSinkOptions,
                logger: Logger) {
        self.name = name
        self.input = input
        self.output = output
        self.devices = devices
        self.options = options
        self.logger = logger
        self.guidance = Guidance(options: options.guidance)
    }

    private func status(_ health: StageHealth, _ message: String) async {
        var counters = [StatusCounter(name: "cues", value: UInt64(self.cuesSent))]
        if let active = self.active { counters.append(StatusCounter(name: "activeDevice", value: UInt64(active))) }
        try? await self.output.publish(.status(StageStatus(timeSeconds: WallClock.nowSeconds(), stage: self.name, health: health,
                                                           message: message, counters: counters)))
    }

    public func run() async throws {
        await self.status(.running, "devices: \(self.devices.map(\.name).joined(separator: ", ")); offset \(fixedDecimal(self.options.guidance.offsetDegrees, digits: 1))°")
        await withTaskGroup(of: Void.self) { group in
            for device in self.devices {
                group.addTask {
                    do { try await device.run() } catch is CancellationError {} catch {
                        self.logger.warning("device \(device.name) stopped: \(error)")
                    }
                    // A device with nothing to maintain returns at once; only the input's end stops the sink.
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(self.options.checkIntervalSeconds))
                    await self.check()
                }
            }
            group.addTask {
                do {
                    for try await input in self.input.cancelOnGracefulShutdown() { await self.handle(input) }
                } catch {}
                // Input ended or shutdown: stop everything, then the other tasks.
            }
            await group.next()
            // Stop every motor while the devices' links are still up, then end their tasks.
            await self.stopEverything()
            group.cancelAll()
        }
        var summaries: [String] = []
        for device in self.devices { summaries.append("\(device.name): \(await device.summary())") }
        self.logger.info("sink '\(self.name)' stopped; \(summaries.joined(separator: "; "))")
        await self.status(.stopping, summaries.joined(separator: "; "))
    }

    private func stopEverything() async {
        for device in self.devices { try? await device.stopAll() }
    }

    /// Handles one input (exposed for tests).
    public func handle(_ input: SinkInput) async {
        switch input {
        case let .heading(sample):
            self.lastHeading = self.clock.now
            await self.recoverIfFresh()
            guard !self.stale, let cue = self.guidance.update(heading: sample, target: self.target) else { return }
            await self.send(cue)
        case let .target(target):
            self.lastTarget = self.clock.now
            self.target = target
            await self.recoverIfFresh()
        case let .progress(progress):
            for device in self.devices { await device.observe(.progress(progress)) }
            if progress.state != self.lastState {
                if progress.state == .rerouting { await self.announce("Recalculating route") }
                if progress.state == .arrived { await self.announce("You have arrived") }
                if progress.state == .wrongWay { await self.announce("Wrong way. Turn around") }
                self.lastState = progress.state
            }
        case .attitude:
            break
        case let .context(message):
            for device in self.devices { await device.observe(message) }
        case let .publisherLost(stage):
            self.logger.warning("sink '\(self.name)': publisher '\(stage)' lost")
            await self.goStale("\(stage) is gone")
        }
    }

    private func recoverIfFresh() async {
        guard self.stale, let heading = self.lastHeading, let target = self.lastTarget else { return }
        let limit = Duration.seconds(self.options.staleAfterSeconds)
        guard self.clock.now - heading < limit, self.clock.now - target < limit else { return }
        self.stale = false
        self.signalLostPlayed = false
        self.guidance.reset()
        await self.status(.running, "guiding")
    }

    /// Checks for stale input and for the active device (exposed for tests).
    public func check() async {
        let limit = Duration.seconds(self.options.staleAfterSeconds)
        let now = self.clock.now
        if !self.stale {
            if self.lastHeading.map({ now - $0 >= limit }) ?? true { await self.goStale("no heading for \(self.options.staleAfterSeconds) s") }
            else if self.lastTarget.map({ now - $0 >= limit }) ?? true { await self.goStale("no guidance for \(self.options.staleAfterSeconds) s") }
        }
        // Fallback: the first available device of the list.
        var chosen: Int?
        for (index, device) in self.devices.enumerated() where await device.isAvailable() {
            chosen = index
            break
        }
        if chosen != self.active {
            let previous = self.active.map { self.devices[$0].name } ?? "none"
            let next = chosen.map { self.devices[$0].name } ?? "none"
            self.logger.warning("sink '\(self.name)': output moves from \(previous) to \(next)")
            if let old = self.active { try? await self.devices[old].stopAll() }
            self.active = chosen
            await self.status(chosen == 0 ? .running : .degraded, "output: \(next)")
            // The new device picks up what plays now.
            if let cue = self.lastCue, let chosen, !self.stale { try? await self.devices[chosen].render(cue) }
        }
    }

    private func goStale(_ reason: String) async {
        guard !self.stale || !self.signalLostPlayed else { return }
        self.stale = true
        self.guidance.reset()
        self.target = nil
        await self.stopEverything()
        if !self.signalLostPlayed {
            self.signalLostPlayed = true
            let cue = HapticCue(timeSeconds: WallClock.nowSeconds(), kind: .signalLost, intensity: 1, deviationDegrees: 0)
            self.lastCue = nil
            if let active = self.active { try? await self.devices[active].render(cue) }
            try? await self.output.publish(.cue(cue))
        }
        await self.status(.stale, "signal lost: \(reason); motors stopped")
    }

    private func send(_ cue: HapticCue) async {
        self.lastCue = cue
        self.cuesSent += 1
        if let active = self.active {
            do { try await self.devices[active].render(cue) } catch {
                self.logger.warning("device \(self.devices[active].name) failed to render: \(error)")
            }
        }
        try? await self.output.publish(.cue(cue))
    }

    private func announce(_ text: String) async {
        if let active = self.active { try? await self.devices[active].announce(text) }
    }
}
