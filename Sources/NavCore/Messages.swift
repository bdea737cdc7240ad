// Message schema v1. Every field states its unit and sign; `docs/PROTOCOL.md` gives the byte layout.

/// A position from a receiver or log, before smoothing.
public struct LocationFix: Codable, Equatable, Sendable {
    /// Measurement time [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// Latitude [degrees, WGS84, north positive, −90...90].
    public var latitude: Double
    /// Longitude [degrees, WGS84, east positive, −180...180].
    public var longitude: Double
    /// Height above the WGS84 ellipsoid [metres, up positive], when known.
    public var altitudeMeters: Double?
    /// Horizontal accuracy, one standard deviation [metres, ≥ 0 when meaningful].
    public var horizontalAccuracyMeters: Double
    /// Speed over ground [metres per second, ≥ 0], when known.
    public var speedMetersPerSecond: Double?
    /// Course over ground [degrees, true north, clockwise, 0..<360], when known.
    public var courseDegrees: Double?

    /// Creates a fix.
    public init(
        timeSeconds: Double, latitude: Double, longitude: Double, altitudeMeters: Double? = nil,
        horizontalAccuracyMeters: Double, speedMetersPerSecond: Double? = nil, courseDegrees: Double? = nil
    ) {
        self.timeSeconds = timeSeconds
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeMeters = altitudeMeters
        self.horizontalAccuracyMeters = horizontalAccuracyMeters
        self.speedMetersPerSecond = speedMetersPerSecond
        self.courseDegrees = courseDegrees
    }
}

/// What a heading is measured from.
public enum HeadingReference: UInt8, WireEnum {
    /// Geographic (true) north.
    case trueNorth = 0
    /// Magnetic north.
    case magneticNorth = 1
}

/// A compass heading of the device (not yet corrected for the phone-in-pocket offset).
public struct HeadingSample: Codable, Equatable, Sendable {
    /// Measurement time [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// Heading of the device's forward axis [degrees, clockwise from the reference, 0..<360].
    public var headingDegrees: Double
    /// The north this heading is measured from.
    public var reference: HeadingReference
    /// Heading accuracy, one standard deviation [degrees, ≥ 0], when known.
    public var accuracyDegrees: Double?

    /// Creates a heading sample.
    public init(
        timeSeconds: Double, headingDegrees: Double, reference: HeadingReference = .trueNorth,
        accuracyDegrees: Double? = nil
    ) {
        self.timeSeconds = timeSeconds
        self.headingDegrees = headingDegrees
        self.reference = reference
        self.accuracyDegrees = accuracyDegrees
    }
}

/// The device's tilt.
public struct Attitude: Codable, Equatable, Sendable {
    /// Measurement time [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// Pitch [degrees, −90...90, positive when the forward axis points up].
    public var pitchDegrees: Double
    /// Roll [degrees, −180...180, positive when the right side points down].
    public var rollDegrees: Double

    /// Creates an attitude sample.
    public init(timeSeconds: Double, pitchDegrees: Double, rollDegrees: Double) {
        self.timeSeconds = timeSeconds
        self.pitchDegrees = pitchDegrees
        self.rollDegrees = rollDegrees
    }
}

/// A position estimate from the smoother.
public struct SmoothedFix: Codable, Equatable, Sendable {
    /// Time of the estimate [seconds since 1970-01-01T00:00:00Z, UTC]; that of the fix it follows.
    public var timeSeconds: Double
    /// Latitude [degrees, WGS84, north positive].
    public var latitude: Double
    /// Longitude [degrees, WGS84, east positive].
    public var longitude: Double
    /// Estimated horizontal position error, one standard deviation [metres, ≥ 0].
    public var horizontalAccuracyMeters: Double
    /// Estimated speed over ground [metres per second, ≥ 0].
    public var speedMetersPerSecond: Double
    /// Estimated course over ground [degrees, true north, clockwise, 0..<360]; absent when nearly still.
    public var courseDegrees: Double?
    /// True when the filter restarted at this fix (first fix, or after a long gap).
    public var reset: Bool

    /// Creates a smoothed fix.
    public init(
        timeSeconds: Double, latitude: Double, longitude: Double, horizontalAccuracyMeters: Double,
        speedMetersPerSecond: Double, courseDegrees: Double?, reset: Bool
    ) {
        self.timeSeconds = timeSeconds
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracyMeters = horizontalAccuracyMeters
        self.speedMetersPerSecond = speedMetersPerSecond
        self.courseDegrees = courseDegrees
        self.reset = reset
    }
}

