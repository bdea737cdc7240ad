public import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NavCore
import SystemIO

/// What a stage does. Each role has its own stage actor and its own plugins.
public enum StageRole: String, CaseIterable, Sendable {
    /// Publishes fixes, headings and attitude from a ``MessageSource`` plugin.
    case source
    /// Turns fixes into smoothed fixes with a ``SmoothingFilter`` plugin.
    case smoother
    /// Routes, tracks progress and reroutes with a ``RouteProvider`` plugin.
    case route
    /// Turns heading and guidance into cues on ``OutputDevice`` plugins.
    case haptic
    /// Writes what it receives with a ``MessageSink`` plugin.
    case recorder
}

/// One stage of a pipeline config.
public struct StageConfig: Sendable {
    /// The stage's name; also the sender id in every header it writes.
    public var name: String
    /// What it does.
    public var role: StageRole
    /// The plugin id within its role.
    public var plugin: String
    /// The plugin's settings, read and checked by the plugin.
    public var settings: Settings
    /// The stage's own settings (for a route stage: the destination and tracking thresholds).
    public var options: Settings
    /// Endpoints its publisher binds (for example "ipc:///tmp/hapticnav/source.sock" or "tcp://*:5601").
    public var publish: [String]
    /// Endpoints other stages connect to for it; defaults to `publish` with "*" as 127.0.0.1.
    public var advertise: [String]
    /// Endpoints it subscribes to, resolved from stage names or given directly.
    public var inputs: [String]
    /// Topics it subscribes to; empty means all.
    public var topics: [String]
    /// The host group it belongs to (for `hapticnav run --group`), for example "1" for the map logic.
    public var group: String?
    /// Its key pair's name in the security block's folder: it publishes with CURVE and reads with it.
    public var key: String? = nil
    /// Plain TCP beyond loopback, knowingly: allowed, and warned about at every start.
    public var insecure = false
    /// For each input endpoint named through a stage, that stage: only its messages are accepted there.
    public var inputStages: [String: String] = [:]
}

extension Collection<StageConfig> {
    /// The stage that advertises `endpoint`, if one of these does.
    public func publisher(at endpoint: String) -> StageConfig? {
        self.first { $0.advertise.contains(endpoint) }
    }
}

/// Transport settings shared by every stage of a pipeline.
public struct BusConfig: Sendable {
    /// The settings a config's `bus` may give, each with its key, unit, default and range.
    public enum Setting {
        public static let heartbeatIntervalSeconds = SettingSpec(
            "heartbeatIntervalSeconds", unit: "s", default: 0.2, in: 0.01...10, "time between a publisher's heartbeats")
        public static let livenessTimeoutSeconds = SettingSpec(
            "livenessTimeoutSeconds", unit: "s", default: 0.75, in: 0.05...60,
            "a publisher silent this long (no message, no heartbeat) is lost; more than twice the heartbeat interval")
        public static let joinGraceSeconds = SettingSpec(
            "joinGraceSeconds", unit: "s", default: 0.5, in: 0...30,
            "a source waits this long after binding before it emits, so that subscribers started with it have joined")
        public static let sendHighWaterMark = SettingSpec(
            "sendHighWaterMark", default: 1000, in: 1...1_000_000,
            "messages queued per subscriber before newer ones drop")
        public static let receiveHighWaterMark = SettingSpec(
            "receiveHighWaterMark", default: 10_000, in: 1...1_000_000,
            "messages queued by libzmq per subscribed socket")
        public static let maximumFrameBytes = SettingSpec(
            "maximumFrameBytes", unit: "bytes", default: Envelope.defaultMaximumFrameBytes, in: 1024...(1 << 30),
            "larger frames are dropped as oversized")
        /// Per-topic queue limits, documented beside the numbers.
        public static let topics = SettingDoc(
            key: "topics", defaultText: "{}", rangeText: "{ TOPIC: { highWaterMark, conflate } }",
            summary:
                "per topic: messages waiting for the stage (highWaterMark, 1000) or only the newest (conflate: true)")

        /// Lossless inputs, for a pipeline that reads a replay.
        public static let losslessInputs = SettingDoc(
            key: "losslessInputs", defaultText: "false", rangeText: "true, false",
            summary:
                "a stage whose input queue is full holds the next message instead of dropping the oldest, so a replay at --rate max loses nothing; only for replays: a live stage must not fall behind"
        )

