public import MapFiles
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import Logging
public import NavCore
public import Parsers
import Links

/// The `osm` provider: shortest walking routes over an OpenStreetMap extract, offline.
public struct OSMRouteProvider: RouteProvider {
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
        map: String, options: OSMLoader.Options = .init(), snapMeters: Double = 250, connectMeters: Double = 50,
        cache: Bool = true, logger: Logger
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
        guard let map = try settings.inputFile("map") else {
            throw ConfigError.missingKey(path: settings.path, key: "map")
        }
        var options = OSMLoader.Options()
        options.avoidSteps = try settings.bool("avoidSteps", default: false)
        let snap = try settings.double("snapMeters", default: 250, in: 1...5000)
        let connect = try settings.double("connectMeters", default: 50, in: 0...5000)
        let cache = try settings.bool("cache", default: true)
        try settings.finish()
        return (map, options, snap, connect, cache)
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        try self.graph.shortestRoute(
            from: start, to: destination, snapMeters: self.snapMeters, connectMeters: self.connectMeters)
    }
}

/// The `file` provider: a saved route (GPX, GeoJSON, an encoded polyline, a directions response). A reroute
/// joins the walker to the nearest point of the file's route and follows it from there.
public struct FileRouteProvider: RouteProvider {
    public static let id = "file"
    public let name = "file"
    /// The saved route.
    public let plan: RoutePlan

    /// Reads a config's settings: `file`, and `precision` for bare polylines.
    public init(settings: Settings) throws {
        var settings = settings
        guard let file = try settings.inputFile("file") else {
            throw ConfigError.missingKey(path: settings.path, key: "file")
        }
        let precision = try settings.int("precision", default: 5, in: 5...6)
        try settings.finish()
        self.plan = try RouteFile.load(file: file, precision: precision)
    }

    /// Uses a plan directly.
    public init(plan: RoutePlan) {
        self.plan = plan
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        let line = Polyline(self.plan.points)
        guard let here = line.project(start) else { return self.plan }
        var points = [start]
        var names: [String?] = [nil]
        if here.distanceMeters < 1 { points = []; names = [] }
        points.append(here.closestPoint)
        for index in (here.segmentIndex + 1)..<self.plan.points.count {
            names.append(self.plan.segmentNames[index - 1])
            points.append(self.plan.points[index])
        }
        if here.distanceMeters < 1 { names.removeFirst() }
        return RoutePlan(points: points, segmentNames: names)
    }
}

/// An HTTP routing engine's client: a deadline on every try, retries with backoff, and one-line errors that name
/// the engine, the request and the reason.
struct EngineClient: Sendable {
    /// The engine's name in errors ("valhalla", "osrm").
    let engine: String
    /// The base URL as configured (`http://host:port[/prefix]`).
    let baseURL: String
    let timeoutSeconds: Double
    let retries: Int
    private let http: HTTPClient
    private let prefix: String

    /// A client of `url`; throws when it is not a plain `http://host[:port][/prefix]` URL.
    init(engine: String, url: String, timeoutSeconds: Double, retries: Int) throws(RoutingError) {
        guard let (host, port, path) = HTTPClient.split(url: url) else {
            throw RoutingError.providerFailed(
                reason:
                    "\(engine): '\(url)' is not an http://host[:port] URL (https is not spoken: reach the engine over the lab network or a local proxy)"
            )
        }
        self.engine = engine
        self.baseURL = url
        self.timeoutSeconds = timeoutSeconds
        self.retries = retries
        self.http = HTTPClient(host: host, port: port)
        self.prefix = path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    /// Reads an engine provider's settings: `url`, `timeoutSeconds`, `retries`.
    init(engine: String, settings: Settings, defaultURL: String) throws {
        var settings = settings
        let text = try settings.string("url", default: defaultURL)
        guard HTTPClient.split(url: text) != nil else {
            throw ConfigError.invalidValue(
                path: "\(settings.path).url", expected: "an http://host[:port] URL", found: "'\(text)'")
        }
        let timeout = try settings.double("timeoutSeconds", default: 5, in: 0.1...120)
        let retries = try settings.int("retries", default: 2, in: 0...10)
        try settings.finish()
        try self.init(engine: engine, url: text, timeoutSeconds: timeout, retries: retries)
    }

    func getJSON(_ path: String) async throws -> JSONValue {
        try await self.request(method: "GET", path: path, body: [])
    }

    func postJSON(_ path: String, body: JSONValue) async throws -> JSONValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try await self.request(method: "POST", path: path, body: Array(try encoder.encode(body)))
    }

