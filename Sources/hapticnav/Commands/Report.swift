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
        let session = try readSession(self.session)
        let html = SessionReport.html(session, title: self.title ?? "HapticNav session \(self.session)")
        try writeFile(Array(html.utf8), to: self.out)
        let summary = SessionReport.summary(session)
        let routes = session.routes.map { "\(Int($0.lengthMeters.rounded())) m" }.joined(separator: ", ")
        print(
            "report: \(self.out): \(Int(summary.distanceMeters.rounded())) m walked in \(Int(summary.durationSeconds.rounded())) s; "
                + "\(session.routes.count) route(s) (\(routes)); \(summary.turnCueOnsets) turn cue(s); "
                + "\(summary.failSafeEvents) fail-safe event(s); \(summary.arrived ? "arrived" : "did not arrive")")
    }
}
