public import NavCore
import SystemIO

extension Settings {
    /// A file the plugin reads, resolved against the config's folder; nil when the key is absent. A file that does
    /// not exist, is a folder or cannot be read is an error naming the key, when the config is checked, not later.
    public mutating func inputFile(_ key: String) throws(ConfigError) -> String? {
        guard let file = try self.path(key) else { return nil }
        if let reason = Paths.unreadableReason(file) {
            throw .missingFile(path: "\(self.path).\(key)", file: file, reason: reason)
        }
        return file
    }

    /// Reads an input file's path by its spec: resolved, and readable; nil when absent.
    public mutating func inputFile(_ spec: ValueSpec<String>) throws(ConfigError) -> String? {
        try self.inputFile(spec.key)
    }
}
