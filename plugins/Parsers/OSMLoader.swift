public import NavCore

/// Reads an OpenStreetMap XML extract into a ``WalkingGraph``.
///
/// Walkable: footway, path, pedestrian, steps, living_street, residential, service, track, crossings,
/// cycleway, bridleway, corridor, elevator, and the roads pedestrians use (unclassified to primary, with
/// their links); not motorways, trunk roads, construction or proposed ways — unless tagged foot=yes.
/// access=no/private and foot=no close a way; foot=yes/designated/permissive open it again. Dangling node
/// references, bad coordinates and ways with fewer than two usable nodes are skipped with a warning.
public enum OSMLoader {
    /// Loading options.
    public struct Options: Sendable {
        /// Leave out steps (for wheelchairs, prams, or walkers who want to avoid them).
        public var avoidSteps = false

        /// The defaults.
        public init() {}
    }

    static let walkable: Set<String> = [
        "footway", "path", "pedestrian", "steps", "living_street", "residential", "service", "track", "crossing",
        "cycleway", "bridleway", "corridor", "elevator", "platform", "unclassified", "tertiary", "tertiary_link",
        "secondary", "secondary_link", "primary", "primary_link", "road",
    ]

    /// Loads `file`. Any bytes are safe (libxml2 through ``XMLEventReader``): XML broken before any way was read is
    /// an error naming the file and line; broken after, the rest is ignored with a warning.
    public static func load(file: String, options: Options = Options()) throws -> WalkingGraph {
        let reader = Reader(options: options)
        let events = XMLEventReader(
            start: { name, attributes, _ in reader.start(name, attributes) },
            end: { name, _ in reader.end(name) })
        do {
            try events.read(file: file)
        } catch {
            if error.line == 0 { throw RoutingError.providerFailed(reason: "\(file): \(error.reason)") }
            if reader.ways.isEmpty {
                throw RoutingError.providerFailed(reason: "\(file): not OSM XML (\(error))")
            }
            reader.warnings.append("\(file): XML broken at \(error); the rest is ignored")
        }
        return reader.graph(file: file)
    }

    final class Reader {
        let options: Options
        var coordinates: [Int64: Coordinate] = [:]
        var ways: [(nodes: [Int64], name: String?)] = []
        var warnings: [String] = []
        private var badNodes = 0
        private var inWay = false
        private var wayNodes: [Int64] = []
        private var wayTags: [String: String] = [:]

        init(options: Options) {
            self.options = options
        }

        func start(_ name: String, _ attributes: [String: String]) {
            switch name {
            case "node":
                guard let id = attributes["id"].flatMap(Int64.init) else { return }
                guard let lat = attributes["lat"].flatMap(Double.init),
                    let lon = attributes["lon"].flatMap(Double.init),
                    lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180
                else {
                    self.badNodes += 1
                    return
                }
                self.coordinates[id] = Coordinate(latitude: lat, longitude: lon)
            case "way":
                self.inWay = true
                self.wayNodes = []
                self.wayTags = [:]
            case "nd" where self.inWay:
                if let ref = attributes["ref"].flatMap(Int64.init) { self.wayNodes.append(ref) }
            case "tag" where self.inWay:
                if let key = attributes["k"], let value = attributes["v"] { self.wayTags[key] = value }
            default:
                break
            }
        }

        func end(_ name: String) {
            guard name == "way" else { return }
            self.inWay = false
            guard self.isWalkable(self.wayTags) else { return }
            self.ways.append((self.wayNodes, self.wayTags["name"] ?? self.wayTags["ref"]))
        }

        func isWalkable(_ tags: [String: String]) -> Bool {
            guard let highway = tags["highway"] else { return false }
            let foot = tags["foot"]
            let footAllowed = foot == "yes" || foot == "designated" || foot == "permissive"
            if foot == "no" || foot == "private" { return false }
            if let access = tags["access"], access == "no" || access == "private", !footAllowed { return false }
            if highway == "steps" && self.options.avoidSteps { return false }
            return Self.walkableHighway(highway) || footAllowed
        }

        static func walkableHighway(_ highway: String) -> Bool { OSMLoader.walkable.contains(highway) }

        func graph(file: String) -> WalkingGraph {
            var index: [Int64: Int32] = [:]
            var nodes: [Coordinate] = []
            var names: [String] = []
            var nameIndex: [String: Int32] = [:]
            var edges: [(a: Int32, b: Int32, name: Int32)] = []
            var dangling = 0, shortWays = 0
            for way in self.ways {
                let usable = way.nodes.compactMap { id -> Int32? in
                    guard let coordinate = self.coordinates[id] else {
                        dangling += 1
                        return nil
                    }
                    if let existing = index[id] { return existing }
                    let new = Int32(nodes.count)
                    index[id] = new
                    nodes.append(coordinate)
                    return new
                }
                guard usable.count >= 2 else {
                    shortWays += 1
                    continue
                }
                var name: Int32 = -1
                if let text = way.name {
                    if let existing = nameIndex[text] {
                        name = existing
                    } else {
                        name = Int32(names.count)
                        nameIndex[text] = name
                        names.append(text)
                    }
                }
                for (a, b) in zip(usable, usable.dropFirst()) where a != b { edges.append((a, b, name)) }
            }
            var warnings = self.warnings
            if self.badNodes > 0 { warnings.append("\(file): \(self.badNodes) node(s) with bad coordinates skipped") }
            if dangling > 0 { warnings.append("\(file): \(dangling) reference(s) to missing nodes skipped") }
            if shortWays > 0 {
                warnings.append("\(file): \(shortWays) walkable way(s) with fewer than two usable nodes skipped")
            }
            return WalkingGraph(nodes: nodes, edges: edges, names: names, warnings: warnings)
        }
    }
}
