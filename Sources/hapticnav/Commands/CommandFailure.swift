import NavCore
import Runtime
import SystemIO

/// A command that failed at run time (a file that cannot be read, a config that is wrong): its message is printed
/// and the process exits 1. Only a usage error (a bad option) prints usage and exits 64.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func loadConfig(_ file: String, calibrationMayBeMissing: Bool = false) throws -> PipelineConfig {
    do {
        return try PipelineConfig.load(file: file, calibrationMayBeMissing: calibrationMayBeMissing)
    } catch let error as ConfigError {
        // Which file, when the message does not say (a command may be given several).
        let text = "\(error)"
        throw CommandFailure(text.contains(file) ? text : "\(file): \(text)")
    }
}

/// Writes a command's output file (made, or emptied first); a failure names the file.
func writeFile(_ bytes: [UInt8], to path: String) throws {
    do {
        let file = try OutputFile(path: path, mode: .truncate)
        defer { file.close() }
        guard file.write(bytes) else { throw CommandFailure("\(path): cannot be written") }
    } catch let error as SystemError {
        throw CommandFailure("\(error)")
    }
}
