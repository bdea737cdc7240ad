import Foundation
import Testing
@_exported import TestSupport

/// The repository's root folder.
let repositoryRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The built `hapticnav` executable: `HAPTICNAV_BIN`, or the one beside the test bundle.
func hapticnavExecutable() throws -> String {
    if let path = ProcessInfo.processInfo.environment["HAPTICNAV_BIN"] { return path }
    let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    var folder = URL(fileURLWithPath: bundle).deletingLastPathComponent()
    if folder.lastPathComponent == "MacOS" || folder.pathExtension == "xctest" {
        folder = folder.deletingLastPathComponent()
    }
    let candidate = folder.appendingPathComponent("hapticnav").path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw TestProcessError("no hapticnav at \(candidate); run `swift build` first or set HAPTICNAV_BIN")
    }
    return candidate
}


/// The suites that start processes, run one after another: together they would crowd a 2-core machine
/// and make timing assertions flaky.
@Suite(.serialized) enum ProcessSuites {}
