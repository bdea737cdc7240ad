import ArgumentParser
import Bus
import Evaluation
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NavCore
import Runtime
import Sinks
import Stages
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemIO
import StageHaptic
import Lab

extension StudyCommand {
    struct RunTrial: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract:
                "Run one trial of a study with a participant: its route, its condition locked, every message recorded.",
            discussion: """
                Starts the study config's stages (those of --group only, on a host of a two-host lab) with the trial's \
                route and condition and the condition lock (a lost device stops the outputs and is marked; cues never \
                move to another device), and records what every stage publishes, both hosts', into \
                DIR/sessions/P07/T04-<condition>-<route>/ with the trial's record (trial.json). The trial starts and \
                ends with a mark (in the session and on the LSL marker stream); it ends at the arrival, or is aborted \
                by SIGINT/SIGTERM, a stage that gives up, or --max-minutes. On the wearable of a two-host lab: \
                --group 2 --no-record.
                """)

        @Argument(help: "The study folder (with study.json5).")
        var folder: String

        @Option(help: "The participant (an id of the schedule).")
        var participant: String

        @Option(help: "The trial's number (1 = the participant's first).")
        var trial: Int?

        @Flag(help: "The participant's first trial not completed.")
        var next = false

        @Option(
            name: [.customLong("host"), .customLong("group")],
            help: "Start only the stages of this group (a host of a two-host lab).")
        var group: String?

        @Flag(help: "Do not record (the other host records).")
        var noRecord = false

        @Flag(help: "Replace a trial run before without asking.")
        var yes = false

        @Option(help: "Abort the trial after this long [minutes].")
        var maxMinutes = 60.0

        @Option(help: "The key pair to read encrypted stages with (one of their readers).")
        var key = "monitor"

        @Option(help: "The key pair to send the trial's marks with (one of the sink's senders).")
        var controlKey = "experimenter"

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (self.trial == nil) != (!self.next) else { throw ValidationError("give --trial N or --next") }
            // --next reads the records this host keeps; one that does not record has none, and would run trial 1.
            guard !(self.next && self.noRecord) else {
                throw ValidationError("--next with --no-record: give the trial (--trial N), as the recording host does")
            }
            guard self.maxMinutes > 0 else { throw ValidationError("--max-minutes: more than 0") }
        }

        func run() async throws {
            let logger = self.logging.bootstrap()
            let trial: StudyTrial
            let (study, schedule) = try loadStudy(self.folder)
            do {
                trial = try StudyTrial.find(
                    study: study, schedule: schedule, participant: self.participant,
                    number: self.next ? nil : self.trial)
            } catch let error as ConfigError {
                throw CommandFailure("\(error)")
            }
            let name =
                "\(trial.trial.participant) trial \(trial.trial.number) (\(trial.trial.condition) on \(trial.trial.route))"
            // The config checked first: a mistake in it must not cost the trial run before.
            do {
                _ = try PipelineConfig.load(tree: try trial.config(), file: trial.folder + "/config.json")
            } catch {
                throw CommandFailure("\(name): \(error)")
            }
            if !self.noRecord { try askBeforeReplacing(trial, yes: self.yes) }
            let configFile: String
            let pipeline: PipelineConfig
            do {
                configFile = try trial.writeConfig()
                pipeline = try PipelineConfig.load(file: configFile)
            } catch {
                throw CommandFailure("\(name): \(error)")
            }
            if !pipeline.stages.contains(where: { $0.role == .haptic && $0.options.keys.contains("control") }) {
                StandardStreams.writeError(
                    "study: no haptic stage of the config takes commands (options.control): the trial's start and end cannot be marked in the session, and a condition lock's stop cannot be resumed without restarting the sink\n"
                )
            }
            let stages = pipeline.stages.filter { self.group == nil || $0.group == self.group }.map(\.name)
            guard !stages.isEmpty else { throw CommandFailure("no stage is in group '\(self.group ?? "")'") }
            print("study '\(trial.study.name)': \(name) → \(trial.folder)")

            var record = StudyTrialRecord(trial: trial, mode: "run", startedSeconds: Date().timeIntervalSince1970)
            // The recorder and the watch: every stage the config publishes, read as a reader key.
            let recorder: MCAPRecorder?
            let subscriber: BusSubscriber?
            let context = ZMQContext()
            if self.noRecord {
                recorder = nil
                subscriber = nil
            } else {
                try trial.write(record)
                let (endpoints, options, _) = try busListening(
                    config: configFile, endpoints: [], key: self.key, topics: [])
                var recorderOptions = MCAPRecorder.Options(folder: trial.folder)
                recorderOptions.metadata = trial.metadata + [("recorder", "hapticnav study run")]
                do {
                    recorder = try MCAPRecorder(options: recorderOptions, logger: logger)
                    subscriber = try BusSubscriber(
                        context: context, connect: endpoints, options: options, logger: logger)
                } catch {
                    throw CommandFailure("\(error)")
                }
            }

            // The stages, on a thread of their own until the trial ends (or a signal, or a stage giving up).
            let stopFlag = Atomic<Bool>(false)
            let launcherDone = Atomic<Bool>(false)
            var launcher = Launcher(configFile: configFile, stages: stages, logger: logger)
            launcher.childArguments = ["--log-level", "\(self.logging.logLevel)"]
            launcher.stopRequested = { stopFlag.load(ordering: .relaxed) }
            let finished = launcher
            let (launcherEnded, launcherSignal) = AsyncStream.makeStream(of: Int32.self)
            SystemThread.start(name: "study-launcher") {
                let status = (try? finished.run()) ?? 1
                launcherDone.store(true, ordering: .relaxed)
                launcherSignal.yield(status)
                launcherSignal.finish()
            }
            guard let recorder, let subscriber else {
                for await status in launcherEnded { throw ExitCode(status) }
                return
            }

            let outcome = await TrialWatch(
                trial: trial, pipeline: pipeline, controlKey: self.controlKey, recorder: recorder,
                subscriber: subscriber, maxSeconds: self.maxMinutes * 60,
                launcherDone: { launcherDone.load(ordering: .relaxed) },
                stopStages: { stopFlag.store(true, ordering: .relaxed) }
            ).run()
            stopFlag.store(true, ordering: .relaxed)
            for await _ in launcherEnded {}
            subscriber.close()
            try? await recorder.finish()
            context.terminate()
            record.status = outcome.arrived ? .completed : .aborted
            record.reason = outcome.reason
            record.conditionLocked = outcome.conditionLocked
            record.endedSeconds = Date().timeIntervalSince1970
            try trial.write(record)
            let counts = recorder.counts
            print(
                "\(name): \(record.status.rawValue) (\(outcome.reason))"
                    + (outcome.conditionLocked ? "; the condition lock stopped the outputs" : "")
                    + "; \(counts.received - counts.dropped) message(s) recorded")
            if !outcome.arrived { throw ExitCode(1) }
        }
    }
}