/// A point on the WGS84 ellipsoid.
public struct Coordinate: Codable, Equatable, Hashable, Sendable {
    /// Latitude [degrees, WGS84, north positive].
    public var latitude: Double
    /// Longitude [degrees, WGS84, east positive].
    public var longitude: Double

    /// Creates a coordinate.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// What happens at a waypoint.
public enum WaypointKind: UInt8, WireEnum {
    /// The start of the route.
    case start = 0
    /// A turn or another change of direction.
    case turn = 1
    /// The destination.
    case arrival = 2
}

/// A point where the route changes direction, with its instruction.
public struct Waypoint: Codable, Equatable, Sendable {
    /// Where the waypoint is.
    public var coordinate: Coordinate
    /// Distance from the start of the route along it [metres, ≥ 0].
    public var distanceAlongMeters: Double
    /// Bearing of the leg that leaves this waypoint [degrees, true north, clockwise, 0..<360].
    public var outgoingBearingDegrees: Double
    /// Signed change of direction at this waypoint [degrees, −180...180, positive = turn right].
    public var turnDegrees: Double
    /// What the waypoint is.
    public var kind: WaypointKind
    /// A short instruction fit to be spoken, for example "turn left onto Rue Grimaldi".
    public var instruction: String

    /// Creates a waypoint.
    public init(
        coordinate: Coordinate, distanceAlongMeters: Double, outgoingBearingDegrees: Double,
        turnDegrees: Double, kind: WaypointKind, instruction: String
    ) {
        self.coordinate = coordinate
        self.distanceAlongMeters = distanceAlongMeters
        self.outgoingBearingDegrees = outgoingBearingDegrees
        self.turnDegrees = turnDegrees
        self.kind = kind
        self.instruction = instruction
    }
}

/// A walking route: its geometry and its waypoints.
public struct Route: Codable, Equatable, Sendable {
    /// Identifies this route; a reroute gets a new, larger id.
    public var routeID: UInt32
    /// When it was computed [seconds since 1970-01-01T00:00:00Z, UTC; the time of the fix it starts from].
    public var timeSeconds: Double
    /// The provider that made it, for example "osm" or "valhalla".
    public var provider: String
    /// Length along the geometry [metres, geodesic].
    public var lengthMeters: Double
    /// The geometry, start to destination.
    public var points: [Coordinate]
    /// The waypoints in walking order; the last is the arrival.
    public var waypoints: [Waypoint]

    /// Creates a route.
    public init(
        routeID: UInt32, timeSeconds: Double, provider: String, lengthMeters: Double,
        points: [Coordinate], waypoints: [Waypoint]
    ) {
        self.routeID = routeID
        self.timeSeconds = timeSeconds
        self.provider = provider
        self.lengthMeters = lengthMeters
        self.points = points
        self.waypoints = waypoints
    }
}

/// Where the walker stands with respect to the route.
public enum RouteState: UInt8, WireEnum {
    /// Within the off-route threshold.
    case onRoute = 0
    /// Off the route; a reroute may follow.
    case offRoute = 1
    /// A new route is being computed.
    case rerouting = 2
    /// The destination is reached.
    case arrived = 3
    /// Going back along the route, the wrong way.
    case wrongWay = 4
}

/// Progress along the current route, one per smoothed fix.
public struct RouteProgress: Codable, Equatable, Sendable {
    /// Time of the fix this progress is for [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// The route this refers to.
    public var routeID: UInt32
    /// Distance from the start along the route to the walker's projection onto it [metres, ≥ 0].
    public var distanceAlongMeters: Double
    /// Distance from that projection to the destination along the route [metres, ≥ 0].
    public var distanceRemainingMeters: Double
    /// Distance from the walker to the route [metres, positive when the walker is right of it].
    public var crossTrackMeters: Double
    /// Index into the route's waypoints of the next one to reach.
    public var nextWaypointIndex: UInt32
    /// Bearing from the walker to the next waypoint [degrees, true north, clockwise, 0..<360].
    public var bearingToNextDegrees: Double
    /// Distance from the walker to the next waypoint [metres, geodesic, ≥ 0].
    public var distanceToNextMeters: Double
    /// Estimated time to arrival [seconds, ≥ 0], when the walker's speed allows one.
    public var etaSeconds: Double?
    /// On route, off route, rerouting, arrived or going the wrong way.
    public var state: RouteState

