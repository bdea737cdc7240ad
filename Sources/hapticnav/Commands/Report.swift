import ArgumentParser
import NavCore
import Runtime
import SystemIO

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A session as one self-contained HTML page: summary, SVG map of routes and tracks, timeline of deviation, cues, device switches and fail-safe events.",
        discussion: "The page needs no network: open it in any browser, attach it to a lab notebook.")

    @Argument(help: "The session: a folder of .mcap parts, an .mcap file or a .jsonl recording.")
    var session: String

    @Option(help: "The HTML file to write.")
    var out: String

    @Option(help: "The page's title (the session's path by default).")
    var title: String?

    func run() throws {
        let session: SessionExport.Session
        do {
            session = try SessionExport.read(self.session)
        } catch {
            throw CommandFailure("\(error)")
        }
        reportSessionProblems(
            self.session, badRecords: session.badLines, firstBad: session.firstBad, cutFiles: session.cutFiles)
        let html = SessionReport.html(session, title: self.title ?? "HapticNav session \(self.session)")
        do {
            let file = try OutputFile(path: self.out, mode: .truncate)
            defer { file.close() }
            guard file.write(Array(html.utf8)) else { throw CommandFailure("\(self.out): cannot be written") }
        } catch let error as SystemError {
            throw CommandFailure("\(error)")
        }
        let summary = SessionReport.summary(session)
        let routes = session.routes.map { "\(Int($0.lengthMeters.rounded())) m" }.joined(separator: ", ")
        print(
            "report: \(self.out): \(Int(summary.distanceMeters.rounded())) m walked in \(Int(summary.durationSeconds.rounded())) s; "
                + "\(session.routes.count) route(s) (\(routes)); \(summary.turnCueOnsets) turn cue(s); "
                + "\(summary.failSafeEvents) fail-safe event(s); \(summary.arrived ? "arrived" : "did not arrive")")
    }
}
