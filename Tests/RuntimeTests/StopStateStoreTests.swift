import Foundation
import Runtime
import StageHaptic
import Testing
import TestSupport

/// The experimenter's stop, kept in a file so that it holds across a restart of the sink.
@Suite struct StopStateStoreTests {
    @Test func aStopIsReadBackAndAResumeClearsIt() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = FileStopStateStore(path: "\(folder)/state/control.json")
        #expect(store.load() == nil, "no file: no stop")
        let stop = StopState(by: "experimenter", sinceSeconds: 1_795_000_000.25)
        try store.save(stop)
        #expect(FileStopStateStore(path: store.path).load() == stop, "a new store (a restarted sink) reads the stop")
        try store.save(nil)
        #expect(store.load() == nil, "the shorter state written over the longer one reads as itself")
        let again = StopState(by: "condition-lock", sinceSeconds: 1_795_000_100, note: "band lost")
        try store.save(again)
        #expect(FileStopStateStore(path: store.path).load() == again)
        // Replaced in one step: nothing but the state file is left beside it.
        let left = try FileManager.default.contentsOfDirectory(atPath: "\(folder)/state")
        #expect(left == ["control.json"], "\(left)")
    }

    @Test func aFileThatCannotBeReadCountsAsAStop() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = "\(folder)/control.json"
        try Data("{\"stop\": ".utf8).store(toFile: path)
        let stop = try #require(FileStopStateStore(path: path).load(), "a torn file is read as a stop")
        #expect(stop.note.contains("cannot be read"), "\(stop.note)")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/null")
        let linked = try #require(FileStopStateStore(path: path).load(), "a link is not trusted")
        #expect(linked.note.contains("not a file of this user"), "\(linked.note)")
    }

    @Test func aLinkInThePlaceOfTheFileIsReplacedNotWrittenThrough() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let target = "\(folder)/elsewhere"
        try Data("kept".utf8).store(toFile: target)
        let path = "\(folder)/control.json"
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        let stop = StopState(by: "experimenter", sinceSeconds: 1)
        try FileStopStateStore(path: path).save(stop)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "kept")
        #expect(FileStopStateStore(path: path).load() == stop)
    }
}
