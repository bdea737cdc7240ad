#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import Logging
public import NavCore
import SystemIO
public import HapticLogic

/// The `ar` device: the next waypoints in the walker's local frame — metres east, north and up of the walker,
/// compass-aligned (true north) — for AR clients, as the design's AR placement does. Each update (on every
/// smoothed fix, and with the current cue) is one JSON object, sent as a UDP datagram and/or appended to a
/// JSON Lines file:
/// `{"timeSeconds":…,"routeID":…,"cue":"turnLeft","waypoints":[{"index":2,"east":12.3,"north":40.1,"up":-0.1,"distanceMeters":41.9,"bearingDegrees":17.0,"instruction":"Turn left"}]}`
public actor ARDevice: OutputDevice {
    public static let id = "ar"
    public nonisolated let name = "ar"

    private let count: Int
    private let file: OutputFile?
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private let socket: Int32?
    private var destination = sockaddr_in()
    private var route: Route?
    private var nextIndex = 1
    private var cue = "silent"
    /// The latest turn event in words, for the route it is of.
    private var turn: (routeID: UInt32, text: String)?
    private var updates = 0
    private let logger: Logger

    /// Creates the device: `udp` as "host:port", `file` a JSON Lines path, `waypoints` how many to send.
    public init(udp: String?, file: String?, waypoints: Int, logger: Logger) throws {
        self.count = waypoints
        self.logger = logger
        if let file {
            do {
                self.file = try OutputFile(path: file, mode: .truncate)
            } catch {
                throw ConfigError.invalidValue(path: "ar.file", expected: "a writable file", found: "\(error)")
            }
        } else {
            self.file = nil
        }
        if let udp {
            guard let colon = udp.lastIndex(of: ":"), let port = UInt16(udp[udp.index(after: colon)...]) else {
                throw ConfigError.invalidValue(path: "ar.udp", expected: "host:port", found: "'\(udp)'")
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(String(udp[..<colon]))
            self.destination = address
            self.socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        } else {
            self.socket = nil
        }
    }

    /// Reads a config's settings: `udp` ("host:port"), `file`, `waypoints` (default 3).
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        let udp = try settings.optionalValue(Setting.udp)
        let file = try settings.path(Setting.file)
        let waypoints = try settings.value(Setting.waypoints)
        try settings.finish()
        guard udp != nil || file != nil else {
            throw ConfigError.missingKey(path: settings.path, key: "udp or file")
        }
        try self.init(udp: udp, file: file, waypoints: waypoints, logger: logger)
    }

    public func observe(_ message: BusMessage) {
        switch message {
        case let .route(route):
            if route.routeID != self.route?.routeID { self.nextIndex = 1 }
            self.route = route
        case let .progress(progress):
            if progress.routeID == self.route?.routeID { self.nextIndex = Int(progress.nextWaypointIndex) }
        case let .smoothed(fix):
            self.publish(at: fix)
        default:
            break
        }
    }

    /// One update: the next waypoints in the walker's local frame, and the cue being given.
    public struct Placement: Codable, Equatable, Sendable {
        public var timeSeconds: Double
        public var routeID: UInt32
        public var cue: String
        /// The latest turn event of this route in words ("Second left, in 30 metres"), when there is one.
        public var turn: String?
        public var waypoints: [Waypoint]

        /// A waypoint east, north and up of the walker [m], its distance and bearing, and what to do there.
        public struct Waypoint: Codable, Equatable, Sendable {
            public var index: Int
            public var east: Double
            public var north: Double
            public var up: Double
            public var distanceMeters: Double
            public var bearingDegrees: Double
            public var instruction: String
            public var kind: String
        }
    }

    /// The next waypoints as seen from `fix`, in its local east-north-up frame.
    public func placement(at fix: SmoothedFix) -> Placement? {
        guard let route = self.route, !route.waypoints.isEmpty else { return nil }
        let frame = LocalFrame(origin: Coordinate(latitude: fix.latitude, longitude: fix.longitude))
        let first = min(max(self.nextIndex, 0), route.waypoints.count - 1)
        let upcoming = route.waypoints.indices.filter { $0 >= first }.prefix(self.count)
        let waypoints = upcoming.map { index in
            let waypoint = route.waypoints[index]
            let local = frame.enu(of: waypoint.coordinate)
            func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }
            return Placement.Waypoint(
                index: index, east: rounded(local.east), north: rounded(local.north), up: rounded(local.up),
                distanceMeters: rounded(local.horizontalDistance), bearingDegrees: rounded(local.bearingDegrees),
                instruction: waypoint.instruction, kind: waypoint.kind.name)
        }
        return Placement(
            timeSeconds: fix.timeSeconds, routeID: route.routeID, cue: self.cue,
            turn: self.turn.flatMap { $0.routeID == route.routeID ? $0.text : nil }, waypoints: waypoints)
    }

    private func publish(at fix: SmoothedFix) {
        guard let placement = self.placement(at: fix), let data = try? self.encoder.encode(placement) else { return }
        self.updates += 1
        if let socket = self.socket {
            var address = self.destination
            _ = data.withUnsafeBytes { bytes in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(socket, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
        self.file?.write(data + [0x0A])
    }

    public func render(_ cue: HapticCue) {
        self.cue = cue.kind.name
    }

    public func stopAll() {
        self.cue = "silent"
    }

    public func announce(_ text: String) {}

    /// Shown with the next placement update, as text.
    public func renderTurn(_ event: TurnEvent) {
        self.turn = (event.routeID, TurnWords.text(event))
    }

    /// Nothing to keep alive.
    public func run() {}

    /// Always ready.
    public func isAvailable() -> Bool { true }

    public func summary() -> String {
        "\(self.updates) placement update(s)"
    }
}

extension ARDevice {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let waypoints = SettingSpec<Int>(
            "waypoints", default: 3, in: 1...50, "How many of the next waypoints each update carries.")
        public static let udp = ValueSpec<String>(
            "udp", accepts: "host:port", "Send each update as a JSON datagram here.")
        public static let file = ValueSpec<String>("file", accepts: "a path", "Append each update as a JSON line here.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [waypoints.doc, udp.doc, file.doc]
    }
}