    /// Creates a progress report.
    public init(
        timeSeconds: Double, routeID: UInt32, distanceAlongMeters: Double, distanceRemainingMeters: Double,
        crossTrackMeters: Double, nextWaypointIndex: UInt32, bearingToNextDegrees: Double,
        distanceToNextMeters: Double, etaSeconds: Double?, state: RouteState
    ) {
        self.timeSeconds = timeSeconds
        self.routeID = routeID
        self.distanceAlongMeters = distanceAlongMeters
        self.distanceRemainingMeters = distanceRemainingMeters
        self.crossTrackMeters = crossTrackMeters
        self.nextWaypointIndex = nextWaypointIndex
        self.bearingToNextDegrees = bearingToNextDegrees
        self.distanceToNextMeters = distanceToNextMeters
        self.etaSeconds = etaSeconds
        self.state = state
    }
}

/// What the guidance target is.
public enum TargetKind: UInt8, WireEnum {
    /// A point a look-ahead distance beyond the walker's projection onto the route.
    case lookAhead = 0
    /// The next waypoint.
    case waypoint = 1
    /// The destination, which the walker has reached.
    case arrived = 2
    /// No target: no route yet, or rerouting; the sink stays quiet.
    case none = 3
}

/// The point the haptic sink steers the walker towards.
public struct GuidanceTarget: Codable, Equatable, Sendable {
    /// Time of the fix this target is for [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// The route this refers to.
    public var routeID: UInt32
    /// Where to steer.
    public var coordinate: Coordinate
    /// The bearing to steer: from the walker to the target [degrees, true north, clockwise, 0..<360] (the route
    /// controller's junction-aware look-ahead, `turnZoneMeters`, may hold it within 105° of the incoming leg before a
    /// hairpin's corner, off the target's point); the sink steers by this, never by `coordinate`.
    public var bearingDegrees: Double
    /// Distance from the walker to the target [metres, ≥ 0].
    public var distanceMeters: Double
    /// What kind of target this is.
    public var kind: TargetKind

    /// Creates a guidance target.
    public init(
        timeSeconds: Double, routeID: UInt32, coordinate: Coordinate, bearingDegrees: Double,
        distanceMeters: Double, kind: TargetKind
    ) {
        self.timeSeconds = timeSeconds
        self.routeID = routeID
        self.coordinate = coordinate
        self.bearingDegrees = bearingDegrees
        self.distanceMeters = distanceMeters
        self.kind = kind
    }
}

/// The kind of a haptic cue.
public enum CueKind: UInt8, WireEnum {
    /// On course: nothing plays.
    case silent = 0
    /// Turn left.
    case turnLeft = 1
    /// Turn right.
    case turnRight = 2
    /// Turn around (deviation beyond the turn-around angle).
    case turnAround = 3
    /// The destination is reached.
    case arrival = 4
    /// Input went stale: every motor stops and this plays once.
    case signalLost = 5
    /// A calibration cue (north finding).
    case calibration = 6
}

/// One cue for the output devices.
public struct HapticCue: Codable, Equatable, Sendable {
    /// Time of the heading sample that caused it [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// What to render.
    public var kind: CueKind
    /// Strength [0...1; 0 for silence].
    public var intensity: Double
    /// Signed deviation from the target bearing to the true heading [degrees, −180...180, positive = turn right].
    public var deviationDegrees: Double

    /// Creates a cue.
    public init(timeSeconds: Double, kind: CueKind, intensity: Double, deviationDegrees: Double) {
        self.timeSeconds = timeSeconds
        self.kind = kind
        self.intensity = intensity
        self.deviationDegrees = deviationDegrees
    }
}

/// The step a calibration run is in.
public enum CalibrationStep: UInt8, WireEnum {
    /// (a) Hold the phone flat and turn until it faces north.
    case findNorth = 0
    /// (b) Put the phone away (countdown).
    case putAway = 1
    /// (c) Walk while headings are averaged.
    case move = 2
    /// Finished with an offset.
    case done = 3
    /// Aborted; the prompt says why.
    case aborted = 4
}

/// The state of a calibration run, emitted on every change.
public struct CalibrationState: Codable, Equatable, Sendable {
    /// Time of the sample that caused it [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// The current step.
    public var step: CalibrationStep
    /// A short prompt fit to be spoken.
    public var prompt: String
    /// Cue strength for north finding [0...1]: the smallest angle to north divided by 180.
    public var cueIntensity: Double
    /// Progress through the current step [0...1].
    public var progress: Double

