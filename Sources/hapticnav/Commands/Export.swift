import ArgumentParser
import NavCore
import Runtime
import SystemIO

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A recording of the jsonl recorder as GeoJSON (tracks, routes, cues), GPX (tracks with times, routes) or CSV (fixes, smoothed fixes and cues by time)."
    )

    @Argument(help: "The recording (JSON Lines, as the jsonl recorder writes it).")
    var recording: String

    @Option(help: "geojson, gpx or csv.")
    var format = "geojson"

    @Option(help: "Write here instead of standard output.")
    var out: String?

    func validate() throws {
        guard SessionExport.formats.contains(self.format) else {
            throw ValidationError(
                "--format: '\(self.format)' is not one of \(SessionExport.formats.joined(separator: ", "))")
        }
    }

    func run() throws {
        let session: SessionExport.Session
        do {
            session = try SessionExport.read(self.recording)
        } catch {
            throw CommandFailure("\(error)")
        }
        if session.badLines > 0 {
            StandardStreams.writeError(
                "\(self.recording): \(session.badLines) line(s) that are not records skipped (the first is line \(session.firstBadLine ?? 0))\n"
            )
        }
        let text = SessionExport.render(session, format: self.format)
        if let out = self.out {
            do {
                let file = try OutputFile(path: out)
                defer { file.close() }
                guard file.write(text) else { throw CommandFailure("\(out): cannot be written") }
            } catch let error as SystemError {
                throw CommandFailure("\(error)")
            }
        } else {
            StandardStreams.writeOutput(text)
        }
    }
}
