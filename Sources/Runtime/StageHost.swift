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
        // What the input waits for, in every status the stage publishes and on its own while the stage says nothing.
        let watch = subscriber.map { InputWatch(subscriber: $0) }
        let watchdog = hosting.isComposed ? nil : ParentWatchdog.startIfLaunched(logger: logger)
        defer { watchdog?.stop() }

        // The role's factory makes the stage (``StageFactory/registry``).
        guard let factory = StageFactory.registry[stage.role] else {
            throw ConfigError.invalidValue(
                path: "stages.\(stage.name).role", expected: "a role with a stage factory", found: stage.role.rawValue)
        }
        let setup = StageSetup(
            stage: stage, pipeline: pipeline, logger: logger, hosting: hosting, context: context,
            publisher: publisher, subscriber: subscriber, watch: watch, zap: zap)
        let made = try await factory.make(setup)
        defer { for close in made.closeWhenDone { close() } }
        let service = made.service
        let keptAlive = made.keptAlive
        defer { withExtendedLifetime(keptAlive) {} }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)
        ]
        if let watch, let subscriber {
            services.append(
                .init(
                    service: InputWatchReporter(
                        stage: stage.name, watch: watch, publisher: publisher,
                        counters: setup.inputCounters(subscriber),
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