        /// Every setting, in documentation order.
        public static let all: [SettingDoc] = [
            heartbeatIntervalSeconds.doc, livenessTimeoutSeconds.doc, joinGraceSeconds.doc, sendHighWaterMark.doc,
            receiveHighWaterMark.doc, maximumFrameBytes.doc, topics, losslessInputs,
        ]
    }

    /// Publisher options.
    public var publisher = PublisherOptions()
    /// Subscriber options, topics excepted (each stage sets its own).
    public var subscriber = SubscriberOptions()
    /// Time a source waits after binding before it emits, so that subscribers started with it have
    /// connected (PUB drops what is sent before a subscriber joins) [seconds].
    public var joinGraceSeconds = Setting.joinGraceSeconds.defaultValue

    /// A stage whose input queue is full holds the next message (`losslessInputs`: a replay at its full rate).
    public var losslessInputs: Bool { self.subscriber.defaultTopicOptions.waitsWhenFull }
}

/// A pipeline: its stages, their plugins and endpoints, and the bus settings.
public struct PipelineConfig: Sendable {
    /// The pipeline's name.
    public var name: String
    /// The file it was read from.
    public var file: String
    /// Bus settings.
    public var bus: BusConfig
    /// Key files and extra readers, when the pipeline is encrypted.
    public var security: SecurityConfig? = nil
    /// The stages in start order: by role, then by name.
    public var stages: [StageConfig]

    /// The stage called `name`, or an error that lists the stages.
    public func stage(named name: String) throws(ConfigError) -> StageConfig {
        guard let stage = self.stages.first(where: { $0.name == name }) else {
            throw .unknownStage(path: "the command line", name: name, known: self.stages.map(\.name))
        }
        return stage
    }

    /// Every endpoint some stage advertises, for `monitor`.
    public var allAdvertisedEndpoints: [String] {
        var seen = Set<String>()
        return self.stages.flatMap(\.advertise).filter { seen.insert($0).inserted }
    }

    /// Reads and checks a config file (JSON, or JSON5 with comments and trailing commas). A haptic stage's
    /// calibration file must exist unless `calibrationMayBeMissing` (for `calibrate`, which writes it, `monitor`, and `stage`, which runs one stage: a haptic stage
    /// started without its calibration still refuses to start).
    public static func load(file: String, calibrationMayBeMissing: Bool = false) throws -> PipelineConfig {
        try self.load(tree: try Self.readTree(file: file), file: file, calibrationMayBeMissing: calibrationMayBeMissing)
    }

    /// Checks a config tree as if it were read from `file` (its relative paths against that file's folder, or its
    /// `directory`), its `${VARIABLES}` expanded from the environment.
    public static func load(
        tree root: SettingValue, file: String, calibrationMayBeMissing: Bool = false
    ) throws -> PipelineConfig {
        let base = Self.baseDirectory(of: root, file: file)
        let expanded = try root.expandingVariables(environment: ProcessInfo.processInfo.environment, path: "the config")
        return try self.parse(
            expanded, file: file, baseDirectory: base, calibrationMayBeMissing: calibrationMayBeMissing)
    }

    /// Where magnetic headings are turned true before the first fix: the route stage's destination, when it has one
    /// (``TrueNorthIntake``).
    public var declinationPlace: Coordinate? {
        guard var options = self.stages.first(where: { $0.role == .route })?.options else { return nil }
        return try? options.coordinate("destination")
    }

    /// The names of a config tree's stages of `role` (a stage's `role`, else its name), in name order.
    public static func stageNames(_ stages: [String: SettingValue], role: String) -> [String] {
        stages.filter { ($0.value["role"]?.stringValue ?? $0.key) == role }.map(\.key).sorted()
    }

    /// The folder a config's relative paths are read against: its `directory` (a generated config's, such as a study
    /// trial's: the folder of the config it came from), else the config file's own folder.
    public static func baseDirectory(of root: SettingValue, file: String) -> String {
        let own = Paths.folder(of: file).isEmpty ? "." : Paths.folder(of: file)
        guard case let .string(directory)? = root["directory"], !directory.isEmpty else { return own }
        return directory.hasPrefix("/") ? directory : own + "/" + directory
    }

