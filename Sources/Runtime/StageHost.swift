import UnixSignals
public import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemIO
public import Logging
import NavCore
import Routers
import ServiceLifecycle
import Sinks
public import Stages
public import Evaluation

/// Where a stage runs: its own process (`hapticnav run`, `hapticnav stage`), or composed with others in one process,
/// as ROS 2 composes nodes: the same stage code, message encoding, sequence numbers and time checks, over the bus in
/// memory (``DirectHub``).
public struct StageHosting: Sendable {
    /// The hub composed stages share, whose thread runs them; nil for a stage that is its own process.
    public var hub: DirectHub?
    /// The stages' clocks: every stage, and the adapters that stamp what reaches them, read time here (a test
    /// injects its own).
    public var time: StageTime = .system

    /// A stage that is its process: its own context, stopped by SIGTERM and SIGINT, and by its launcher's end.
    public static let ownProcess = StageHosting(hub: nil)

    /// A stage composed in this process on `hub`: its bus endpoints are names on the hub (nothing is bound in the
    /// file system or the network), it runs on the hub's thread, and it stops when its task is cancelled (signals
    /// are the process's own).
    public static func composed(on hub: DirectHub) -> StageHosting { StageHosting(hub: hub) }

    /// Where the stage runs, on the clocks `time`.
    public init(hub: DirectHub?, time: StageTime = .system) {
        self.hub = hub
        self.time = time
    }

    /// Whether the stage is composed with others in this process.
    public var isComposed: Bool { self.hub != nil }

    /// Where an endpoint off the bus (a sink's control listener) is reached: composed, the `inproc://` endpoint of
    /// the same name in the hub's context.
    public func endpoint(_ endpoint: String) -> String {
        self.isComposed ? BusEndpoint.inProcess(endpoint) : endpoint
    }
}

