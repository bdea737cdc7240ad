public import NavCore
/// A walking network: nodes, undirected edges with their lengths and street names, and a grid index of
/// the edges for snapping points to the nearest way.
public struct WalkingGraph: Sendable {
    /// Node positions.
    public let nodes: [Coordinate]
    /// Edges leaving node i are `edgeTargets[edgeStart[i]..<edgeStart[i + 1]]` (compressed rows).
    let edgeStart: [Int32]
    let edgeTargets: [Int32]
    let edgeLengths: [Double]
    let edgeNames: [Int32]
    /// Whether the edge in each slot is a road (a street a walker crosses at a kerb) rather than a footway, path or
    /// steps; all false when the map's ways were not classified.
    let edgeRoads: [Bool]
    /// Distinct street names; index −1 is "no name".
    public let names: [String]
    /// Undirected segments (node a, node b, name) for snapping.
    public let segments: [(a: Int32, b: Int32, name: Int32)]
    private let grid: [Int64: [Int32]]
    private static let cellDegrees = 0.002
    /// The connected piece of the network each node belongs to (an index; equal indices are connected).
    let component: [Int32]
    /// Each piece's size [segments].
    let componentSize: [Int32: Int]

    /// What loading found wrong and worked around.
    public let warnings: [String]

    /// Number of undirected edges.
    public var edgeCount: Int { self.segments.count }

    /// Whether each of ``segments`` is a road rather than a footway, path or steps (empty: not known).
    public let segmentRoads: [Bool]

    /// Builds a graph from its nodes, its edges (node indices and a name index, −1 for none), the names and what loading
    /// warned; `roads`, when given, says for each edge whether it is a road (else a footway, path or steps).
    public init(
        nodes: [Coordinate], edges: [(a: Int32, b: Int32, name: Int32)], names: [String], warnings: [String],
        roads: [Bool] = []
    ) {
        self.nodes = nodes
        self.segmentRoads = roads.count == edges.count ? roads : []
        self.names = names
        self.warnings = warnings
        self.segments = edges
        var degree = [Int32](repeating: 0, count: nodes.count + 1)
        for edge in edges {
            degree[Int(edge.a)] += 1
            degree[Int(edge.b)] += 1
        }
        var start = [Int32](repeating: 0, count: nodes.count + 1)
        for index in 0..<nodes.count { start[index + 1] = start[index] + degree[index] }
        var fill = start
        var targets = [Int32](repeating: 0, count: edges.count * 2)
        var lengths = [Double](repeating: 0, count: edges.count * 2)
        var edgeNames = [Int32](repeating: -1, count: edges.count * 2)
        var edgeRoads = [Bool](repeating: false, count: edges.count * 2)
        var grid: [Int64: [Int32]] = [:]
        for (index, edge) in edges.enumerated() {
            let length = FlatProjection.distance(nodes[Int(edge.a)], nodes[Int(edge.b)])
            for (from, to) in [(edge.a, edge.b), (edge.b, edge.a)] {
                let slot = Int(fill[Int(from)])
                targets[slot] = to
                lengths[slot] = length
                edgeNames[slot] = edge.name
                edgeRoads[slot] = self.segmentRoads.isEmpty ? false : self.segmentRoads[index]
                fill[Int(from)] += 1
            }
            for cell in Self.cells(nodes[Int(edge.a)], nodes[Int(edge.b)]) {
                grid[cell, default: []].append(Int32(index))
            }
        }
        let component = Self.components(nodeCount: nodes.count, edges: edges)
        self.component = component
        self.componentSize = edges.reduce(into: [:]) { $0[component[Int($1.a)], default: 0] += 1 }
        self.edgeStart = start
        self.edgeTargets = targets
        self.edgeLengths = lengths
        self.edgeNames = edgeNames
        self.edgeRoads = edgeRoads
        self.grid = grid
    }

    /// The nodes joined to `node` by an edge, each once, with the edge's length [metres] (the shortest, when
    /// two ways join the same pair of nodes).
    public func neighbours(of node: Int32) -> [(node: Int32, lengthMeters: Double)] {
        var result: [(node: Int32, lengthMeters: Double)] = []
        for slot in Int(self.edgeStart[Int(node)])..<Int(self.edgeStart[Int(node) + 1]) {
            let next = self.edgeTargets[slot]
            guard next != node else { continue }
            if let index = result.firstIndex(where: { $0.node == next }) {
                result[index].lengthMeters = min(result[index].lengthMeters, self.edgeLengths[slot])
            } else {
                result.append((next, self.edgeLengths[slot]))
            }
        }
        return result
    }

