// Geodesics on the WGS84 ellipsoid after C. F. F. Karney, "Algorithms for geodesics",
// J. Geodesy 87 (2013) 43–55: series in the third flattening n and in ε to sixth order, Newton's
// method on the azimuth for the inverse problem, and the astroid start for nearly antipodal points.
// Written from the paper; checked against Karney's GeodTest rows in Tests/NavCoreTests/Fixtures.

/// The solution of an inverse geodesic problem.
public struct GeodesicInverse: Equatable, Sendable {
    /// Length of the shortest geodesic [metres, ≥ 0].
    public var distanceMeters: Double
    /// Azimuth at the first point [degrees, clockwise from north, −180...180].
    public var initialAzimuthDegrees: Double
    /// Azimuth at the second point, in the direction of travel [degrees, clockwise from north, −180...180].
    public var finalAzimuthDegrees: Double
    /// Arc length on the auxiliary sphere [degrees].
    public var arcDegrees: Double
}

/// The solution of a direct geodesic problem.
public struct GeodesicDirect: Equatable, Sendable {
    /// Where the geodesic ends.
    public var coordinate: Coordinate
    /// Azimuth there, in the direction of travel [degrees, clockwise from north, −180...180].
    public var finalAzimuthDegrees: Double
}

/// An ellipsoid of revolution and the geodesic problems on it.
public struct Geodesic: Sendable {
    /// Equatorial radius [metres].
    public let equatorialRadius: Double
    /// Flattening.
    public let flattening: Double

    private let f1: Double  // 1 − f
    private let polarRadius: Double
    private let e2: Double  // first eccentricity squared
    private let ep2: Double  // second eccentricity squared
    private let n: Double  // third flattening
    private let a3: [Double]  // A3 as a polynomial in ε, coefficients of ε^0...ε^5
    private let c3: [[Double]]  // C3l as polynomials in ε, l = 1...5, coefficients of ε^0...ε^5
    private let etol2: Double

    /// WGS84: a = 6378137 m, f = 1/298.257223563.
    public static let wgs84 = Geodesic(equatorialRadius: 6_378_137, flattening: 1 / 298.257_223_563)

    private static let tiny = Double.leastNormalMagnitude.squareRoot()
    private static let tol0 = Double.ulpOfOne
    private static let tol1 = 200 * tol0
    private static let tol2 = tol0.squareRoot()
    private static let tolb = tol0 * tol2
    private static let xthresh = 1000 * tol2
    private static let maxit1 = 20
    private static let maxit2 = maxit1 + Double.significandBitCount + 1 + 10

    /// Creates an ellipsoid (0 ≤ f < 0.1, the range these series serve).
    public init(equatorialRadius: Double, flattening: Double) {
        precondition(equatorialRadius > 0 && flattening >= 0 && flattening < 0.1, "unsupported ellipsoid")
        self.equatorialRadius = equatorialRadius
        self.flattening = flattening
        self.f1 = 1 - flattening
        self.polarRadius = equatorialRadius * (1 - flattening)
        self.e2 = flattening * (2 - flattening)
        self.ep2 = self.e2 / ((1 - flattening) * (1 - flattening))
        let n = flattening / (2 - flattening)
        self.n = n
        self.a3 = [
            1, -(1 - n) / 2, -(1.0 / 4 + n / 8 - 3 * n * n / 8), -(1.0 / 16 + 3 * n / 16 + n * n / 16),
            -(3.0 / 64 + n / 32), -3.0 / 128,
        ]
        self.c3 = [
            [0, (1 - n) / 4, (1 - n * n) / 8, (3 + 3 * n - n * n) / 64, (5 + 2 * n) / 128, 3.0 / 128],
            [0, 0, (2 - 3 * n + n * n) / 32, (3 - 2 * n - 3 * n * n) / 64, (3 + n) / 128, 5.0 / 256],
            [0, 0, 0, (5 - 9 * n + 5 * n * n) / 192, (9 - 10 * n) / 384, 7.0 / 512],
            [0, 0, 0, 0, (7 - 14 * n) / 512, 7.0 / 512],
            [0, 0, 0, 0, 0, 21.0 / 2560],
        ]
        self.etol2 = 0.1 * Self.tol2 / (max(0.001, abs(flattening)) * min(1, 1 - flattening / 2) / 2).squareRoot()
    }