    /// Creates a calibration state.
    public init(timeSeconds: Double, step: CalibrationStep, prompt: String, cueIntensity: Double, progress: Double) {
        self.timeSeconds = timeSeconds
        self.step = step
        self.prompt = prompt
        self.cueIntensity = cueIntensity
        self.progress = progress
    }
}

/// The outcome of a calibration run.
public struct CalibrationResult: Codable, Equatable, Sendable {
    /// When it finished [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// True when an offset was found.
    public var succeeded: Bool
    /// Phone-in-pocket heading offset [degrees, 0..<360]: true heading = raw heading − offset.
    public var offsetDegrees: Double
    /// Circular spread of the averaged headings [degrees, ≥ 0].
    public var spreadDegrees: Double
    /// How many heading samples were averaged.
    public var sampleCount: UInt32
    /// Why the run aborted; empty on success.
    public var reason: String

    /// Creates a calibration result.
    public init(
        timeSeconds: Double, succeeded: Bool, offsetDegrees: Double, spreadDegrees: Double,
        sampleCount: UInt32, reason: String
    ) {
        self.timeSeconds = timeSeconds
        self.succeeded = succeeded
        self.offsetDegrees = offsetDegrees
        self.spreadDegrees = spreadDegrees
        self.sampleCount = sampleCount
        self.reason = reason
    }
}

/// What the experimenter asks of the outputs.
public enum ControlCommand: UInt8, WireEnum {
    /// Silence every output until resumed (also across a restart of the sink).
    case stop = 0
    /// Guide again after a stop.
    case resume = 1
    /// A moment marked for the analysis; the outputs are not touched.
    case mark = 2
}

/// An experimenter's command as the haptic sink carried it out: published on its bus (topic `control`) once done,
/// so that recordings, the live views and LSL see every stop, resume and mark.
public struct ControlEvent: Codable, Equatable, Sendable {
    /// When the sink carried it out [seconds since 1970-01-01T00:00:00Z, UTC; wall clock of the sink].
    public var timeSeconds: Double
    /// What was asked.
    public var command: ControlCommand
    /// A mark's text (at most 200 bytes of UTF-8); for a stop the sink made itself (the condition lock), why; empty
    /// for the experimenter's stop and resume.
    public var text: String
    /// Who asked: the name of the sender's key, or "local" on an unencrypted link.
    public var sender: String
    /// The sender's id for the command (its acknowledgement names it).
    public var requestID: String
    /// When the sender sent it [seconds since 1970-01-01T00:00:00Z, UTC; wall clock of the sender, not trusted].
    public var sentSeconds: Double
    /// True while the outputs are stopped, after this command.
    public var stopped: Bool

    /// Creates an event.
    public init(
        timeSeconds: Double, command: ControlCommand, text: String = "", sender: String, requestID: String,
        sentSeconds: Double, stopped: Bool
    ) {
        self.timeSeconds = timeSeconds
        self.command = command
        self.text = text
        self.sender = sender
        self.requestID = requestID
        self.sentSeconds = sentSeconds
        self.stopped = stopped
    }
}

/// The health of a stage.
public enum StageHealth: UInt8, WireEnum {
    /// Starting up.
    case starting = 0
    /// Working normally.
    case running = 1
    /// Working with a problem (a device fell back, an engine is slow, input is being dropped).
    case degraded = 2
    /// An input went silent or stale.
    case stale = 3
    /// A finite input ended (a log file reached its end).
    case endOfStream = 4
    /// Shutting down.
    case stopping = 5
    /// Failed; the message says why.
    case failed = 6
}

/// A named counter in a status report.
public struct StatusCounter: Codable, Equatable, Sendable {
    /// The counter's name, for example "droppedMalformed".
    public var name: String
    /// Its value [count].
    public var value: UInt64

