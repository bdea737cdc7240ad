import MapFiles
import Foundation
import NavCore
import Parsers
import TestSupport
import MapLogic

/// Loads OpenStreetMap XML text as a walking graph, through a temporary file of its own (removed after).
func loadOSM(_ xml: String, name: String = "map") throws -> WalkingGraph {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).osm").path
    try xml.store(toFile: file)
    defer { try? FileManager.default.removeItem(atPath: file) }
    return try OSMLoader.load(file: file)
}
