public import NavCore
import SystemIO
public import HapticLogic

/// The `console` device: one short line per change of cue, fit for a screen reader ("turn left, strong").
public actor ConsoleDevice: OutputDevice {
    public static let id = "console"
    public nonisolated let name = "console"
    private var last: String?
    private var lines = 0
    private let prefix: String
    private let output: Output

    /// Where the lines go.
    public enum Output: String, Sendable, CaseIterable {
        /// Standard output (a screen reader, a pipe).
        case stdout
        /// Standard error.
        case stderr
        /// Nowhere: the lines are only counted (a harness that reads the cues from the bus, stages composed in its
        /// process, whose standard output is its own).
        case none
    }

    /// Creates the device; lines start with `prefix` and go to `output`.
    public init(prefix: String = "", output: Output = .stdout) {
        self.prefix = prefix
        self.output = output
    }

    /// Reads a config's settings: `prefix`, `output` (stdout, stderr or none).
    public init(settings: Settings) throws {
        var settings = settings
        let prefix = try settings.value(Setting.prefix)
        let output = try settings.string(
            Setting.output.key, default: Setting.output.defaultValue, oneOf: Output.allCases.map(\.rawValue))
        try settings.finish()
        self.init(prefix: prefix, output: Output(rawValue: output)!)
    }

    /// The words for a cue.
    public static func words(_ cue: HapticCue) -> String {
        let strength = cue.intensity >= 0.7 ? "strong" : (cue.intensity >= 0.4 ? "medium" : "light")
        switch cue.kind {
        case .silent: return "on course"
        case .turnLeft: return "turn left, \(strength)"
        case .turnRight: return "turn right, \(strength)"
        case .turnAround: return "turn around"
        case .arrival: return "arrived"
        case .signalLost: return "signal lost, stopped"
        case .calibration: return "calibration, \(strength)"
        }
    }

    private func say(_ line: String) {
        self.lines += 1
        switch self.output {
        case .stdout: StandardStreams.writeOutput(self.prefix + line + "\n")
        case .stderr: StandardStreams.writeError(self.prefix + line + "\n")
        case .none: break
        }
    }

    public func render(_ cue: HapticCue) {
        let words = Self.words(cue)
        guard words != self.last else { return }
        self.last = words
        self.say(words)
    }

    public func stopAll() {
        if self.last != nil && self.last != "on course" && self.last != "signal lost, stopped" {
            self.last = "stopped"
            self.say("stopped")
        }
    }

    public func announce(_ text: String) {
        self.say(text)
    }

    public func renderTurn(_ event: TurnEvent) {
        self.say("turn: " + TurnWords.text(event))
    }

    public func observe(_ message: BusMessage) {}

    /// Nothing to keep alive.
    public func run() {}

    /// Always ready.
    public func isAvailable() -> Bool { true }

    public func summary() -> String {
        "\(self.lines) line(s)"
    }
}

extension ConsoleDevice {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let prefix = ValueSpec<String>("prefix", default: "", "Put before every line.")

        /// Every setting, as documentation shows it.
        public static let output = ValueSpec<String>(
            "output", default: Output.stdout.rawValue,
            accepts: Output.allCases.map(\.rawValue).joined(separator: ", "),
            "Where lines go (none: only counted).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [prefix.doc, output.doc]
    }
}
