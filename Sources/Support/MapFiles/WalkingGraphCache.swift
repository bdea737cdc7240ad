#if canImport(Glibc)
import Glibc
#endif
import NavCore
import SystemIO
public import MapLogic

/// A compiled walking graph kept beside its map (`MAP.walking-graph`), so that a route stage starts in a fraction of
/// the time reading the map takes. The cache names the map's size and modification time, the loader's rules and
/// options; when any differs, or the cache is damaged, the map is read again and the cache written anew. Where the
/// map's folder is not writable, the cache goes to `$XDG_CACHE_HOME/hapticnav` (or `~/.cache/hapticnav`).
public enum WalkingGraphCache {
    /// How a graph was had.
    public enum Source: String, Sendable {
        case cache, map
    }

    /// Bump when the graph or the walkability rules change, so that old caches are not trusted.
    static let formatVersion: UInt32 = 3
    private static let magic = Array("HNWG".utf8)

    /// The graph of `map`: from its cache when the cache matches, else from the map (then cached).
    public static func load(
        map: String, options: OSMLoader.Options = .init()
    ) throws -> (graph: WalkingGraph, source: Source, cacheFile: String?) {
        let key = try self.key(map: map, options: options)
        for candidate in self.candidates(for: map) {
            if let graph = self.read(candidate, key: key) { return (graph, .cache, candidate) }
        }
        let graph = try OSMLoader.load(file: map, options: options)
        for candidate in self.candidates(for: map) where self.write(graph, key: key, to: candidate) {
            return (graph, .map, candidate)
        }
        return (graph, .map, nil)
    }

    /// Where a map's cache may be: beside it, then in the user's cache folder.
    static func candidates(for map: String) -> [String] {
        var list = [map + ".walking-graph"]
        func variable(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let base = variable("XDG_CACHE_HOME") ?? variable("HOME").map({ $0 + "/.cache" }) {
            let flat = Paths.absolute(map).map { $0 == "/" ? "_" : $0 }
            list.append(base + "/hapticnav/" + String(flat) + ".walking-graph")
        }
        return list
    }

    /// What the cache must match: the map's size and modification time, the format and the options.
    private static func key(map: String, options: OSMLoader.Options) throws -> [UInt64] {
        var info = stat()
        guard stat(map, &info) == 0 else {
            throw RoutingError.providerFailed(reason: "\(map): cannot be read (\(String(cString: strerror(errno))))")
        }
        return [
            UInt64(self.formatVersion), UInt64(bitPattern: Int64(info.st_size)),
            UInt64(bitPattern: Int64(info.st_mtim.tv_sec)), UInt64(bitPattern: Int64(info.st_mtim.tv_nsec)),
            options.avoidSteps ? 1 : 0,
        ]
    }

    static func write(_ graph: WalkingGraph, key: [UInt64], to file: String) -> Bool {
        var bytes = self.magic
        func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        func i32(_ value: Int32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        func f64(_ value: Double) { u64(value.bitPattern) }
        func string(_ text: String) {
            let utf8 = Array(text.utf8)
            u64(UInt64(utf8.count))
            bytes += utf8
        }
        for value in key { u64(value) }
        u64(UInt64(graph.nodes.count))
        for node in graph.nodes {
            f64(node.latitude)
            f64(node.longitude)
        }
        u64(UInt64(graph.segments.count))
        for segment in graph.segments {
            i32(segment.a)
            i32(segment.b)
            i32(segment.name)
        }
        // Road or not, one byte an edge (the map's classes, for junctions' kinds).
        u64(UInt64(graph.segmentRoads.count))
        bytes += graph.segmentRoads.map { $0 ? 1 : 0 }
        u64(UInt64(graph.names.count))
        for name in graph.names { string(name) }
        u64(UInt64(graph.warnings.count))
        for warning in graph.warnings { string(warning) }
        u64(fnv1a64(bytes))
        // Written whole to a temporary file, then renamed: a reader never sees half a cache.
        let temporary = file + ".\(getpid()).tmp"
        guard let output = try? OutputFile(path: temporary, createFolders: true) else { return false }
        let written = output.write(bytes)
        output.close()
        guard written, rename(temporary, file) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    static func read(_ file: String, key: [UInt64]) -> WalkingGraph? {
        guard let whole = try? InputFile.contents(of: file), whole.count >= 12, Array(whole[0..<4]) == self.magic
        else { return nil }
        // The last 8 bytes are a checksum of the rest: a cache damaged anywhere is read again from the map.
        let bytes = Array(whole.dropLast(8))
        var stored: UInt64 = 0
        for index in 0..<8 { stored |= UInt64(whole[whole.count - 8 + index]) << (8 * UInt64(index)) }
        guard stored == fnv1a64(bytes) else { return nil }
        var offset = 4
        func u64() -> UInt64? {
            guard bytes.count - offset >= 8 else { return nil }
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            offset += 8
            return value
        }
        func i32() -> Int32? {
            guard bytes.count - offset >= 4 else { return nil }
            var value: UInt32 = 0
            for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
            offset += 4
            return Int32(bitPattern: value)
        }
        func count(_ elementBytes: Int) -> Int? {
            guard let value = u64(), value <= UInt64((bytes.count - offset) / max(1, elementBytes)) else { return nil }
            return Int(value)
        }
        func string() -> String? {
            guard let length = count(1) else { return nil }
            defer { offset += length }
            return String(decoding: bytes[offset..<(offset + length)], as: UTF8.self)
        }
        for expected in key {
            guard u64() == expected else { return nil }
        }
        guard let nodeCount = count(16) else { return nil }
        var nodes: [Coordinate] = []
        nodes.reserveCapacity(nodeCount)
        for _ in 0..<nodeCount {
            guard let lat = u64(), let lon = u64() else { return nil }
            nodes.append(Coordinate(latitude: Double(bitPattern: lat), longitude: Double(bitPattern: lon)))
        }
        guard let segmentCount = count(12) else { return nil }
        var segments: [(a: Int32, b: Int32, name: Int32)] = []
        segments.reserveCapacity(segmentCount)
        for _ in 0..<segmentCount {
            guard let a = i32(), let b = i32(), let name = i32() else { return nil }
            segments.append((a, b, name))
        }
        guard let roadCount = count(1), roadCount == 0 || roadCount == segmentCount else { return nil }
        let roads = bytes[offset..<(offset + roadCount)].map { $0 != 0 }
        offset += roadCount
        guard let nameCount = count(8) else { return nil }
        var names: [String] = []
        for _ in 0..<nameCount {
            guard let name = string() else { return nil }
            names.append(name)
        }
        guard let warningCount = count(8) else { return nil }
        var warnings: [String] = []
        for _ in 0..<warningCount {
            guard let warning = string() else { return nil }
            warnings.append(warning)
        }
        // A damaged cache must not crash the loader: every index in range.
        guard offset == bytes.count,
            segments.allSatisfy({
                $0.a >= 0 && Int($0.a) < nodeCount && $0.b >= 0 && Int($0.b) < nodeCount && $0.name >= -1
                    && Int($0.name) < nameCount
            }), nodes.allSatisfy({ $0.latitude.isFinite && $0.longitude.isFinite })
        else { return nil }
        return WalkingGraph(nodes: nodes, edges: segments, names: names, warnings: warnings, roads: roads)
    }
}