    private func request(method: String, path: String, body: [UInt8]) async throws -> JSONValue {
        let target = self.prefix + path
        var delay = 0.25
        var lastError = "no attempt"
        for attempt in 0...self.retries {
            if attempt > 0 {
                try await Task.sleep(for: .seconds(delay))
                delay *= 2
            }
            let response: HTTPResponse
            do {
                response = try await self.http.send(
                    method: method, path: target, body: body, contentType: body.isEmpty ? nil : "application/json",
                    timeoutSeconds: self.timeoutSeconds)
            } catch {
                if error.reason == .cancelled || Task.isCancelled { throw CancellationError() }
                lastError = error.description
                continue
            }
            let object = try? JSONDecoder().decode(JSONValue.self, from: Data(response.body))
            if (200..<300).contains(response.status), let object, object.objectValue != nil { return object }
            // A 4xx with a JSON body is the engine's answer (no route): no point retrying. One without (a request
            // the server could not read whole, seen from a loaded Valhalla) is tried again like a lost answer.
            let message =
                object.flatMap { $0["error"]?.stringValue ?? $0["message"]?.stringValue }
                ?? "HTTP \(response.status)\(object == nil ? " without a JSON body" : "")"
            if (400..<500).contains(response.status), object != nil {
                throw RoutingError.providerFailed(
                    reason: "\(self.engine) \(self.http.server) \(method) \(target): \(message)")
            }
            lastError = "\(self.http.server) \(method) \(target): \(message)"
        }
        throw RoutingError.providerFailed(
            reason:
                "\(self.engine) did not answer after \(self.retries + 1) tries within \(self.timeoutSeconds) s each: \(lastError)"
        )
    }
}

/// The `valhalla` provider: Valhalla's `/route` with pedestrian costing (shapes as polyline6, maneuvers with street names).
public struct ValhallaRouteProvider: RouteProvider {
    public static let id = "valhalla"
    public let name = "valhalla"
    let client: EngineClient

    /// A client of the engine at `url` (for example http://127.0.0.1:8002).
    public init(url: String, timeoutSeconds: Double = 5, retries: Int = 2) throws(RoutingError) {
        self.client = try EngineClient(engine: "valhalla", url: url, timeoutSeconds: timeoutSeconds, retries: retries)
    }

    /// Reads a config's settings: `url`, `timeoutSeconds`, `retries`.
    public init(settings: Settings) throws {
        self.client = try EngineClient(engine: "valhalla", settings: settings, defaultURL: "http://127.0.0.1:8002")
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        let body = JSONValue.object([
            "locations": .array([
                .object(["lat": .number(start.latitude), "lon": .number(start.longitude)]),
                .object(["lat": .number(destination.latitude), "lon": .number(destination.longitude)]),
            ]),
            "costing": .string("pedestrian"), "units": .string("kilometers"),
            "directions_options": .object(["units": .string("kilometers")]),
        ])
        let object = try await self.client.postJSON("/route", body: body)
        guard let trip = object["trip"], let legs = trip["legs"]?.arrayValue else {
            throw RoutingError.providerFailed(reason: "valhalla: no trip in the answer")
        }
        var plan = try RouteFile.valhallaPlan(legs: legs, file: "valhalla")
        if let km = trip["summary"]?["length"]?.doubleValue {
            plan.reportedLengthMeters = km * 1000
        }
        return plan
    }
}

/// The `osrm` provider: OSRM's `/route/v1/foot` (full overview as GeoJSON, step names).
public struct OSRMRouteProvider: RouteProvider {
    public static let id = "osrm"
    public let name = "osrm"
    let client: EngineClient

    /// A client of the engine at `url` (for example http://127.0.0.1:5000).
    public init(url: String, timeoutSeconds: Double = 5, retries: Int = 2) throws(RoutingError) {
        self.client = try EngineClient(engine: "osrm", url: url, timeoutSeconds: timeoutSeconds, retries: retries)
    }

    /// Reads a config's settings: `url`, `timeoutSeconds`, `retries`.
    public init(settings: Settings) throws {
        self.client = try EngineClient(engine: "osrm", settings: settings, defaultURL: "http://127.0.0.1:5000")
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        let coordinates = "\(start.longitude),\(start.latitude);\(destination.longitude),\(destination.latitude)"
        let object = try await self.client.getJSON(
            "/route/v1/foot/\(coordinates)?overview=full&geometries=geojson&steps=true")
        guard object["code"]?.stringValue == "Ok" || object["routes"] != nil else {
            throw RoutingError.providerFailed(
                reason: "osrm: \(object["message"]?.stringValue ?? object["code"]?.stringValue ?? "no route")")
        }
        return try RouteFile.plan(fromJSON: object, file: "osrm", precision: 5)
    }
}
