import MapFiles
import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Parsers
import Runtime
import SystemIO
import MapLogic

struct RouteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "route",
        abstract: "A walking route between two points: its length, waypoints and instructions.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, geojson, gpx
    }

    // Unconditional: a southern latitude ("-33.8,151.2") is the option's value, not another option.
    @Option(parsing: .unconditional, help: "Start, as LAT,LON (southern and western ones negative).")
    var from: String

    @Option(parsing: .unconditional, help: "Destination, as LAT,LON.")
    var to: String

    @Option(help: "An OpenStreetMap XML extract to route over offline.")
    var map: String?

    @Option(help: "A routing engine instead of a map: valhalla or osrm.")
    var provider: String?

    @Option(help: "The engine's URL (default http://127.0.0.1:8002 for Valhalla, :5000 for OSRM).")
    var url: String?

    @Flag(help: "Avoid steps (with --map).")
    var avoidSteps = false

    @Option(help: "Output: text, json, geojson or gpx.")
    var format: Format = .text

    @Option(help: "A waypoint where the route turns by more than this [degrees].")
    var turnThreshold = 30.0

    @Option(
        help: """
            A route that ends short of the destination (at the way nearest it) gets a straight last leg to it up to \
            this long, as a route stage's destinationLegMeters; one that ends farther is refused [metres].
            """)
    var destinationLeg = DestinationLeg.Setting.legMeters.defaultValue

    private func coordinate(_ text: String, _ name: String) throws -> Coordinate {
        guard let coordinate = Coordinate(latitudeLongitude: text) else {
            throw ValidationError("--\(name): expected LAT,LON, like 43.7319,7.4216")
        }
        return coordinate
    }

    func validate() throws {
        let range = DestinationLeg.Setting.legMeters.range
        guard range.contains(self.destinationLeg) else {
            throw ValidationError("--destination-leg: expected \(range.lowerBound) to \(range.upperBound) metres")
        }
    }

    func run() async throws {
        let start = try self.coordinate(self.from, "from"), destination = try self.coordinate(self.to, "to")
        let logger = Logger(label: "hapticnav.route")
        let provider: any RouteProvider
        switch (self.map, self.provider) {
        case let (map?, nil):
            var options = OSMLoader.Options()
            options.avoidSteps = self.avoidSteps
            provider = try OSMRouteProvider(map: map, options: options, logger: logger)
        case let (nil, engine?) where EngineRouteProvider.Dialect(rawValue: engine) != nil:
            do {
                provider = try EngineRouteProvider(EngineRouteProvider.Dialect(rawValue: engine)!, url: self.url)
            } catch {
                throw ValidationError("--url: \(error)")
            }
        default:
            throw ValidationError("give --map FILE, or --provider valhalla|osrm (with --url)")
        }
        let plan: RoutePlan
        do {
            // As a route stage follows it: to the destination, not to where the router's ways end.
            let reached = try DestinationLeg.reaching(
                destination, by: try await provider.route(from: start, to: destination),
                arrivalRadiusMeters: RouteTracker.Options().arrivalRadiusMeters, legMeters: self.destinationLeg,
                provider: provider.name)
            plan = reached.plan
            if let leg = reached.lastLeg {
                StandardStreams.writeError(
                    "note: \(provider.name)'s route ends \(Int(leg.lengthMeters.rounded())) m from the destination; its last leg goes straight to it, off the ways\n"
                )
            }
        } catch let error as RoutingError {
            throw CommandFailure("\(error)")
        }
        let route = RouteBuilder.route(
            from: plan, routeID: 1, timeSeconds: Date().timeIntervalSince1970, provider: provider.name,
            turnThresholdDegrees: self.turnThreshold)
        print(RouteOutput.render(route, format: self.format.rawValue))
    }
}
