import Foundation
import Logging
import Runtime
import Synchronization
import Testing
import TestSupport

@Suite struct JournalLogHandlerTests {
    @Test func eachMetadataFieldIsAJournalFieldOfItsOwn() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let journal = try JournalListener(folder: folder)
        var handler = JournalLogHandler(label: "hapticnav.bus", identifier: "hapticnav", socket: journal.path)
        handler.logLevel = .info
        var logger = Logger(label: "hapticnav.bus") { _ in handler }
        logger[metadataKey: "stage"] = "haptic"
        logger.warning("band lost; speaker playing", metadata: ["device.name": "band", "lost-count": "2"])
        logger.debug("below the level: not sent")
        logger.error("two\nlines")

        let warning = try #require(journal.receive())
        #expect(warning["MESSAGE"] == "device.name=band lost-count=2 stage=haptic band lost; speaker playing")
        #expect(warning["PRIORITY"] == "4")
        #expect(warning["SYSLOG_IDENTIFIER"] == "hapticnav")
        #expect(warning["HAPTICNAV_LABEL"] == "hapticnav.bus")
        #expect(warning["HAPTICNAV_SOURCE"] == "RuntimeTests")
        #expect(warning["HAPTICNAV_STAGE"] == "haptic")
        #expect(warning["HAPTICNAV_DEVICE_NAME"] == "band")
        #expect(warning["HAPTICNAV_LOST_COUNT"] == "2")
        #expect(warning["CODE_FILE"]?.hasSuffix("JournalLogHandlerTests.swift") == true)
        #expect(Int(warning["CODE_LINE"] ?? "") != nil)

        // The debug line was not sent: the next datagram is the error, its line break in the length form.
        let error = try #require(journal.receive())
        #expect(error["MESSAGE"] == "stage=haptic two\nlines")
        #expect(error["PRIORITY"] == "3")
    }

    /// With no journal to take it, a message goes to standard error whole: its metadata, its text and its error.
    @Test func aMessageTheJournalDoesNotTakeGoesToStandardErrorWithItsError() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let lines = Mutex<[String]>([])
        let handler = JournalLogHandler(
            label: "hapticnav.route", identifier: "hapticnav", socket: folder + "/no-journal-here",
            fallback: { line in lines.withLock { $0.append(line) } })
        let logger = Logger(label: "hapticnav.route") { _ in handler }
        struct EngineDown: Error, CustomStringConvertible {
            var description: String { "valhalla refused the connection" }
        }
        logger.error("reroute failed", error: EngineDown(), metadata: ["stage": "route"])
        #expect(
            lines.withLock { $0 } == [
                "hapticnav[hapticnav.route] error: stage=route reroute failed: valhalla refused the connection\n"
            ])
    }

    @Test func standardErrorIsTheJournalOnlyWhenJournalStreamNamesIt() {
        var info = stat()
        #expect(fstat(2, &info) == 0)
        #expect(JournalLogHandler.stderrIsJournal(journalStream: "\(info.st_dev):\(info.st_ino)"))
        #expect(!JournalLogHandler.stderrIsJournal(journalStream: "\(info.st_dev):\(info.st_ino + 1)"))
        #expect(!JournalLogHandler.stderrIsJournal(journalStream: "not:numbers"))
        #expect(!JournalLogHandler.stderrIsJournal(journalStream: nil))
    }
}
