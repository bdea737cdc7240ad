import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NavCore
@testable import Routers
import TestSupport
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A real Valhalla (pyvalhalla 3.9.1, installed by scripts/setup) serving Monaco on a loopback port.
final class LocalValhalla: Sendable {
    let process: ChildProcess
    let url: URL

    init() async throws {
        let port = freeTCPPort()
        let work = try scratchFolder()
        self.process = try ChildProcess(
            repository.appendingPathComponent("scripts/valhalla-serve").path, ["\(port)", work])
        self.url = URL(string: "http://127.0.0.1:\(port)")!
        // Ready when it answers a status request; bounded wait.
        for _ in 0..<300 {
            if await self.answers() { return }
            if !self.process.process.isRunning {
                throw TestProcessError("valhalla-serve exited: \(self.process.stderr.suffix(500))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        self.process.ensureStopped()
        throw TestProcessError("Valhalla did not answer within 30 s")
    }

    private func answers() async -> Bool {
        var request = URLRequest(url: self.url.appendingPathComponent("status"), timeoutInterval: 1)
        request.httpMethod = "GET"
        return (try? await URLSession.shared.data(for: request)).map { ($0.1 as? HTTPURLResponse)?.statusCode == 200 }
            ?? false
    }

    func stop() async -> Int32? {
        self.process.signal(SIGTERM)
        return await self.process.wait(seconds: 5)
    }
}

@Suite(.serialized) struct ValhallaTests {
    @Test func theValhallaPluginRoutesThroughARealValhalla() async throws {
        let valhalla = try await LocalValhalla()
        let provider = try ValhallaRouteProvider(url: valhalla.url.absoluteString, timeoutSeconds: 10, retries: 1)
        for pair in ReferenceRoute.all.prefix(5) {
            let plan = try await provider.route(from: pair.origin, to: pair.destination)
            let length = Polyline(plan.points).lengthMeters
            // The same engine and map as the reference set: the same route, to the metre.
            #expect(
                abs(length - pair.valhallaMeters) / pair.valhallaMeters < 0.01,
                "\(pair): \(Int(length)) m vs \(Int(pair.valhallaMeters)) m")
            #expect(plan.reportedLengthMeters.map { abs($0 - pair.valhallaMeters) < 1 } == true)
            #expect(plan.segmentNames.contains { $0 != nil }, "street names from the maneuvers")
        }
        // A destination outside the map is the engine's clear answer, not a crash or a retry loop.
        do {
            _ = try await provider.route(
                from: ReferenceRoute.all[0].origin, to: Coordinate(latitude: 10, longitude: 10))
            Issue.record("routed out of the map")
        } catch let error as RoutingError {
            #expect("\(error)".contains("127.0.0.1"))
        }
        #expect(await valhalla.stop() != nil, "Valhalla stopped on SIGTERM within 5 s")
    }
}