    // MARK: Series (Karney 2013, eqs. 17, 18, 21, 23, 25)

    /// A1 − 1.
    private static func a1m1(_ eps: Double) -> Double {
        let e2 = eps * eps
        let t = e2 * (e2 * (e2 + 4) + 64) / 256
        return (t + eps) / (1 - eps)
    }

    /// C1l, l = 1...6 (index 0 unused).
    private static func c1(_ eps: Double) -> [Double] {
        let e2 = eps * eps
        var d = eps
        var c = [Double](repeating: 0, count: 7)
        c[1] = d * (e2 * (6 - e2) - 16) / 32
        d *= eps
        c[2] = d * (e2 * (64 - 9 * e2) - 128) / 2048
        d *= eps
        c[3] = d * (9 * e2 - 16) / 768
        d *= eps
        c[4] = d * (3 * e2 - 5) / 512
        d *= eps
        c[5] = -7 * d / 1280
        d *= eps
        c[6] = -7 * d / 2048
        return c
    }

    /// C′1l, l = 1...6, the reversion of the C1 series.
    private static func c1p(_ eps: Double) -> [Double] {
        let e2 = eps * eps
        var d = eps
        var c = [Double](repeating: 0, count: 7)
        c[1] = d * (e2 * (205 * e2 - 432) + 768) / 1536
        d *= eps
        c[2] = d * (e2 * (4005 * e2 - 4736) + 3840) / 12288
        d *= eps
        c[3] = d * (116 - 225 * e2) / 384
        d *= eps
        c[4] = d * (2695 - 7173 * e2) / 7680
        d *= eps
        c[5] = 3467 * d / 7680
        d *= eps
        c[6] = 38081 * d / 61440
        return c
    }

    /// A2 − 1.
    private static func a2m1(_ eps: Double) -> Double {
        let e2 = eps * eps
        let t = e2 * (e2 * (-11 * e2 - 28) - 192) / 256
        return (t - eps) / (1 + eps)
    }

    /// C2l, l = 1...6.
    private static func c2(_ eps: Double) -> [Double] {
        let e2 = eps * eps
        var d = eps
        var c = [Double](repeating: 0, count: 7)
        c[1] = d * (e2 * (e2 + 2) + 16) / 32
        d *= eps
        c[2] = d * (e2 * (35 * e2 + 64) + 384) / 2048
        d *= eps
        c[3] = d * (15 * e2 + 80) / 768
        d *= eps
        c[4] = d * (7 * e2 + 35) / 512
        d *= eps
        c[5] = 63 * d / 1280
        d *= eps
        c[6] = 77 * d / 2048
        return c
    }

    private func a3f(_ eps: Double) -> Double {
        var value = 0.0
        for coefficient in self.a3.reversed() { value = value * eps + coefficient }
        return value
    }

    /// C3l, l = 1...5.
    private func c3f(_ eps: Double) -> [Double] {
        var c = [Double](repeating: 0, count: 6)
        for l in 1...5 {
            var value = 0.0
            for coefficient in self.c3[l - 1].reversed() { value = value * eps + coefficient }
            c[l] = value
        }
        return c
    }

    /// Σ c[l] sin(2lσ), l = 1..., by Clenshaw summation, from sin σ and cos σ.
    private static func sinSeries(_ sinx: Double, _ cosx: Double, _ c: [Double]) -> Double {
        let ar = 2 * (cosx - sinx) * (cosx + sinx)  // 2 cos 2σ
        var b1 = 0.0, b2 = 0.0
        var l = c.count - 1
        while l >= 1 {
            let b0 = ar * b1 - b2 + c[l]
            b2 = b1
            b1 = b0
            l -= 1
        }
        return 2 * sinx * cosx * b1  // sin 2σ · b1
    }

    // MARK: Helpers

    private static func norm(_ s: inout Double, _ c: inout Double) {
        let r = (s * s + c * c).squareRoot()
        s /= r
        c /= r
    }

    /// Rounds tiny angles to zero the way the algorithm expects, so that −1e−20 and 0 behave alike.
    private static func angRound(_ x: Double) -> Double {
        let z = 1.0 / 16
        let y = abs(x)
        let rounded = y < z ? z - (z - y) : y
        return x < 0 ? -rounded : rounded
    }