/// Records a trial's bus and decides when and how it ends: arrival (completed), the time limit, or the stages' end
/// (aborted). Marks the trial's start and end through the sink's control channel, so that they are in the session and
/// on the LSL marker stream.
struct TrialWatch {
    let trial: StudyTrial
    let pipeline: PipelineConfig
    let controlKey: String
    let recorder: MCAPRecorder
    let subscriber: BusSubscriber
    let maxSeconds: Double
    let launcherDone: @Sendable () -> Bool
    /// Asks the stages to stop; the watch records on until they have (their last words, the sink's silence).
    let stopStages: @Sendable () -> Void

    var hapticStages: Set<String> { Set(self.pipeline.stages.filter { $0.role == .haptic }.map(\.name)) }

    struct Outcome {
        var arrived = false
        var reason = ""
        var conditionLocked = false
    }

    func run() async -> Outcome {
        var outcome = Outcome()
        let label =
            "trial \(self.trial.trial.number) \(self.trial.trial.participant) \(self.trial.trial.condition) on \(self.trial.trial.route)"
        let started = SystemClock.monotonicSeconds()
        var startMarked = false
        var stoppingSince: Double?
        var endMarkSeen = false
        var endedAt: Double?
        // Wake at least every 100 ms: the time limit and the stages' end are checked between messages.
        let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                tick.yield()
            }
        }
        defer { ticker.cancel() }
        let events = AsyncStream<BusEvent?> { continuation in
            let reader = Task {
                for await event in self.subscriber { continuation.yield(event) }
                continuation.finish()
            }
            let waker = Task {
                for await _ in ticks { continuation.yield(nil) }
            }
            continuation.onTermination = { _ in
                reader.cancel()
                waker.cancel()
            }
        }
        for await event in events {
            let now = SystemClock.monotonicSeconds()
            if case let .message(received)? = event { try? self.recorder.record(received.recorded) }
            // The end decided: record until the stages have stopped (at most 5 s).
            if let since = stoppingSince {
                if self.launcherDone() || now - since > 5 { break }
                continue
            }
            if case let .message(received)? = event {
                switch received.message {
                case let .progress(progress) where progress.state == .arrived && endedAt == nil:
                    outcome.arrived = true
                    outcome.reason = "arrived"
                    endedAt = now
                    _ = await self.mark("\(label): end, arrived")
                case let .control(control):
                    if control.sender == StopState.conditionLockSender { outcome.conditionLocked = true }
                    if control.command == .mark, control.text.hasPrefix("\(label): end") { endMarkSeen = true }
                case let .status(status) where !startMarked && self.hapticStages.contains(status.stage):
                    // The sink is up: the start mark goes to it, unless it starts with every output stopped (a stop
                    // kept from before: the participant would walk without guidance while the trial looked normal).
                    startMarked = true
                    if status.counters.contains(where: { $0.name == "stopped" && $0.value != 0 }) {
                        outcome.reason =
                            "the sink started with its outputs stopped (\(status.message)); resume it with `hapticnav control resume` and run the trial again"
                        outcome.conditionLocked = status.message.hasPrefix("stopped by the condition lock")
                        stoppingSince = now
                        self.stopStages()
                        continue
                    }
                    _ = await self.mark("\(label): start")
                default: break
                }
            }
            if let ended = endedAt {
                // The end mark recorded (or 2 s for it), then stop.
                if endMarkSeen || now - ended > 2 {
                    stoppingSince = now
                    self.stopStages()
                }
                continue
            }
            if self.launcherDone() {
                outcome.reason = "the stages stopped before the arrival (a signal, or a stage that gave up)"
                break
            }
            if now - started > self.maxSeconds {
                outcome.reason = "no arrival within \(fixedDecimal(self.maxSeconds / 60, digits: 1)) min"
                _ = await self.mark("\(label): aborted, \(outcome.reason)")
                stoppingSince = now
                self.stopStages()
            }
        }
        return outcome
    }

    /// Sends a mark to every sink taking commands; false when none took it (the trial's record keeps it either way).
    private func mark(_ text: String) async -> Bool {
        let request = ControlRequest(
            command: .mark, text: String(decoding: text.utf8.prefix(200), as: UTF8.self),
            requestID: "study-\(Int.random(in: 0..<1_000_000))",
            sentSeconds: Date().timeIntervalSince1970)
        let outcomes: [ExperimenterControl.Outcome]
        do {
            outcomes = try await ExperimenterControl.send(
                request, pipeline: self.pipeline, keyName: self.controlKey, timeoutSeconds: 2)
        } catch {
            // Which: no sink taking commands, or a --control-key that is not among its senders.
            StandardStreams.writeError("study: '\(text)' not marked: \(error)\n")
            return false
        }
        let taken = outcomes.contains { if case .success = $0.result { true } else { false } }
        if !taken { StandardStreams.writeError("study: '\(text)' not marked: no sink answered\n") }
        return taken
    }
}

