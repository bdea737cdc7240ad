public import NavCore
import Parsers

/// Why an NMEA line was not used.
public enum NMEAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not an NMEA sentence (`$` or `!`, fields, optional `*hh`).
    case notASentence
    /// The checksum does not match the sentence.
    case badChecksum(expected: String, computed: String)
    /// A field that should hold a number, a direction or a time does not.
    case badField(sentence: String, field: Int, value: String)

    public var description: String {
        switch self {
        case .notASentence: return "not an NMEA sentence"
        case let .badChecksum(expected, computed): return "checksum *\(expected) but the sentence sums to *\(computed)"
        case let .badField(sentence, field, value): return "\(sentence) field \(field) is '\(value)'"
        }
    }
}

/// Decodes NMEA 0183 into location fixes, headings and attitude.
///
/// GGA, RMC, GLL, GNS, VTG, GSA, GST, ZDA, HDT, HDG, `$PASHR` and Garmin's `$PGRME`, from any talker (GP,
/// GN, GL, GA, BD, …); checksums verified; lines wrapped by loggers as `NMEA,<sentence>,<unix ms>`
/// accepted. Sentences of one epoch (one time of day) are merged into one fix, emitted as soon as the
/// epoch holds every sentence type the previous epoch had, or when the next epoch begins. Times of day
/// become absolute once a date is known (RMC or ZDA); fixes before that are held until it is.
public struct NMEADecoder: Sendable {
    /// Settings.
    public struct Options: Sendable, Equatable {
        /// Horizontal accuracy from HDOP when no better estimate is sent: HDOP × this [metres].
        public var uereMeters = 4.0
        /// Accuracy assumed for a fix that comes with none [metres].
        public var assumedAccuracyMeters = 10.0
        /// The date for logs that never send one, as days since 1970-01-01; nil to drop such fixes.
        public var assumedDateDays: Int?
        /// Fixes held while waiting for a date [count]; the oldest go beyond this.
        public var maximumHeldFixes = 3600

        /// The defaults.
        public init() {}
    }

    /// What the decoder has counted.
    public struct Counters: Sendable, Equatable {
        /// Sentences used [count].
        public var sentences = 0
        /// Sentences of types that carry nothing for navigation (GSV, TXT, proprietary) [count].
        public var ignored = 0
        /// Lines dropped: not NMEA, bad checksum, bad fields [count].
        public var rejected = 0
        /// Fixes that never got a date and were dropped [count].
        public var undated = 0
    }

    private struct Epoch {
        var timeOfDay: Double
        var types: Set<String> = []
        var latitude: Double?
        var longitude: Double?
        var valid: Bool?
        var altitudeMSL: Double?
        var geoidSeparation: Double?
        var speed: Double?
        var track: Double?
        var hdop: Double?
        var gstSigma: Double?
        var garminHPE: Double?
        var emitted = false
        /// Earlier positions of this epoch not yet emitted.
        var superseded: [Epoch] = []

