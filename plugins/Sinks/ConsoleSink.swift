import SystemIO
public import NavCore

/// Prints one short line per message on standard output, for a person watching a run (or a screen reader).
public struct ConsoleSink: MessageSink {
    public static let id = "console"

    /// Prefix of every line, for example the stage name.
    public let prefix: String

    /// Creates a console sink.
    public init(prefix: String) {
        self.prefix = prefix
    }

    /// Reads the settings of a config's `console` sink.
    public init(settings: Settings) throws {
        var settings = settings
        self.prefix = try settings.value(Setting.prefix)
        try settings.finish()
    }

    public func record(_ message: RecordedMessage) {
        let line =
            "\(self.prefix)\(message.stage) \(message.message.kind.topic) #\(message.sequence) \(message.message.summary)\n"
        StandardStreams.writeOutput(line)
    }

    public func finish() {}
}

extension ConsoleSink {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let prefix = ValueSpec<String>("prefix", default: "", "Put before every line.")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [prefix.doc]
    }
}
