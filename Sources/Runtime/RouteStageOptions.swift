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
        typealias Setting = RouteTracker.Options.Setting
        tracker.waypointRadiusMeters = try settings.value(Setting.waypointRadiusMeters)
        tracker.arrivalRadiusMeters = try settings.value(Setting.arrivalRadiusMeters)
        tracker.targetMode = RouteTracker.TargetMode(
            rawValue: try settings.string(
                Setting.target.key, default: Setting.target.defaultText,
                oneOf: RouteTracker.TargetMode.allCases.map(\.rawValue)))!
        tracker.lookAheadMeters = try settings.value(Setting.lookAheadMeters)
        tracker.sharpTurnDegrees = try settings.value(Setting.sharpTurnDegrees)
        tracker.offRouteMinimumMeters = try settings.value(Setting.offRouteMeters)
        tracker.offRouteAccuracyFactor = try settings.value(Setting.offRouteAccuracyFactor)
        tracker.offRouteFixes = try settings.value(Setting.offRouteFixes)
        tracker.rerouteMinimumSeconds = try settings.value(Setting.rerouteMinimumSeconds)
        tracker.rerouteMinimumMeters = try settings.value(Setting.rerouteMinimumMeters)
        options.tracker = tracker
        options.turnThresholdDegrees = try settings.value(RouteControllerOptions.Setting.turnThresholdDegrees)
        options.republishSeconds = try settings.value(RouteControllerOptions.Setting.republishSeconds)
        try settings.finish()
        return options
    }
}
