import SessionFiles
import ArgumentParser
import NavCore
import Parsers
import SystemIO
#if canImport(Glibc)
import Glibc
import Lab
#endif

struct Repair: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Close the session parts a crash left open, so that every MCAP tool reads them.",
        discussion: """
            A recorder killed before it closed its part leaves a file without its summary and footer: HapticNav reads \
            it to its last complete chunk, but indexed readers (Foxglove, Python's mcap) refuse it. This rewrites each \
            such part with what it holds, closed, in place (through a temporary file beside it); closed parts are \
            left alone.
            """)

    @Argument(help: "The session: a folder of .mcap parts, or one part.")
    var session: String

    func run() throws {
        let files: [String]
        do {
            files = try SessionReader.files(of: self.session)
        } catch {
            throw CommandFailure("\(error)")
        }
        var repaired = 0
        for file in files where file.hasSuffix(".mcap") {
            var records: [RecordedMessage] = []
            let summary: SessionReader.Summary
            do {
                summary = try SessionReader.read(file) { records.append($0) }
            } catch {
                throw CommandFailure("\(error)")
            }
            guard let cut = summary.cutFiles.first else { continue }
            var metadata =
                summary.metadata.first { $0.name == "hapticnav.session" }?.values.sorted { $0.key < $1.key }
                .map { ($0.key, $0.value) } ?? []
            metadata.append(("repairedFromByte", String(cut.atByte)))
            var writer = SessionWriter(library: "hapticnav repair", metadata: metadata)
            records.forEach { writer.add($0) }
            writer.addMetadata(
                name: "hapticnav.repair",
                values: [("records", String(records.count)), ("cutAtByte", String(cut.atByte))])
            writer.finish()
            let temporary = file + ".repairing"
            try writeFile(writer.takeOutput(), to: temporary)
            guard rename(temporary, file) == 0 else { throw CommandFailure("\(file): cannot be replaced") }
            repaired += 1
            print("\(file): closed with its \(records.count) complete record(s) (it was cut at byte \(cut.atByte))")
        }
        if repaired == 0 { print("\(self.session): every part was closed already") }
    }
}