    /// The slot of the edge from `node` to its neighbour `next`, nil when they are not joined.
    private func slot(from node: Int32, to next: Int32) -> Int? {
        guard node >= 0, Int(node) < self.nodes.count else { return nil }
        return (Int(self.edgeStart[Int(node)])..<Int(self.edgeStart[Int(node) + 1])).first {
            self.edgeTargets[$0] == next
        }
    }

    /// The street name of the way from `node` to its neighbour `next`, nil when it has none.
    public func streetName(from node: Int32, to next: Int32) -> String? {
        guard let slot = self.slot(from: node, to: next), self.edgeNames[slot] >= 0 else { return nil }
        return self.names[Int(self.edgeNames[slot])]
    }

    /// Whether the way from `node` to its neighbour `next` is a road (false for a footway, path or steps, and when the
    /// map's ways were not classified).
    public func isRoad(from node: Int32, to next: Int32) -> Bool {
        self.slot(from: node, to: next).map { self.edgeRoads[$0] } ?? false
    }

    /// Which of `points` (a route's geometry) are junctions of the network, where three or more ways meet: a node
    /// of the graph within `withinMeters` of the point with three or more neighbours. Their indices, in order.
    public func junctions(among points: [Coordinate], withinMeters: Double = 0.5) -> [Int] {
        self.routeJunctions(along: points, withinMeters: withinMeters).map(\.index)
    }

    /// The junctions a route passes (its points within `withinMeters` of a node where three or more ways meet), each
    /// with the directions of all the ways that leave it, judged `branchMeters` along each (up to the next junction)
    /// as a walker standing there judges a way, the way the route arrives by and the way it leaves by.
    public func routeJunctions(
        along points: [Coordinate], withinMeters: Double = 0.5, branchMeters: Double = 8
    ) -> [RouteJunction] {
        points.indices.compactMap { index in
            guard let snap = self.snap(points[index], maximumMeters: withinMeters) else { return nil }
            let segment = self.segments[snap.segment]
            guard
                let node = [segment.a, segment.b].first(where: {
                    FlatProjection.distance(self.nodes[Int($0)], points[index]) <= withinMeters
                        && self.neighbours(of: $0).count >= 3
                })
            else { return nil }
            let centre = self.nodes[Int(node)]
            let ways = self.neighbours(of: node)
            let bearings = ways.map {
                FlatProjection.bearing(from: centre, to: self.point(from: node, through: $0.node, meters: branchMeters))
            }
            // The way a neighbouring point of the route lies on: the nearest of the junction's own edges, within a
            // metre.
            func way(to point: Coordinate) -> Int? {
                guard
                    let snap = self.snap(
                        point, maximumMeters: max(1, withinMeters),
                        where: { self.segments[$0].a == node || self.segments[$0].b == node })
                else { return nil }
                let edge = self.segments[snap.segment]
                let neighbour = edge.a == node ? edge.b : edge.a
                return ways.firstIndex { $0.node == neighbour }
            }
            let leaving = index + 1 < points.count ? way(to: points[index + 1]) : nil
            return RouteJunction(
                index: index, branchBearingsDegrees: bearings,
                arrivingBranch: index > 0 ? way(to: points[index - 1]) : nil,
                routeBranch: leaving, routeStreet: leaving.flatMap { self.streetName(from: node, to: ways[$0].node) })
        }
    }

    /// The point `meters` along the way that leaves `node` toward its neighbour `next`, following the way through
    /// nodes where only two ways meet (a bend, or where one way becomes the next), and stopping at a junction or a
    /// dead end.
    public func point(from node: Int32, through next: Int32, meters: Double) -> Coordinate {
        var previous = node, current = next, left = meters
        var visited: Set<Int32> = [node]
        while true {
            let a = self.nodes[Int(previous)], b = self.nodes[Int(current)]
            let step = FlatProjection.distance(a, b)
            if step >= left {
                let plane = FlatProjection(origin: a)
                let end = plane.project(b), f = step > 0 ? left / step : 0
                return plane.unproject(ENU(east: end.east * f, north: end.north * f))
            }
            left -= step
            let onward = self.neighbours(of: current).filter { $0.node != previous }
            guard onward.count == 1, visited.insert(current).inserted else { return b }
            previous = current
            current = onward[0].node
        }
    }

    /// The size of the connected piece of network `node` belongs to [segments].
    public func pieceSize(ofNode node: Int32) -> Int { self.componentSize[self.component[Int(node)]] ?? 0 }

