public import NavCore
import Stages
public import Logging
import LocationSources
import Sinks
import SimSource
import Devices
import Routers
import Smoothers
public import HapticLogic
public import MapLogic
public import StageHaptic
import StageSmoother
import StageRoute

/// The plugins this build knows, per role. Registration is this explicit list, so an unknown id is an
/// error that lists the known ones. (Programs outside this build join the bus through its wire protocol.)
public enum PluginRegistry {
    static let sources: [String: @Sendable (Settings, Logger) throws -> any MessageSource] = [
        SimulatedWalker.id: { settings, _ in try SimulatedWalker(settings: settings) },
        LiveNMEASource.id: { try LiveNMEASource(settings: $0, logger: $1) },
        PhyphoxSource.id: { try PhyphoxSource(settings: $0, logger: $1) },
        SensorLoggerSource.id: { try SensorLoggerSource(settings: $0, logger: $1) },
        GPSDSource.id: { try GPSDSource(settings: $0, logger: $1) },
        GPXSource.id: { try GPXSource(settings: $0, logger: $1) },
        SensorLogSource.id: { try SensorLogSource(settings: $0, logger: $1) },
        LogReplaySource.id: { try LogReplaySource(settings: $0, logger: $1) },
        RecordingReplaySource.id: { try RecordingReplaySource(settings: $0, logger: $1) },
    ]

    static let sinks:
        [String: (
            check: @Sendable (Settings) throws -> Void,
            make: @Sendable (Settings, Logger) throws -> any MessageSink
        )] = [
            MCAPRecorder.id: (
                check: { _ = try MCAPRecorder.options(from: $0) },
                make: { try MCAPRecorder(settings: $0, logger: $1) }
            ),
            JSONLinesRecorder.id: (
                check: { _ = try JSONLinesRecorder.file(from: $0) },
                make: { settings, _ in try JSONLinesRecorder(settings: settings) }
            ),
            ConsoleSink.id: (
                check: { _ = try ConsoleSink(settings: $0) },
                make: { settings, _ in try ConsoleSink(settings: settings) }
            ),
        ]

    private static let smoothers: [String: @Sendable (Settings) throws -> any SmoothingFilter] = [
        KalmanPlugin.id: { try KalmanPlugin.make(settings: $0) }
    ]

    private static let routers: [String: @Sendable (Settings, Logger) throws -> any RouteProvider] = [
        OSMRouteProvider.id: { try OSMRouteProvider(settings: $0, logger: $1) },
        FileRouteProvider.id: { settings, _ in try FileRouteProvider(settings: settings) },
        EngineRouteProvider.Dialect.valhalla.id: { settings, _ in try EngineRouteProvider(.valhalla, settings: settings)
        },
        EngineRouteProvider.Dialect.osrm.id: { settings, _ in try EngineRouteProvider(.osrm, settings: settings) },
    ]

    private static let devices: [String: @Sendable (Settings, Logger) throws -> any OutputDevice] = [
        BandDevice.id: { try BandDevice(settings: $0, logger: $1) },
        ConsoleDevice.id: { settings, _ in try ConsoleDevice(settings: settings) },
        SpeakerDevice.id: { try SpeakerDevice(settings: $0, logger: $1) },
        ARDevice.id: { try ARDevice(settings: $0, logger: $1) },
    ]

    /// Builds an output device.
    public static func makeDevice(
        id: String, settings: Settings, path: String, logger: Logger
    ) throws -> any OutputDevice {
        guard let make = self.devices[id] else {
            throw ConfigError.unknownPlugin(path: path, id: id, known: self.devices.keys.sorted())
        }
        return try make(settings, logger)
    }

    /// Each plugin's settings as documentation shows them, by role and id (a test keeps the ids those of the
    /// factories above).
    public static let settingDocs: [StageRole: [String: [SettingDoc]]] = [
        .source: [
            SimulatedWalker.id: SimulatedWalker.Setting.all,
            LiveNMEASource.id: LiveNMEASource.Setting.all,
            PhyphoxSource.id: PhyphoxSource.Setting.all,
            SensorLoggerSource.id: SensorLoggerSource.Setting.all,
            GPSDSource.id: GPSDSource.Setting.all,
            // GPX and sensor logs are read as any log is.
            GPXSource.id: LogReplaySource.Setting.all,
            SensorLogSource.id: LogReplaySource.Setting.all,
            LogReplaySource.id: LogReplaySource.Setting.all,
            RecordingReplaySource.id: RecordingReplaySource.Setting.all,
        ],
        .smoother: [KalmanPlugin.id: KalmanSmoother.Options.Setting.all],
        .route: [
            OSMRouteProvider.id: OSMRouteProvider.Setting.all,
            FileRouteProvider.id: FileRouteProvider.Setting.all,
            EngineRouteProvider.Dialect.valhalla.id: EngineRouteProvider.Setting.all,
            EngineRouteProvider.Dialect.osrm.id: EngineRouteProvider.Setting.all,
        ],
        .haptic: [
            BandDevice.id: BandDevice.Setting.all,
            ConsoleDevice.id: ConsoleDevice.Setting.all,
            SpeakerDevice.id: SpeakerDevice.Setting.all,
            ARDevice.id: ARDevice.Setting.all,
        ],
        .recorder: [
            MCAPRecorder.id: MCAPRecorder.Setting.all,
            JSONLinesRecorder.id: JSONLinesRecorder.Setting.all,
            ConsoleSink.id: ConsoleSink.Setting.all,
        ],
    ]

