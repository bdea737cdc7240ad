import Bus
import Logging
import NavCore
import MapLogic
import ServiceLifecycle
import Sinks
import Stages
import Synchronization
import HapticLogic
import StageRecorder
import StageHaptic
import StageRoute
import StageSmoother
import StageSource

/// What a stage's factory is given by its host: the stage's config and pipeline, its bus ends (made by the host, in
/// a process of its own or on a composed hub), its clocks, its logger, and the bus's counters for its status.
struct StageSetup: Sendable {
    let stage: StageConfig
    let pipeline: PipelineConfig
    let logger: Logger
    let hosting: StageHosting
    let context: ZMQContext
    let publisher: BusPublisher?
    let subscriber: BusSubscriber?
    /// What the input waits for, in every status the stage publishes (nil without inputs).
    let watch: InputWatch?
    /// The context's ZAP handler, when a link of the stage's is encrypted.
    let zap: ZAPHandler?

    /// The stage's clocks.
    var time: StageTime { self.hosting.time }

    /// The stage's publisher, which its role needs.
    func needsPublisher() throws -> BusPublisher {
        guard let publisher = self.publisher else { throw StageHostError.needsPublish(stage: self.stage.name) }
        return publisher
    }

    /// The stage's subscriber, which its role needs.
    func needsSubscriber() throws -> BusSubscriber {
        guard let subscriber = self.subscriber else { throw StageHostError.needsInputs(stage: self.stage.name) }
        return subscriber
    }

    /// The bus's counters in the stage's status: what its input dropped, and the readers its publisher refused.
    func inputCounters(_ subscriber: BusSubscriber) -> @Sendable () -> [StatusCounter] {
        let refusedReaders = self.zap
        let stageName = self.stage.name
        return {
            subscriber.snapshot.busStatusCounters
                + (refusedReaders.map {
                    [StatusCounter(name: "bus.refusedReaders", value: $0.refused(domain: stageName))]
                } ?? [])
        }
    }
}

/// What a factory made: the stage's service, and what the host closes when the stage ends.
struct MadeStage: Sendable {
    var service: any Service
    /// What stays open beside the service (a sink's control listener), closed when the stage ends.
    var closeWhenDone: [@Sendable () -> Void] = []
    /// What must live as long as the stage (a ZAP handler the factory started).
    var keptAlive: [any Sendable] = []
}

/// Makes the stage of one role from its setup: its input adapter, its options, its plugins and the stage actor.
struct StageFactory: Sendable {
    let make: @Sendable (StageSetup) async throws -> MadeStage

    /// Every role's factory. A new role registers its factory here; the host (``StageHost``) does not change.
    static let registry: [StageRole: StageFactory] = [
        .source: .source, .smoother: .smoother, .route: .route, .haptic: .haptic, .recorder: .recorder,
    ]
}

extension StageFactory {
    /// A ``SourceStage`` running the stage's source plugin, after the bus's join grace; magnetic headings turned true
    /// there, before the first fix at the config's place.
    static let source = StageFactory { setup in
        let publisher = try setup.needsPublisher()
        try await Task.sleep(for: .seconds(setup.pipeline.bus.joinGraceSeconds))
        return MadeStage(
            service: SourceStage(
                name: setup.stage.name, source: try PluginRegistry.makeSource(setup.stage, logger: setup.logger),
                output: publisher, logger: setup.logger, place: setup.pipeline.declinationPlace, time: setup.time))
    }

    /// A ``SmootherStage`` over the fixes of its inputs.
    static let smoother = StageFactory { setup in
        let publisher = try setup.needsPublisher()
        let subscriber = try setup.needsSubscriber()
        let fixes = subscriber.messages.compactMap { received -> Arrival<LocationFix>? in
            if case let .fix(fix) = received.message { return received.arrival(fix) }
            return nil
        }
        return MadeStage(
            service: SmootherStage(
                name: setup.stage.name, input: fixes, output: WatchedPublisher(base: publisher, watch: setup.watch),
                filter: try PluginRegistry.makeSmoother(setup.stage), logger: setup.logger,
                timeOptions: try SmootherStageOptions.parse(
                    setup.stage.options, losslessInputs: setup.pipeline.bus.losslessInputs),
                inputCounters: setup.inputCounters(subscriber), time: setup.time))
    }

