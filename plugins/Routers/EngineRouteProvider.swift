public import NavCore
import Parsers

/// The `valhalla` and `osrm` providers: a routing engine over HTTP, one client (a deadline on every try, retries
/// with backoff, one-line errors) that speaks either engine's dialect.
public struct EngineRouteProvider: RouteProvider {
    /// How an engine is asked for a walking route, and how its answer reads.
    public enum Dialect: String, Sendable, CaseIterable {
        /// Valhalla's `/route` with pedestrian costing (shapes as polyline6, maneuvers with street names).
        case valhalla
        /// OSRM's `/route/v1/foot` (full overview as GeoJSON, step names).
        case osrm

        /// The provider's id in a config.
        public var id: String { self.rawValue }

        /// Where the engine listens when a config does not say.
        public var defaultURL: String {
            switch self {
            case .valhalla: return "http://127.0.0.1:8002"
            case .osrm: return "http://127.0.0.1:5000"
            }
        }
    }

    /// The dialect spoken.
    public let dialect: Dialect
    public var name: String { self.dialect.id }
    let client: EngineClient

    /// A client of the engine at `url` (its dialect's ``Dialect/defaultURL`` when nil).
    public init(
        _ dialect: Dialect, url: String? = nil, timeoutSeconds: Double = Setting.timeoutSeconds.defaultValue,
        retries: Int = Setting.retries.defaultValue
    ) throws(RoutingError) {
        self.dialect = dialect
        self.client = try EngineClient(
            engine: dialect.id, url: url ?? dialect.defaultURL, timeoutSeconds: timeoutSeconds, retries: retries)
    }

    /// Reads a config's settings: `url`, `timeoutSeconds`, `retries`.
    public init(_ dialect: Dialect, settings: Settings) throws {
        self.dialect = dialect
        self.client = try EngineClient(engine: dialect.id, settings: settings, defaultURL: dialect.defaultURL)
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        switch self.dialect {
        case .valhalla:
            let body = JSONValue.object([
                "locations": .array([
                    .object(["lat": .number(start.latitude), "lon": .number(start.longitude)]),
                    .object(["lat": .number(destination.latitude), "lon": .number(destination.longitude)]),
                ]),
                "costing": .string("pedestrian"), "units": .string("kilometers"),
                "directions_options": .object(["units": .string("kilometers")]),
            ])
            return try Self.plan(.valhalla, answer: try await self.client.postJSON("/route", body: body))
        case .osrm:
            let coordinates = "\(start.longitude),\(start.latitude);\(destination.longitude),\(destination.latitude)"
            return try Self.plan(
                .osrm,
                answer: try await self.client.getJSON(
                    "/route/v1/foot/\(coordinates)?overview=full&geometries=geojson&steps=true"))
        }
    }

    /// The route in an engine's answer (a JSON object), or why there is none.
    package static func plan(_ dialect: Dialect, answer object: JSONValue) throws -> RoutePlan {
        switch dialect {
        case .valhalla:
            guard let trip = object["trip"], let legs = trip["legs"]?.arrayValue else {
                throw RoutingError.providerFailed(reason: "valhalla: no trip in the answer")
            }
            var plan = try RouteFile.valhallaPlan(legs: legs, file: "valhalla")
            if let km = RouteFile.length(trip["summary"]?["length"]), (km * 1000).isFinite {
                plan.reportedLengthMeters = km * 1000
            }
            return plan
        case .osrm:
            guard object["code"]?.stringValue == "Ok" || object["routes"] != nil else {
                throw RoutingError.providerFailed(
                    reason: "osrm: \(object["message"]?.stringValue ?? object["code"]?.stringValue ?? "no route")")
            }
            return try RouteFile.plan(fromJSON: object, file: "osrm", precision: 5)
        }
    }
}

extension EngineRouteProvider {
    /// Its settings (either dialect), each declared once: a config is parsed through these, and `hapticnav config
    /// schema` documents them.
    public enum Setting {
        public static let url = ValueSpec<String>(
            "url", accepts: "http://host[:port][/prefix]",
            "Where the engine listens, over plain HTTP (when not given: "
                + Dialect.allCases.map { "\($0.id) \($0.defaultURL)" }.joined(separator: ", ") + ").")
        public static let timeoutSeconds = SettingSpec<Double>(
            "timeoutSeconds", unit: "s", default: 5, in: 0.1...120, "Each try's deadline.")
        public static let retries = SettingSpec<Int>(
            "retries", default: 2, in: 0...10, "Tries after the first, 0.25 s apart and doubling.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [url.doc, timeoutSeconds.doc, retries.doc]
    }
}
