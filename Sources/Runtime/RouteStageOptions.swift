import NavCore
import Stages

/// Reads a route stage's `options`: where to go and how to track.
enum RouteStageOptions {
    static func parse(_ settings: Settings) throws -> RouteControllerOptions {
        var settings = settings
        guard let destination = try settings.coordinate("destination") else {
            throw ConfigError.missingKey(path: settings.path, key: "destination ([latitude, longitude])")
        }
        var options = RouteControllerOptions(destination: destination)
        var tracker = RouteTracker.Options()
        tracker.waypointRadiusMeters = try settings.double("waypointRadiusMeters", default: 10, in: 1...50)
        tracker.arrivalRadiusMeters = try settings.double("arrivalRadiusMeters", default: 5, in: 1...50)
        tracker.targetMode = RouteTracker.TargetMode(
            rawValue: try settings.string(
                "target", default: "lookAhead", oneOf: RouteTracker.TargetMode.allCases.map(\.rawValue)))!
        tracker.lookAheadMeters = try settings.double("lookAheadMeters", default: 15, in: 1...200)
        tracker.sharpTurnDegrees = try settings.double("sharpTurnDegrees", default: 60, in: 10...180)
        tracker.offRouteMinimumMeters = try settings.double("offRouteMeters", default: 15, in: 2...500)
        tracker.offRouteAccuracyFactor = try settings.double("offRouteAccuracyFactor", default: 1.5, in: 0...10)
        tracker.offRouteFixes = try settings.int("offRouteFixes", default: 3, in: 1...100)
        tracker.rerouteMinimumSeconds = try settings.double("rerouteMinimumSeconds", default: 10, in: 0...3600)
        tracker.rerouteMinimumMeters = try settings.double("rerouteMinimumMeters", default: 30, in: 0...10_000)
        options.tracker = tracker
        options.turnThresholdDegrees = try settings.double("turnThresholdDegrees", default: 30, in: 5...170)
        options.republishSeconds = try settings.double("republishSeconds", default: 5, in: 0.5...3600)
        try settings.finish()
        return options
    }
}
