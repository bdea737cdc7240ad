/// Turns magnetic headings into true ones: true = magnetic + declination, the declination from a
/// ``MagneticModel`` at the latest known position and the heading's own date.
///
/// A phone's compass gives magnetic north; routes and bearings are true. Every stage that compares a heading with a
/// bearing passes the heading through this first, so nothing compares magnetic with true: a magnetic heading with no
/// position known yet is refused (nil), never used as if it were true.
public struct TrueNorth: Sendable {
    /// The model in use.
    public let model: MagneticModel
    /// Where the declination is computed: the latest position seen.
    public private(set) var position: Coordinate?
    private var heightMeters = 0.0
    /// The declination cache: recomputed past `cacheMeters` of movement or `cacheSeconds` of time.
    private var cached: (coordinate: Coordinate, timeSeconds: Double, field: MagneticModel.Field)?
    private let cacheMeters = 1000.0
    private let cacheSeconds = 86_400.0
    /// Magnetic headings turned true, and refused for want of a position [count].
    public private(set) var correctedCount: UInt64 = 0
    public private(set) var refusedCount: UInt64 = 0

    /// Creates a correction with `model` (WMM2025 by default).
    public init(model: MagneticModel = .wmm2025) {
        self.model = model
    }

    /// Learns where the walker is from a fix, a smoothed fix or a guidance target (which is a few metres ahead);
    /// ignores anything else and positions that are not finite.
    public mutating func observe(_ message: BusMessage) {
        switch message {
        case let .fix(fix):
            self.observe(latitude: fix.latitude, longitude: fix.longitude, heightMeters: fix.altitudeMeters)
        case let .smoothed(fix):
            self.observe(latitude: fix.latitude, longitude: fix.longitude, heightMeters: nil)
        case let .target(target) where target.kind != .none:
            self.observe(
                latitude: target.coordinate.latitude, longitude: target.coordinate.longitude, heightMeters: nil)
        default:
            break
        }
    }

    /// Learns a position [degrees, WGS84; height above the ellipsoid in metres when known].
    public mutating func observe(latitude: Double, longitude: Double, heightMeters: Double?) {
        guard latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 360 else { return }
        self.position = Coordinate(latitude: latitude, longitude: longitude)
        if let heightMeters, heightMeters.isFinite, abs(heightMeters) < 100_000 { self.heightMeters = heightMeters }
    }

    /// The model's field at the latest position and `timeSeconds` [seconds since 1970, UTC]; nil without a position.
    public mutating func field(atTimeSeconds timeSeconds: Double) -> MagneticModel.Field? {
        guard let position = self.position else { return nil }
        if let cached = self.cached, abs(cached.timeSeconds - timeSeconds) < self.cacheSeconds,
            FlatProjection.distance(cached.coordinate, position) < self.cacheMeters
        {
            return cached.field
        }
        guard
            let field = self.model.field(
                latitude: position.latitude, longitude: position.longitude, heightMeters: self.heightMeters,
                timeSeconds: timeSeconds)
        else { return nil }
        self.cached = (position, timeSeconds, field)
        return field
    }

    /// The declination at the latest position and `timeSeconds` [degrees, east positive]; nil without a position.
    public mutating func declination(atTimeSeconds timeSeconds: Double) -> Double? {
        self.field(atTimeSeconds: timeSeconds)?.declinationDegrees
    }

    /// The sample referred to true north: as it is when already true; corrected when magnetic and a position is
    /// known (its accuracy widened to 180° inside the model's blackout zone, where declination means nothing); nil
    /// when magnetic and no position is known.
    public mutating func trueHeading(_ sample: HeadingSample) -> HeadingSample? {
        guard sample.reference == .magneticNorth else { return sample }
        guard let field = self.field(atTimeSeconds: sample.timeSeconds) else {
            self.refusedCount &+= 1
            return nil
        }
        self.correctedCount &+= 1
        var corrected = sample
        corrected.headingDegrees = Angle.normalized(sample.headingDegrees + field.declinationDegrees)
        corrected.reference = .trueNorth
        if field.isBlackout { corrected.accuracyDegrees = 180 }
        return corrected
    }

    /// Counters for a stage's status.
    public var statusCounters: [StatusCounter] {
        [
            StatusCounter(name: "heading.toTrueNorth", value: self.correctedCount),
            StatusCounter(name: "heading.magneticWithoutPosition", value: self.refusedCount),
        ]
    }
}

/// Where headings enter the pipeline (the source stage; preflight's look at a source): magnetic headings are turned
/// true here, once, so that every reader acts on true headings only. The declination is taken at the latest fix, or
/// before the first at `place` (the config's: its route's destination), which serves because the declination changes
/// by about a degree in a hundred kilometres. With neither, a magnetic heading goes on as magnetic, and says so, for
/// its readers to refuse.
public struct TrueNorthIntake: Sendable {
    private var trueNorth = TrueNorth()
    /// The declination the latest magnetic heading was turned true with [degrees, east positive].
    public private(set) var declinationDegrees: Double?

    /// An intake that knows `place` until the first fix.
    public init(place: Coordinate? = nil) {
        if let place { self.trueNorth.observe(latitude: place.latitude, longitude: place.longitude, heightMeters: nil) }
    }

    /// The message as it goes on: a fix is learnt from; a magnetic heading is turned true where it can be.
    public mutating func take(_ message: BusMessage) -> BusMessage {
        switch message {
        case .fix:
            self.trueNorth.observe(message)
            return message
        case let .heading(sample) where sample.reference == .magneticNorth:
            guard let corrected = self.trueNorth.trueHeading(sample) else { return message }
            self.declinationDegrees = Angle.signedDifference(from: sample.headingDegrees, to: corrected.headingDegrees)
            return .heading(corrected)
        default:
            return message
        }
    }

    /// Magnetic headings turned true, and let through magnetic for want of a position [count].
    public var statusCounters: [StatusCounter] { self.trueNorth.statusCounters }
}