/// A trial run before is replaced only when the experimenter says so (or `yes`); its session parts and record are
/// kept in `previous-N/` beside the new ones (an aborted attempt is part of the study's story), where no reader looks.
func askBeforeReplacing(_ trial: StudyTrial, yes: Bool) throws {
    let parts = ((try? FileManager.default.contentsOfDirectory(atPath: trial.folder)) ?? []).filter {
        $0.hasSuffix(".mcap") || $0 == "trial.json"
    }
    guard !parts.isEmpty else { return }
    let before = trial.readRecord().map { "\($0.status.rawValue)" } ?? "no record"
    if !yes {
        guard isatty(0) != 0 else {
            throw CommandFailure("\(trial.folder) holds this trial already (\(before)); --yes replaces it")
        }
        StandardStreams.writeOutput("\(trial.folder) holds this trial already (\(before)). Replace it? [y/N] ")
        guard let answer = readLine(), answer.lowercased().hasPrefix("y") else {
            throw CommandFailure("kept \(trial.folder); nothing run")
        }
    }
    var attempt = 1
    while FileManager.default.fileExists(atPath: "\(trial.folder)/previous-\(attempt)") { attempt += 1 }
    let kept = "\(trial.folder)/previous-\(attempt)"
    do {
        try Paths.createFolders(kept)
        for part in parts { try Paths.replace("\(kept)/\(part)", with: "\(trial.folder)/\(part)") }
    } catch {
        throw CommandFailure("\(trial.folder): the trial run before could not be set aside: \(error)")
    }
    StandardStreams.writeError("study: the trial run before is kept in \(kept)\n")
}