        /// Sets the position. A receiver may report slightly different positions for one time in
        /// different sentences (GGA to 4 decimals of minutes, GLL to 5, say): each distinct position
        /// becomes a fix of its own, with the same time.
        mutating func move(to latitude: Double, _ longitude: Double) {
            if let old = self.latitude, let oldLongitude = self.longitude,
                abs(old - latitude) > 1e-9 || abs(oldLongitude - longitude) > 1e-9
            {
                if !self.emitted {
                    var snapshot = self
                    snapshot.superseded = []
                    self.superseded.append(snapshot)
                }
                self.emitted = false
            }
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    /// The options in use.
    public let options: Options
    /// What has been counted.
    public private(set) var counters = Counters()

    private var epoch: Epoch?
    private var cycleTypes: Set<String> = []
    private var dateDays: Int?
    private var lastTimeOfDay: Double?
    private var pendingHDOP: Double?
    /// Messages waiting for a date: their time of day, the day rollovers before them, and how to build them.
    private var held: [(timeOfDay: Double, dayOffset: Int, build: @Sendable (Double) -> [BusMessage])] = []
    private var dayRollover = 0

    /// Creates a decoder.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// The sentence inside a line: the line itself, or the middle of a `NMEA,<sentence>,<unix ms>` wrapper.
    /// Returns nil for blank lines and comments.
    public static func sentence(in line: Substring) -> (sentence: Substring, loggerMillis: Double?)? {
        var text = line
        while let last = text.last, last == "\r" || last == "\n" || last == " " { text.removeLast() }
        while let first = text.first, first == " " || first == "\u{FEFF}" { text.removeFirst() }
        guard !text.isEmpty, text.first != "#" else { return nil }
        if text.hasPrefix("NMEA,") {
            let body = text.dropFirst(5)
            if let comma = body.lastIndex(of: ","), let millis = Double(body[body.index(after: comma)...]) {
                return (body[..<comma], millis)
            }
            return (body, nil)
        }
        return (text, nil)
    }

    /// Decodes one line; returns what became complete (fixes of finished epochs, headings, attitude).
    public mutating func decode(line: Substring) -> Result<[BusMessage], NMEAError> {
        guard let (sentence, _) = Self.sentence(in: line) else { return .success([]) }
        let fields: [Substring]
        switch Self.split(sentence) {
        case let .failure(error):
            self.counters.rejected += 1
            return .failure(error)
        case let .success(parsed):
            fields = parsed
        }
        do {
            let out = try self.handle(fields)
            return .success(out)
        } catch let error as NMEAError {
            self.counters.rejected += 1
            return .failure(error)
        } catch {
            self.counters.rejected += 1
            return .failure(.notASentence)
        }
    }

    /// Emits what is still pending: the last epoch, and held fixes if a date is assumed.
    public mutating func finish() -> [BusMessage] {
        var out = self.closeEpoch()
        if !self.held.isEmpty {
            if let assumed = self.options.assumedDateDays {
                self.dateDays = assumed
                out += self.releaseHeld()
            } else {
                self.counters.undated += self.held.count
                self.held.removeAll()
            }
        }
        return out
    }

    // MARK: Sentence structure

    /// Checks the checksum and splits the fields (the first is the address, e.g. "GPGGA").
    static func split(_ sentence: Substring) -> Result<[Substring], NMEAError> {
        guard let start = sentence.first, start == "$" || start == "!" else { return .failure(.notASentence) }
        var body = sentence.dropFirst()
        if let star = body.lastIndex(of: "*") {
            let given = body[body.index(after: star)...].uppercased()
            body = body[..<star]
            var sum: UInt8 = 0
            for byte in body.utf8 { sum ^= byte }
            let computed = String(sum, radix: 16, uppercase: true)
            let padded = computed.count == 1 ? "0" + computed : computed
            guard given == padded else { return .failure(.badChecksum(expected: given, computed: padded)) }
        }
        guard body.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }) else { return .failure(.notASentence) }
        let fields = body.split(separator: ",", omittingEmptySubsequences: false)
        guard let address = fields.first, address.count >= 3 else { return .failure(.notASentence) }
        return .success(fields)
    }

    private static func number(_ fields: [Substring], _ index: Int, _ type: String) throws -> Double? {
        guard index < fields.count, !fields[index].isEmpty else { return nil }
        guard let value = Double(fields[index]), value.isFinite else {
            throw NMEAError.badField(sentence: type, field: index, value: String(fields[index]))
        }
        return value
    }

    /// ddmm.mmmm + hemisphere → degrees.
    private static func coordinate(
        _ fields: [Substring], _ index: Int, _ type: String, degreesDigits: Int
    ) throws -> Double? {
        guard index + 1 < fields.count, !fields[index].isEmpty else { return nil }
        let text = fields[index]
        guard let raw = Double(text), raw >= 0, text.count > degreesDigits else {
            throw NMEAError.badField(sentence: type, field: index, value: String(text))
        }
        let degrees = (raw / 100).rounded(.down)
        let minutes = raw - degrees * 100
        guard minutes < 60 else { throw NMEAError.badField(sentence: type, field: index, value: String(text)) }
        var value = degrees + minutes / 60
        switch fields[index + 1] {
        case "N", "E": break
        case "S", "W": value = -value
        default: throw NMEAError.badField(sentence: type, field: index + 1, value: String(fields[index + 1]))
        }
        guard value.magnitude <= (degreesDigits == 2 ? 90 : 180) else {
            throw NMEAError.badField(sentence: type, field: index, value: String(text))
        }
        return value
    }

    /// hhmmss.sss → seconds of the day.
    private static func timeOfDay(_ fields: [Substring], _ index: Int, _ type: String) throws -> Double? {
        guard index < fields.count, !fields[index].isEmpty else { return nil }
        let text = fields[index]
        guard text.count >= 6, let raw = Double(text) else {
            throw NMEAError.badField(sentence: type, field: index, value: String(text))
        }
        let hours = (raw / 10_000).rounded(.down)
        let minutes = ((raw - hours * 10_000) / 100).rounded(.down)
        let seconds = raw - hours * 10_000 - minutes * 100
        guard hours < 24, minutes < 60, seconds < 61 else {
            throw NMEAError.badField(sentence: type, field: index, value: String(text))
        }
        // Round to the millisecond: "204132.04" must not become 204132.039999.
        return ((hours * 3600 + minutes * 60 + seconds) * 1000).rounded() / 1000
    }