    /// sin and cos of an angle in degrees, exact at multiples of 90°.
    static func sincosd(_ degrees: Double) -> (sin: Double, cos: Double) {
        var r = _fmod(degrees, 360)
        let q = Int((r / 90).rounded())
        r -= 90 * Double(q)
        let radians = r * .pi / 180
        let s = _sin(radians), c = _cos(radians)
        let (sinx, cosx): (Double, Double)
        switch ((q % 4) + 4) % 4 {
        case 0: (sinx, cosx) = (s, c)
        case 1: (sinx, cosx) = (c, -s)
        case 2: (sinx, cosx) = (-s, -c)
        default: (sinx, cosx) = (-c, s)
        }
        return (sinx + 0, cosx + 0)
    }

    /// max(0, x) that returns +0 for −0: atan2(−0, −1) is −π, not π.
    private func positivePart(_ x: Double) -> Double { x > 0 ? x : 0 }

    private static func atan2d(_ y: Double, _ x: Double) -> Double {
        _atan2(y, x) * 180 / .pi
    }

    /// `y − x` reduced to (−180, 180].
    private static func angleDifference(_ x: Double, _ y: Double) -> Double {
        var d = _fmod(y - x, 360)
        if d <= -180 { d += 360 } else if d > 180 { d -= 360 }
        return d
    }

    private static func normalize180(_ x: Double) -> Double {
        var y = _fmod(x, 360)
        if y < -180 { y += 360 } else if y >= 180 { y -= 360 }
        return y
    }

    // MARK: Lengths

    private struct Lengths {
        var s12b: Double
        var m12b: Double
    }

    /// Distance and reduced length along a geodesic, in units of the polar radius.
    private func lengths(
        eps: Double, sig12: Double, ssig1: Double, csig1: Double, dn1: Double,
        ssig2: Double, csig2: Double, dn2: Double
    ) -> Lengths {
        let a1 = 1 + Self.a1m1(eps)
        let c1 = Self.c1(eps)
        let a2 = 1 + Self.a2m1(eps)
        let c2 = Self.c2(eps)
        let m0x = a1 - a2
        let b1 = Self.sinSeries(ssig2, csig2, c1) - Self.sinSeries(ssig1, csig1, c1)
        let b2 = Self.sinSeries(ssig2, csig2, c2) - Self.sinSeries(ssig1, csig1, c2)
        let s12b = a1 * (sig12 + b1)
        let j12 = m0x * sig12 + (a1 * b1 - a2 * b2)
        let m12b = dn2 * (csig1 * ssig2) - dn1 * (ssig1 * csig2) - csig1 * csig2 * j12
        return Lengths(s12b: s12b, m12b: m12b)
    }

    // MARK: Direct

    /// The point `distanceMeters` along the geodesic that leaves `start` at `azimuthDegrees`.
    public func direct(from start: Coordinate, azimuthDegrees: Double, distanceMeters: Double) -> GeodesicDirect {
        let (salp1, calp1) = Self.sincosd(Self.angRound(Self.normalize180(azimuthDegrees)))
        var (sbet1, cbet1) = Self.sincosd(Self.angRound(start.latitude))
        sbet1 *= self.f1
        Self.norm(&sbet1, &cbet1)
        cbet1 = max(Self.tiny, cbet1)

        let salp0 = salp1 * cbet1
        let calp0 = (calp1 * calp1 + (salp1 * sbet1) * (salp1 * sbet1)).squareRoot()
        var ssig1 = sbet1
        let somg1 = salp0 * sbet1
        var csig1 = (sbet1 != 0 || calp1 != 0) ? cbet1 * calp1 : 1
        let comg1 = csig1
        Self.norm(&ssig1, &csig1)

        let k2 = calp0 * calp0 * self.ep2
        let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
        let a1m1 = Self.a1m1(eps)
        let c1 = Self.c1(eps)
        let b11 = Self.sinSeries(ssig1, csig1, c1)
        let s = _sin(b11), c = _cos(b11)
        let stau1 = ssig1 * c + csig1 * s
        let ctau1 = csig1 * c - ssig1 * s
        let c1p = Self.c1p(eps)
        let a3c = -self.flattening * salp0 * self.a3f(eps)
        let c3 = self.c3f(eps)
        let b31 = Self.sinSeries(ssig1, csig1, c3)

        let tau12 = distanceMeters / (self.polarRadius * (1 + a1m1))
        let st = _sin(tau12), ct = _cos(tau12)
        let b12 = -Self.sinSeries(stau1 * ct + ctau1 * st, ctau1 * ct - stau1 * st, c1p)
        let sig12 = tau12 - (b12 - b11)
        let ssig12 = _sin(sig12), csig12 = _cos(sig12)
        let ssig2 = ssig1 * csig12 + csig1 * ssig12
        var csig2 = csig1 * csig12 - ssig1 * ssig12
        let sbet2 = calp0 * ssig2
        var cbet2 = (salp0 * salp0 + (calp0 * csig2) * (calp0 * csig2)).squareRoot()
        if cbet2 == 0 {
            cbet2 = Self.tiny
            csig2 = Self.tiny
        }
        let salp2 = salp0, calp2 = calp0 * csig2
        let somg2 = salp0 * ssig2, comg2 = csig2
        let omg12 = _atan2(somg2 * comg1 - comg2 * somg1, comg2 * comg1 + somg2 * somg1)
        let lam12 = omg12 + a3c * (sig12 + (Self.sinSeries(ssig2, csig2, c3) - b31))
        let lon12 = lam12 * 180 / .pi
        let longitude = Self.normalize180(Self.normalize180(start.longitude) + Self.normalize180(lon12))
        let latitude = Self.atan2d(sbet2, self.f1 * cbet2)
        return GeodesicDirect(
            coordinate: Coordinate(latitude: latitude, longitude: longitude),
            finalAzimuthDegrees: Self.atan2d(salp2, calp2))
    }

