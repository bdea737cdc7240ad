import Evaluation
import Foundation
import Glibc
import NavCore
import Testing
import MapLogic

@Suite struct GuidanceSimulationTests {
    @Test func debouncingCutsCueChatterForWalkersWhoObey() {
        let plain = GuidanceSimulation.cueChangesPerMinute(debounced: false, minutes: 5, seed: 11)
        let debounced = GuidanceSimulation.cueChangesPerMinute(debounced: true, minutes: 5, seed: 11)
        #expect(debounced < 10, "debounced: \(debounced) changes a minute")
        #expect(plain > 4 * debounced, "plain \(plain) vs debounced \(debounced)")
    }
}

@Suite struct SmootherEvaluationTests {
    @Test func aReplayAtAnyRateGivesTheSameAnswer() {
        let fixes = SmootherEvaluation.noisyFixes(SmootherEvaluation.simulatedWalk(seed: 3), sigma: 5, seed: 4)
        var a = KalmanSmoother(), b = KalmanSmoother()
        let first = fixes.map { a.update(with: $0) }
        let second = fixes.map { b.update(with: $0) }
        #expect(first == second, "the filter reads no clock")
    }

    @Test func theEvaluationMeetsItsTargets() {
        for sigma in [5.0, 10.0] {
            let runs = (1...10).map { seed in
                SmootherEvaluation.evaluate(
                    SmootherEvaluation.simulatedWalk(seed: UInt64(seed)), sigma: sigma,
                    seed: UInt64(seed) + 500)
            }
            let metrics = SmootherEvaluation.Metrics.pooled(runs)
            #expect(metrics.improvement >= 0.3, "σ \(sigma): \(metrics)")
            if sigma == 10 { #expect(abs(metrics.meanLagMeters) <= 2) }
            #expect(abs(metrics.rawRMSMeters - sigma * 2.0.squareRoot()) < sigma * 0.1, "raw noise is what was asked")
        }
    }
}

@Suite struct BusBenchmarkTests {
    /// A short run measures raw libzmq, the transport and the transport over CURVE, each hop delivered.
    @Test func aShortRunOverTCPMeasuresPlainAndEncryptedHops() async throws {
        var template = Array("/tmp/hapticnav-busbench-XXXXXX".utf8CString)
        let folder = String(cString: mkdtemp(&template)!)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let report = try await BusBenchmark.run(
            messages: 400, rateHz: 1000, rounds: 2, folder: folder, transport: "tcp", curve: true)
        #expect(report.raw.count == 400)
        #expect(report.transport.count == 400)
        let curve = try #require(report.curve)
        #expect(curve.count == 400)
        #expect(curve.p50 > 0)
        #expect((report.medianRoundCurveRatioP50 ?? 0) > 0)
        #expect(report.endpointTransport == "tcp")
    }
}

@Suite struct PlaceBenchmarkTests {
    @Test func aPlaceThatLagsThreeFixesBehindATurnIsOnTheRightWayAllButThoseAndLocksInThreeSeconds() {
        let plane = FlatProjection(origin: Coordinate(latitude: 43.73, longitude: 7.42))
        func at(_ east: Double, _ north: Double) -> Coordinate { plane.unproject(ENU(east: east, north: north)) }
        // North 50 m to a junction, where ways go east, west and on north; the route turns right (east).
        let graph = WalkingGraph(
            nodes: [at(0, 0), at(0, 50), at(50, 50), at(-50, 50), at(0, 100)],
            edges: [(0, 1, -1), (1, 2, -1), (1, 3, -1), (1, 4, -1)], names: [], warnings: [])
        let path = Polyline([at(0, 0), at(0, 50), at(50, 50)])
        // A fix a metre; placed on the truth, except the three fixes just past the corner, still placed a metre before it.
        let placed: [(along: Double, point: Coordinate)] = (0..<100).map { metre in
            let along = Double(metre)
            let truth = path.point(atDistance: along)!.coordinate
            return (along, (50..<53).contains(metre) ? at(0, 49) : truth)
        }
        let judged = PlaceBenchmark.ways(placed: placed, path: path, junctions: [50], graph: graph)
        #expect(judged.right == 97)
        #expect(judged.locks == [3])
        // A place that never leaves the way in: not locked within 30 s.
        let stuck = placed.map { ($0.along, $0.along >= 50 ? at(0, 49) : $0.point) }
        #expect(PlaceBenchmark.ways(placed: stuck, path: path, junctions: [50], graph: graph).locks == [30])
    }
}