    // MARK: Sentences

    private mutating func handle(_ fields: [Substring]) throws -> [BusMessage] {
        let address = fields[0]
        let proprietary = address.first == "P"
        let type = proprietary ? String(address) : String(address.dropFirst(2))
        // A sentence cut short (a logger that lost bytes, with no checksum to tell) is rejected whole.
        if let minimum = Self.minimumFields[type], fields.count < minimum {
            throw NMEAError.badField(
                sentence: type, field: fields.count, value: "(missing: \(fields.count) of \(minimum) fields)")
        }
        var out: [BusMessage] = []
        switch type {
        case "GGA":
            let time = try Self.timeOfDay(fields, 1, type)
            let lat = try Self.coordinate(fields, 2, type, degreesDigits: 2)
            let lon = try Self.coordinate(fields, 4, type, degreesDigits: 3)
            let quality = try Self.number(fields, 6, type)
            out += try self.withEpoch(time, type) { epoch in
                if let lat, let lon { epoch.move(to: lat, lon) }
                let fixed = (quality ?? 0) > 0 && lat != nil && lon != nil
                epoch.valid = (epoch.valid ?? false) || fixed
                epoch.hdop = try Self.number(fields, 8, type) ?? epoch.hdop
                epoch.altitudeMSL = try Self.number(fields, 9, type) ?? epoch.altitudeMSL
                epoch.geoidSeparation = try Self.number(fields, 11, type) ?? epoch.geoidSeparation
            }
        case "GNS":
            let time = try Self.timeOfDay(fields, 1, type)
            let lat = try Self.coordinate(fields, 2, type, degreesDigits: 2)
            let lon = try Self.coordinate(fields, 4, type, degreesDigits: 3)
            let modes = fields.count > 6 ? fields[6] : ""
            out += try self.withEpoch(time, type) { epoch in
                if let lat, let lon { epoch.move(to: lat, lon) }
                let fixed = !modes.isEmpty && modes.contains(where: { $0 != "N" }) && lat != nil
                epoch.valid = (epoch.valid ?? false) || fixed
                epoch.hdop = try Self.number(fields, 8, type) ?? epoch.hdop
                epoch.altitudeMSL = try Self.number(fields, 9, type) ?? epoch.altitudeMSL
                epoch.geoidSeparation = try Self.number(fields, 10, type) ?? epoch.geoidSeparation
            }
        case "RMC":
            let time = try Self.timeOfDay(fields, 1, type)
            if fields.count > 9, fields[9].count == 6, let ddmmyy = Int(fields[9]) {
                let day = ddmmyy / 10_000, month = ddmmyy / 100 % 100, yy = ddmmyy % 100
                guard (1...31).contains(day), (1...12).contains(month) else {
                    throw NMEAError.badField(sentence: type, field: 9, value: String(fields[9]))
                }
                // Two-digit years: 80–99 are 1980–1999 (GPS began in 1980), the rest 2000–2079.
                out += self.setDate(
                    CivilTime.days(year: yy >= 80 ? 1900 + yy : 2000 + yy, month: month, day: day),
                    timeOfDay: time)
            }
            let lat = try Self.coordinate(fields, 3, type, degreesDigits: 2)
            let lon = try Self.coordinate(fields, 5, type, degreesDigits: 3)
            let active = fields.count > 2 && fields[2] == "A"
            out += try self.withEpoch(time, type) { epoch in
                if let lat, let lon { epoch.move(to: lat, lon) }
                epoch.valid = (epoch.valid ?? false) || (active && lat != nil && lon != nil)
                if active {
                    if let knots = try Self.number(fields, 7, type) { epoch.speed = knots * 1852 / 3600 }
                    epoch.track = try Self.number(fields, 8, type) ?? epoch.track
                }
            }
        case "GLL":
            let time = try Self.timeOfDay(fields, 5, type)
            let lat = try Self.coordinate(fields, 1, type, degreesDigits: 2)
            let lon = try Self.coordinate(fields, 3, type, degreesDigits: 3)
            let active = fields.count > 6 && fields[6] == "A" && !(fields.count > 7 && fields[7] == "N")
            out += try self.withEpoch(time, type) { epoch in
                if let lat, let lon { epoch.move(to: lat, lon) }
                epoch.valid = (epoch.valid ?? false) || (active && lat != nil && lon != nil)
            }
        case "VTG":
            // Old form: track,magtrack,knots,kmh; new form: track,T,magtrack,M,knots,N,kmh,K[,mode].
            let modern = fields.count > 2 && fields[2] == "T"
            let track = try Self.number(fields, 1, type)
            let knots = try Self.number(fields, modern ? 5 : 3, type)
            let noFix = fields.count > 9 && fields[9] == "N"
            out += try self.withEpoch(nil, type) { epoch in
                guard !noFix else { return }
                if let track { epoch.track = track }
                if let knots { epoch.speed = knots * 1852 / 3600 }
            }
        case "GSA":
            let hdop = try Self.number(fields, 16, type)
            if self.epoch != nil {
                out += try self.withEpoch(nil, type) { epoch in epoch.hdop = hdop ?? epoch.hdop }
            } else {
                self.pendingHDOP = hdop
            }
        case "GST":
            let time = try Self.timeOfDay(fields, 1, type)
            let latSigma = try Self.number(fields, 6, type), lonSigma = try Self.number(fields, 7, type)
            out += try self.withEpoch(time, type) { epoch in
                if let latSigma, let lonSigma, latSigma > 0 || lonSigma > 0 {
                    epoch.gstSigma = ((latSigma * latSigma + lonSigma * lonSigma) / 2).squareRoot()
                }
            }
        case "PGRME":
            let hpe = try Self.number(fields, 1, type)
            out += try self.withEpoch(nil, type) { epoch in
                // Garmin's estimated horizontal position error; taken as a one-sigma radius.
                if let hpe, hpe > 0 { epoch.garminHPE = hpe }
            }
        case "ZDA":
            let time = try Self.timeOfDay(fields, 1, type)
            if let day = try Self.number(fields, 2, type), let month = try Self.number(fields, 3, type),
                let year = try Self.number(fields, 4, type)
            {
                guard (1...31).contains(day), (1...12).contains(month), year >= 1980 else {
                    throw NMEAError.badField(sentence: type, field: 2, value: "\(day)/\(month)/\(year)")
                }
                out += self.setDate(CivilTime.days(year: Int(year), month: Int(month), day: Int(day)), timeOfDay: time)
            }
        case "HDT":
            if let heading = try Self.number(fields, 1, type) {
                out += self.heading(Angle.normalized(heading), reference: .trueNorth, timeOfDay: self.lastTimeOfDay)
            }
        case "HDG":
            if let magnetic = try Self.number(fields, 1, type) {
                var heading = magnetic
                var reference = HeadingReference.magneticNorth
                if let deviation = try Self.number(fields, 2, type) {
                    heading += fields.count > 3 && fields[3] == "W" ? -deviation : deviation
                }
                if let variation = try Self.number(fields, 4, type) {
                    heading += fields.count > 5 && fields[5] == "W" ? -variation : variation
                    reference = .trueNorth
                }
                out += self.heading(Angle.normalized(heading), reference: reference, timeOfDay: self.lastTimeOfDay)
            }
        case "PASHR":
            // $PASHR,hhmmss.sss,heading,T,roll,pitch,heave,rollσ,pitchσ,headingσ,aiding,imu
            let time = try Self.timeOfDay(fields, 1, type)
            let heading = try Self.number(fields, 2, type)
            let roll = try Self.number(fields, 4, type)
            let pitch = try Self.number(fields, 5, type)
            let headingSigma = try Self.number(fields, 9, type)
            guard let time, let heading else { break }
            let dayTime = time
            out += self.stamped(timeOfDay: dayTime) { seconds in
                var messages: [BusMessage] = [
                    .heading(
                        HeadingSample(
                            timeSeconds: seconds, headingDegrees: Angle.normalized(heading),
                            reference: .trueNorth, accuracyDegrees: headingSigma))
                ]
                if let roll, let pitch {
                    messages.append(.attitude(Attitude(timeSeconds: seconds, pitchDegrees: pitch, rollDegrees: roll)))
                }
                return messages
            }
        default:
            self.counters.ignored += 1
            return []
        }
        self.counters.sentences += 1
        return out
    }