    // MARK: Inverse

    private struct LambdaResult {
        var lam12: Double
        var salp2: Double, calp2: Double
        var sig12: Double
        var ssig1: Double, csig1: Double, ssig2: Double, csig2: Double
        var eps: Double
        var dlam12: Double
    }

    private func lambda12(
        sbet1: Double, cbet1: Double, dn1: Double, sbet2: Double, cbet2: Double, dn2: Double,
        salp1: Double, calp1 calp1In: Double, slam120: Double, clam120: Double,
        derivative: Bool
    ) -> LambdaResult {
        var calp1 = calp1In
        if sbet1 == 0 && calp1 == 0 { calp1 = -Self.tiny }  // break the degeneracy of equatorial lines
        let salp0 = salp1 * cbet1
        let calp0 = (calp1 * calp1 + (salp1 * sbet1) * (salp1 * sbet1)).squareRoot()
        var ssig1 = sbet1
        let somg1 = salp0 * sbet1
        var csig1 = calp1 * cbet1
        let comg1 = csig1
        Self.norm(&ssig1, &csig1)

        let salp2 = cbet2 != cbet1 ? salp0 / cbet2 : salp1
        let calp2: Double
        if cbet2 != cbet1 || abs(sbet2) != -sbet1 {
            let term = cbet1 < -sbet1 ? (cbet2 - cbet1) * (cbet1 + cbet2) : (sbet1 - sbet2) * (sbet1 + sbet2)
            calp2 = ((calp1 * cbet1) * (calp1 * cbet1) + term).squareRoot() / cbet2
        } else {
            calp2 = abs(calp1)
        }
        var ssig2 = sbet2
        let somg2 = salp0 * sbet2
        var csig2 = calp2 * cbet2
        let comg2 = csig2
        Self.norm(&ssig2, &csig2)

        let sig12 = _atan2(positivePart(csig1 * ssig2 - ssig1 * csig2), csig1 * csig2 + ssig1 * ssig2)
        let somg12 = positivePart(comg1 * somg2 - somg1 * comg2)
        let comg12 = comg1 * comg2 + somg1 * somg2
        let eta = _atan2(somg12 * clam120 - comg12 * slam120, comg12 * clam120 + somg12 * slam120)
        let k2 = calp0 * calp0 * self.ep2
        let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
        let c3 = self.c3f(eps)
        let b312 = Self.sinSeries(ssig2, csig2, c3) - Self.sinSeries(ssig1, csig1, c3)
        let domg12 = -self.flattening * self.a3f(eps) * salp0 * (sig12 + b312)
        let lam12 = eta + domg12
        var dlam12 = 0.0
        if derivative {
            if calp2 == 0 {
                dlam12 = -2 * self.f1 * dn1 / sbet1
            } else {
                let lengths = self.lengths(
                    eps: eps, sig12: sig12, ssig1: ssig1, csig1: csig1, dn1: dn1,
                    ssig2: ssig2, csig2: csig2, dn2: dn2)
                dlam12 = lengths.m12b * self.f1 / (calp2 * cbet2)
            }
        }
        return LambdaResult(
            lam12: lam12, salp2: salp2, calp2: calp2, sig12: sig12, ssig1: ssig1, csig1: csig1,
            ssig2: ssig2, csig2: csig2, eps: eps, dlam12: dlam12)
    }

