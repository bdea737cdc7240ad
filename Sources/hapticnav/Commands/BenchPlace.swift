import ArgumentParser
import Evaluation
import Logging
import Routers

extension Bench {
    struct PlaceBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "place",
            abstract:
                "The network place (route option place: network) per fix, by particle count, beside the smoother's cost "
                + "in the same run: walkers along a map's routes with GPS error; p50/p99 per fix, the share of a core "
                + "at one fix a second, the error along the path, the share of fixes on the walker's own way (right way), and the time from a turn at a junction to the first fix on the new way (lock)."
        )

        @Option(help: "The OSM extract (XML or PBF) whose walking graph the walker is placed on.")
        var map = "data/maps/monaco-highways.osm"

        @Option(help: "The route pairs walked.")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "Routes walked.")
        var routes = 10

        @Option(help: "Particle counts to time (repeatable).")
        var particles: [Int] = [64, 128, 256, 512]

        @Option(help: "GPS error per axis, one sigma [m]; with a trailing c, correlated over 30 s (5c).")
        var noise = "5c"

        func run() async throws {
            let correlated = self.noise.hasSuffix("c")
            guard let sigma = Double(correlated ? String(self.noise.dropLast()) : self.noise), sigma >= 0 else {
                throw ValidationError("--noise: a sigma in metres, with c for correlated (5, 10, 5c)")
            }
            guard self.particles.allSatisfy({ (16...10_000).contains($0) }) else {
                throw ValidationError("--particles: between 16 and 10000")
            }
            let provider = try OSMRouteProvider(map: self.map, logger: Logger(label: "bench"))
            let pairs = Array(try RouteBenchmark.endpoints(file: self.pairs).prefix(max(1, self.routes)))
            let rows = try await PlaceBenchmark.run(
                provider: provider, pairs: pairs, particleCounts: self.particles, sigmaMeters: sigma,
                correlated: correlated)
            print(PlaceBenchmark.table(rows, routes: pairs.count, sigmaMeters: sigma, correlated: correlated))
        }
    }
}
