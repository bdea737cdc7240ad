public import Foundation
import Links

/// A real routing engine serving the bundled Monaco map on a loopback port: Valhalla (pyvalhalla 3.9.1) through
/// `scripts/valhalla-serve`, or OSRM (osrm-bindings 26.10.0, foot profile) through `scripts/osrm-serve`, both
/// installed by `scripts/setup`. Started in a scratch folder (or a given one, so that a restart reuses what was
/// built) and ready when it answers.
public final class LocalRoutingEngine: @unchecked Sendable {
    /// Which engine.
    public enum Kind: String, Sendable {
        case valhalla, osrm
    }

    public let kind: Kind
    public let port: Int
    public let work: String
    public private(set) var process: ChildProcess

    /// The engine's base URL, for a provider's `url`.
    public var url: String { "http://127.0.0.1:\(self.port)" }

    /// Starts the engine and waits (at most `seconds`) until it answers.
    public init(_ kind: Kind, port: Int? = nil, work: String? = nil, seconds: Double = 60) async throws {
        self.kind = kind
        self.port = port ?? freeTCPPort()
        self.work = try work ?? scratchFolder()
        self.process = try Self.launch(kind, port: self.port, work: self.work)
        try await self.waitUntilReady(seconds: seconds)
    }

    private static func launch(_ kind: Kind, port: Int, work: String) throws -> ChildProcess {
        let script = repositoryRoot.appendingPathComponent("scripts/\(kind.rawValue)-serve").path
        return try ChildProcess(script, ["\(port)", work])
    }

    /// A request whose answer says the engine is up: Valhalla's status, OSRM's route from a point to itself.
    private var probePath: String {
        switch self.kind {
        case .valhalla: return "/status"
        case .osrm: return "/route/v1/foot/7.4200,43.7300;7.4200,43.7300?overview=false"
        }
    }

    /// Whether the engine answers now (within a second).
    public func answers() async -> Bool {
        let client = HTTPClient(host: "127.0.0.1", port: UInt16(self.port))
        guard let response = try? await client.send(method: "GET", path: self.probePath, timeoutSeconds: 1) else {
            return false
        }
        return response.status == 200
    }

    private func waitUntilReady(seconds: Double) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await self.answers() { return }
            if !self.process.process.isRunning {
                throw TestProcessError("\(self.kind.rawValue)-serve exited: \(self.process.stderr.suffix(800))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        self.process.ensureStopped()
        throw TestProcessError("\(self.kind.rawValue) did not answer within \(Int(seconds)) s")
    }

    /// Kills the engine at once (SIGKILL), as a crash would.
    public func kill() async {
        self.process.signal(SIGKILL)
        _ = await self.process.wait(seconds: 10)
    }

    /// Starts it again on the same port and folder (nothing to build again) and waits until it answers.
    public func restart(seconds: Double = 60) async throws {
        self.process.ensureStopped()
        self.process = try Self.launch(self.kind, port: self.port, work: self.work)
        try await self.waitUntilReady(seconds: seconds)
    }

    /// Stops it with SIGTERM; returns its exit status, or nil when it did not stop within 5 s (then kills it).
    @discardableResult
    public func stop() async -> Int32? {
        self.process.signal(SIGTERM)
        let status = await self.process.wait(seconds: 5)
        self.process.ensureStopped()
        return status
    }
}

/// The repository's root folder (this file is Tests/TestSupport/RoutingEngines.swift).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