    /// The positive root of k⁴ + 2k³ − (x² + y² − 1)k² − 2y²k − y² = 0 (Karney 2013, eq. 55).
    private static func astroid(_ x: Double, _ y: Double) -> Double {
        let p = x * x, q = y * y
        let r = (p + q - 1) / 6
        guard !(q == 0 && r <= 0) else { return 0 }
        let s = p * q / 4
        let r2 = r * r, r3 = r * r2
        let disc = s * (s + 2 * r3)
        var u = r
        if disc >= 0 {
            var t3 = s + r3
            t3 += t3 < 0 ? -disc.squareRoot() : disc.squareRoot()
            let t = cbrt(t3)
            u += t + (t != 0 ? r2 / t : 0)
        } else {
            let ang = _atan2((-disc).squareRoot(), -(s + r3))
            u += 2 * r * _cos(ang / 3)
        }
        let v = (u * u + q).squareRoot()
        let uv = u < 0 ? q / (v - u) : u + v
        let w = (uv - q) / (2 * v)
        return uv / ((uv + w * w).squareRoot() + w)
    }

    private static func cbrt(_ x: Double) -> Double {
        let y = _pow(abs(x), 1.0 / 3)
        return x < 0 ? -y : y
    }

    /// The shortest geodesic between two points.
    public func inverse(_ point1: Coordinate, _ point2: Coordinate) -> GeodesicInverse {
        // Canonical configuration: lon12 ≥ 0, |lat1| ≥ |lat2|, lat1 ≤ 0.
        var lon12 = Self.angleDifference(point1.longitude, point2.longitude)
        var lonsign: Double = lon12 >= 0 ? 1 : -1
        lon12 = abs(lon12)
        let lam12 = lon12 * .pi / 180
        let (slam12, clam12) = Self.sincosd(lon12)
        var lat1 = Self.angRound(max(-90, min(90, point1.latitude)))
        var lat2 = Self.angRound(max(-90, min(90, point2.latitude)))
        let swapp: Double = abs(lat1) < abs(lat2) ? -1 : 1
        if swapp < 0 {
            lonsign = -lonsign
            swap(&lat1, &lat2)
        }
        let latsign: Double = lat1 < 0 ? 1 : -1
        lat1 *= latsign
        lat2 *= latsign

        var (sbet1, cbet1) = Self.sincosd(lat1)
        sbet1 *= self.f1
        Self.norm(&sbet1, &cbet1)
        cbet1 = max(Self.tiny, cbet1)
        var (sbet2, cbet2) = Self.sincosd(lat2)
        sbet2 *= self.f1
        Self.norm(&sbet2, &cbet2)
        cbet2 = max(Self.tiny, cbet2)
        // Make equal |β| exactly equal, so that the symmetric cases stay symmetric.
        if cbet1 < -sbet1 {
            if cbet2 == cbet1 { sbet2 = sbet2 < 0 ? sbet1 : -sbet1 }
        } else if abs(sbet2) == -sbet1 {
            cbet2 = cbet1
        }
        let dn1 = (1 + self.ep2 * sbet1 * sbet1).squareRoot()
        let dn2 = (1 + self.ep2 * sbet2 * sbet2).squareRoot()

        var a12 = 0.0, s12x = 0.0, sig12 = 0.0
        var salp1 = 0.0, calp1 = 0.0, salp2 = 0.0, calp2 = 0.0
        var meridian = lat1 == -90 || slam12 == 0

        if meridian {
            // Along a meridian: the azimuths are known, the distance follows.
            calp1 = clam12
            salp1 = slam12
            calp2 = 1
            salp2 = 0
            let ssig1 = sbet1, csig1 = calp1 * cbet1
            let ssig2 = sbet2, csig2 = calp2 * cbet2
            sig12 = _atan2(positivePart(csig1 * ssig2 - ssig1 * csig2), csig1 * csig2 + ssig1 * ssig2)
            let lengths = self.lengths(
                eps: self.n, sig12: sig12, ssig1: ssig1, csig1: csig1, dn1: dn1,
                ssig2: ssig2, csig2: csig2, dn2: dn2)
            if sig12 < 1 || lengths.m12b >= 0 {
                if sig12 < 3 * Self.tiny { sig12 = 0 }
                s12x = lengths.s12b * self.polarRadius
                a12 = sig12 * 180 / .pi
            } else {
                meridian = false  // nearly antipodal points on a meridian: the meridian is not shortest
            }
        }

        if !meridian && sbet1 == 0 && lon12 <= (1 - self.flattening) * 180 {
            // Along the equator, which is the shortest path up to (1 − f)·180°.
            calp1 = 0
            calp2 = 0
            salp1 = 1
            salp2 = 1
            s12x = self.equatorialRadius * lam12
            sig12 = lam12 / self.f1
            a12 = lon12 / self.f1
        } else if !meridian {
            var start = self.inverseStart(
                sbet1: sbet1, cbet1: cbet1, dn1: dn1, sbet2: sbet2, cbet2: cbet2, dn2: dn2,
                lam12: lam12, slam12: slam12, clam12: clam12)
            if start.sig12 >= 0 {
                // Short line, solved on a sphere of the local radius.
                sig12 = start.sig12
                s12x = sig12 * self.polarRadius * start.dnm
                a12 = sig12 * 180 / .pi
                salp1 = start.salp1
                calp1 = start.calp1
                salp2 = start.salp2
                calp2 = start.calp2
            } else {
                var salp1a = Self.tiny, calp1a = 1.0, salp1b = Self.tiny, calp1b = -1.0
                var tripn = false, tripb = false
                var result = LambdaResult(
                    lam12: 0, salp2: 0, calp2: 0, sig12: 0, ssig1: 0, csig1: 0, ssig2: 0,
                    csig2: 0, eps: 0, dlam12: 0)
                for iteration in 0..<Self.maxit2 {
                    result = self.lambda12(
                        sbet1: sbet1, cbet1: cbet1, dn1: dn1, sbet2: sbet2, cbet2: cbet2,
                        dn2: dn2, salp1: start.salp1, calp1: start.calp1, slam120: slam12,
                        clam120: clam12, derivative: iteration < Self.maxit1)
                    let v = result.lam12
                    if tripb || !(abs(v) >= (tripn ? 8 : 1) * Self.tol0) || iteration == Self.maxit2 - 1 { break }
                    if v > 0 && (iteration > Self.maxit1 || start.calp1 / start.salp1 > calp1b / salp1b) {
                        salp1b = start.salp1
                        calp1b = start.calp1
                    } else if v < 0 && (iteration > Self.maxit1 || start.calp1 / start.salp1 < calp1a / salp1a) {
                        salp1a = start.salp1
                        calp1a = start.calp1
                    }
                    if iteration < Self.maxit1 && result.dlam12 > 0 {
                        let dalp1 = -v / result.dlam12
                        if abs(dalp1) < .pi {
                            let sdalp1 = _sin(dalp1), cdalp1 = _cos(dalp1)
                            let nsalp1 = start.salp1 * cdalp1 + start.calp1 * sdalp1
                            if nsalp1 > 0 {
                                start.calp1 = start.calp1 * cdalp1 - start.salp1 * sdalp1
                                start.salp1 = nsalp1
                                Self.norm(&start.salp1, &start.calp1)
                                tripn = abs(v) <= 16 * Self.tol0
                                continue
                            }
                        }
                    }
                    // Newton left the bracket or stalled: bisect.
                    start.salp1 = (salp1a + salp1b) / 2
                    start.calp1 = (calp1a + calp1b) / 2
                    Self.norm(&start.salp1, &start.calp1)
                    tripn = false
                    tripb =
                        abs(salp1a - start.salp1) + (calp1a - start.calp1) < Self.tolb
                        || abs(start.salp1 - salp1b) + (start.calp1 - calp1b) < Self.tolb
                }
                let lengths = self.lengths(
                    eps: result.eps, sig12: result.sig12, ssig1: result.ssig1,
                    csig1: result.csig1, dn1: dn1, ssig2: result.ssig2,
                    csig2: result.csig2, dn2: dn2)
                sig12 = result.sig12
                s12x = lengths.s12b * self.polarRadius
                a12 = sig12 * 180 / .pi
                salp1 = start.salp1
                calp1 = start.calp1
                salp2 = result.salp2
                calp2 = result.calp2
            }
        }

        // Undo the canonical configuration.
        if swapp < 0 {
            swap(&salp1, &salp2)
            swap(&calp1, &calp2)
        }
        salp1 *= swapp * lonsign
        calp1 *= swapp * latsign
        salp2 *= swapp * lonsign
        calp2 *= swapp * latsign
        return GeodesicInverse(
            distanceMeters: 0 + s12x, initialAzimuthDegrees: Self.atan2d(salp1, calp1),
            finalAzimuthDegrees: Self.atan2d(salp2, calp2), arcDegrees: a12)
    }