    /// A ``RouteControllerStage`` over the smoothed fixes and steps of its inputs, with its routers and, when the
    /// offline router is among them, its walking graph.
    static let route = StageFactory { setup in
        let (stage, logger) = (setup.stage, setup.logger)
        let publisher = try setup.needsPublisher()
        let subscriber = try setup.needsSubscriber()
        let fixes = subscriber.messages.compactMap { received -> Arrival<RouteInput>? in
            switch received.message {
            case let .smoothed(fix): return received.arrival(.fix(fix))
            case let .step(step): return received.arrival(.step(step))
            default: return nil
            }
        }
        let providers = try PluginRegistry.makeRouters(stage, logger: logger)
        var options = try RouteStageOptions.parse(stage.options, losslessInputs: setup.pipeline.bus.losslessInputs).0
        // The walking graph of the first provider that routes over one (the offline router): the route's junctions
        // are found on it, and with `place` ways or network the walker is placed on its ways.
        options.graph = providers.lazy.compactMap { ($0 as? any WalkingGraphRouter)?.graph }.first
        if options.place != .smoothed {
            guard let graph = options.graph else {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).options.place",
                    expected: "a router over a walking graph (`osm`) among the providers",
                    found: providers.map(\.name).joined(separator: ", "))
            }
            options.ways = graph
        }
        return MadeStage(
            service: RouteControllerStage(
                name: stage.name, input: fixes, output: WatchedPublisher(base: publisher, watch: setup.watch),
                providers: providers, options: options, logger: logger,
                inputCounters: setup.inputCounters(subscriber), time: setup.time))
    }

    /// A ``HapticSinkStage`` over the headings, attitudes, targets, progress and turn events of its inputs, on its
    /// devices, with the experimenter's control listener when its config has one.
    static let haptic = StageFactory { setup in
        let (stage, logger, time, hosting) = (setup.stage, setup.logger, setup.time, setup.hosting)
        let publisher = try setup.needsPublisher()
        let subscriber = try setup.needsSubscriber()
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
                return Arrival(.publisherLost(stage: stage), sender: stage, receivedSeconds: time.monotonicSeconds())
            case .publisherUp: return nil
            }
        }
        let (devices, options) = try HapticStageDevices.make(stage, logger: logger, check: false)
        let control = try ControlConfig.parse(stage, calibrationFile: nil)
        var listenerOptions = ControlListenerOptions()
        var zap = setup.zap
        if control != nil, let key = stage.key, let security = setup.pipeline.security {
            var keys: Set<String> = []
            for name in control?.senders ?? [] {
                let publicKey = try security.publicKey(name)
                keys.insert(publicKey)
                listenerOptions.senderNames[publicKey] = name
            }
            listenerOptions.curve = CurveServerOptions(identity: try security.keyPair(key), readers: keys)
            if zap == nil { zap = try setup.context.zapHandler(logger: logger) }
        }
        let listener = Mutex<ControlListener?>(nil)
        let busCounters = setup.inputCounters(subscriber)
        let senderRefusals = zap
        let stageName = stage.name
        let sink = HapticSinkStage(
            name: stage.name, input: inputs, output: WatchedPublisher(base: publisher, watch: setup.watch),
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
        var made = MadeStage(service: sink, keptAlive: zap.map { [$0] } ?? [])
        if let control {
            do {
                let controlListener = try ControlListener(
                    context: setup.context, bind: control.listen.map(hosting.endpoint), stage: stage.name,
                    options: listenerOptions, zap: zap, logger: logger
                ) { request, sender in await sink.control(request, sender: sender) }
                listener.withLock { $0 = controlListener }
                made.closeWhenDone.append { controlListener.close() }
            } catch {
                throw StageHostError.cannotListen(
                    stage: stage.name, endpoints: control.listen.map(hosting.endpoint), reason: "\(error)")
            }
            logger.info("taking the experimenter's commands on \(control.listen.joined(separator: ", "))")
        }
        return made
    }

    /// A ``RecorderStage`` writing everything its inputs carry with its sink plugin; a session it writes carries
    /// the config that recorded it (and so its map), which its report needs.
    static let recorder = StageFactory { setup in
        let subscriber = try setup.needsSubscriber()
        let records = subscriber.messages.map(\.recorded)
        let recorder = try PluginRegistry.makeSink(setup.stage, logger: setup.logger)
        if let session = recorder as? MCAPRecorder {
            SessionConfigRecord.write(setup.pipeline, into: session.options.folder, logger: setup.logger)
        }
        return MadeStage(
            service: RecorderStage(name: setup.stage.name, input: records, sink: recorder, logger: setup.logger))
    }
}
