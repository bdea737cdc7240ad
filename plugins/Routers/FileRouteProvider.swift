public import NavCore
import Parsers

/// The `file` provider: a saved route (GPX, GeoJSON, an encoded polyline, a directions response). A reroute
/// joins the walker to the nearest point of the file's route and follows it from there.
public struct FileRouteProvider: RouteProvider {
    public static let id = "file"
    public let name = "file"
    /// Its route ends where the file's does, whatever destination is asked for.
    public let routesToTheDestination = false
    /// The saved route.
    public let plan: RoutePlan

    /// Reads a config's settings: `file`, and `precision` for bare polylines.
    public init(settings: Settings) throws {
        var settings = settings
        guard let file = try settings.inputFile(Setting.file) else {
            throw ConfigError.missingKey(path: settings.path, key: Setting.file.key)
        }
        let precision = try settings.value(Setting.precision)
        try settings.finish()
        self.plan = try RouteFile.load(file: file, precision: precision)
    }

    /// Uses a plan directly.
    public init(plan: RoutePlan) {
        self.plan = plan
    }

    public func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan {
        let line = Polyline(self.plan.points)
        guard let here = line.project(start) else { return self.plan }
        var points = [start]
        var names: [String?] = [nil]
        if here.distanceMeters < 1 { points = []; names = [] }
        points.append(here.closestPoint)
        for index in (here.segmentIndex + 1)..<self.plan.points.count {
            names.append(self.plan.segmentNames[index - 1])
            points.append(self.plan.points[index])
        }
        if here.distanceMeters < 1 { names.removeFirst() }
        return RoutePlan(points: points, segmentNames: names)
    }
}

extension FileRouteProvider {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let precision = SettingSpec<Int>(
            "precision", default: 5, in: 5...6, "The precision of a bare encoded polyline (5, or 6 as Valhalla writes)."
        )
        public static let file = ValueSpec<String>(
            "file", accepts: "a file",
            "The saved route: GPX, GeoJSON, an encoded polyline, or a Valhalla, OSRM, Google or Mapbox directions response."
        )

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [precision.doc, file.doc]
    }
}