    /// The plugin ids a role accepts, sorted.
    public static func pluginIDs(for role: StageRole) -> [String] {
        switch role {
        case .source: return self.sources.keys.sorted()
        case .smoother: return self.smoothers.keys.sorted()
        case .route: return self.routers.keys.sorted()
        case .haptic: return self.devices.keys.sorted()
        case .recorder: return self.sinks.keys.sorted()
        }
    }

    /// Checks a stage's plugin settings without side effects on files or devices.
    /// Returns what later checks need of the stage (a source's rates, a sink's options), so that nothing is built twice.
    @discardableResult
    public static func check(_ stage: StageConfig, calibrationMayBeMissing: Bool = false) throws -> CheckedStage {
        var checked = CheckedStage()
        switch stage.role {
        case .source:
            try stage.options.finish()  // a source stage has no options: any key there is a mistake
            checked.nominalPeriods = try self.makeSource(stage, logger: Logger(label: "hapticnav.config-check"))
                .nominalPeriods
        case .smoother:
            _ = try SmootherStageOptions.parse(stage.options, losslessInputs: false)
            _ = try self.makeSmoother(stage)
        case .haptic:
            checked.sink = try HapticStageDevices.make(
                stage, logger: Logger(label: "hapticnav.config-check"), check: true,
                calibrationMayBeMissing: calibrationMayBeMissing
            ).1
        case .route:
            let (options, fallbacks) = try RouteStageOptions.parse(stage.options)
            if options.place != .smoothed, stage.plugin != OSMRouteProvider.id,
                !fallbacks.contains(where: { $0.plugin == OSMRouteProvider.id })
            {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).options.place",
                    expected: "an `osm` router (the ways to place the walker on) as the plugin or a fallback",
                    found: ([stage.plugin] + fallbacks.map(\.plugin)).joined(separator: ", "))
            }
            // Loading a map takes a moment: check its keys and that it is there only.
            let logger = Logger(label: "hapticnav.config-check")
            let providers =
                [(plugin: stage.plugin, settings: stage.settings, path: "stages.\(stage.name)")]
                + fallbacks.map { (plugin: $0.plugin, settings: $0.settings, path: $0.path) }
            for provider in providers {
                if provider.plugin == OSMRouteProvider.id {
                    try OSMRouteProvider.check(settings: provider.settings)
                } else {
                    _ = try self.makeRouter(
                        id: provider.plugin, settings: provider.settings, path: provider.path, logger: logger)
                }
            }
        case .recorder:
            try stage.options.finish()  // nor has a recorder
            try self.sinks[stage.plugin]!.check(stage.settings)
        }
        return checked
    }

    /// Builds a stage's source plugin.
    public static func makeSource(_ stage: StageConfig, logger: Logger) throws -> any MessageSource {
        guard let make = self.sources[stage.plugin] else {
            throw ConfigError.unknownPlugin(
                path: "stages.\(stage.name).plugin", id: stage.plugin,
                known: self.pluginIDs(for: .source))
        }
        return try make(stage.settings, logger)
    }

    /// Builds a stage's smoothing filter.
    public static func makeSmoother(_ stage: StageConfig) throws -> any SmoothingFilter {
        guard let make = self.smoothers[stage.plugin] else {
            throw ConfigError.unknownPlugin(
                path: "stages.\(stage.name).plugin", id: stage.plugin,
                known: self.pluginIDs(for: .smoother))
        }
        return try make(stage.settings)
    }

    /// Builds a stage's route provider.
    public static func makeRouter(_ stage: StageConfig, logger: Logger) throws -> any RouteProvider {
        try self.makeRouter(id: stage.plugin, settings: stage.settings, path: "stages.\(stage.name)", logger: logger)
    }

    /// Builds a route provider; `path` is where its entry sits in the config, for errors.
    static func makeRouter(id: String, settings: Settings, path: String, logger: Logger) throws -> any RouteProvider {
        guard let make = self.routers[id] else {
            throw ConfigError.unknownPlugin(path: path + ".plugin", id: id, known: self.pluginIDs(for: .route))
        }
        return try make(settings, logger)
    }

    /// Builds a route stage's providers in the order it asks them: its own plugin, then its `options.fallback`.
    public static func makeRouters(_ stage: StageConfig, logger: Logger) throws -> [any RouteProvider] {
        let (_, fallbacks) = try RouteStageOptions.parse(stage.options)
        return try [self.makeRouter(stage, logger: logger)]
            + fallbacks.map { try self.makeRouter(id: $0.plugin, settings: $0.settings, path: $0.path, logger: logger) }
    }

    /// Builds a stage's sink plugin.
    public static func makeSink(_ stage: StageConfig, logger: Logger) throws -> any MessageSink {
        guard let entry = self.sinks[stage.plugin] else {
            throw ConfigError.unknownPlugin(
                path: "stages.\(stage.name).plugin", id: stage.plugin,
                known: self.pluginIDs(for: .recorder))
        }
        return try entry.make(stage.settings, logger)
    }
}

/// What checking a stage found that the pipeline-wide checks use.
public struct CheckedStage: Sendable {
    /// A source's messages and their periods at its pace [seconds]; empty for other roles or when not known.
    public var nominalPeriods: [BusMessage.Kind: Double] = [:]
    /// A haptic stage's options.
    public var sink: HapticSinkOptions?
}
