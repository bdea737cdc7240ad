import Foundation
import NavCore
import Testing

/// The repository's root, from this file's place in it.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite struct MagneticModelTests {
    @Test func theCompiledCoefficientsAreNOAAsFileRowForRow() throws {
        let text = try String(
            contentsOf: repository.appendingPathComponent("data/magnetic/WMM2025.COF"), encoding: .utf8)
        var rows: [[Double]] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").compactMap { Double($0) }
            if fields.count == 6 { rows.append(fields) }
        }
        #expect(rows.count == 90, "degree 12: 90 rows")
        // Every row through the public model: a field computed from a one-row model reflects exactly that row.
        let model = MagneticModel.wmm2025
        let rebuilt = MagneticModel(
            name: "file", epoch: 2025, validYears: 2025...2030,
            coefficients: rows.map {
                MagneticModel.Coefficient(n: Int($0[0]), m: Int($0[1]), g: $0[2], h: $0[3], gDot: $0[4], hDot: $0[5])
            })
        for (lat, lon, year) in [(0.0, 0.0, 2025.0), (45.0, 90.0, 2027.3), (-60.0, -120.0, 2029.9), (80, 10, 2026)] {
            let a = try #require(model.field(latitude: lat, longitude: lon, year: year))
            let b = try #require(rebuilt.field(latitude: lat, longitude: lon, year: year))
            #expect(a == b, "the compiled table differs from the file at \(lat), \(lon)")
        }
    }

    @Test func aDipoleGivesTheTextbookField() throws {
        // g(1,0) alone: at the equator, on the reference sphere, the field points north with |g10|; at the pole it
        // points down with twice that.
        let dipole = MagneticModel(
            name: "dipole", epoch: 2025, validYears: 2025...2030,
            coefficients: [.init(n: 1, m: 0, g: -30000, h: 0, gDot: 0, hDot: 0)])
        let equator = try #require(
            dipole.field(latitude: 0, longitude: 0, heightKilometers: 6371.2 - 6378.137, year: 2025))
        #expect(abs(equator.northNanoTesla - 30000) < 1e-6)
        #expect(abs(equator.downNanoTesla) < 1e-6 && abs(equator.declinationDegrees) < 1e-9)
        let pole = try #require(dipole.field(latitude: 90, longitude: 0, year: 2025))
        #expect(pole.inclinationDegrees > 89.99)
    }

    @Test(arguments: [
        (Double.nan, 0.0), (0, .infinity), (91, 0), (-90.5, 10),
    ])
    func aPositionThatIsNotOnEarthHasNoField(_ lat: Double, _ lon: Double) {
        #expect(MagneticModel.wmm2025.field(latitude: lat, longitude: lon, year: 2026) == nil)
    }

    @Test func decimalYearsCountTheYearsDays() throws {
        // 2025-01-01T00:00Z is 2025.0; 2024-07-02T00:00Z is day 183 of a leap year: 2024 + 183/366.
        #expect(MagneticModel.decimalYear(timeSeconds: 1_735_689_600) == 2025.0)
        let july = try #require(MagneticModel.decimalYear(timeSeconds: 1_719_878_400))
        #expect(abs(july - (2024 + 183.0 / 366)) < 1e-12)
        #expect(MagneticModel.decimalYear(timeSeconds: .nan) == nil)
        #expect(MagneticModel.decimalYear(timeSeconds: 1e300) == nil)
    }

    @Test func trueNorthRefusesAMagneticHeadingUntilItKnowsWhereItIs() throws {
        var trueNorth = TrueNorth()
        let time = 1_780_272_000.0  // 2026-06-01
        let magnetic = HeadingSample(timeSeconds: time, headingDegrees: 350, reference: .magneticNorth)
        let refused = trueNorth.trueHeading(magnetic)
        #expect(refused == nil)
        let already = HeadingSample(timeSeconds: time, headingDegrees: 12, reference: .trueNorth)
        let unchanged = trueNorth.trueHeading(already)
        #expect(unchanged == already)
        // Boston: declination about −14°.
        trueNorth.observe(
            .fix(LocationFix(timeSeconds: time, latitude: 42.36, longitude: -71.06, horizontalAccuracyMeters: 5)))
        let result = trueNorth.trueHeading(magnetic)
        let corrected = try #require(result)
        let declination = try #require(
            MagneticModel.wmm2025.field(latitude: 42.36, longitude: -71.06, timeSeconds: time)
        ).declinationDegrees
        #expect(declination < -13 && declination > -15.5)
        #expect(corrected.reference == .trueNorth)
        #expect(abs(corrected.headingDegrees - Angle.normalized(350 + declination)) < 1e-9)
        #expect(trueNorth.correctedCount == 1 && trueNorth.refusedCount == 1)
        // A NaN position teaches nothing.
        trueNorth.observe(latitude: .nan, longitude: 0, heightMeters: nil)
        #expect(trueNorth.position == Coordinate(latitude: 42.36, longitude: -71.06))
    }
}

