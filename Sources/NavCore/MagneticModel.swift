/// The Earth's main magnetic field from a spherical-harmonic model: the World Magnetic Model (WMM2025 by default).
///
/// Follows the WMM technical report (NOAA NCEI and BGS, "The US/UK World Magnetic Model for 2025–2030"): geodetic
/// position to geocentric spherical, Schmidt semi-normalised associated Legendre functions, the field's north, east
/// and down components in the spherical frame rotated back to the geodetic one. Time enters only through the
/// coefficients' secular variation, so a value of this type is a pure function of position and date.
public struct MagneticModel: Sendable {
    /// One Gauss coefficient pair and its yearly change [nT, nT a year].
    public struct Coefficient: Sendable, Equatable {
        /// Degree, 1...maximumDegree.
        public var n: Int
        /// Order, 0...n.
        public var m: Int
        /// Main field coefficients at the epoch [nT].
        public var g: Double
        public var h: Double
        /// Secular variation [nT a year].
        public var gDot: Double
        public var hDot: Double

        /// Creates a coefficient row, as in a `.COF` file.
        public init(n: Int, m: Int, g: Double, h: Double, gDot: Double, hDot: Double) {
            self.n = n
            self.m = m
            self.g = g
            self.h = h
            self.gDot = gDot
            self.hDot = hDot
        }
    }

    /// The field at a place and time, in the geodetic frame, with its yearly change.
    public struct Field: Sendable, Equatable {
        /// Northward component X [nT].
        public var northNanoTesla: Double
        /// Eastward component Y [nT].
        public var eastNanoTesla: Double
        /// Downward component Z [nT].
        public var downNanoTesla: Double
        /// Yearly change of X, Y and Z [nT a year].
        public var northChange: Double
        public var eastChange: Double
        public var downChange: Double

        /// Horizontal intensity H [nT, ≥ 0].
        public var horizontalNanoTesla: Double {
            (self.northNanoTesla * self.northNanoTesla + self.eastNanoTesla * self.eastNanoTesla).squareRoot()
        }
        /// Total intensity F [nT, ≥ 0].
        public var totalNanoTesla: Double {
            let h = self.horizontalNanoTesla
            return (h * h + self.downNanoTesla * self.downNanoTesla).squareRoot()
        }
        /// Declination D: the angle from true north to magnetic north [degrees, east positive, −180...180].
        /// True heading = magnetic heading + declination.
        public var declinationDegrees: Double {
            _atan2(self.eastNanoTesla, self.northNanoTesla) * 180 / .pi
        }
        /// Inclination (dip) I: the angle of the field below the horizontal [degrees, down positive, −90...90].
        public var inclinationDegrees: Double {
            _atan2(self.downNanoTesla, self.horizontalNanoTesla) * 180 / .pi
        }
        /// Yearly change of the declination [degrees a year].
        public var declinationChangeDegrees: Double {
            let h2 = self.horizontalNanoTesla * self.horizontalNanoTesla
            guard h2 > 0 else { return 0 }
            return (self.northNanoTesla * self.eastChange - self.eastNanoTesla * self.northChange) / h2 * 180 / .pi
        }
        /// Yearly change of the inclination [degrees a year].
        public var inclinationChangeDegrees: Double {
            let h = self.horizontalNanoTesla, f2 = self.totalNanoTesla * self.totalNanoTesla
            guard h > 0, f2 > 0 else { return 0 }
            let hDot = (self.northNanoTesla * self.northChange + self.eastNanoTesla * self.eastChange) / h
            return (h * self.downChange - self.downNanoTesla * hDot) / f2 * 180 / .pi
        }
        /// Yearly change of the horizontal intensity [nT a year].
        public var horizontalChange: Double {
            let h = self.horizontalNanoTesla
            guard h > 0 else { return 0 }
            return (self.northNanoTesla * self.northChange + self.eastNanoTesla * self.eastChange) / h
        }
        /// Yearly change of the total intensity [nT a year].
        public var totalChange: Double {
            let f = self.totalNanoTesla
            guard f > 0 else { return 0 }
            return (self.horizontalNanoTesla * self.horizontalChange + self.downNanoTesla * self.downChange) / f
        }
        /// Grid variation: declination less longitude, for polar navigation [degrees, −180...180]; only meaningful
        /// above 55° of latitude, where the WMM gives it.
        public func gridVariationDegrees(latitude: Double, longitude: Double) -> Double {
            var value = self.declinationDegrees - (latitude >= 0 ? longitude : -longitude)
            value = Angle.signedDifference(from: 0, to: value)
            return value
        }
        /// True where the horizontal field is too weak for a compass: the WMM's blackout zone (H < 2000 nT), where
        /// declination is not reliable.
        public var isBlackout: Bool { self.horizontalNanoTesla < 2000 }
        /// True in the WMM's caution zone (2000 ≤ H < 6000 nT), where compasses are degraded.
        public var isCaution: Bool { !self.isBlackout && self.horizontalNanoTesla < 6000 }
    }

