#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
import NavCore
import SystemIO

/// What a session's report needs of the pipeline that recorded it: its config, written into the session's folder as
/// `config.json` (its `${VARIABLES}` as they were when it ran, its `directory` absolute, so that the map it names is
/// found from anywhere later; `hapticnav report` looks there for the walkable ways to draw).
public enum SessionConfigRecord {
    /// The file's name in a session folder.
    public static let fileName = "config.json"

    /// Writes `pipeline`'s config into `folder`; a failure is logged, never fatal (the recording matters more).
    public static func write(_ pipeline: PipelineConfig, into folder: String, logger: Logger) {
        do {
            // The config as it ran: its directory absolute (ConfigSweep's, with nothing set), its variables expanded.
            let tree = try ConfigSweep.config(file: pipeline.file, setting: [])
            let expanded = try tree.expandingVariables(
                environment: ProcessInfo.processInfo.environment, path: "the config")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try Paths.createFolders(folder)
            try Paths.writeWhole(Array(try encoder.encode(expanded)), to: "\(folder)/\(Self.fileName)")
        } catch {
            logger.warning("the session's config was not written into \(folder) (its report draws no ways): \(error)")
        }
    }
}
