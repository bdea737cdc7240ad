#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Parsers
public import NavCore
import SystemIO
public import MapLogic

/// `hapticnav eval smoother`: the smoother's error and lag on simulated walks and on a real one.
public enum SmootherReport {
    /// One line of the report.
    public struct Row: Sendable {
        /// What was walked.
        public var walk: String
        /// Noise added to every fix [metres, one sigma per axis].
        public var sigma: Double
        /// Runs pooled [count].
        public var runs: Int
        /// The pooled figures.
        public var metrics: SmootherEvaluation.Metrics
    }

    /// Reads the GPS fixes of a GnssLogger log, through the one GnssLogger parser (``GnssLoggerLine``).
    public static func gnssLoggerFixes(file: String) throws -> (times: [Double], points: [Coordinate]) {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        var times: [Double] = [], points: [Coordinate] = []
        // isNewline: GnssLogger writes CRLF, and "\r\n" is one Character in Swift.
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("Fix,") {
            guard case let .success(messages) = GnssLoggerLine.decode(line, providers: ["GPS"]) else { continue }
            for case let .fix(fix) in messages {
                times.append(fix.timeSeconds)
                points.append(Coordinate(latitude: fix.latitude, longitude: fix.longitude))
            }
        }
        return (times, points)
    }

    /// Runs the evaluation: `walks` simulated walks per noise level, and `walks` noise seeds on the real walk.
    public static func run(
        realWalk: String?, walks: Int = 20, options: KalmanSmoother.Options = .init()
    ) throws -> [Row] {
        var rows: [Row] = []
        for sigma in [5.0, 10.0] {
            let runs = (1...walks).map { seed in
                SmootherEvaluation.evaluate(
                    SmootherEvaluation.simulatedWalk(seed: UInt64(seed)), sigma: sigma,
                    seed: UInt64(seed) * 7919 + UInt64(sigma), options: options)
            }
            rows.append(
                Row(
                    walk: "simulated grid walk", sigma: sigma, runs: walks,
                    metrics: .pooled(runs)))
        }
        if let realWalk {
            let recorded = try self.gnssLoggerFixes(file: realWalk)
            guard let track = SmootherEvaluation.recordedWalk(times: recorded.times, points: recorded.points) else {
                throw ConfigError.invalidValue(
                    path: realWalk, expected: "at least two GPS fixes", found: "\(recorded.points.count)")
            }
            for sigma in [5.0, 10.0] {
                let runs = (1...walks).map { seed in
                    SmootherEvaluation.evaluate(
                        track, sigma: sigma, seed: UInt64(seed) * 104_729 + UInt64(sigma),
                        options: options)
                }
                rows.append(
                    Row(
                        walk: Paths.lastComponent(of: realWalk), sigma: sigma, runs: walks,
                        metrics: .pooled(runs)))
            }
        }
        return rows
    }
}