    /// Connected pieces by union–find: each node's representative.
    private static func components(nodeCount: Int, edges: [(a: Int32, b: Int32, name: Int32)]) -> [Int32] {
        var parent = (0..<Int32(nodeCount)).map { $0 }
        func root(_ node: Int32) -> Int32 {
            var node = node
            while parent[Int(node)] != node {
                parent[Int(node)] = parent[Int(parent[Int(node)])]
                node = parent[Int(node)]
            }
            return node
        }
        for edge in edges {
            let a = root(edge.a), b = root(edge.b)
            if a != b { parent[Int(max(a, b))] = min(a, b) }
        }
        return (0..<Int32(nodeCount)).map { root($0) }
    }

    /// The connected piece of the network a segment belongs to.
    func component(ofSegment index: Int) -> Int32 { self.component[Int(self.segments[index].a)] }

    private static func cell(_ latitude: Double, _ longitude: Double) -> (Int64, Int64) {
        (Int64((latitude / self.cellDegrees).rounded(.down)), Int64((longitude / self.cellDegrees).rounded(.down)))
    }

    private static func key(_ row: Int64, _ column: Int64) -> Int64 { row &* 4_000_003 &+ column }

    /// The grid cells a segment's bounding box touches.
    private static func cells(_ a: Coordinate, _ b: Coordinate) -> [Int64] {
        let (r1, c1) = self.cell(min(a.latitude, b.latitude), min(a.longitude, b.longitude))
        let (r2, c2) = self.cell(max(a.latitude, b.latitude), max(a.longitude, b.longitude))
        var keys: [Int64] = []
        for row in r1...r2 { for column in c1...c2 { keys.append(self.key(row, column)) } }
        return keys
    }

    /// A point attached to the network: the segment, how far along it (0 at its first node, 1 at its second), how
    /// far the point was from it [metres], and the attached point.
    public typealias Snap = (segment: Int, fraction: Double, distance: Double, point: Coordinate)

    /// The nearest point on any edge to `point` (on an edge that `accepts`, when given), within `maximumMeters`.
    public func snap(
        _ point: Coordinate, maximumMeters: Double, where accepts: ((Int) -> Bool)? = nil
    ) -> Snap? {
        let plane = FlatProjection(origin: point)
        let (row, column) = Self.cell(point.latitude, point.longitude)
        let rings = Int((maximumMeters / (Self.cellDegrees * 111_000 * 0.5)).rounded(.up)) + 1
        var best: (segment: Int, fraction: Double, distance: Double, point: Coordinate)?
        var seen = Set<Int32>()
        for ring in 0...rings {
            for r in (row - Int64(ring))...(row + Int64(ring)) {
                for c in (column - Int64(ring))...(column + Int64(ring))
                where max(abs(r - row), abs(c - column)) == Int64(ring) {
                    for index in self.grid[Self.key(r, c)] ?? []
                    where seen.insert(index).inserted && accepts?(Int(index)) ?? true {
                        let snap = self.nearest(onSegment: index, plane: plane)
                        if snap.distance <= maximumMeters, best == nil || snap.distance < best!.distance { best = snap }
                    }
                }
            }
            // Anything in a farther ring is at least this far away.
            if let best, best.distance < Double(ring) * Self.cellDegrees * 111_000 * 0.5 { break }
        }
        return best
    }

    /// The nearest point of a segment to the origin of `plane` (the point being snapped).
    private func nearest(onSegment index: Int32, plane: FlatProjection) -> Snap {
        let segment = self.segments[Int(index)]
        let a = plane.project(self.nodes[Int(segment.a)]), b = plane.project(self.nodes[Int(segment.b)])
        let de = b.east - a.east, dn = b.north - a.north
        let length2 = de * de + dn * dn
        let t = length2 > 0 ? min(1, max(0, -(a.east * de + a.north * dn) / length2)) : 0
        let e = a.east + t * de, n = a.north + t * dn
        return (Int(index), t, (e * e + n * n).squareRoot(), plane.unproject(ENU(east: e, north: n)))
    }

    /// The nearest point of every segment within `maximumMeters` of `point`, nearest first.
    public func snaps(near point: Coordinate, maximumMeters: Double) -> [Snap] {
        let plane = FlatProjection(origin: point)
        let (row, column) = Self.cell(point.latitude, point.longitude)
        let rings = Int((maximumMeters / (Self.cellDegrees * 111_000 * 0.5)).rounded(.up)) + 1
        var result: [Snap] = []
        var seen = Set<Int32>()
        for r in (row - Int64(rings))...(row + Int64(rings)) {
            for c in (column - Int64(rings))...(column + Int64(rings)) {
                for index in self.grid[Self.key(r, c)] ?? [] where seen.insert(index).inserted {
                    let snap = self.nearest(onSegment: index, plane: plane)
                    if snap.distance <= maximumMeters { result.append(snap) }
                }
            }
        }
        return result.sorted { $0.distance < $1.distance }
    }