    /// Reads a JSON or JSON5 file as a tree, refusing text that is not UTF-8 and keys given twice.
    public static func readTree(file: String) throws -> SettingValue {
        let data: Data
        do {
            data = Data(try InputFile.contents(of: file))
        } catch {
            throw ConfigError.unreadable(file: file, reason: error.reason)
        }
        // Foundation's JSON5 decoder traps on invalid UTF-8 in an unquoted key: refuse such a file first.
        if let line = TextChecks.firstLineNotUTF8(Array(data)) {
            throw ConfigError.unreadable(file: file, reason: "line \(line) is not UTF-8 text")
        }
        if let duplicate = TextChecks.firstDuplicateKey(Array(data)) {
            throw ConfigError.duplicateKey(
                path: duplicate.path, key: duplicate.key, firstLine: duplicate.firstLine, line: duplicate.line)
        }
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root: SettingValue
        do {
            root = try decoder.decode(SettingValue.self, from: data)
        } catch let error as DecodingError {
            throw ConfigError.unreadable(file: file, reason: Self.describe(error))
        }
        return root
    }

    /// Checks a parsed config tree.
    public static func parse(
        _ root: SettingValue, file: String, baseDirectory: String, calibrationMayBeMissing: Bool = false
    ) throws -> PipelineConfig {
        var top = try Settings(root, path: "the config", baseDirectory: baseDirectory)
        let name = try top.string("name", default: Paths.lastComponent(of: file))
        _ = try top.string("description", default: "")
        _ = try top.string("directory", default: "")
        let bus = try self.parseBus(try top.object("bus"))
        let security = try self.parseSecurity(try top.object("security"))
        guard case let .object(stageValues)? = top.value("stages"), !stageValues.isEmpty else {
            throw ConfigError.missingKey(path: "the config", key: "stages")
        }
        try top.finish()

        var stages: [StageConfig] = []
        for stageName in stageValues.keys.sorted() {
            var raw = try Settings(stageValues[stageName], path: "stages.\(stageName)", baseDirectory: baseDirectory)
            let roleName = try raw.string("role", default: stageName)
            guard let role = StageRole(rawValue: roleName) else {
                throw ConfigError.unknownRole(
                    path: "stages.\(stageName).role", role: roleName,
                    known: StageRole.allCases.map(\.rawValue))
            }
            let plugin = try raw.string("plugin")
            let known = PluginRegistry.pluginIDs(for: role)
            guard known.contains(plugin) else {
                throw ConfigError.unknownPlugin(path: "stages.\(stageName).plugin", id: plugin, known: known)
            }
            let settings = try raw.object("settings")
            let stageOptions = try raw.object("options")
            let publish = try self.endpoints(&raw, "publish", stage: stageName)
            var advertise = try self.endpoints(&raw, "advertise", stage: stageName)
            if advertise.isEmpty {
                advertise = publish.map {
                    $0.replacing("tcp://*:", with: "tcp://127.0.0.1:")
                        .replacing("tcp://0.0.0.0:", with: "tcp://127.0.0.1:")
                }
            }
            let inputs = try raw.strings("inputs")
            let topics = try raw.strings("topics")
            for (index, topic) in topics.enumerated() where BusMessage.Kind(topic: topic) == nil {
                throw ConfigError.invalidValue(
                    path: "stages.\(stageName).topics[\(index)]",
                    expected: "one of \(BusMessage.Kind.allCases.map(\.topic).joined(separator: ", "))",
                    found: "'\(topic)'")
            }
            let group = try raw.optionalString("group")
            let key = try raw.optionalString("key")
            let insecure = try raw.bool("insecure", default: false)
            try raw.finish()
            stages.append(
                StageConfig(
                    name: stageName, role: role, plugin: plugin, settings: settings, options: stageOptions,
                    publish: publish, advertise: advertise, inputs: inputs, topics: topics,
                    group: group, key: key, insecure: insecure))
        }
        // Resolve inputs that name stages into those stages' advertised endpoints.
        let byName = Dictionary(uniqueKeysWithValues: stages.map { ($0.name, $0) })
        for index in stages.indices {
            var resolved: [String] = []
            for input in stages[index].inputs {
                if input.contains("://") {
                    resolved.append(input)
                } else if let other = byName[input] {
                    guard !other.advertise.isEmpty else {
                        throw ConfigError.invalidValue(
                            path: "stages.\(stages[index].name).inputs",
                            expected: "a stage that publishes",
                            found: "'\(input)', which has no publish endpoint")
                    }
                    resolved.append(contentsOf: other.advertise)
                    for endpoint in other.advertise { stages[index].inputStages[endpoint] = other.name }
                } else {
                    throw ConfigError.unknownStage(
                        path: "stages.\(stages[index].name).inputs", name: input,
                        known: stages.map(\.name))
                }
            }
            stages[index].inputs = resolved
        }
        // An endpoint given directly that a stage of this config advertises is that stage's too.
        for index in stages.indices {
            for endpoint in stages[index].inputs where stages[index].inputStages[endpoint] == nil {
                if let publisher = stages.publisher(at: endpoint) {
                    stages[index].inputStages[endpoint] = publisher.name
                }
            }
        }
        let order = Dictionary(uniqueKeysWithValues: StageRole.allCases.enumerated().map { ($1, $0) })
        stages.sort { (order[$0.role]!, $0.name) < (order[$1.role]!, $1.name) }
        // Check every plugin's settings now, so that `run` fails before it starts anything.
        var checked: [String: CheckedStage] = [:]
        for stage in stages {
            checked[stage.name] = try PluginRegistry.check(stage, calibrationMayBeMissing: calibrationMayBeMissing)
        }
        try RateCheck.check(stages, checked: checked)
        try Self.checkDistinctBinds(stages)
        try LinkSecurity.check(stages, security: security)
        return PipelineConfig(name: name, file: file, bus: bus, security: security, stages: stages)
    }

