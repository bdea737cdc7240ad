public import Bus
import NavCore

/// A config's `security` block: where key files are, and which extra keys may read every encrypted stage.
public struct SecurityConfig: Sendable, Equatable {
    /// The folder of key files (`NAME.key`, secret, mode 0600; `NAME.pub`, public), relative to the config.
    public var keysFolder: String
    /// Key names allowed to read every encrypted stage besides its subscribers (a monitor, a recorder).
    public var readers: [String]

    public init(keysFolder: String, readers: [String]) {
        self.keysFolder = keysFolder
        self.readers = readers
    }

    /// The public key in `NAME.pub`.
    public func publicKey(_ name: String) throws(CurveError) -> String {
        try CurveKeyPair.loadPublic(file: "\(self.keysFolder)/\(name).pub")
    }

    /// The key pair `NAME` (its secret must be on this host, mode 0600).
    public func keyPair(_ name: String) throws(CurveError) -> CurveKeyPair {
        try CurveKeyPair.load(name: name, folder: self.keysFolder)
    }
}

/// How a stage's links are secured, resolved from the config: what it publishes with and what it expects.
public enum LinkSecurity {
    /// True for a TCP endpoint beyond the loopback interface (anything but 127.0.0.0/8, ::1 and localhost):
    /// one that other hosts can reach, so in plain text only with `insecure: true`.
    public static func leavesHost(_ endpoint: String) -> Bool {
        guard endpoint.hasPrefix("tcp://") else { return false }
        var host = endpoint.dropFirst("tcp://".count)
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        if host.hasPrefix("[") { host = host.dropFirst().dropLast() }
        return !(host.hasPrefix("127.") || host == "::1" || host == "localhost")
    }

    /// How a link to or from `endpoint` is protected, with `curve` describing it when it is encrypted.
    private static func protection(of endpoint: String, curve: String?) -> String {
        if let curve { return curve }
        if endpoint.hasPrefix("ipc://") { return "ipc (local, file permissions)" }
        return self.leavesHost(endpoint) ? "PLAIN TCP, NOT ENCRYPTED" : "plain TCP on loopback"
    }

    /// The publisher's CURVE options: its own pair, and as readers the keys of every stage reading it plus the
    /// config's extra readers. Nil for a stage without a key.
    public static func publisherOptions(
        for stage: StageConfig, in pipeline: PipelineConfig
    ) throws -> CurveServerOptions? {
        guard let key = stage.key, let security = pipeline.security else { return nil }
        let readerNames = Set(pipeline.stages.filter { $0.inputStages.values.contains(stage.name) }.compactMap(\.key))
            .union(security.readers)
        var readers: Set<String> = []
        for name in readerNames.sorted() { readers.insert(try security.publicKey(name)) }
        return CurveServerOptions(identity: try security.keyPair(key), readers: readers)
    }

    /// The subscriber's CURVE options reading `endpoints` as key `keyName`: for each endpoint of an encrypted
    /// stage, that stage's public key. Nil when none of the endpoints is encrypted.
    public static func subscriberOptions(
        reading endpoints: [String], as keyName: String?, in pipeline: PipelineConfig
    ) throws -> CurveClientOptions? {
        guard let security = pipeline.security else { return nil }
        var keys: [String: String] = [:]
        for endpoint in endpoints {
            guard let publisherKey = pipeline.stages.publisher(at: endpoint)?.key
            else { continue }
            keys[endpoint] = try security.publicKey(publisherKey)
        }
        guard !keys.isEmpty else { return nil }
        guard let keyName else {
            throw ConfigError.invalidValue(
                path: "security", expected: "a key to read encrypted stages with (a stage's `key`, or --key NAME)",
                found: "none")
        }
        return CurveClientOptions(identity: try security.keyPair(keyName), publisherKeys: keys)
    }