    /// Where to attach the start and the destination so that one is reachable from the other: the nearest ways
    /// when they are connected. When they are not (a footway whose link is missing from the map, a courtyard's
    /// paths), one end moves to a way of the other end's piece of network, within `connectMeters` farther than its
    /// nearest way: the end on the smaller piece moves (pieces cut off from the rest are small), the nearer move when
    /// both pieces are the same size. So a small piece next to the start does not strand the walker.
    public func attach(
        _ start: Coordinate, _ destination: Coordinate, snapMeters: Double = 250, connectMeters: Double = 50
    ) throws(RoutingError) -> (from: Snap, to: Snap) {
        guard let from = self.snap(start, maximumMeters: snapMeters) else {
            throw .noWayNear(point: start, withinMeters: snapMeters, which: "start")
        }
        guard let to = self.snap(destination, maximumMeters: snapMeters) else {
            throw .noWayNear(point: destination, withinMeters: snapMeters, which: "destination")
        }
        let startPiece = self.component(ofSegment: from.segment), endPiece = self.component(ofSegment: to.segment)
        if startPiece == endPiece { return (from, to) }
        // The start moved onto the destination's piece, or the destination onto the start's.
        let moveStart = self.snap(
            start, maximumMeters: from.distance + connectMeters, where: { self.component(ofSegment: $0) == endPiece })
        let moveEnd = self.snap(
            destination, maximumMeters: to.distance + connectMeters,
            where: { self.component(ofSegment: $0) == startPiece })
        switch (moveStart, moveEnd) {
        case let (start?, end?):
            let startSize = self.componentSize[startPiece] ?? 0, endSize = self.componentSize[endPiece] ?? 0
            if startSize != endSize { return startSize < endSize ? (start, to) : (from, end) }
            return start.distance - from.distance <= end.distance - to.distance ? (start, to) : (from, end)
        case let (start?, nil): return (start, to)
        case let (nil, end?): return (from, end)
        case (nil, nil):
            let nearest = self.snap(start, maximumMeters: 5000, where: { self.component(ofSegment: $0) == endPiece })
            throw .notConnected(
                withinMeters: connectMeters, nearestConnectedMeters: nearest?.distance, startWayMeters: from.distance)
        }
    }

