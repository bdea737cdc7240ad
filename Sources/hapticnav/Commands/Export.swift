import SessionTools
import ArgumentParser
import NavCore
import Runtime
import SystemIO
import Lab

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A session as GeoJSON (tracks, routes, cues), GPX (tracks with times, routes), CSV (fixes, smoothed fixes and cues by time) or MCAP for Foxglove (LocationFix tracks, GeoJSON routes, every message in JSON)."
    )

    @Argument(help: "The session: a folder of .mcap parts, an .mcap file or a .jsonl recording.")
    var recording: String

    @Option(help: "geojson, gpx, csv or mcap.")
    var format = "geojson"

    @Option(help: "Write here instead of standard output.")
    var out: String?

    func validate() throws {
        guard SessionExport.formats.contains(self.format) else {
            throw ValidationError(
                "--format: '\(self.format)' is not one of \(SessionExport.formats.joined(separator: ", "))")
        }
        if self.format == "mcap" && self.out == nil {
            throw ValidationError("--format mcap is binary: give --out FILE")
        }
    }

    func run() throws {
        let session = try readSession(self.recording)
        let bytes = SessionExport.render(session, format: self.format)
        if let out = self.out {
            try writeFile(bytes, to: out)
        } else {
            StandardStreams.writeOutput(String(decoding: bytes, as: UTF8.self))
        }
    }
}