    /// Where a model's name and validity come from.
    public var name: String
    /// The coefficients' epoch [decimal year].
    public var epoch: Double
    /// The years the model is valid for [decimal years]; outside them it is extrapolated.
    public var validYears: ClosedRange<Double>
    private let maximumDegree: Int
    /// g, h, ġ, ḣ indexed by n * (n + 1) / 2 + m.
    private let g: [Double], h: [Double], gDot: [Double], hDot: [Double]

    /// WGS84's semi-major axis [km] and flattening, and the model's reference radius [km].
    static let semiMajorKilometers = 6378.137
    static let flattening = 1 / 298.257223563
    static let referenceRadiusKilometers = 6371.2

    /// A model from coefficient rows (degree 1 onward; a missing row counts as zero).
    public init(name: String, epoch: Double, validYears: ClosedRange<Double>, coefficients: [Coefficient]) {
        self.name = name
        self.epoch = epoch
        self.validYears = validYears
        let degree = coefficients.map(\.n).max() ?? 0
        self.maximumDegree = degree
        let count = (degree + 1) * (degree + 2) / 2
        var g = [Double](repeating: 0, count: count), h = g, gDot = g, hDot = g
        for row in coefficients where row.n >= 1 && row.m >= 0 && row.m <= row.n {
            let index = row.n * (row.n + 1) / 2 + row.m
            g[index] = row.g
            h[index] = row.h
            gDot[index] = row.gDot
            hDot[index] = row.hDot
        }
        self.g = g
        self.h = h
        self.gDot = gDot
        self.hDot = hDot
    }

    /// The World Magnetic Model 2025 (NOAA NCEI / BGS, public domain; `data/magnetic/WMM2025.COF`).
    public static let wmm2025 = MagneticModel(
        name: "WMM2025", epoch: 2025.0, validYears: 2025.0...2030.0, coefficients: WMM2025.coefficients)

