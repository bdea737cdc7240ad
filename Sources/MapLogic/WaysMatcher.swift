public import NavCore
/// Places a walker on the walking graph as they go: an online (causal) hidden-Markov matcher in the manner of
/// Newson & Krumm (2009), as online map matchers run it, over the ways a blind walker follows.
///
/// Each position's candidates are the nearest points of the ways within reach of it. A candidate is as likely as a
/// position error of its distance is (Gaussian, σ the position's accuracy); a move from one candidate to the next is
/// as likely as the difference between its walking distance over the graph and the straight distance between the two
/// positions is small (exponential, scale β): a walker does not jump across a block between two fixes. Each step keeps,
/// for every candidate, the score of the best path ending there (the forward pass of Viterbi's algorithm); the match is
/// the best candidate now. It uses only what came before, so it adds no delay. A position with no way within reach,
/// or one that no candidate can be reached from, starts the matcher again (the walker left the mapped ways, or the
/// position jumped).
public struct WaysMatcher: Sendable {
    /// Its settings.
    public struct Options: Sendable, Equatable {
        /// Ways farther than this from a position are not candidates [metres]…
        public var searchMeters = 30.0
        /// …nor farther than this many times the position's accuracy, when that is more.
        public var searchAccuracyFactor = 3.0
        /// The position error's σ is the position's accuracy, at least this [metres].
        public var minimumSigmaMeters = 2.0
        /// The scale of the walking-distance difference between two steps [metres].
        public var betaMeters = 3.0
        /// Candidates kept per step, the nearest.
        public var maximumCandidates = 16

        public init() {}
    }

    /// A matched position.
    public struct Match: Sendable, Equatable {
        /// The point on the way.
        public var point: Coordinate
        /// The segment of the graph it is on (an index into ``WalkingGraph/segments``).
        public var segment: Int
        /// How far the position was from it [metres].
        public var distanceMeters: Double
    }

    private struct Candidate {
        var snap: WalkingGraph.Snap
        var score: Double
    }

    public let graph: WalkingGraph
    public let options: Options
    private var candidates: [Candidate] = []
    private var lastPosition: Coordinate?

    public init(graph: WalkingGraph, options: Options = Options()) {
        self.graph = graph
        self.options = options
    }

    /// Starts again: the next position is matched on its own.
    public mutating func reset() {
        self.candidates = []
        self.lastPosition = nil
    }

    /// Matches the next position (of `accuracyMeters`, one σ); nil when no way is within reach. `movedMeters`, when
    /// known (the smoothed speed times the time since the last position), is how far the walker went: a move's
    /// walking distance is compared with it rather than with the straight distance between the two positions, which
    /// position noise lengthens (two positions 6 m either side of a street are 12 m apart for a step of 1.4 m).
    public mutating func match(_ position: Coordinate, accuracyMeters: Double, movedMeters: Double? = nil) -> Match? {
        let sigma = max(self.options.minimumSigmaMeters, accuracyMeters.isFinite ? accuracyMeters : 0)
        // At most twice the search distance: a fix hundreds of metres uncertain places no one on a way.
        let reach = min(
            2 * self.options.searchMeters, max(self.options.searchMeters, self.options.searchAccuracyFactor * sigma))
        let snaps = self.graph.snaps(near: position, maximumMeters: reach)
            .sorted { $0.distance < $1.distance }.prefix(self.options.maximumCandidates)
        guard !snaps.isEmpty else {
            self.reset()
            return nil
        }
        func emission(_ snap: WalkingGraph.Snap) -> Double { -0.5 * (snap.distance / sigma) * (snap.distance / sigma) }
        var next: [Candidate] = []
        if let last = self.lastPosition, !self.candidates.isEmpty {
            let straight = FlatProjection.distance(last, position)
            let moved = movedMeters.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } ?? straight
            let bound = 2 * max(straight, moved) + 4 * reach + 20
            // From each earlier candidate, the walking distances to every new one (one bounded search each).
            var best = [Double](repeating: -.infinity, count: snaps.count)
            for previous in self.candidates {
                let distances = self.graph.walkingDistances(from: previous.snap, to: Array(snaps), boundMeters: bound)
                for (index, walked) in distances.enumerated() where walked.isFinite {
                    let score = previous.score - abs(walked - moved) / self.options.betaMeters
                    if score > best[index] { best[index] = score }
                }
            }
            for (index, snap) in snaps.enumerated() where best[index] > -.infinity {
                next.append(Candidate(snap: snap, score: best[index] + emission(snap)))
            }
        }
        if next.isEmpty {
            // The first position, or one no earlier candidate leads to: start from this one alone.
            next = snaps.map { Candidate(snap: $0, score: emission($0)) }
        }
        // Scores relative to the best, so that they never run away.
        let top = next.map(\.score).max() ?? 0
        for index in next.indices { next[index].score -= top }
        self.candidates = next
        self.lastPosition = position
        let chosen = next.max { $0.score < $1.score }!.snap
        return Match(point: chosen.point, segment: chosen.segment, distanceMeters: chosen.distance)
    }
}

extension WalkingGraph {
    /// The length of a segment [metres].
    func segmentLength(_ index: Int) -> Double {
        let segment = self.segments[index]
        return FlatProjection.distance(self.nodes[Int(segment.a)], self.nodes[Int(segment.b)])
    }

    /// The walking distances over the graph from `start` to each of `targets` (points on segments), infinite for those
    /// farther than `boundMeters` or not reachable.
    public func walkingDistances(from start: Snap, to targets: [Snap], boundMeters: Double) -> [Double] {
        let startSegment = self.segments[start.segment]
        let startLength = self.segmentLength(start.segment)
        var distance: [Int32: Double] = [:]
        var heap = MinHeap()
        for (node, cost) in [
            (startSegment.a, start.fraction * startLength), (startSegment.b, (1 - start.fraction) * startLength),
        ]
        where cost < distance[node] ?? .infinity {
            distance[node] = cost
            heap.push(cost, node)
        }
        var settled = Set<Int32>()
        while let (cost, node) = heap.pop() {
            guard cost <= boundMeters else { break }
            guard settled.insert(node).inserted else { continue }
            for slot in Int(self.edgeStart[Int(node)])..<Int(self.edgeStart[Int(node) + 1]) {
                let next = self.edgeTargets[slot]
                let candidate = cost + self.edgeLengths[slot]
                if candidate < distance[next] ?? .infinity, candidate <= boundMeters {
                    distance[next] = candidate
                    heap.push(candidate, next)
                }
            }
        }
        return targets.map { target in
            if target.segment == start.segment {
                return abs(target.fraction - start.fraction) * startLength
            }
            let segment = self.segments[target.segment]
            let length = self.segmentLength(target.segment)
            let viaA = (distance[segment.a] ?? .infinity) + target.fraction * length
            let viaB = (distance[segment.b] ?? .infinity) + (1 - target.fraction) * length
            let walked = min(viaA, viaB)
            return walked <= boundMeters ? walked : .infinity
        }
    }
}
