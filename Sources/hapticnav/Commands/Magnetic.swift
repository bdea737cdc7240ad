import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import SystemIO

struct Magnetic: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "The Earth's magnetic field at a place and date from the World Magnetic Model (WMM2025): declination, inclination, intensities.",
        discussion: """
            True heading = magnetic heading + declination (east positive). A southern or western position is negative:
            hapticnav magnetic -33.86,151.21 --date 2026-03-01.
            """)

    // All unrecognised: "-33.8,151.2" is the position, not an option.
    @Argument(parsing: .allUnrecognized, help: "The place, as LAT,LON in degrees.")
    var position: [String] = []

    @Option(help: "The date, as YYYY-MM-DD (default: today, UTC).")
    var date: String?

    @Option(help: "Height above the WGS84 ellipsoid [metres].")
    var height: Double = 0

    @Flag(help: "One JSON object.")
    var json = false

    func run() throws {
        guard self.position.count == 1, let place = Coordinate(latitudeLongitude: self.position[0]) else {
            throw ValidationError("expected one position as LAT,LON, like 43.7319,7.4216")
        }
        guard self.height.isFinite, abs(self.height) <= 1_000_000 else {
            throw ValidationError("--height: expected metres within ±1000 km")
        }
        let time: Double
        if let date = self.date {
            guard let seconds = CivilTime.parseISO8601(Substring(date + "T00:00:00Z")) else {
                throw ValidationError("--date: expected a date like 2026-03-01")
            }
            time = seconds
        } else {
            time = Date().timeIntervalSince1970
        }
        let model = MagneticModel.wmm2025
        guard let year = MagneticModel.decimalYear(timeSeconds: time),
            let field = model.field(
                latitude: place.latitude, longitude: place.longitude, heightKilometers: self.height / 1000, year: year)
        else { throw CommandFailure("no field for that place and date") }
        var warnings: [String] = []
        if !model.validYears.contains(year) {
            warnings.append(
                "\(model.name) is valid \(fixedDecimal(model.validYears.lowerBound, digits: 1))–\(fixedDecimal(model.validYears.upperBound, digits: 1)); this date is extrapolated"
            )
        }
        if field.isBlackout {
            warnings.append("blackout zone (H < 2000 nT): a compass is unreliable here, declination means little")
        } else if field.isCaution {
            warnings.append("caution zone (H < 6000 nT): compasses are degraded here")
        }
        if self.json {
            struct Output: Encodable {
                var model: String, latitude: Double, longitude: Double, heightMeters: Double, decimalYear: Double
                var declinationDegrees: Double, inclinationDegrees: Double, totalIntensityNanoTesla: Double
                var horizontalIntensityNanoTesla: Double, northNanoTesla: Double, eastNanoTesla: Double
                var downNanoTesla: Double, declinationChangeDegreesPerYear: Double, warnings: [String]
            }
            let output = Output(
                model: model.name, latitude: place.latitude, longitude: place.longitude, heightMeters: self.height,
                decimalYear: year, declinationDegrees: field.declinationDegrees,
                inclinationDegrees: field.inclinationDegrees, totalIntensityNanoTesla: field.totalNanoTesla,
                horizontalIntensityNanoTesla: field.horizontalNanoTesla, northNanoTesla: field.northNanoTesla,
                eastNanoTesla: field.eastNanoTesla, downNanoTesla: field.downNanoTesla,
                declinationChangeDegreesPerYear: field.declinationChangeDegrees, warnings: warnings)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            StandardStreams.writeOutput(String(decoding: try encoder.encode(output), as: UTF8.self) + "\n")
            return
        }
        func d(_ value: Double, _ digits: Int) -> String { fixedDecimal(value, digits: digits) }
        let east = field.declinationDegrees >= 0 ? "east" : "west"
        var lines = [
            "\(model.name) at \(d(place.latitude, 5)), \(d(place.longitude, 5)), \(d(self.height, 0)) m, \(d(year, 3))",
            "declination          \(d(field.declinationDegrees, 2))° (\(east); true = magnetic + declination)",
            "inclination          \(d(field.inclinationDegrees, 2))° (down positive)",
            "total intensity      \(d(field.totalNanoTesla, 1)) nT",
            "horizontal intensity \(d(field.horizontalNanoTesla, 1)) nT",
            "north, east, down    \(d(field.northNanoTesla, 1)), \(d(field.eastNanoTesla, 1)), \(d(field.downNanoTesla, 1)) nT",
            "declination change   \(d(field.declinationChangeDegrees * 60, 1)) arcmin a year",
        ]
        lines += warnings.map { "warning: \($0)" }
        StandardStreams.writeOutput(lines.joined(separator: "\n") + "\n")
    }
}
