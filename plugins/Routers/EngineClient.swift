#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Links
import NavCore

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
        let text = try settings.string(EngineRouteProvider.Setting.url.key, default: defaultURL)
        guard HTTPClient.split(url: text) != nil else {
            throw ConfigError.invalidValue(
                path: "\(settings.path).url", expected: "an http://host[:port] URL", found: "'\(text)'")
        }
        let timeout = try settings.value(EngineRouteProvider.Setting.timeoutSeconds)
        let retries = try settings.value(EngineRouteProvider.Setting.retries)
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