@Suite struct CompassCheckTests {
    /// What a flat phone facing `heading` (magnetic) measures in `field` [µT, device axes], plus `extra`.
    static func magnetometer(
        _ field: MagneticModel.Field, heading: Double, extra: (Double, Double, Double) = (0, 0, 0)
    ) -> (x: Double, y: Double, z: Double) {
        let h = field.horizontalNanoTesla / 1000, down = field.downNanoTesla / 1000
        let r = heading * .pi / 180
        return (-h * sin(r) + extra.0, h * cos(r) + extra.1, -down + extra.2)
    }

    @Test func theEarthsOwnFieldPassesAtEveryHeading() throws {
        let field = try #require(MagneticModel.wmm2025.field(latitude: 43.73, longitude: 7.42, year: 2026.5))
        var check = CompassCheck()
        for (index, heading) in stride(from: 0.0, to: 360, by: 15).enumerated() {
            let accuracy = check.check(
                magnetometerMicroTesla: Self.magnetometer(field, heading: heading), gravity: (0, 0, 9.81),
                model: field, timeSeconds: Double(index))
            #expect(accuracy == nil)
        }
        #expect(!check.isDisturbed && check.checkedCount == 24)
        let reading = try #require(check.latest)
        #expect(abs(reading.dipDegrees - field.inclinationDegrees) < 1e-9)
        #expect(abs(reading.strengthNanoTesla - field.totalNanoTesla) < 1e-6)
    }

    @Test func aCarsFieldIsCaughtAndTheHeadingsAccuracySaysHowFarOffItMayBe() throws {
        let field = try #require(MagneticModel.wmm2025.field(latitude: 43.73, longitude: 7.42, year: 2026.5))
        var check = CompassCheck()
        var time = 0.0
        func sample(_ extra: (Double, Double, Double)) -> Double? {
            time += 0.1
            return check.check(
                magnetometerMicroTesla: Self.magnetometer(field, heading: 30, extra: extra), gravity: (0.3, 0.2, 9.8),
                model: field, timeSeconds: time)
        }
        let calm = sample((0, 0, 0))
        #expect(calm == nil)
        // Steel beside the phone: 25 µT forward and sideways, 10 µT up, as much as the horizontal field (about 24 µT).
        let disturbed = sample((25, 25, 10))
        let accuracy = try #require(disturbed)
        #expect(accuracy >= 45)
        #expect(check.isDisturbed)
        #expect(check.statusText?.hasPrefix("compass disturbed: field") == true)
        // Back in limits: still disturbed until two seconds in limits have passed.
        for _ in 0..<19 {
            let held = sample((0, 0, 0))
            #expect(held != nil)
        }
        for _ in 0..<3 { _ = sample((0, 0, 0)) }
        #expect(!check.isDisturbed)
        #expect(check.disturbanceCount == 1)
    }

    @Test func aFieldOfTheRightStrengthButTheWrongDipIsCaughtToo() throws {
        let field = try #require(MagneticModel.wmm2025.field(latitude: 43.73, longitude: 7.42, year: 2026.5))
        var check = CompassCheck()
        // The same strength turned 20° away from the Earth's dip.
        let f = field.totalNanoTesla / 1000
        let dip = (field.inclinationDegrees - 20) * .pi / 180
        let accuracy = check.check(
            magnetometerMicroTesla: (0, f * cos(dip), -f * sin(dip)), gravity: (0, 0, 9.81), model: field,
            timeSeconds: 1)
        #expect(accuracy != nil)
        #expect(abs(check.latest!.strengthNanoTesla - field.totalNanoTesla) < 1e-6)
    }

    @Test func nonsenseSamplesTeachNothing() throws {
        let field = try #require(MagneticModel.wmm2025.field(latitude: 43.73, longitude: 7.42, year: 2026.5))
        var check = CompassCheck()
        let nan = check.check(magnetometerMicroTesla: (.nan, 0, 0), gravity: (0, 0, 9.81), model: field, timeSeconds: 1)
        let noGravity = check.check(magnetometerMicroTesla: (1, 2, 3), gravity: (0, 0, 0), model: field, timeSeconds: 2)
        #expect(nan == nil && noGravity == nil)
        #expect(check.checkedCount == 0)
    }
}