    /// Creates a counter.
    public init(name: String, value: UInt64) {
        self.name = name
        self.value = value
    }
}

/// A stage's report on itself, sent on change and periodically.
public struct StageStatus: Codable, Equatable, Sendable {
    /// When it was made [seconds since 1970-01-01T00:00:00Z, UTC; wall clock of the sender].
    public var timeSeconds: Double
    /// The reporting stage's name in the pipeline config.
    public var stage: String
    /// Its health.
    public var health: StageHealth
    /// A short human-readable explanation.
    public var message: String
    /// Counters: messages in and out, drops by reason.
    public var counters: [StatusCounter]

    /// Creates a status report.
    public init(
        timeSeconds: Double, stage: String, health: StageHealth, message: String,
        counters: [StatusCounter] = []
    ) {
        self.timeSeconds = timeSeconds
        self.stage = stage
        self.health = health
        self.message = message
        self.counters = counters
    }
}

extension Coordinate {
    /// Reads "LAT,LON" in degrees (southern and western ones negative), as commands take a position; nil when it is
    /// not two finite numbers within ±90 and ±180.
    public init?(latitudeLongitude text: String) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmed()) }
        guard parts.count == 2, let lat = parts[0], let lon = parts[1], lat.isFinite, lon.isFinite, abs(lat) <= 90,
            abs(lon) <= 180
        else { return nil }
        self.init(latitude: lat, longitude: lon)
    }
}

/// What a turn event says about a manoeuvre.
public enum TurnPhase: UInt8, WireEnum {
    /// Ahead: the manoeuvre's side and angle, and how many junctions the walker passes before it.
    case announce = 0
    /// At the manoeuvre's junction: turn now.
    case now = 1
    /// A junction the route passes through, where a branch could mislead: carry on along the route's way.
    case straightOn = 2
}

/// A manoeuvre of the route at a junction of the walking network, as the route controller announces it: once the
/// junction before is behind the walker, at the junction itself, and at junctions passed through where a branch could
/// mislead. Turn decisions then rest on counting junctions and on the outgoing way's own direction, not on a metre of
/// GPS.
public struct TurnEvent: Codable, Equatable, Sendable {
    /// Time of the fix this event is for [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// The route this refers to.
    public var routeID: UInt32
    /// The manoeuvre's number on its route [0-based; a junction passed straight through counts none].
    public var manoeuvre: UInt32
    /// Announcement, now, or straight on.
    public var phase: TurnPhase
    /// The change of direction at the junction, from the way of arrival to the way the route takes [degrees,
    /// −180...180, positive = right]; small for straight on.
    public var turnDegrees: Double
    /// Junctions the walker passes before the manoeuvre's [count; 0: the next junction is the one].
    public var junctionsBefore: UInt32
    /// From the walker's place on the route to the junction, along it [metres, ≥ 0].
    public var distanceMeters: Double
    /// The direction of the way the route takes at the junction, as the map gives it some metres along it
    /// [degrees, true north, clockwise, 0..<360].
    public var outgoingBearingDegrees: Double
    /// The name of the street the route takes there; empty when the map has none.
    public var street: String

    /// Creates a turn event.
    public init(
        timeSeconds: Double, routeID: UInt32, manoeuvre: UInt32, phase: TurnPhase, turnDegrees: Double,
        junctionsBefore: UInt32, distanceMeters: Double, outgoingBearingDegrees: Double, street: String = ""
    ) {
        self.timeSeconds = timeSeconds
        self.routeID = routeID
        self.manoeuvre = manoeuvre
        self.phase = phase
        self.turnDegrees = turnDegrees
        self.junctionsBefore = junctionsBefore
        self.distanceMeters = distanceMeters
        self.outgoingBearingDegrees = outgoingBearingDegrees
        self.street = street
    }
}

/// Steps the phone's wearer has taken, as the location source's step detector counts them on the accelerometer (or
/// the phone's own pedometer): sent at each step. How far a step goes is left to whoever reads it (the route stage
/// learns it from the GPS speed): it differs from walker to walker and with pace.
public struct StepCount: Codable, Equatable, Sendable {
    /// Time of the step [seconds since 1970-01-01T00:00:00Z, UTC].
    public var timeSeconds: Double
    /// Steps since the source started [count]; a source that starts again starts from 0.
    public var count: UInt32
    /// Steps a second over the last few seconds [Hz, ≥ 0].
    public var cadenceHz: Double

    /// Creates a step count.
    public init(timeSeconds: Double, count: UInt32, cadenceHz: Double) {
        self.timeSeconds = timeSeconds
        self.count = count
        self.cadenceHz = cadenceHz
    }
}
