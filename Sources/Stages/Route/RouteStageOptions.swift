import MapLogic
public import NavCore

/// Reads a route stage's `options`: where to go, how to track, and which providers to ask after the stage's own. Beside
/// the stage it configures; the runtime's factory calls it.
public enum RouteStageOptions {
    /// The stage's options, and the providers to ask after its own plugin, in order.
    /// With `losslessInputs` (a replay at its full rate), late inputs are kept unless the options give a limit.
    public static func parse(
        _ settings: Settings, losslessInputs: Bool = false
    ) throws -> (RouteControllerOptions, [Settings.PluginChoice]) {
        var settings = settings
        let fallbacks = try settings.pluginList("fallback")
        guard let destination = try settings.coordinate("destination") else {
            throw ConfigError.missingKey(path: settings.path, key: "destination ([latitude, longitude])")
        }
        var options = RouteControllerOptions(destination: destination)
        var tracker = RouteTracker.Options()
        typealias Setting = RouteTracker.Options.Setting
        tracker.waypointRadiusMeters = try settings.value(Setting.waypointRadiusMeters)
        tracker.arrivalRadiusMeters = try settings.value(Setting.arrivalRadiusMeters)
        tracker.arrivalAccuracyMeters = try settings.value(Setting.arrivalAccuracyMeters)
        tracker.targetMode = RouteTracker.TargetMode(
            rawValue: try settings.string(
                Setting.target.key, default: Setting.target.defaultText,
                oneOf: RouteTracker.TargetMode.allCases.map(\.rawValue)))!
        tracker.guidance = RouteTracker.GuidanceMode(
            rawValue: try settings.string(
                Setting.guidance.key, default: Setting.guidance.defaultText,
                oneOf: RouteTracker.GuidanceMode.allCases.map(\.rawValue)))!
        typealias Turns = TurnAnnouncer.Options.Setting
        tracker.turns.manoeuvreDegrees = try settings.value(Turns.manoeuvreDegrees)
        tracker.turns.straightDegrees = try settings.value(Turns.straightDegrees)
        tracker.turns.marginFactor = try settings.value(Turns.marginFactor)
        tracker.turns.minimumMarginMeters = try settings.value(Turns.minimumMarginMeters)
        tracker.turns.junctionZoneMeters = try settings.value(Turns.junctionZoneMeters)
        tracker.turns.announceJunctions = try settings.value(Turns.announceJunctions)
        tracker.lookAheadMeters = try settings.value(Setting.lookAheadMeters)
        tracker.sharpTurnDegrees = try settings.value(Setting.sharpTurnDegrees)
        tracker.announceMeters = try settings.value(Setting.announceMeters)
        tracker.turnZoneMeters = try settings.value(Setting.turnZoneMeters)
        tracker.courseWeightMeters = try settings.value(Setting.courseWeightMeters)
        tracker.cornerLimitDegrees = try settings.value(Setting.cornerLimitDegrees)
        tracker.chordMeters = try settings.value(Setting.chordMeters)
        tracker.branchMarginDegrees = try settings.value(Setting.branchMarginDegrees)
        tracker.forkCueMeters = try settings.value(Setting.forkCueMeters)
        tracker.chordClearanceDegrees = try settings.value(Setting.chordClearanceDegrees)
        tracker.crossTrackDeadbandMeters = try settings.value(Setting.crossTrackDeadbandMeters)
        tracker.routeBiasSeconds = try settings.value(Setting.routeBiasSeconds)
        tracker.junctionChord = try settings.bool(Setting.junctionChord.key, default: true)
        tracker.stallSeconds = try settings.value(Setting.stallSeconds)
        tracker.stallMeters = try settings.value(Setting.stallMeters)
        tracker.offRouteMinimumMeters = try settings.value(Setting.offRouteMeters)
        tracker.offRouteAccuracyFactor = try settings.value(Setting.offRouteAccuracyFactor)
        tracker.offRouteFixes = try settings.value(Setting.offRouteFixes)
        tracker.rerouteMinimumSeconds = try settings.value(Setting.rerouteMinimumSeconds)
        tracker.rerouteMinimumMeters = try settings.value(Setting.rerouteMinimumMeters)
        options.tracker = tracker
        options.place = RouteControllerOptions.Place(
            rawValue: try settings.string(
                RouteControllerOptions.Setting.place.key, default: RouteControllerOptions.Setting.place.defaultText,
                oneOf: RouteControllerOptions.Place.allCases.map(\.rawValue)))!
        typealias Place = NetworkPlace.Options.Setting
        options.network.particles = Int(try settings.value(Place.particles))
        options.network.biasSigmaMeters = try settings.value(Place.biasSigmaMeters)
        options.network.biasTimeConstantSeconds = try settings.value(Place.biasTimeConstantSeconds)
        options.network.noiseSigmaMeters = try settings.value(Place.noiseSigmaMeters)
        options.network.courseSigmaDegrees = try settings.value(Place.courseSigmaDegrees)
        options.network.gateSigmas = try settings.value(Place.gateSigmas)
        options.network.odometry = NetworkPlace.Options.Odometry(
            rawValue: try settings.string(
                Place.odometry.key, default: Place.odometry.defaultText,
                oneOf: NetworkPlace.Options.Odometry.allCases.map(\.rawValue)))!
        options.turnThresholdDegrees = try settings.value(RouteControllerOptions.Setting.turnThresholdDegrees)
        options.republishSeconds = try settings.value(RouteControllerOptions.Setting.republishSeconds)
        options.destinationLegMeters = try settings.value(RouteControllerOptions.Setting.destinationLegMeters)
        options.latenessLimitSeconds = try InputTimeGuard.latenessLimit(&settings, losslessInputs: losslessInputs)
        options.providerTimeoutSeconds = try settings.value(RouteControllerOptions.Setting.providerTimeoutSeconds)
        options.providerBackoff = ProviderSchedule.Options(
            backoffSeconds: try settings.value(RouteControllerOptions.Setting.providerBackoffSeconds),
            maximumBackoffSeconds: try settings.value(RouteControllerOptions.Setting.providerBackoffMaxSeconds))
        try settings.finish()
        return (options, fallbacks)
    }
}
