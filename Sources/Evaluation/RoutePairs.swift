public import MapLogic
public import NavCore

/// Start and destination pairs drawn from a map, for evaluating guidance on a city of one's own: the middles of
/// segments of the map's largest piece of network (within `radiusMeters` of `near`, when given), paired where the offline router's
/// walking route between them is `minimumMeters`…`maximumMeters` long. Seeded: the same map and seed give the same
/// pairs.
public enum RoutePairs {
    public struct Pair: Sendable, Equatable {
        public var origin: Coordinate
        public var destination: Coordinate
        /// The offline router's walking route between them [metres].
        public var lengthMeters: Double
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func draw(
        from graph: WalkingGraph, count: Int, seed: UInt64, minimumMeters: Double, maximumMeters: Double,
        near: Coordinate? = nil, radiusMeters: Double = .infinity
    ) throws -> [Pair] {
        let largest = (0..<Int32(graph.nodes.count)).map { graph.pieceSize(ofNode: $0) }.max() ?? 0
        // The middle of each way's segment of the largest piece (in the area): a place on a street, as an address is.
        let places = graph.segments.compactMap { segment -> Coordinate? in
            guard graph.pieceSize(ofNode: segment.a) == largest else { return nil }
            let a = graph.nodes[Int(segment.a)], b = graph.nodes[Int(segment.b)]
            let middle = Coordinate(latitude: (a.latitude + b.latitude) / 2, longitude: (a.longitude + b.longitude) / 2)
            return near.map { FlatProjection.distance($0, middle) <= radiusMeters } ?? true ? middle : nil
        }
        guard places.count >= 2 else {
            throw Failure(description: "fewer than two ways of the map's largest network in the area")
        }
        var random = SeededGenerator(seed: seed)
        var pairs: [Pair] = []
        var attempts = 0
        while pairs.count < count {
            attempts += 1
            guard attempts <= 200 * max(1, count) else {
                throw Failure(
                    description:
                        "found \(pairs.count) of \(count) pairs \(Int(minimumMeters))–\(Int(maximumMeters)) m apart by the ways in \(attempts - 1) draws"
                )
            }
            let origin = places[Int(random.next() % UInt64(places.count))]
            let destination = places[Int(random.next() % UInt64(places.count))]
            // A straight line longer than the longest route cannot be walked within it.
            guard FlatProjection.distance(origin, destination) <= maximumMeters,
                let plan = try? graph.shortestRoute(from: origin, to: destination)
            else { continue }
            let length = Polyline(plan.points).lengthMeters
            guard length >= minimumMeters, length <= maximumMeters else { continue }
            pairs.append(Pair(origin: origin, destination: destination, lengthMeters: length))
        }
        return pairs
    }
}