/// Runs one stage of a pipeline in this process: its transport, then the stage, as one `ServiceGroup`
/// that SIGTERM and SIGINT stop gracefully (or, composed, the cancellation of its task).
public enum StageHost {
    /// Runs the stage until its input ends, a signal stops it, or (composed) its task is cancelled.
    public static func run(
        stage given: StageConfig, in pipeline: PipelineConfig, logger: Logger, hosting: StageHosting = .ownProcess
    ) async throws {
        var logger = logger
        logger[metadataKey: "stage"] = "\(given.name)"
        let stage = given
        if hosting.isComposed, stage.key != nil {
            // In one process nothing crosses a host; the keys name endpoints this stage no longer uses.
            throw StageHostError.composedWithKeys(stage: stage.name)
        }
        let bus = pipeline.bus
        let time = hosting.time
        let context = hosting.hub?.context ?? ZMQContext()
        var publisher: BusPublisher?
        var subscriber: BusSubscriber?
        defer {
            // Give the last messages (an end-of-stream status) a moment to leave, then close.
            publisher?.close(lingerMilliseconds: 200)
            subscriber?.close()
            if !hosting.isComposed { context.terminate() }
        }
        if stage.insecure {
            for endpoint in stage.publish + stage.inputs
            where LinkSecurity.leavesHost(endpoint) {
                logger.warning(
                    "\(endpoint) is plain TCP beyond loopback (insecure: true): anyone on the network can read it, and drive what reads it"
                )
            }
        }
        var zap: ZAPHandler?
        var controlListener: ControlListener?
        defer { controlListener?.close() }
        if !stage.publish.isEmpty {
            var options = bus.publisher
            options.curve = try LinkSecurity.publisherOptions(for: stage, in: pipeline)
            if options.curve != nil { zap = try context.zapHandler(logger: logger) }
            if let hub = hosting.hub {
                publisher = try BusPublisher(hub: hub, bind: stage.publish, stage: stage.name, options: options)
            } else {
                publisher = try BusPublisher(
                    context: context, bind: stage.publish, stage: stage.name, options: options, logger: logger)
            }
        }
        if !stage.inputs.isEmpty {
            var options = bus.subscriber
            options.curve = try LinkSecurity.subscriberOptions(reading: stage.inputs, as: stage.key, in: pipeline)
            options.expectedStages = stage.inputStages
            options.topics = stage.topics
            if stage.role == .recorder { options = options.recording() }
            if let hub = hosting.hub {
                subscriber = BusSubscriber(hub: hub, connect: stage.inputs, options: options, logger: logger)
            } else {
                subscriber = try BusSubscriber(
                    context: context, connect: stage.inputs, options: options, logger: logger)
            }
        }
        // The bus's counters in the stage's status: what its input dropped, and the readers its publisher refused.
        let stageName = stage.name
        let refusedReaders = zap
        @Sendable func inputCounters(_ subscriber: BusSubscriber) -> @Sendable () -> [StatusCounter] {
            {
                subscriber.snapshot.busStatusCounters
                    + (refusedReaders.map {
                        [StatusCounter(name: "bus.refusedReaders", value: $0.refused(domain: stageName))]
                    } ?? [])
            }
        }
        // What the input waits for, in every status the stage publishes and on its own while the stage says nothing.
        let watch = subscriber.map { InputWatch(subscriber: $0) }
        let watchdog = hosting.isComposed ? nil : ParentWatchdog.startIfLaunched(logger: logger)
        defer { watchdog?.stop() }

        let service: any Service
        switch stage.role {
        case .source:
            guard let publisher else { throw StageHostError.needsPublish(stage: stage.name) }
            try await Task.sleep(for: .seconds(bus.joinGraceSeconds))
            service = SourceStage(
                name: stage.name, source: try PluginRegistry.makeSource(stage, logger: logger), output: publisher,
                logger: logger, time: time)
        case .smoother:
            guard let publisher else { throw StageHostError.needsPublish(stage: stage.name) }
            guard let subscriber else { throw StageHostError.needsInputs(stage: stage.name) }
            let fixes = subscriber.messages.compactMap { received -> Arrival<LocationFix>? in
                if case let .fix(fix) = received.message { return received.arrival(fix) }
                return nil
            }
            service = SmootherStage(
                name: stage.name, input: fixes, output: WatchedPublisher(base: publisher, watch: watch),
                filter: try PluginRegistry.makeSmoother(stage), logger: logger,
                inputCounters: inputCounters(subscriber), time: time)
        case .route:
            guard let publisher else { throw StageHostError.needsPublish(stage: stage.name) }
            guard let subscriber else { throw StageHostError.needsInputs(stage: stage.name) }
            let fixes = subscriber.messages.compactMap { received -> Arrival<RouteInput>? in
                switch received.message {
                case let .smoothed(fix): return received.arrival(.fix(fix))
                case let .step(step): return received.arrival(.step(step))
                default: return nil
                }
            }
            let providers = try PluginRegistry.makeRouters(stage, logger: logger)
            var options = try RouteStageOptions.parse(stage.options).0
            // The offline router's walking graph, when there is one: the route's junctions are found on it, and
            // with `place` ways or network the walker is placed on its ways.
            options.graph = providers.lazy.compactMap { ($0 as? OSMRouteProvider)?.graph }.first
            if options.place != .smoothed {
                guard let graph = options.graph else {
                    throw ConfigError.invalidValue(
                        path: "stages.\(stage.name).options.place", expected: "an `osm` router among the providers",
                        found: providers.map(\.name).joined(separator: ", "))
                }
                options.ways = graph
            }
            service = RouteControllerStage(
                name: stage.name, input: fixes, output: WatchedPublisher(base: publisher, watch: watch),
                providers: providers, options: options, logger: logger, inputCounters: inputCounters(subscriber),
                time: time)
        case .haptic:
            guard let publisher else { throw StageHostError.needsPublish(stage: stage.name) }
            guard let subscriber else { throw StageHostError.needsInputs(stage: stage.name) }
            let inputs = subscriber.compactMap { event -> Arrival<SinkInput>? in
                switch event {
                case let .message(received):
                    switch received.message {
                    case let .heading(sample): return received.arrival(.heading(sample))
                    case let .attitude(attitude): return received.arrival(.attitude(attitude))
                    case let .target(target): return received.arrival(.target(target))
                    case let .progress(progress): return received.arrival(.progress(progress))
                    case let .turn(event): return received.arrival(.turn(event))
                    case .route, .smoothed: return received.arrival(.context(received.message))
                    default: return nil
                    }
                case let .publisherLost(_, stage, _):
                    return Arrival(
                        .publisherLost(stage: stage), sender: stage,
                        receivedSeconds: time.monotonicSeconds())
                case .publisherUp: return nil
                }
            }
            let (devices, options) = try HapticStageOptions.parse(stage, logger: logger, check: false)
            let control = try ControlConfig.parse(stage, calibrationFile: nil)
            var listenerOptions = ControlListenerOptions()
            if control != nil, let key = stage.key, let security = pipeline.security {
                var keys: Set<String> = []
                for name in control?.senders ?? [] {
                    let publicKey = try security.publicKey(name)
                    keys.insert(publicKey)
                    listenerOptions.senderNames[publicKey] = name
                }
                listenerOptions.curve = CurveServerOptions(identity: try security.keyPair(key), readers: keys)
                if zap == nil { zap = try context.zapHandler(logger: logger) }
            }
            let listener = Mutex<ControlListener?>(nil)
            let busCounters = inputCounters(subscriber)
            let senderRefusals = zap
            let sink = HapticSinkStage(
                name: stage.name, input: inputs, output: WatchedPublisher(base: publisher, watch: watch),
                devices: devices, options: options, logger: logger, time: time,
                inputCounters: {
                    busCounters() + (listener.withLock { $0 }?.statusCounters ?? [])
                        + (senderRefusals.map {
                            // Wrong keys (the ZAP handler's) and senders with no key at all (the listener's monitor).
                            let plain = listener.withLock { $0 }?.refusedHandshakes ?? 0
                            return [
                                StatusCounter(
                                    name: "control.refusedSenders",
                                    value: $0.refused(domain: "control:\(stageName)") &+ plain)
                            ]
                        } ?? [])
                })
            if let control {
                do {
                    let made = try ControlListener(
                        context: context, bind: control.listen.map(hosting.endpoint), stage: stage.name,
                        options: listenerOptions, zap: zap,
                        logger: logger
                    ) { request, sender in await sink.control(request, sender: sender) }
                    listener.withLock { $0 = made }
                    controlListener = made
                } catch {
                    throw StageHostError.cannotListen(
                        stage: stage.name, endpoints: control.listen.map(hosting.endpoint), reason: "\(error)")
                }
                logger.info("taking the experimenter's commands on \(control.listen.joined(separator: ", "))")
            }
            service = sink
        case .recorder:
            guard let subscriber else { throw StageHostError.needsInputs(stage: stage.name) }
            let records = subscriber.messages.map(\.recorded)
            let recorder = try PluginRegistry.makeSink(stage, logger: logger)
            // A session carries what its report needs: the config that recorded it (and so its map).
            if let session = recorder as? MCAPRecorder {
                SessionConfigRecord.write(pipeline, into: session.options.folder, logger: logger)
            }
            service = RecorderStage(name: stage.name, input: records, sink: recorder, logger: logger)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)
        ]
        if let watch, let subscriber {
            services.append(
                .init(
                    service: InputWatchReporter(
                        stage: stage.name, watch: watch, publisher: publisher, counters: inputCounters(subscriber),
                        logger: logger),
                    successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore))
        }
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: hosting.isComposed ? [] : [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger))
        // A stage that reads the bus runs on its subscriber's receive thread: a message reaches it
        // without a thread switch (see ReceiveExecutor).
        try await withTaskExecutorPreference(subscriber?.executor ?? hosting.hub?.executor) {
            try await group.run()
        }
    }
}

