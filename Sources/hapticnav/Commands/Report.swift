import SessionTools
import ArgumentParser
import NavCore
import Runtime
import SystemIO
import MapLogic
import Lab

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

    @Option(
        help:
            "The map (OSM XML or PBF) whose walkable ways are drawn under the tracks; by default the map of the session's config (its study trial's, or the one its metadata names)."
    )
    var map: String?

    @Flag(help: "Draw no walkable ways.")
    var noWays = false

    func run() throws {
        let session = try readSession(self.session)
        var ways: WalkingGraph?
        if !self.noWays {
            do {
                // Given explicitly, a map that cannot be read is an error; found by itself, only a note.
                ways = try WalkableWays.graph(
                    given: self.map,
                    found: WalkableWays.map(session: self.session, metadataConfig: session.metadata["config"]),
                    note: { StandardStreams.writeError("report: \($0)\n") })
            } catch {
                throw CommandFailure("\(error)")
            }
        }
        let html = SessionReport.html(session, title: self.title ?? "HapticNav session \(self.session)", ways: ways)
        try writeFile(Array(html.utf8), to: self.out)
        let summary = SessionReport.summary(session)
        let routes = session.routes.map { "\(Int($0.lengthMeters.rounded())) m" }.joined(separator: ", ")
        print(
            "report: \(self.out): \(Int(summary.distanceMeters.rounded())) m walked in \(Int(summary.durationSeconds.rounded())) s; "
                + "\(session.routes.count) route(s) (\(routes)); \(summary.turnCueOnsets) turn cue(s); "
                + "\(summary.turnAnnouncements + summary.turnNows + summary.turnStraightOns) turn event(s); "
                + "\(summary.failSafeEvents) fail-safe event(s); \(summary.arrived ? "arrived" : "did not arrive")"
                + (ways.map { "; \($0.edgeCount) walkable way segments under the tracks" } ?? ""))
    }
}