    /// The shortest walking route between two points (A*, with straight-line distance as the heuristic), from and
    /// to the nearest ways that connect them (``attach(_:_:snapMeters:connectMeters:)``).
    public func shortestRoute(
        from start: Coordinate, to destination: Coordinate, snapMeters: Double = 250, connectMeters: Double = 50
    ) throws(RoutingError) -> RoutePlan {
        let (from, to) = try self.attach(start, destination, snapMeters: snapMeters, connectMeters: connectMeters)
        let source = Int32(self.nodes.count), target = Int32(self.nodes.count + 1)
        let fromSegment = self.segments[from.segment], toSegment = self.segments[to.segment]
        func segmentLength(_ s: (a: Int32, b: Int32, name: Int32)) -> Double {
            FlatProjection.distance(self.nodes[Int(s.a)], self.nodes[Int(s.b)])
        }
        // Virtual edges from the snapped start into its segment's ends, and from the destination's segment ends.
        let fromLength = segmentLength(fromSegment), toLength = segmentLength(toSegment)
        var startEdges: [(Int32, Double)] = [
            (fromSegment.a, from.fraction * fromLength), (fromSegment.b, (1 - from.fraction) * fromLength),
        ]
        let endEdges: [Int32: Double] = [
            toSegment.a: to.fraction * toLength, toSegment.b: (1 - to.fraction) * toLength,
        ]
        if from.segment == to.segment {
            startEdges.append((target, abs(to.fraction - from.fraction) * fromLength))
        }

        let count = self.nodes.count + 2
        var distance = [Double](repeating: .infinity, count: count)
        var previous = [Int32](repeating: -1, count: count)
        var previousName = [Int32](repeating: -1, count: count)
        var closed = [Bool](repeating: false, count: count)
        var heap = MinHeap()
        func position(_ node: Int32) -> Coordinate {
            node == source ? from.point : (node == target ? to.point : self.nodes[Int(node)])
        }
        let goal = to.point
        func heuristic(_ node: Int32) -> Double { FlatProjection.distance(position(node), goal) }
        distance[Int(source)] = 0
        heap.push(heuristic(source), source)
        while let (_, node) = heap.pop() {
            if closed[Int(node)] { continue }
            closed[Int(node)] = true
            if node == target { break }
            var neighbours: [(Int32, Double, Int32)] = []
            if node == source {
                neighbours = startEdges.map { ($0.0, $0.1, fromSegment.name) }
            } else {
                let range = Int(self.edgeStart[Int(node)])..<Int(self.edgeStart[Int(node) + 1])
                for slot in range {
                    neighbours.append((self.edgeTargets[slot], self.edgeLengths[slot], self.edgeNames[slot]))
                }
                if let toTarget = endEdges[node] { neighbours.append((target, toTarget, toSegment.name)) }
            }
            for (next, length, name) in neighbours where !closed[Int(next)] {
                let candidate = distance[Int(node)] + length
                if candidate < distance[Int(next)] {
                    distance[Int(next)] = candidate
                    previous[Int(next)] = node
                    previousName[Int(next)] = name
                    heap.push(candidate + heuristic(next), next)
                }
            }
        }
        guard distance[Int(target)].isFinite else { throw .unreachable }
        var points: [Coordinate] = []
        var names: [String?] = []
        var node = target
        while node != -1 {
            points.append(position(node))
            if previous[Int(node)] != -1 {
                let name = previousName[Int(node)]
                names.append(name >= 0 ? self.names[Int(name)] : nil)
            }
            node = previous[Int(node)]
        }
        points.reverse()
        names.reverse()
        // Drop the zero-length hops at the ends (a snap onto a node).
        var cleanPoints = [points[0]], cleanNames: [String?] = []
        for index in 1..<points.count
        where FlatProjection.distance(points[index], cleanPoints.last!) > 0.01
            || index == points.count - 1 && cleanPoints.count == 1
        {
            cleanPoints.append(points[index])
            cleanNames.append(names[index - 1])
        }
        return RoutePlan(points: cleanPoints, segmentNames: cleanNames, reportedLengthMeters: distance[Int(target)])
    }
}

/// A binary min-heap of (priority, node).
struct MinHeap {
    private var items: [(Double, Int32)] = []

    mutating func push(_ priority: Double, _ node: Int32) {
        self.items.append((priority, node))
        var child = self.items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.items[child].0 < self.items[parent].0 else { break }
            self.items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Double, Int32)? {
        guard !self.items.isEmpty else { return nil }
        let top = self.items[0]
        let last = self.items.removeLast()
        if !self.items.isEmpty {
            self.items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < self.items.count && self.items[left].0 < self.items[smallest].0 { smallest = left }
                if right < self.items.count && self.items[right].0 < self.items[smallest].0 { smallest = right }
                if smallest == parent { break }
                self.items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}

/// A junction a route passes through (three or more walkable ways meet there), as the walking graph knows it.
public struct RouteJunction: Sendable, Equatable {
    /// Which of the route's points it is.
    public var index: Int
    /// The directions of the ways that leave it, each judged some metres along the way [degrees, true north,
    /// clockwise]; empty when only the junction's place is known.
    public var branchBearingsDegrees: [Double]
    /// The way the route arrives by (an index into ``branchBearingsDegrees``); nil at its start or when unknown.
    public var arrivingBranch: Int?
    /// The way the route leaves by; nil at its end or when unknown.
    public var routeBranch: Int?
    /// The street name of the way the route leaves by, when the map has one.
    public var routeStreet: String?

    /// A junction at the route's point `index`, with the ways that leave it when they are known.
    public init(
        index: Int, branchBearingsDegrees: [Double] = [], arrivingBranch: Int? = nil, routeBranch: Int? = nil,
        routeStreet: String? = nil
    ) {
        self.index = index
        self.branchBearingsDegrees = branchBearingsDegrees
        self.arrivingBranch = arrivingBranch
        self.routeBranch = routeBranch
        self.routeStreet = routeStreet
    }
}

/// A route provider that routes over a walking network it holds (the offline map router): the route stage finds the
/// route's junctions on that network, and can place the walker on its ways. A stage asks its providers for this
/// capability, not for a plugin's type, so another map-based router offers the same by conforming.
public protocol WalkingGraphRouter: RouteProvider {
    /// The walking network its routes follow.
    var graph: WalkingGraph { get }
}
