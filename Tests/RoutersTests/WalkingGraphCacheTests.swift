import MapFiles
import Foundation
import NavCore
import Parsers
import Testing
import TestSupport
import MapLogic

@Suite(.serialized) struct WalkingGraphCacheTests {
    private let pbf = repositoryRoot.appendingPathComponent("data/maps/monaco.osm.pbf").path

    /// The bundled PBF, copied to a folder of the test's own.
    private func copy() throws -> String {
        let folder = try scratchFolder()
        let map = folder + "/monaco.osm.pbf"
        try FileManager.default.copyItem(atPath: self.pbf, toPath: map)
        return map
    }

    private func lengths(_ graph: WalkingGraph) throws -> [Double] {
        let pairs = [
            (
                Coordinate(latitude: 43.7319471, longitude: 7.4216106),
                Coordinate(latitude: 43.72977, longitude: 7.416504)
            ),
            (
                Coordinate(latitude: 43.7267149, longitude: 7.3935056),
                Coordinate(latitude: 43.7289397, longitude: 7.4043344)
            ),
        ]
        return try pairs.map { Polyline(try graph.shortestRoute(from: $0.0, to: $0.1).points).lengthMeters }
    }

    @Test func theSecondLoadComesFromTheCacheBesideTheMapAndRoutesTheSame() async throws {
        let map = try self.copy()
        // The loads and walks on a thread of their own (seconds of a core in a debug build); judged here.
        let (first, cached, second, firstLengths, secondLengths, other) = try await offThePool { [self] in
            let first = try WalkingGraphCache.load(map: map)
            let cached = FileManager.default.fileExists(atPath: map + ".walking-graph")
            let second = try WalkingGraphCache.load(map: map)
            // Other options are another graph: not taken from this cache.
            var options = OSMLoader.Options()
            options.avoidSteps = true
            let other = try WalkingGraphCache.load(map: map, options: options).source
            return (first, cached, second, try self.lengths(first.graph), try self.lengths(second.graph), other)
        }
        #expect(first.source == .map)
        #expect(first.cacheFile == map + ".walking-graph")
        #expect(cached, "the first load wrote the cache")
        #expect(second.source == .cache)
        #expect(second.graph.nodes == first.graph.nodes)
        #expect(second.graph.edgeCount == first.graph.edgeCount)
        #expect(second.graph.warnings == first.graph.warnings)
        #expect(secondLengths == firstLengths)
        #expect(other == .map)
    }

    @Test func aChangedMapOrADamagedCacheIsReadAgain() async throws {
        let map = try self.copy()
        let load = { @Sendable in try await offThePool { try WalkingGraphCache.load(map: map) } }
        _ = try await load()
        // The map changes (a new download): its modification time moves on.
        let later = timespec(tv_sec: time(nil) + 60, tv_nsec: 0)
        var times = [later, later]
        _ = utimensat(AT_FDCWD, map, &times, 0)
        #expect(try await load().source == .map, "a changed map is read again")
        #expect(try await load().source == .cache)
        // Damaged caches: cut short, or scribbled over; never a crash, always the map again.
        let cache = map + ".walking-graph"
        let good = try Data(contentsOf: URL(fileURLWithPath: cache))
        for damaged in [
            good.prefix(good.count / 2),
            Data(good.enumerated().map { $0.offset == good.count / 3 ? ~$0.element : $0.element }),
            Data(repeating: 0xFF, count: 100), Data(),
        ] {
            try damaged.store(toFile: cache)
            let (source, lengths) = try await offThePool { [self] in
                let loaded = try WalkingGraphCache.load(map: map)
                return (loaded.source, try self.lengths(loaded.graph))
            }
            #expect(source == .map)
            #expect(lengths.allSatisfy { $0 > 600 })
        }
    }
}