    /// The fewest fields (address included) each sentence type needs.
    private static let minimumFields: [String: Int] = [
        "GGA": 12, "GNS": 11, "RMC": 10, "GLL": 7, "VTG": 5, "GSA": 17, "GST": 8, "ZDA": 5, "HDT": 3, "HDG": 2,
        "PASHR": 6, "PGRME": 3,
    ]

    // MARK: Epochs

    private mutating func withEpoch(
        _ time: Double?, _ type: String, _ update: (inout Epoch) throws -> Void
    ) throws -> [BusMessage] {
        var out: [BusMessage] = []
        if let time, self.epoch?.timeOfDay != time {
            out += self.closeEpoch()
            self.epoch = Epoch(timeOfDay: time)
            if let hdop = self.pendingHDOP {
                self.epoch?.hdop = hdop
                self.pendingHDOP = nil
            }
            if let last = self.lastTimeOfDay, time < last - 43_200 { self.dayRollover += 1 }
            self.lastTimeOfDay = time
        }
        guard var epoch = self.epoch else { return out }  // a sentence without time before any epoch
        try update(&epoch)
        for var earlier in epoch.superseded { out += self.emit(&earlier) }
        epoch.superseded.removeAll()
        epoch.types.insert(type)
        self.epoch = epoch
        // The epoch is complete when it has every type the last complete epoch had.
        if !epoch.emitted, !self.cycleTypes.isEmpty, self.cycleTypes.isSubset(of: epoch.types) {
            out += self.emit(&epoch)
            self.epoch = epoch
        }
        return out
    }