extension CompassCheckTests {
    /// What the check cannot see, stated as a test so the docs stay honest: a local field that only turns the
    /// horizontal field, keeping strength and dip, passes.
    @Test func aDisturbanceThatKeepsStrengthAndDipIsInvisibleToIt() throws {
        let field = try #require(MagneticModel.wmm2025.field(latitude: 43.73, longitude: 7.42, year: 2026.5))
        var check = CompassCheck()
        // The Earth's field as if the phone faced 30° further round.
        let turned = check.check(
            magnetometerMicroTesla: Self.magnetometer(field, heading: 60), gravity: (0, 0, 9.81), model: field,
            timeSeconds: 1)
        #expect(turned == nil)
    }
}

/// Our World Magnetic Model against NOAA's published test values and against an independent implementation.
@Suite struct MagneticModelReferenceTests {
    /// NOAA's WMM2025 test-value table, to the precision it is printed with (0.1 nT, 0.01°): a value printed as 6521.6
    /// is anything within 0.05 of it.
    @Test func noaasPublishedTestValuesToTheirPrintedPrecision() throws {
        let text = try String(
            contentsOf: repository.appendingPathComponent("data/magnetic/WMM2025_TestValues.txt"), encoding: .utf8)
        let rows = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            $0.split(separator: " ").compactMap { Double($0) }
        }
        #expect(rows.count == 12)
        var worst = (nanoTesla: 0.0, degrees: 0.0)
        for row in rows {
            let field = try #require(
                MagneticModel.wmm2025.field(
                    latitude: row[2], longitude: row[3], heightKilometers: row[1], year: row[0]))
            for (computed, printed) in [
                (field.northNanoTesla, row[4]), (field.eastNanoTesla, row[5]), (field.downNanoTesla, row[6]),
            ] {
                worst.nanoTesla = max(worst.nanoTesla, abs(computed - printed))
                #expect(abs(computed - printed) <= 0.05 + 1e-9, "\(row): \(computed) nT printed as \(printed)")
            }
            worst.degrees = max(worst.degrees, abs(field.declinationDegrees - row[7]))
            #expect(abs(field.declinationDegrees - row[7]) <= 0.005 + 1e-9, "\(row): D \(field.declinationDegrees)")
        }
        print(
            "WMM2025 against NOAA's 12 test values: worst \(worst.nanoTesla) nT, \(worst.degrees)° (printed to 0.1 nT, 0.01°)"
        )
    }

    /// PyPI's `pygeomag` (installed by scripts/setup, used by this test only) on a global grid: latitudes from pole to
    /// pole, every 30° of longitude, two heights and three dates across the model's five years.
    @Test func anIndependentImplementationAgreesOnAGlobalGrid() async throws {
        let script = """
            import json, pygeomag, os
            cof = os.path.join(os.path.dirname(pygeomag.__file__), 'wmm', 'WMM_2025.COF')
            g = pygeomag.GeoMag(coefficients_file=cof)
            for year in (2025.0, 2027.31, 2029.99):
                for h in (0.0, 12.5):
                    for lat in (-89.5, -75, -52.3, -30, -10, 0, 10, 33.3, 60, 75, 89.5):
                        for lon in range(-180, 180, 30):
                            r = g.calculate(glat=lat, glon=lon, alt=h, time=year)
                            print(json.dumps([year, h, lat, lon, r.x, r.y, r.z, r.d, r.i, r.f]))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let pipe = Pipe()
        process.standardOutput = pipe
        // Waited for without holding one of the test pool's few threads.
        let exited = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in exited.continuation.finish() }
        try process.run()
        // Read on a thread of its own (a detached task would run on the pool too).
        let output = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: pipe.fileHandleForReading.readDataToEndOfFile()) }.start()
        }
        for await _ in exited.stream {}
        #expect(process.terminationStatus == 0, "pygeomag ran (scripts/setup installs it)")
        let rows = String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONDecoder().decode([Double].self, from: Data($0.utf8))
        }
        #expect(rows.count == 3 * 2 * 11 * 12)
        var worst = (nanoTesla: 0.0, degrees: 0.0)
        for row in rows {
            let field = try #require(
                MagneticModel.wmm2025.field(latitude: row[2], longitude: row[3], heightKilometers: row[1], year: row[0])
            )
            let nanoTesla = [
                field.northNanoTesla - row[4], field.eastNanoTesla - row[5], field.downNanoTesla - row[6],
                field.totalNanoTesla - row[9],
            ].map(abs).max()!
            let degrees = max(
                abs(Angle.signedDifference(from: row[7], to: field.declinationDegrees)),
                abs(field.inclinationDegrees - row[8]))
            worst = (max(worst.nanoTesla, nanoTesla), max(worst.degrees, degrees))
            #expect(nanoTesla < 0.01 && degrees < 1e-4, "\(row): \(nanoTesla) nT, \(degrees)°")
        }
        print("WMM2025 against pygeomag on \(rows.count) grid points: worst \(worst.nanoTesla) nT, \(worst.degrees)°")
    }
}
