public import MapFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
public import NavCore
import Parsers
public import MapLogic

/// The `osm` provider: shortest walking routes over an OpenStreetMap extract, offline.
public struct OSMRouteProvider: WalkingGraphRouter {
    public static let id = "osm"
    public let name = "osm"
    /// The walking network.
    public let graph: WalkingGraph
    /// How far from a way the start or destination may be [metres].
    public let snapMeters: Double
    /// How much farther than the nearest way a way may be to connect the start and the destination, when the
    /// nearest ways do not [metres].
    public let connectMeters: Double

    /// Loads a map (OSM XML or PBF), through its compiled cache unless `cache` is false (``WalkingGraphCache``).
    public init(
        map: String, options: OSMLoader.Options = .init(), snapMeters: Double = Setting.snapMeters.defaultValue,
        connectMeters: Double = Setting.connectMeters.defaultValue, cache: Bool = Setting.cache.defaultValue ?? true,
        logger: Logger
    ) throws {
        if cache {
            let clock = ContinuousClock()
            let start = clock.now
            let (graph, source, file) = try WalkingGraphCache.load(map: map, options: options)
            let elapsed = clock.now - start
            let milliseconds = elapsed.inSeconds * 1000
            switch source {
            case .cache: logger.info("\(map): walking graph from its cache \(file ?? "") in \(Int(milliseconds)) ms")
            case .map:
                let cached = file.map { "walking graph cached at \($0)" } ?? "no writable place for its cache"
                logger.info("\(map): read in \(Int(milliseconds)) ms; \(cached)")
            }
            self.graph = graph
        } else {
            self.graph = try OSMLoader.load(file: map, options: options)
        }
        self.snapMeters = snapMeters
        self.connectMeters = connectMeters
        for warning in self.graph.warnings { logger.warning("\(warning)") }
    }

    /// Reads a config's settings: `map` (OSM XML or PBF), `avoidSteps`, `snapMeters`, `connectMeters`, `cache`.
    public init(settings: Settings, logger: Logger) throws {
        let (map, options, snap, connect, cache) = try Self.read(settings)
        try self.init(
            map: map, options: options, snapMeters: snap, connectMeters: connect, cache: cache, logger: logger)
    }

    /// Checks a config's settings, and that the map is there, without loading it.
    public static func check(settings: Settings) throws {
        _ = try self.read(settings)
    }

    private static func read(
        _ settings: Settings
    ) throws -> (map: String, options: OSMLoader.Options, snap: Double, connect: Double, cache: Bool) {
        var settings = settings
        guard let map = try settings.inputFile(Setting.map) else {
            throw ConfigError.missingKey(path: settings.path, key: Setting.map.key)
        }
        var options = OSMLoader.Options()
        options.avoidSteps = try settings.value(Setting.avoidSteps)
        let snap = try settings.value(Setting.snapMeters)
        let connect = try settings.value(Setting.connectMeters)
        let cache = try settings.value(Setting.cache)
        try settings.finish()
        return (map, options, snap, connect, cache)
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        try self.graph.shortestRoute(
            from: start, to: destination, snapMeters: self.snapMeters, connectMeters: self.connectMeters)
    }
}

extension OSMRouteProvider {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let snapMeters = SettingSpec<Double>(
            "snapMeters", unit: "m", default: 250, in: 1...5000, "How far from a way the start or destination may be.")
        public static let connectMeters = SettingSpec<Double>(
            "connectMeters", unit: "m", default: 50, in: 0...5000,
            "How much farther than the nearest way a way may be, when the nearest ones do not connect the two ends (the end on the smaller piece of network moves)."
        )
        public static let avoidSteps = ValueSpec<Bool>(
            "avoidSteps", default: false, "Route around steps where the network allows.")
        public static let cache = ValueSpec<Bool>(
            "cache", default: true,
            "Keep the compiled walking graph beside the map (MAP.walking-graph), read again when the map changes.")
        public static let map = ValueSpec<String>(
            "map", accepts: "a file (OSM XML or PBF)",
            "The OpenStreetMap extract to route over (XML, or PBF as extracts are downloaded).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [snapMeters.doc, connectMeters.doc, avoidSteps.doc, cache.doc, map.doc]
    }
}
