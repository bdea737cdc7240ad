/// A route as a provider returns it: geometry, with the street name of each segment where known.
public struct RoutePlan: Sendable, Equatable {
    /// The geometry, start to destination.
    public var points: [Coordinate]
    /// The name of the street from point i to point i + 1 (count = points − 1), nil where unknown.
    public var segmentNames: [String?]
    /// Length as the provider measured it [metres], nil to measure it from the geometry.
    public var reportedLengthMeters: Double?

    /// Creates a plan; names may be empty (all unknown).
    public init(points: [Coordinate], segmentNames: [String?] = [], reportedLengthMeters: Double? = nil) {
        self.points = points
        self.segmentNames =
            segmentNames.count == max(0, points.count - 1)
            ? segmentNames : Array(repeating: nil, count: max(0, points.count - 1))
        self.reportedLengthMeters = reportedLengthMeters
    }
}

/// Why a route could not be made.
public enum RoutingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No walkable way near a point.
    case noWayNear(point: Coordinate, withinMeters: Double, which: String)
    /// Start and destination are not connected by walkable ways.
    case unreachable
    /// No connected piece of the network has a way within `withinMeters` of both ends; the way nearest the start
    /// that is connected to the destination's is `nearestConnectedMeters` away (nil: none within 5 km), where the
    /// nearest way of all is `startWayMeters` away.
    case notConnected(withinMeters: Double, nearestConnectedMeters: Double?, startWayMeters: Double)
    /// The engine or file failed; the reason says how.
    case providerFailed(reason: String)

    public var description: String {
        switch self {
        case let .noWayNear(point, within, which):
            return "no walkable way within \(Int(within)) m of the \(which) (\(point.latitude), \(point.longitude))"
        case .unreachable:
            return "start and destination are not connected by walkable ways"
        case let .notConnected(within, nearest, startWay):
            let nearestText =
                nearest.map {
                    "the nearest way connected to the destination's is \(Int($0.rounded())) m from the start"
                }
                ?? "no way connected to the destination's is within 5 km of the start"
            return
                "start and destination are not connected by walkable ways within \(Int(within)) m: \(nearestText) (the nearest way, \(Int(startWay.rounded())) m away, leads elsewhere)"
        case let .providerFailed(reason):
            return reason
        }
    }
}

/// Something that makes walking routes: an offline map, a routing engine, a file (the route controller's
/// swappable part).
public protocol RouteProvider: Sendable {
    /// A short name for route messages and logs: the id configs choose it by, for example "osm".
    var name: String { get }
    /// The walking route from `start` to `destination`.
    func route(from start: Coordinate, to destination: Coordinate) async throws -> RoutePlan
    /// Whether its routes are made toward the destination asked for (a map, a routing engine), which they may end
    /// short of (at the way nearest it), rather than where a saved route ends (a file).
    var routesToTheDestination: Bool { get }
}

extension RouteProvider {
    public var routesToTheDestination: Bool { true }
}