    /// One line per link of `stage`: what it binds and what it reads, and whether each is encrypted.
    public static func describe(_ stage: StageConfig, in pipeline: PipelineConfig) -> [String] {
        var lines: [String] = []
        for endpoint in stage.publish {
            let how = self.protection(of: endpoint, curve: stage.key.map { "CURVE (key '\($0)')" })
            lines.append("binds \(endpoint): \(how)")
        }
        for endpoint in stage.inputs {
            let from = stage.inputStages[endpoint].map { "'\($0)' at " } ?? ""
            let key = pipeline.stages.publisher(at: endpoint)?.key
            let how = self.protection(of: endpoint, curve: key.map { "CURVE, only key '\($0)' is heard" })
            lines.append("reads \(from)\(endpoint): \(how)")
        }
        if stage.role == .haptic, let control = try? ControlConfig.parse(stage, calibrationFile: nil) {
            let senders = control.senders.map { "'\($0)'" }.joined(separator: ", ")
            for endpoint in control.listen {
                let how = self.protection(
                    of: endpoint, curve: stage.key.map { _ in "CURVE, only key \(senders) may send" })
                lines.append("takes the experimenter's stop, resume and mark on \(endpoint): \(how)")
            }
        }
        return lines
    }

    /// Checks a parsed pipeline: encrypted publishers are read only by stages with keys; plain TCP beyond loopback
    /// only where the stage says `insecure: true`; every named public key file exists.
    static func check(_ stages: [StageConfig], security: SecurityConfig?) throws {
        let byName = Dictionary(uniqueKeysWithValues: stages.map { ($0.name, $0) })
        for stage in stages {
            if stage.key != nil && security == nil {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).key", expected: "a `security: { keys: FOLDER }` block to find it in",
                    found: "no security block")
            }
            if let key = stage.key, let security {
                do {
                    _ = try security.publicKey(key)
                } catch {
                    throw ConfigError.invalidValue(
                        path: "stages.\(stage.name).key", expected: "a key pair in \(security.keysFolder)",
                        found: "\(error)")
                }
            }
            for input in Set(stage.inputStages.values).sorted() {
                guard let publisher = byName[input], let publisherKey = publisher.key, stage.key == nil else {
                    continue
                }
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).key",
                    expected:
                        "a key: '\(stage.name)' reads '\(input)', which publishes with CURVE (key '\(publisherKey)')",
                    found: "none")
            }
            if stage.role == .haptic, let control = try ControlConfig.parse(stage, calibrationFile: nil) {
                if let security, stage.key != nil {
                    for name in control.senders {
                        do {
                            _ = try security.publicKey(name)
                        } catch {
                            throw ConfigError.invalidValue(
                                path: "stages.\(stage.name).options.control.senders",
                                expected: "a public key in \(security.keysFolder)", found: "\(error)")
                        }
                    }
                } else if !stage.insecure, let endpoint = control.listen.first(where: self.leavesHost) {
                    throw ConfigError.invalidValue(
                        path: "stages.\(stage.name).options.control.listen",
                        expected:
                            "a key on the stage (CURVE, admitting only the senders' keys) for TCP beyond loopback, or `insecure: true` to let anyone on the network stop and resume the outputs",
                        found: "'\(endpoint)'")
                }
            }
            guard stage.key == nil, !stage.insecure else { continue }
            for endpoint in stage.publish where self.leavesHost(endpoint) {
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).publish",
                    expected:
                        "a key (CURVE) for TCP beyond loopback, or `insecure: true` on the stage to send it in plain text knowingly",
                    found: "'\(endpoint)'")
            }
            for endpoint in stage.inputs where self.leavesHost(endpoint) {
                guard stages.publisher(at: endpoint)?.key == nil else { continue }
                throw ConfigError.invalidValue(
                    path: "stages.\(stage.name).inputs",
                    expected:
                        "an encrypted publisher (a key) for TCP beyond loopback, or `insecure: true` on the stage to read plain text knowingly",
                    found: "'\(endpoint)'")
            }
        }
        if let security {
            for name in security.readers {
                do {
                    _ = try security.publicKey(name)
                } catch {
                    throw ConfigError.invalidValue(
                        path: "security.readers", expected: "a public key in \(security.keysFolder)",
                        found: "\(error)")
                }
            }
        }
    }
}