extension StageComposition {
    /// A simulated walk's stages composed in this process by ``StageHost``, logging errors only.
    public static let composedByStageHost = StageComposition.inProcess { name, file, hub in
        var logger = Logger(label: "eval.\(name)")
        logger.logLevel = .error
        try await StageHost.runComposed(stage: name, configFile: file, hub: hub, logger: logger)
    }
}

extension StageHost {
    /// Runs the stage `name` of the config `file` composed in this process on `hub` (`eval walkers`' stages), until
    /// its task is cancelled.
    public static func runComposed(
        stage name: String, configFile file: String, hub: DirectHub, logger: Logger
    ) async throws {
        let pipeline = try PipelineConfig.load(file: file, calibrationMayBeMissing: true)
        try await self.run(
            stage: try pipeline.stage(named: name), in: pipeline, logger: logger, hosting: .composed(on: hub))
    }
}

/// Why a stage could not start.
public enum StageHostError: Error, CustomStringConvertible {
    /// The role publishes but the stage has no `publish` endpoint.
    case needsPublish(stage: String)
    /// The role subscribes but the stage has no `inputs`.
    case needsInputs(stage: String)
    /// The control endpoints could not be bound.
    case cannotListen(stage: String, endpoints: [String], reason: String)
    /// A stage with keys (CURVE) composed in one process.
    case composedWithKeys(stage: String)

    public var description: String {
        switch self {
        case let .needsPublish(stage): return "stage '\(stage)' needs a 'publish' endpoint"
        case let .needsInputs(stage): return "stage '\(stage)' needs 'inputs'"
        case let .cannotListen(stage, endpoints, reason):
            return "stage '\(stage)' cannot listen for control on \(endpoints.joined(separator: ", ")): \(reason)"
        case let .composedWithKeys(stage):
            return
                "stage '\(stage)' has a key: stages composed in one process talk in memory, without CURVE; run it as a process of its own"
        }
    }
}

/// Stops a stage that `hapticnav run` started when `run` itself is gone, so that no stage outlives it.
final class ParentWatchdog: Sendable {
    /// The environment variable through which `run` tells a child its pid.
    static let environmentKey = "HAPTICNAV_PARENT_PID"

    private let stopped = Mutex(false)

    static func startIfLaunched(logger: Logger) -> ParentWatchdog? {
        guard let value = ProcessInfo.processInfo.environment[environmentKey], let parent = pid_t(value) else {
            return nil
        }
        let watchdog = ParentWatchdog()
        SystemThread.start(name: "parent-watchdog") {
            while !watchdog.stopped.withLock({ $0 }) {
                if getppid() != parent {
                    logger.warning("the launching 'hapticnav run' (pid \(parent)) is gone; stopping")
                    kill(getpid(), SIGTERM)
                    return
                }
                SystemThread.sleep(seconds: 0.1)
            }
        }
        return watchdog
    }

    func stop() {
        self.stopped.withLock { $0 = true }
    }
}
