#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
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
            guard case var .object(root) = try PipelineConfig.readTree(file: pipeline.file) else { return }
            root["directory"] = .string(
                Paths.absolute(PipelineConfig.baseDirectory(of: .object(root), file: pipeline.file)))
            let expanded = try PipelineConfig.expandVariables(
                .object(root), environment: ProcessInfo.processInfo.environment, path: "the config")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let bytes = Array(try encoder.encode(expanded))
            try Paths.createFolders(folder)
            let file = "\(folder)/\(Self.fileName)"
            let partial = "\(file).partial-\(getpid())"
            let output = try OutputFile(path: partial, mode: .truncate)
            let written = output.write(bytes)
            output.close()
            guard written else { throw SystemError("write", path: partial) }
            try Paths.replace(file, with: partial)
        } catch {
            logger.warning("the session's config was not written into \(folder) (its report draws no ways): \(error)")
        }
    }
}