    private static func endpoints(_ raw: inout Settings, _ key: String, stage: String) throws -> [String] {
        let list: [String]
        switch raw.value(key) {
        case nil: list = []
        case let .string(single)?: list = [single]
        case .array?: list = try raw.strings(key)
        case let other?:
            throw ConfigError.invalidValue(
                path: "stages.\(stage).\(key)", expected: "an endpoint or a list of them",
                found: other.typeName)
        }
        for endpoint in list {
            // Every stage is its own process (`hapticnav run`, `hapticnav stage`), and inproc:// reaches only
            // sockets of the same process: such a pipeline would wait for messages that never come.
            if endpoint.hasPrefix("inproc://") {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage).\(key)",
                    expected:
                        "ipc:// (same machine) or tcp:// — each stage runs as its own process, and inproc:// does not cross processes",
                    found: "'\(endpoint)'")
            }
            let schemes = ["ipc://", "tcp://"]
            guard schemes.contains(where: { endpoint.hasPrefix($0) }) else {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage).\(key)",
                    expected: "an endpoint starting with \(schemes.joined(separator: ", "))",
                    found: "'\(endpoint)'")
            }
            if let problem = Self.endpointProblem(endpoint) {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage).\(key)", expected: problem, found: "'\(endpoint)'")
            }
        }
        return list
    }

    /// What is wrong with a `tcp://` or `ipc://` endpoint, or nil: a host that is `*`, an IPv4 address, `[IPv6]`
    /// or a name, and a port from 1 to 65535; an ipc path that is not empty and fits Linux's 107 bytes.
    static func endpointProblem(_ endpoint: String) -> String? {
        if endpoint.hasPrefix("ipc://") {
            let path = endpoint.dropFirst("ipc://".count)
            if path.isEmpty { return "a socket path after ipc://" }
            if path.utf8.count > 107 {
                return "an ipc path of at most 107 bytes (Linux's limit), not \(path.utf8.count)"
            }
            return nil
        }
        guard endpoint.hasPrefix("tcp://") else { return nil }
        let rest = endpoint.dropFirst("tcp://".count)
        guard let colon = rest.lastIndex(of: ":") else { return "tcp://HOST:PORT" }
        let host = rest[..<colon]
        let portText = rest[rest.index(after: colon)...]
        guard let port = Int(portText), (1...65535).contains(port) else {
            return "a port from 1 to 65535 in tcp://HOST:PORT"
        }
        if host == "*" || (host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2) { return nil }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts.allSatisfy({ $0.allSatisfy(\.isNumber) && !$0.isEmpty }) {
            return parts.allSatisfy({ Int($0).map { $0 <= 255 } ?? false })
                ? nil : "an IPv4 address with each part from 0 to 255 in tcp://HOST:PORT"
        }
        let isName =
            !host.isEmpty && !host.allSatisfy({ $0.isNumber || $0 == "." })
            && host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
        return isName ? nil : "a host (*, an IPv4 address, [IPv6] or a name) in tcp://HOST:PORT"
    }

    /// Two stages that would bind the same endpoint (the same ipc path, or the same TCP port where one of them
    /// binds every interface).
    static func checkDistinctBinds(_ stages: [StageConfig]) throws {
        var seen: [(stage: String, endpoint: String)] = []
        for stage in stages {
            for endpoint in stage.publish {
                for earlier in seen where earlier.stage != stage.name && Self.sameBind(earlier.endpoint, endpoint) {
                    throw ConfigError.invalidValue(
                        path: "stages.\(stage.name).publish",
                        expected: "an endpoint no other stage binds",
                        found: "'\(endpoint)', which stages.\(earlier.stage) binds too ('\(earlier.endpoint)')")
                }
                seen.append((stage.name, endpoint))
            }
        }
    }

    private static func sameBind(_ a: String, _ b: String) -> Bool {
        guard a != b else { return true }
        guard a.hasPrefix("tcp://"), b.hasPrefix("tcp://"), let colonA = a.lastIndex(of: ":"),
            let colonB = b.lastIndex(of: ":"), a[colonA...] == b[colonB...]
        else { return false }
        return a.hasPrefix("tcp://*:") || b.hasPrefix("tcp://*:") || a.hasPrefix("tcp://0.0.0.0:")
            || b.hasPrefix("tcp://0.0.0.0:")
    }

    private static func parseSecurity(_ settings: Settings) throws -> SecurityConfig? {
        var settings = settings
        guard let folder = try settings.path("keys") else {
            try settings.finish()
            return nil
        }
        let readers = try settings.strings("readers")
        try settings.finish()
        return SecurityConfig(keysFolder: folder, readers: readers)
    }

    private static func parseBus(_ settings: Settings) throws -> BusConfig {
        var settings = settings
        var bus = BusConfig()
        bus.publisher.heartbeatIntervalSeconds = try settings.value(BusConfig.Setting.heartbeatIntervalSeconds)
        bus.joinGraceSeconds = try settings.value(BusConfig.Setting.joinGraceSeconds)
        bus.publisher.sendHighWaterMark = Int32(try settings.value(BusConfig.Setting.sendHighWaterMark))
        bus.subscriber.livenessTimeoutSeconds = try settings.value(BusConfig.Setting.livenessTimeoutSeconds)
        guard bus.subscriber.livenessTimeoutSeconds > bus.publisher.heartbeatIntervalSeconds * 2 else {
            throw ConfigError.invalidValue(
                path: "bus.livenessTimeoutSeconds",
                expected: "more than twice bus.heartbeatIntervalSeconds",
                found: "\(bus.subscriber.livenessTimeoutSeconds)")
        }
        bus.subscriber.maximumFrameBytes = try settings.value(BusConfig.Setting.maximumFrameBytes)
        bus.subscriber.receiveHighWaterMark = Int32(try settings.value(BusConfig.Setting.receiveHighWaterMark))
        let lossless = try settings.bool(BusConfig.Setting.losslessInputs.key, default: false)
        bus.subscriber.defaultTopicOptions.waitsWhenFull = lossless
        var topics = try settings.object("topics")
        for topic in topics.keys {
            guard BusMessage.Kind(topic: topic) != nil else {
                throw ConfigError.unknownKey(
                    path: "bus.topics", key: topic, valid: BusMessage.Kind.allCases.map(\.topic))
            }
            var options = try topics.object(topic)
            bus.subscriber.topicOptions[topic] = TopicOptions(
                highWaterMark: try options.int("highWaterMark", default: 1000, in: 1...1_000_000),
                conflate: try options.bool("conflate", default: false), waitsWhenFull: lossless)
            try options.finish()
        }
        try topics.finish()
        try settings.finish()
        return bus
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case let .dataCorrupted(context):
            return context.underlyingError.map { "\($0)" } ?? context.debugDescription
        default:
            return "\(error)"
        }
    }
}
