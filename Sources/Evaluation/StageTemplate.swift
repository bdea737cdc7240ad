#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NavCore
import Routers
import SystemIO
import MapLogic

/// The evaluated stages of a config (its smoother, route controller and haptic sink), rewritten per walk: their
/// endpoints in the walk's folder, the source replaced by the harness, the route's destination, the sink's offset
/// and a console device that echoes every decision.
struct StageTemplate {
    let smoother: String
    let route: String
    let haptic: String
    private let stages: [String: SettingValue]
    private let bus: SettingValue?
    private let baseDirectory: String

    /// The map to route and walk on, when it replaces the route stage's.
    private let map: String?

    init(config: String, map: String? = nil) throws {
        let bytes = try InputFile.contents(of: config)
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        // `${VARIABLES}` as a run of the config has them (the field config's map).
        let root = try decoder.decode(SettingValue.self, from: Data(bytes)).expandingVariables(
            environment: ProcessInfo.processInfo.environment, path: "the config")
        guard let stages = root["stages"]?.objectValue else {
            throw WalkerEvaluation.Failure(description: "\(config): no stages")
        }
        func named(_ role: String) throws -> String {
            let matches = stages.filter { ($0.value["role"]?.stringValue ?? $0.key) == role }.map(\.key).sorted()
            guard let first = matches.first else {
                throw WalkerEvaluation.Failure(description: "\(config): no \(role) stage to evaluate")
            }
            return first
        }
        self.smoother = try named("smoother")
        self.route = try named("route")
        self.haptic = try named("haptic")
        self.stages = stages
        self.bus = root["bus"]
        let own = Paths.absolute(Paths.folder(of: config))
        if case let .string(directory)? = root["directory"], !directory.isEmpty {
            self.baseDirectory = directory.hasPrefix("/") ? directory : own + "/" + directory
        } else {
            self.baseDirectory = own
        }
        if let map {
            guard (stages[self.route]?["plugin"]?.stringValue ?? "") == "osm" else {
                throw WalkerEvaluation.Failure(
                    description: "--map: the route stage '\(self.route)' of \(config) does not route with 'osm'")
            }
            self.map = Paths.absolute(map)
        } else {
            self.map = nil
        }
    }

    /// The route stage's settings, its file paths made absolute and the map replaced when one was given.
    private var routeSettings: SettingValue? {
        guard case var .object(settings)? = self.resolved(self.stages[self.route]?["settings"]) else {
            return self.map.map { .object(["map": .string($0)]) }
        }
        if let map = self.map { settings["map"] = .string(map) }
        return .object(settings)
    }

    /// The walking graph the offline router of the route stage uses (its map, its walkability rules), for
    /// participants held to the ways.
    func walkingGraph() throws -> WalkingGraph {
        var plugin = self.stages[self.route]?["plugin"]?.stringValue ?? ""
        var settings = self.routeSettings
        if plugin != "osm", case let .array(fallbacks)? = self.stages[self.route]?["options"]?["fallback"],
            let osm = fallbacks.first(where: { $0["plugin"]?.stringValue == "osm" })
        {
            plugin = "osm"
            settings = self.resolved(osm["settings"])
        }
        guard plugin == "osm" else {
            throw WalkerEvaluation.Failure(
                description:
                    "network participants walk the offline router's map: the route stage '\(self.route)' has no 'osm' router (give --map)"
            )
        }
        let parsed = try Settings(settings, path: "stages.\(self.route).settings", baseDirectory: self.baseDirectory)
        return try OSMRouteProvider(settings: parsed, logger: Logger(label: "eval")).graph
    }

    /// Makes relative file paths in a plugin's settings absolute (against the config's folder).
    private func resolved(_ value: SettingValue?) -> SettingValue? {
        guard case var .object(object)? = value else { return value }
        for key in ["map", "file"] {
            if case let .string(path)? = object[key], !path.hasPrefix("/") {
                object[key] = .string(self.baseDirectory + "/" + path)
            }
        }
        return .object(object)
    }

