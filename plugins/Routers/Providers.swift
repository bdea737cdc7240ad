public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
public import Logging
public import NavCore
public import Parsers

/// The `osm` provider: shortest walking routes over an OpenStreetMap extract, offline.
public struct OSMRouteProvider: RouteProvider {
    public static let id = "osm"
    public let name = "osm"
    /// The walking network.
    public let graph: WalkingGraph
    /// How far from a way the start or destination may be [metres].
    public let snapMeters: Double

    /// Loads a map.
    public init(map: String, options: OSMLoader.Options = .init(), snapMeters: Double = 250, logger: Logger) throws {
        self.graph = try OSMLoader.load(file: map, options: options)
        self.snapMeters = snapMeters
        for warning in self.graph.warnings { logger.warning("\(warning)") }
    }

    /// Reads a config's settings: `map` (OSM XML), `avoidSteps`, `snapMeters`.
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        guard let map = try settings.path("map") else { throw ConfigError.missingKey(path: settings.path, key: "map") }
        var options = OSMLoader.Options()
        options.avoidSteps = try settings.bool("avoidSteps", default: false)
        let snap = try settings.double("snapMeters", default: 250, in: 1...5000)
        try settings.finish()
        try self.init(map: map, options: options, snapMeters: snap, logger: logger)
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        try self.graph.shortestRoute(from: start, to: destination, snapMeters: self.snapMeters)
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
        guard let file = try settings.path("file") else {
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

/// An HTTP routing engine's client: timeouts, retries with backoff, and a clear error when it is down.
struct EngineClient: Sendable {
    let baseURL: URL
    let timeoutSeconds: Double
    let retries: Int

    init(baseURL: URL, timeoutSeconds: Double, retries: Int) {
        self.baseURL = baseURL
        self.timeoutSeconds = timeoutSeconds
        self.retries = retries
    }

    /// Reads an engine provider's settings: `url`, `timeoutSeconds`, `retries`.
    init(settings: Settings, defaultURL: String) throws {
        var settings = settings
        let text = try settings.string("url", default: defaultURL)
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
            throw ConfigError.invalidValue(path: "\(settings.path).url", expected: "an http(s) URL", found: "'\(text)'")
        }
        let timeout = try settings.double("timeoutSeconds", default: 5, in: 0.1...120)
        let retries = try settings.int("retries", default: 2, in: 0...10)
        try settings.finish()
        self.init(baseURL: url, timeoutSeconds: timeout, retries: retries)
    }

    func getJSON(_ url: URL) async throws -> [String: Any] {
        try await self.request(URLRequest(url: url, timeoutInterval: self.timeoutSeconds))
    }

    func postJSON(_ url: URL, body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: url, timeoutInterval: self.timeoutSeconds)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        return try await self.request(request)
    }

    private func request(_ request: URLRequest) async throws -> [String: Any] {
        var delay = 0.25
        var lastError = "no attempt"
        for attempt in 0...self.retries {
            if attempt > 0 {
                try await Task.sleep(for: .seconds(delay))
                delay *= 2
            }
            do {
                let (data, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                if (200..<300).contains(status), let object { return object }
                // A 4xx with a body is the engine's answer (no route): no point retrying.
                let message =
                    object.flatMap { ($0["error"] as? String) ?? ($0["message"] as? String) } ?? "HTTP \(status)"
                if (400..<500).contains(status) {
                    throw RoutingError.providerFailed(reason: "\(self.baseURL.host ?? "engine"): \(message)")
                }
                lastError = message
            } catch let error as RoutingError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                lastError = (error as NSError).localizedDescription
            }
        }
        throw RoutingError.providerFailed(
            reason:
                "\(self.baseURL.absoluteString) did not answer after \(self.retries + 1) tries within \(self.timeoutSeconds) s each: \(lastError)"
        )
    }
}

/// The `valhalla` provider: Valhalla's `/route` with pedestrian costing (shapes as polyline6, maneuvers with street names).
public struct ValhallaRouteProvider: RouteProvider {
    public static let id = "valhalla"
    public let name = "valhalla"
    let client: EngineClient

    /// A client of the engine at `url` (for example http://127.0.0.1:8002).
    public init(url: URL, timeoutSeconds: Double = 5, retries: Int = 2) {
        self.client = EngineClient(baseURL: url, timeoutSeconds: timeoutSeconds, retries: retries)
    }

    /// Reads a config's settings: `url`, `timeoutSeconds`, `retries`.
    public init(settings: Settings) throws {
        self.client = try EngineClient(settings: settings, defaultURL: "http://127.0.0.1:8002")
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        let body: [String: Any] = [
            "locations": [
                ["lat": start.latitude, "lon": start.longitude],
                ["lat": destination.latitude, "lon": destination.longitude],
            ],
            "costing": "pedestrian", "units": "kilometers", "directions_options": ["units": "kilometers"],
        ]
        let object = try await self.client.postJSON(self.client.baseURL.appendingPathComponent("route"), body: body)
        guard let trip = object["trip"] as? [String: Any], let legs = trip["legs"] as? [[String: Any]] else {
            throw RoutingError.providerFailed(reason: "valhalla: no trip in the answer")
        }
        var plan = try RouteFile.valhallaPlan(legs: legs, file: "valhalla")
        if let summary = trip["summary"] as? [String: Any], let km = summary["length"] as? Double {
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
    public init(url: URL, timeoutSeconds: Double = 5, retries: Int = 2) {
        self.client = EngineClient(baseURL: url, timeoutSeconds: timeoutSeconds, retries: retries)
    }

    /// Reads a config's settings: `url`, `timeoutSeconds`, `retries`.
    public init(settings: Settings) throws {
        self.client = try EngineClient(settings: settings, defaultURL: "http://127.0.0.1:5000")
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        let coordinates = "\(start.longitude),\(start.latitude);\(destination.longitude),\(destination.latitude)"
        var components = URLComponents(
            url: self.client.baseURL.appendingPathComponent("route/v1/foot/\(coordinates)"),
            resolvingAgainstBaseURL: false)!
        components.queryItems = [
            URLQueryItem(name: "overview", value: "full"), URLQueryItem(name: "geometries", value: "geojson"),
            URLQueryItem(name: "steps", value: "true"),
        ]
        let object = try await self.client.getJSON(components.url!)
        guard object["code"] as? String == "Ok" || object["routes"] != nil else {
            throw RoutingError.providerFailed(
                reason: "osrm: \(object["message"] as? String ?? object["code"] as? String ?? "no route")")
        }
        return try RouteFile.plan(fromJSON: object, file: "osrm", precision: 5)
    }
}
