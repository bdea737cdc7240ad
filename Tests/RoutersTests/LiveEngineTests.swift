import NavCore
@testable import Routers
import TestSupport
import Testing

/// The engine providers against live engines on loopback (started by the tests, stopped at the end): each routes the
/// 25 Monaco reference pairs and must give the reference set's answer, which the same engine versions computed over
/// the same map.
@Suite(.serialized) struct LiveEngineTests {
    /// Routes every reference pair; returns the worst relative difference from the saved length and prints a line.
    private func routeAllPairs(
        _ provider: any RouteProvider, saved: (ReferenceRoute) -> Double
    ) async throws -> Double {
        #expect(ReferenceRoute.all.count == 25)
        var worst = 0.0
        for pair in ReferenceRoute.all {
            let plan = try await provider.route(from: pair.origin, to: pair.destination)
            let length = plan.reportedLengthMeters ?? Polyline(plan.points).lengthMeters
            let difference = abs(length - saved(pair)) / saved(pair)
            worst = max(worst, difference)
            #expect(difference < 0.01, "\(pair): \(Int(length)) m vs \(Int(saved(pair))) m saved")
            #expect(plan.points.count >= 2)
        }
        print(
            "\(provider.name): 25 Monaco pairs, worst difference from the saved answers \(fixedDecimal(worst * 100, digits: 2)) %"
        )
        return worst
    }

    @Test func theValhallaPluginRoutesThe25PairsThroughALiveValhalla() async throws {
        let valhalla = try await LocalRoutingEngine(.valhalla)
        let provider = try EngineRouteProvider(.valhalla, url: valhalla.url, timeoutSeconds: 10, retries: 1)
        _ = try await self.routeAllPairs(provider) { $0.valhallaMeters }
        let plan = try await provider.route(from: ReferenceRoute.all[0].origin, to: ReferenceRoute.all[0].destination)
        #expect(plan.segmentNames.contains { $0 != nil }, "street names from the maneuvers")
        // A destination outside the map is the engine's clear answer, not a crash or a retry loop.
        do {
            _ = try await provider.route(
                from: ReferenceRoute.all[0].origin, to: Coordinate(latitude: 10, longitude: 10))
            Issue.record("routed out of the map")
        } catch let error as RoutingError {
            #expect("\(error)".contains("valhalla") && "\(error)".contains("127.0.0.1"), "\(error)")
        }
        #expect(await valhalla.stop() != nil, "Valhalla stopped on SIGTERM within 5 s")
    }

    @Test func theOSRMPluginRoutesThe25PairsThroughALiveOSRM() async throws {
        let osrm = try await LocalRoutingEngine(.osrm)
        let provider = try EngineRouteProvider(.osrm, url: osrm.url, timeoutSeconds: 10, retries: 1)
        _ = try await self.routeAllPairs(provider) { $0.osrmMeters }
        // Pair 1 runs along Avenue Albert II (pair 0's ways have no names in this extract).
        let plan = try await provider.route(from: ReferenceRoute.all[1].origin, to: ReferenceRoute.all[1].destination)
        #expect(plan.segmentNames.contains { $0 == "Avenue Albert II" }, "street names from the steps")
        // A destination far outside the map: OSRM snaps it to the nearest road or refuses; either way no crash,
        // and a refusal names the engine.
        do {
            _ = try await provider.route(
                from: ReferenceRoute.all[0].origin, to: Coordinate(latitude: 10, longitude: 10))
        } catch let error as RoutingError {
            #expect("\(error)".contains("osrm"), "\(error)")
        }
        #expect(await osrm.stop() != nil, "OSRM stopped on SIGTERM within 5 s")
    }
}