    private mutating func closeEpoch() -> [BusMessage] {
        guard var epoch = self.epoch else { return [] }
        self.epoch = nil
        self.cycleTypes = epoch.types
        guard !epoch.emitted else { return [] }
        return self.emit(&epoch)
    }

    private mutating func emit(_ epoch: inout Epoch) -> [BusMessage] {
        epoch.emitted = true
        guard epoch.valid == true, let latitude = epoch.latitude, let longitude = epoch.longitude else { return [] }
        let accuracy: Double
        if let sigma = epoch.gstSigma {
            accuracy = sigma
        } else if let hpe = epoch.garminHPE {
            accuracy = hpe
        } else if let hdop = epoch.hdop, hdop > 0, hdop < 99 {
            accuracy = hdop * self.options.uereMeters
        } else {
            accuracy = self.options.assumedAccuracyMeters
        }
        let altitude = epoch.altitudeMSL.map { $0 + (epoch.geoidSeparation ?? 0) }
        let speed = epoch.speed, track = epoch.track.map(Angle.normalized)
        return self.stamped(timeOfDay: epoch.timeOfDay) { seconds in
            [
                .fix(
                    LocationFix(
                        timeSeconds: seconds, latitude: latitude, longitude: longitude, altitudeMeters: altitude,
                        horizontalAccuracyMeters: accuracy, speedMetersPerSecond: speed, courseDegrees: track))
            ]
        }
    }

    private mutating func heading(_ degrees: Double, reference: HeadingReference, timeOfDay: Double?) -> [BusMessage] {
        guard let timeOfDay else { return [] }
        return self.stamped(timeOfDay: timeOfDay) { seconds in
            [.heading(HeadingSample(timeSeconds: seconds, headingDegrees: degrees, reference: reference))]
        }
    }

    /// Messages for a time of day: now if the date is known, else held until it is.
    private mutating func stamped(
        timeOfDay: Double, _ build: @escaping @Sendable (Double) -> [BusMessage]
    ) -> [BusMessage] {
        if let days = self.dateDays {
            return build(Double(days + self.dayRollover) * 86_400 + timeOfDay)
        }
        self.held.append((timeOfDay, self.dayRollover, build))
        if self.held.count > self.options.maximumHeldFixes {
            self.held.removeFirst()
            self.counters.undated += 1
        }
        return []
    }

    private mutating func setDate(_ days: Int, timeOfDay: Double?) -> [BusMessage] {
        // The date belongs to the sentence's time of day; later rollovers count from there.
        let rolloverBefore = self.dayRollover
        if let timeOfDay, let last = self.lastTimeOfDay, timeOfDay < last - 43_200 {
            self.dateDays = days - rolloverBefore - 1
        } else {
            self.dateDays = days - rolloverBefore
        }
        return self.releaseHeld()
    }

    private mutating func releaseHeld() -> [BusMessage] {
        guard let days = self.dateDays, !self.held.isEmpty else { return [] }
        let out = self.held.flatMap { $0.build(Double(days + $0.dayOffset) * 86_400 + $0.timeOfDay) }
        self.held.removeAll()
        return out
    }
}