    private struct Start {
        var sig12: Double
        var salp1: Double, calp1: Double
        var salp2: Double, calp2: Double
        var dnm: Double
    }

    /// A first guess of α1 (Karney 2013, sect. 4 and 5), or the solution itself for short lines.
    private func inverseStart(
        sbet1: Double, cbet1: Double, dn1: Double, sbet2: Double, cbet2: Double, dn2: Double,
        lam12: Double, slam12: Double, clam12: Double
    ) -> Start {
        var sig12 = -1.0
        var salp2 = 0.0, calp2 = 0.0, dnm = 1.0
        let sbet12 = sbet2 * cbet1 - cbet2 * sbet1
        let cbet12 = cbet2 * cbet1 + sbet2 * sbet1
        let sbet12a = sbet2 * cbet1 + cbet2 * sbet1
        let shortline = cbet12 >= 0 && sbet12 < 0.5 && cbet2 * lam12 < 0.5
        var somg12: Double, comg12: Double
        if shortline {
            var sbetm2 = (sbet1 + sbet2) * (sbet1 + sbet2)
            sbetm2 /= sbetm2 + (cbet1 + cbet2) * (cbet1 + cbet2)
            dnm = (1 + self.ep2 * sbetm2).squareRoot()
            let omg12 = lam12 / (self.f1 * dnm)
            somg12 = _sin(omg12)
            comg12 = _cos(omg12)
        } else {
            somg12 = slam12
            comg12 = clam12
        }
        var salp1 = cbet2 * somg12
        var calp1 =
            comg12 >= 0
            ? sbet12 + cbet2 * sbet1 * somg12 * somg12 / (1 + comg12)
            : sbet12a - cbet2 * sbet1 * somg12 * somg12 / (1 - comg12)
        let ssig12 = (salp1 * salp1 + calp1 * calp1).squareRoot()
        let csig12 = sbet1 * sbet2 + cbet1 * cbet2 * comg12

        if shortline && ssig12 < self.etol2 {
            salp2 = cbet1 * somg12
            calp2 = sbet12 - cbet1 * sbet2 * (comg12 >= 0 ? somg12 * somg12 / (1 + comg12) : 1 - comg12)
            Self.norm(&salp2, &calp2)
            sig12 = _atan2(ssig12, csig12)
        } else if abs(self.n) > 0.1 || csig12 >= 0 || ssig12 >= 6 * abs(self.n) * .pi * cbet1 * cbet1 {
            // The spherical estimate above will do.
        } else {
            // Nearly antipodal: scale to the astroid problem.
            let lam12x = _atan2(-slam12, -clam12)
            let k2 = sbet1 * sbet1 * self.ep2
            let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
            let lamscale = self.flattening * cbet1 * self.a3f(eps) * .pi
            let betscale = lamscale * cbet1
            let x = lam12x / lamscale
            let y = sbet12a / betscale
            if y > -Self.tol1 && x > -1 - Self.xthresh {
                salp1 = min(1, -x)
                calp1 = -(1 - salp1 * salp1).squareRoot()
            } else {
                let k = Self.astroid(x, y)
                let omg12a = lamscale * (-x * k / (1 + k))
                somg12 = _sin(omg12a)
                comg12 = -_cos(omg12a)
                salp1 = cbet2 * somg12
                calp1 = sbet12a - cbet2 * sbet1 * somg12 * somg12 / (1 - comg12)
            }
        }
        if !(salp1 <= 0) {
            Self.norm(&salp1, &calp1)
        } else {
            salp1 = 1
            calp1 = 0
        }
        return Start(sig12: sig12, salp1: salp1, calp1: calp1, salp2: salp2, calp2: calp2, dnm: dnm)
    }
}
