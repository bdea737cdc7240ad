import Parsers
import NavCore
import SystemIO
public import MapLogic

/// Reads an OpenStreetMap XML extract into a ``WalkingGraph``.
///
/// Which ways a pedestrian may walk follows the pedestrian engines' foot rules (OSRM's `foot.lua`, Valhalla's
/// pedestrian costing), and where they differ, the safer choice for a walker who cannot see:
/// - Walkable highways: footway, path, pedestrian (also as an area's outline), steps, living_street, residential,
///   service, track, crossing, platform, corridor, unclassified, tertiary, secondary and primary roads with their
///   links, cycleway and bridleway (Valhalla lets pedestrians use these; OSRM only with `foot=yes`), and
///   `railway=platform`, `public_transport=platform`, `man_made=pier`.
/// - Never, whatever the access tags: `highway=construction` or `proposed`, a way with a `construction` or
///   `proposed` tag (being built), `motorroad=yes`, `impassable=yes`.
/// - Motorways: only with an explicit `foot=yes|permissive|designated`. Trunk roads: with that, or a sidewalk
///   (`sidewalk=both|left|right|yes`); OSRM never walks them, Valhalla often does, and a trunk road without a
///   sidewalk is no place for a walker who cannot see.
/// - Access: `foot`, else `access`: `no`, `private`, `agricultural`, `forestry`, `delivery`, `use_sidepath` (use the
///   path beside the road) close a way; `yes`, `permissive`, `designated`, `destination`, `customers` leave it open.
/// - A road whose sidewalks are mapped as their own ways (`sidewalk`, `sidewalk:both|left|right` = `separate`) is
///   walked on those sidewalks, not on the road, unless `foot` opens it.
/// - Barrier nodes that stop a walker (`barrier=wall|fence|yes|hedge|retaining_wall|city_wall`, or a node whose
///   `foot`/`access` closes it) cannot be passed; gates, bollards, kerbs and the like can.
/// Dangling node references, bad coordinates and ways with fewer than two usable nodes are skipped with a warning.
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
        "cycleway", "bridleway", "corridor", "platform", "unclassified", "tertiary", "tertiary_link",
        "secondary", "secondary_link", "primary", "primary_link", "road",
    ]
    /// The walkable highways that are roads (a walker meets them at a kerb); the rest are footways, paths and steps.
    static let roads: Set<String> = [
        "living_street", "residential", "service", "unclassified", "tertiary", "tertiary_link", "secondary",
        "secondary_link", "primary", "primary_link", "trunk", "trunk_link", "road",
    ]
    /// Access values that close a way or node to walkers, and those that open it.
    static let closed: Set<String> = ["no", "private", "agricultural", "forestry", "delivery", "use_sidepath"]
    static let open: Set<String> = ["yes", "permissive", "designated", "destination", "customers", "public"]
    /// Barriers a walker cannot pass.
    static let blockingBarriers: Set<String> = ["wall", "fence", "yes", "hedge", "retaining_wall", "city_wall"]

    /// Loads `file`: OSM XML or PBF, told apart by their first bytes. Any bytes are safe (libxml2 through
    /// ``XMLEventReader``; PBF through a bounds-checked reader): XML broken before any way was read is an error naming
    /// the file and line; broken after, the rest is ignored with a warning.
    public static func load(file: String, options: Options = Options()) throws -> WalkingGraph {
        let head: [UInt8]
        do {
            let input = try InputFile(path: file)
            defer { input.close() }
            head = try input.read(upTo: 64)
        } catch {
            throw RoutingError.providerFailed(reason: "\(file): cannot be read (\(error.reason))")
        }
        if OSMPBF.isPBF(head) { return try self.loadPBF(file: file, options: options) }
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

    /// A PBF file in two streaming passes: the walkable ways first, then only the nodes they use, so that memory
    /// holds the walking network, not the whole map.
    static func loadPBF(file: String, options: Options) throws -> WalkingGraph {
        let reader = Reader(options: options)
        do {
            try OSMPBF.read(file: file, wanted: .ways) { block in
                for way in block.ways { reader.addWay(way.nodes, tags: way.tags) }
            }
            var needed = Set<Int64>(minimumCapacity: reader.ways.count * 8)
            for way in reader.ways { needed.formUnion(way.nodes) }
            try OSMPBF.read(file: file, wanted: .nodes) { block in
                for node in block.nodes where needed.contains(node.id) {
                    reader.addNode(node.id, node.coordinate, tags: node.tags)
                }
            }
        } catch let failure as OSMPBF.Failure {
            throw RoutingError.providerFailed(reason: failure.description)
        }
        return reader.graph(file: file)
    }

    final class Reader {
        let options: Options
        var coordinates: [Int64: Coordinate] = [:]
        var ways: [(nodes: [Int64], name: String?, road: Bool)] = []
        /// Nodes a walker cannot pass.
        var barriers: Set<Int64> = []
        private var nodeID: Int64?
        private var nodeCoordinate = Coordinate(latitude: 0, longitude: 0)
        private var nodeTags: [String: String] = [:]
        var warnings: [String] = []
        var badNodes = 0
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
                self.nodeID = id
                self.nodeCoordinate = Coordinate(
                    latitude: attributes["lat"].flatMap(Double.init) ?? .nan,
                    longitude: attributes["lon"].flatMap(Double.init) ?? .nan)
                self.nodeTags = [:]
            case "tag" where self.nodeID != nil:
                if let key = attributes["k"], let value = attributes["v"] { self.nodeTags[key] = value }
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
            if name == "node", let id = self.nodeID {
                self.addNode(id, self.nodeCoordinate, tags: self.nodeTags)
                self.nodeID = nil
                return
            }
            guard name == "way" else { return }
            self.inWay = false
            self.addWay(self.wayNodes, tags: self.wayTags)
        }

        /// A node: its position, and whether it stops a walker.
        func addNode(_ id: Int64, _ coordinate: Coordinate, tags: [String: String]) {
            guard coordinate.latitude.isFinite, coordinate.longitude.isFinite, abs(coordinate.latitude) <= 90,
                abs(coordinate.longitude) <= 180
            else {
                self.badNodes += 1
                return
            }
            self.coordinates[id] = coordinate
            if Self.isBarrier(tags) { self.barriers.insert(id) }
        }

        /// A way, kept when it is walkable.
        func addWay(_ nodes: [Int64], tags: [String: String]) {
            guard self.isWalkable(tags) else { return }
            self.ways.append(
                (nodes, tags["name"] ?? tags["ref"], tags["highway"].map { OSMLoader.roads.contains($0) } ?? false))
        }

        /// Whether a node stops a walker: a blocking barrier, or closed by `foot` (else `access`).
        static func isBarrier(_ tags: [String: String]) -> Bool {
            if let access = tags["foot"] ?? tags["access"] {
                if OSMLoader.closed.contains(access) { return true }
                if OSMLoader.open.contains(access) { return false }
            }
            return tags["barrier"].map { OSMLoader.blockingBarriers.contains($0) } ?? false
        }

        func isWalkable(_ tags: [String: String]) -> Bool {
            let highway = tags["highway"]
            let isPlatform = tags["railway"] == "platform" || tags["public_transport"] == "platform"
            guard highway != nil || isPlatform || tags["man_made"] == "pier" else { return false }
            // Being built, only planned, or closed for good: never.
            if highway == "construction" || highway == "proposed" || tags["construction"] != nil
                || tags["proposed"] != nil || tags["motorroad"] == "yes" || tags["impassable"] == "yes"
            {
                return false
            }
            if highway == "steps" && self.options.avoidSteps { return false }
            // Access: foot first, then access.
            let foot = tags["foot"]
            if let foot, OSMLoader.closed.contains(foot) { return false }
            let footOpen = foot.map { OSMLoader.open.contains($0) } ?? false
            if !footOpen, let access = tags["access"], OSMLoader.closed.contains(access) { return false }
            if footOpen { return true }
            guard let highway else { return true }  // a platform or a pier
            // Sidewalks mapped as their own ways are walked instead of the road.
            let sidewalks = [tags["sidewalk"], tags["sidewalk:both"], tags["sidewalk:left"], tags["sidewalk:right"]]
            if sidewalks.contains("separate") { return false }
            if highway == "trunk" || highway == "trunk_link" {
                return ["both", "left", "right", "yes"].contains(tags["sidewalk"] ?? "")
            }
            return OSMLoader.walkable.contains(highway)
        }

        func graph(file: String) -> WalkingGraph {
            var index: [Int64: Int32] = [:]
            var nodes: [Coordinate] = []
            var names: [String] = []
            var nameIndex: [String: Int32] = [:]
            var edges: [(a: Int32, b: Int32, name: Int32)] = []
            var roads: [Bool] = []
            var dangling = 0, shortWays = 0
            for way in self.ways {
                // Node ids along the way with their coordinates (dangling references dropped).
                let present = way.nodes.filter { id in
                    guard self.coordinates[id] != nil else {
                        dangling += 1
                        return false
                    }
                    return true
                }
                func node(_ id: Int64) -> Int32 {
                    if let existing = index[id] { return existing }
                    let new = Int32(nodes.count)
                    index[id] = new
                    nodes.append(self.coordinates[id]!)
                    return new
                }
                // A barrier ends every edge at it on a node of that edge's own: nothing passes through it.
                func dead(_ id: Int64) -> Int32 {
                    nodes.append(self.coordinates[id]!)
                    return Int32(nodes.count - 1)
                }
                var pairs: [(Int32, Int32)] = []
                for (a, b) in zip(present, present.dropFirst()) where a != b {
                    pairs.append(
                        (
                            self.barriers.contains(a) ? dead(a) : node(a),
                            self.barriers.contains(b) ? dead(b) : node(b)
                        ))
                }
                guard present.count >= 2 else {
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
                for (a, b) in pairs {
                    edges.append((a, b, name))
                    roads.append(way.road)
                }
            }
            var warnings = self.warnings
            if self.badNodes > 0 { warnings.append("\(file): \(self.badNodes) node(s) with bad coordinates skipped") }
            if dangling > 0 { warnings.append("\(file): \(dangling) reference(s) to missing nodes skipped") }
            if shortWays > 0 {
                warnings.append("\(file): \(shortWays) walkable way(s) with fewer than two usable nodes skipped")
            }
            return WalkingGraph(nodes: nodes, edges: edges, names: names, warnings: warnings, roads: roads)
        }
    }
}