    func write(
        to file: String, folder: String, destination: Coordinate, offsetDegrees: Double, session: String? = nil,
        metadata: [(String, String)] = []
    ) throws {
        func endpoint(_ name: String) -> SettingValue { .string("ipc://\(folder)/\(name).sock") }
        // The harness steps in lockstep, each message sent once the last is answered, and a loaded machine may hold a
        // stage's thread for seconds: Group 1's lateness limits (real time) would drop a fix the walk never lost. At
        // their longest, as the sink's below, so that a walk's figures are the same on any machine.
        let latest = SettingValue.number(InputTimeGuard.Setting.latenessLimitSeconds.range.upperBound)
        var smoother = self.stages[self.smoother]?.objectValue ?? [:]
        var smootherOptions = smoother["options"]?.objectValue ?? [:]
        smootherOptions[InputTimeGuard.Setting.latenessLimitSeconds.key] = latest
        smoother["options"] = .object(smootherOptions)
        smoother["publish"] = endpoint(self.smoother)
        smoother["inputs"] = .array([endpoint("source")])
        smoother["topics"] = .array([.string("fix")])
        var route = self.stages[self.route]?.objectValue ?? [:]
        route["publish"] = endpoint(self.route)
        // The smoothed fixes, and the wearer's steps from the harness's phone (for the network place).
        route["inputs"] = .array([endpoint(self.smoother), endpoint("source")])
        route["topics"] = .array([.string("smoothed"), .string("step")])
        route["settings"] = self.routeSettings
        var routeOptions = route["options"]?.objectValue ?? [:]
        routeOptions["destination"] = .array([.number(destination.latitude), .number(destination.longitude)])
        routeOptions[InputTimeGuard.Setting.latenessLimitSeconds.key] = latest
        if case let .array(fallbacks)? = routeOptions["fallback"] {
            routeOptions["fallback"] = .array(
                fallbacks.map { entry in
                    guard case var .object(object) = entry else { return entry }
                    object["settings"] = self.resolved(object["settings"])
                    return .object(object)
                })
        }
        route["options"] = .object(routeOptions)
        var haptic = self.stages[self.haptic]?.objectValue ?? [:]
        haptic["plugin"] = .string("console")
        // The harness reads the cues from the bus: the console's lines go nowhere (composed, they would land in the
        // harness's own output).
        haptic["settings"] = .object(["prefix": .string(""), "output": .string("none")])
        haptic["publish"] = endpoint(self.haptic)
        // The harness relays the route controller's targets to the sink on its own socket, right before the next
        // heading: one ordered stream, so that the sink always has a fix's target before the headings after it.
        haptic["inputs"] = .array([endpoint("source")])
        haptic["topics"] = .array([.string("heading"), .string("target"), .string("progress"), .string("turn")])
        var hapticOptions = haptic["options"]?.objectValue ?? [:]
        hapticOptions["calibrationFile"] = nil
        hapticOptions["fallback"] = nil
        hapticOptions["offsetDegrees"] = .number(offsetDegrees)
        hapticOptions["echoEveryHeading"] = .bool(true)
        // No experimenter in a simulated walk: no control endpoint to share between walks, and no stop kept from a
        // lab session that would silence this sink.
        hapticOptions["control"] = nil
        // The harness steps in lockstep, each heading sent once the last is answered: a loaded machine may take more
        // than a second of real time between two of them, which the fail-safe's limits (real time) would take for a
        // lost input and silence a cue the walk never lost. Its limits at their longest, so that the walk's figures
        // are the same on any machine (the fail-safe has its own tests). 30 s: the settings' largest.
        hapticOptions["staleAfterSeconds"] = .number(30)
        hapticOptions["headingStaleAfterSeconds"] = .number(30)
        haptic["options"] = .object(hapticOptions)
        var stages: [String: SettingValue] = [:]
        for (name, var object) in [(self.smoother, smoother), (self.route, route), (self.haptic, haptic)] {
            for key in ["group", "key", "advertise", "insecure"] { object[key] = nil }
            stages[name] = .object(object)
        }
        if let session {
            // The walk's bus as a session: what the harness's source sent and what every stage answered.
            stages["recorder"] = [
                "role": "recorder", "plugin": "mcap",
                "inputs": .array(["source", self.smoother, self.route, self.haptic].map { endpoint($0) }),
                "settings": [
                    "folder": .string(session),
                    "metadata": .object(Dictionary(metadata.map { ($0.0, SettingValue.string($0.1)) }) { a, _ in a }),
                ],
            ]
        }
        var root: [String: SettingValue] = ["name": .string("eval walkers"), "stages": .object(stages)]
        if case var .object(bus)? = self.bus {
            bus["topics"] = nil  // conflation is for live streams; the harness sends one heading at a time
            root["bus"] = .object(bus)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(SettingValue.object(root)).write(to: URL(fileURLWithPath: file))
    }
}