    /// The field at a geodetic position and a decimal year; nil for a position or year that is not finite.
    /// - Parameters:
    ///   - latitude: [degrees, WGS84, north positive, −90...90]
    ///   - longitude: [degrees, east positive]
    ///   - heightKilometers: height above the WGS84 ellipsoid [km]
    ///   - year: decimal year, for example 2027.5
    public func field(latitude: Double, longitude: Double, heightKilometers: Double = 0, year: Double) -> Field? {
        guard latitude.isFinite, longitude.isFinite, heightKilometers.isFinite, year.isFinite,
            abs(latitude) <= 90, heightKilometers > -1000, heightKilometers < 1e6
        else { return nil }
        let dt = year - self.epoch
        // Geodetic to geocentric spherical. At a pole, nudge off it: the east component's 1/cos φ' is then finite.
        let lat = max(-90 + 1e-9, min(90 - 1e-9, latitude)) * .pi / 180
        let lon = longitude * .pi / 180
        let e2 = Self.flattening * (2 - Self.flattening)
        let sinLat = _sin(lat), cosLat = _cos(lat)
        let rc = Self.semiMajorKilometers / (1 - e2 * sinLat * sinLat).squareRoot()
        let p = (rc + heightKilometers) * cosLat
        let z = (rc * (1 - e2) + heightKilometers) * sinLat
        let r = (p * p + z * z).squareRoot()
        let latPrime = _asin(z / r)
        let x = _sin(latPrime)  // cos θ (θ: geocentric colatitude)
        let s = _cos(latPrime)  // sin θ

        // Schmidt semi-normalised P(n, m)(cos θ) and dP/dθ, by the standard recursions.
        let degree = self.maximumDegree
        let count = (degree + 1) * (degree + 2) / 2
        var pnm = [Double](repeating: 0, count: count), dpnm = pnm
        pnm[0] = 1
        for n in 1...max(1, degree) where degree >= 1 {
            let nn = n * (n + 1) / 2
            let prev = (n - 1) * n / 2
            // Diagonal.
            if n == 1 {
                pnm[nn + 1] = s
                dpnm[nn + 1] = x
            } else {
                let k = (Double(2 * n - 1) / Double(2 * n)).squareRoot()
                pnm[nn + n] = k * s * pnm[prev + n - 1]
                dpnm[nn + n] = k * (s * dpnm[prev + n - 1] + x * pnm[prev + n - 1])
            }
            // Below the diagonal.
            for m in 0..<n {
                let a = Double(2 * n - 1)
                let denominator = Double(n * n - m * m).squareRoot()
                let back = Double((n - 1) * (n - 1) - m * m)
                var value = a * x * pnm[prev + m]
                var derivative = a * (x * dpnm[prev + m] - s * pnm[prev + m])
                if n >= 2 && m <= n - 2 {
                    let twoBack = (n - 2) * (n - 1) / 2
                    value -= back.squareRoot() * pnm[twoBack + m]
                    derivative -= back.squareRoot() * dpnm[twoBack + m]
                }
                pnm[nn + m] = value / denominator
                dpnm[nn + m] = derivative / denominator
            }
        }

        // The field's spherical components, and their yearly change (the field is linear in the coefficients).
        var xs = 0.0, ys = 0.0, zs = 0.0, xd = 0.0, yd = 0.0, zd = 0.0
        let ratio = Self.referenceRadiusKilometers / r
        var power = ratio * ratio  // (a/r)^(n+2), from n = 1
        for n in 1...max(1, degree) where degree >= 1 {
            power *= ratio
            let nn = n * (n + 1) / 2
            for m in 0...n {
                let i = nn + m
                let cosM = _cos(Double(m) * lon), sinM = _sin(Double(m) * lon)
                let gt = self.g[i] + dt * self.gDot[i], ht = self.h[i] + dt * self.hDot[i]
                let a = gt * cosM + ht * sinM, b = gt * sinM - ht * cosM
                let ad = self.gDot[i] * cosM + self.hDot[i] * sinM, bd = self.gDot[i] * sinM - self.hDot[i] * cosM
                // d/dφ' = −d/dθ.
                xs += power * a * dpnm[i]
                xd += power * ad * dpnm[i]
                ys += power * Double(m) * b * pnm[i]
                yd += power * Double(m) * bd * pnm[i]
                zs -= power * Double(n + 1) * a * pnm[i]
                zd -= power * Double(n + 1) * ad * pnm[i]
            }
        }
        ys /= s
        yd /= s
        // Rotate from the geocentric to the geodetic frame.
        let psi = latPrime - lat
        let cp = _cos(psi), sp = _sin(psi)
        return Field(
            northNanoTesla: xs * cp - zs * sp, eastNanoTesla: ys, downNanoTesla: xs * sp + zs * cp,
            northChange: xd * cp - zd * sp, eastChange: yd, downChange: xd * sp + zd * cp)
    }

    /// The field at a position and a time [seconds since 1970-01-01T00:00:00Z, UTC].
    public func field(latitude: Double, longitude: Double, heightMeters: Double = 0, timeSeconds: Double) -> Field? {
        guard let year = Self.decimalYear(timeSeconds: timeSeconds) else { return nil }
        return self.field(
            latitude: latitude, longitude: longitude, heightKilometers: heightMeters / 1000, year: year)
    }

    /// A time as a decimal year, as the WMM counts it: the year plus the fraction of its days gone; nil when not
    /// finite or beyond ±1e6 years.
    public static func decimalYear(timeSeconds: Double) -> Double? {
        guard timeSeconds.isFinite, abs(timeSeconds) < 3e13 else { return nil }
        let days = (timeSeconds / 86_400).rounded(.down)
        guard let whole = Int(exactly: days) else { return nil }
        let year = CivilTime.civil(days: whole).year
        let start = Double(CivilTime.days(year: year, month: 1, day: 1)) * 86_400
        let end = Double(CivilTime.days(year: year + 1, month: 1, day: 1)) * 86_400
        return Double(year) + (timeSeconds - start) / (end - start)
    }
}
