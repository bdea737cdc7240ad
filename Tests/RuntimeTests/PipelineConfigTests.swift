import Stages
import Logging
import Bus
import Foundation
import NavCore
@testable import Runtime
import Testing
import TestSupport
import MapLogic
import StageRoute

@Suite struct PipelineConfigTests {
    private let route = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("data/routes/monaco-demo-walk.geojson").path

    private func parse(_ json5: String) throws -> PipelineConfig {
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root = try decoder.decode(SettingValue.self, from: Data(json5.utf8))
        return try PipelineConfig.parse(root, file: "/configs/test.json5", baseDirectory: "/configs")
    }

    private func source(_ extra: String = "", settings: String = "") -> String {
        "source: { plugin: \"sim\", publish: \"tcp://*:5601\", insecure: true, settings: { route: \"\(self.route)\" \(settings) } \(extra) }"
    }

    @Test func theBundledConfigsLoad() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("configs")
        let files = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".json5") }
        #expect(files.contains("demo.json5"))
        #expect(files.contains("lab-two-hosts.json5"))
        // The lab config is encrypted: it loads once its keys exist (HAPTICNAV_KEYS names their folder).
        let keys = try scratchFolder() + "/keys"
        for name in ["group1", "group2", "monitor", "experimenter"] {
            try CurveKeyPair.generate().write(name: name, folder: keys)
        }
        setenv("HAPTICNAV_KEYS", keys, 1)
        defer { unsetenv("HAPTICNAV_KEYS") }
        // Its sink needs a calibration (`hapticnav calibrate` writes one).
        let calibration = try scratchFolder() + "/calibration.json"
        try #"{"offsetDegrees": 70, "spreadDegrees": 3, "sampleCount": 200, "calibratedAt": "2026-11-24T00:00:00Z"}"#
            .store(toFile: calibration)
        setenv("HAPTICNAV_CALIBRATION", calibration, 1)
        defer { unsetenv("HAPTICNAV_CALIBRATION") }
        // The field config's band is named by the environment (a serial port, or a BLE band's name).
        setenv("HAPTICNAV_BAND_DEVICE", "/dev/ttyUSB0", 1)
        defer { unsetenv("HAPTICNAV_BAND_DEVICE") }
        for file in files {
            let config = try PipelineConfig.load(file: root.appendingPathComponent(file).path)
            #expect(!config.stages.isEmpty, "\(file)")
        }
    }

    /// A source at `pace`, a smoother, a route controller and a sink with the given stale limits.
    private func pipeline(pace: Double, sinkOptions: String) -> String {
        """
        { stages: {
            \(self.source(settings: ", pace: \(pace)")),
            smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "tcp://*:5602", insecure: true },
            route: { plugin: "file", inputs: ["smoother"], topics: ["smoothed"], publish: "tcp://*:5603", insecure: true,
                     settings: { file: "\(self.route)" }, options: { destination: [43.72977, 7.416504] } },
            haptic: { plugin: "console", inputs: ["source", "route"], topics: ["heading", "target"],
                      options: { offsetDegrees: 0, \(sinkOptions) } },
        } }
        """
    }

    @Test func aStaleLimitShorterThanTwoAndAHalfPeriodsOfItsInputIsRefusedWithTheNumbers() throws {
        do {
            _ = try self.parse(self.pipeline(pace: 1, sinkOptions: "staleAfterSeconds: 1"))
            Issue.record("a 1 s limit on 1 Hz targets was accepted")
        } catch let error as ConfigError {
            let text = "\(error)"
            #expect(text.contains("stages.haptic.options.staleAfterSeconds"), "\(text)")
            #expect(text.contains("at least 2.5 s") && text.contains("found 1 s"), "\(text)")
            #expect(text.contains("source (sim) sends a fix every 1 s"), "\(text)")
        }
        do {
            _ = try self.parse(
                self.pipeline(pace: 1, sinkOptions: "staleAfterSeconds: 2.5, headingStaleAfterSeconds: 0.2"))
            Issue.record("a 0.2 s limit on 10 Hz headings was accepted")
        } catch let error as ConfigError {
            #expect(
                "\(error)".contains("headingStaleAfterSeconds") && "\(error)".contains("at least 0.25 s"), "\(error)")
        }
        // The same limits fit a walk played 20 times faster, and 2.5 s fits 1 Hz.
        _ = try self.parse(self.pipeline(pace: 20, sinkOptions: "staleAfterSeconds: 1"))
        _ = try self.parse(
            self.pipeline(pace: 1, sinkOptions: "staleAfterSeconds: 2.5, headingStaleAfterSeconds: 0.25"))
    }

    @Test func anInprocEndpointIsRefusedBecauseStagesAreSeparateProcesses() {
        do {
            _ = try self.parse(
                "{ stages: { source: { plugin: \"sim\", publish: \"inproc://source\", settings: { route: \"\(self.route)\" } } } }"
            )
            Issue.record("an inproc:// endpoint was accepted")
        } catch {
            #expect(
                "\(error)".contains("stages.source.publish") && "\(error)".contains("does not cross processes"),
                "\(error)")
        }
    }

    @Test func inputsNamingStagesResolveToTheirAdvertisedEndpoints() throws {
        let config = try self.parse(
            """
            { stages: { \(self.source()), rec: { role: "recorder", plugin: "console", inputs: ["source", "ipc:///tmp/x.sock"] } } }
            """)
        #expect(try config.stage(named: "rec").inputs == ["tcp://127.0.0.1:5601", "ipc:///tmp/x.sock"])
        #expect(config.stages.map(\.name) == ["source", "rec"], "sources start first")
    }

    @Test func anUnknownTopLevelKeyNamesTheValidOnes() {
        #expect(
            throws: ConfigError.unknownKey(
                path: "the config", key: "stagez",
                valid: ["bus", "description", "directory", "name", "security", "stages"])
        ) {
            try self.parse("{ stagez: {}, stages: { \(self.source()) } }")
        }
    }

    @Test func anUnknownStageKeyNamesTheValidOnes() {
        #expect(
            throws: ConfigError.unknownKey(
                path: "stages.source", key: "publsh",
                valid: [
                    "advertise", "group", "inputs", "insecure", "key", "options", "plugin", "publish", "role",
                    "settings", "topics",
                ])
        ) {
            try self.parse("{ stages: { \(self.source(", publsh: \"x\"")) } }")
        }
    }

    @Test func anUnknownPluginSettingNamesTheValidOnes() throws {
        do {
            _ = try self.parse("{ stages: { \(self.source(settings: ", sped: 2")) } }")
            Issue.record("accepted a misspelt key")
        } catch let error as ConfigError {
            guard case let .unknownKey(path, key, valid) = error else {
                Issue.record("wrong error: \(error)")
                return
            }
            #expect(path == "stages.source.settings")
            #expect(key == "sped")
            #expect(valid.contains("speedMetersPerSecond") && valid.contains("seed") && valid.contains("route"))
        }
    }

    private func routeStage(fallback: String) -> String {
        """
        route: { plugin: "valhalla", settings: { url: "http://127.0.0.1:8002" }, inputs: ["tcp://127.0.0.1:5602"],
                 topics: ["smoothed"], publish: "tcp://*:5603", insecure: true,
                 options: { destination: [43.73, 7.42], providerTimeoutSeconds: 4, fallback: \(fallback) } }
        """
    }

    @Test func aRouteStageAsksItsPluginThenItsFallbacksInOrder() throws {
        let config = try self.parse(
            "{ stages: { \(self.routeStage(fallback: "[{ plugin: \"osrm\", settings: {} }, { plugin: \"file\", settings: { file: \"\(self.route)\" } }]")) } }"
        )
        let stage = try #require(config.stages.first { $0.name == "route" })
        let providers = try PluginRegistry.makeRouters(stage, logger: .init(label: "test"))
        #expect(providers.map(\.name) == ["valhalla", "osrm", "file"])
        let (options, _) = try RouteStageOptions.parse(stage.options)
        #expect(options.providerTimeoutSeconds == 4)
        #expect(options.providerBackoff == .init(backoffSeconds: 5, maximumBackoffSeconds: 300))
    }

    @Test func aFallbackProviderIsCheckedLikeTheStagesOwn() {
        #expect(
            throws: ConfigError.unknownPlugin(
                path: "stages.route.options.fallback[0].plugin", id: "osmm",
                known: PluginRegistry.pluginIDs(for: .route))
        ) {
            try self.parse("{ stages: { \(self.routeStage(fallback: "[{ plugin: \"osmm\", settings: {} }]")) } }")
        }
        do {
            _ = try self.parse(
                "{ stages: { \(self.routeStage(fallback: "[{ plugin: \"osrm\", settings: { urll: \"http://x\" } }]")) } }"
            )
            Issue.record("accepted a misspelt key in a fallback's settings")
        } catch let error as ConfigError {
            guard case let .unknownKey(path, key, _) = error else {
                Issue.record("wrong error: \(error)")
                return
            }
            #expect(path == "stages.route.options.fallback[0].settings" && key == "urll")
        } catch {
            Issue.record("wrong error: \(error)")
        }
        #expect(throws: ConfigError.self) {
            try self.parse("{ stages: { \(self.routeStage(fallback: "\"osm\"")) } }")
        }
    }

    /// A haptic stage's fallback devices are read as a route stage's providers are: a list of { plugin, settings },
    /// anything else refused with its path (a fallback that is not a list was once ignored without a word).
    @Test func aHapticStagesFallbackThatIsNotAListIsRefusedWithItsPath() {
        func haptic(_ fallback: String) -> String {
            """
            { stages: { haptic: { plugin: "console", inputs: ["tcp://127.0.0.1:5603"], topics: ["target"],
                                  options: { offsetDegrees: 0, fallback: \(fallback) } } } }
            """
        }
        #expect(throws: Never.self) { try self.parse(haptic("[{ plugin: \"console\", settings: {} }]")) }
        #expect(
            throws: ConfigError.invalidValue(
                path: "stages.haptic.options.fallback", expected: "a list of { plugin, settings }",
                found: "\(SettingValue.string("speaker"))")
        ) { try self.parse(haptic("\"speaker\"")) }
    }

    /// Matching to the ways needs the offline router's graph: a route stage with no `osm` provider is refused.
    @Test func matchingToTheWaysWithoutAnOSMRouterIsRefused() {
        let stage = self.routeStage(fallback: "[]").replacingOccurrences(
            of: "fallback: []", with: "fallback: [], place: \"network\"")
        #expect {
            try self.parse("{ stages: { \(stage) } }")
        } throws: { "\($0)".contains("stages.route.options.place") }
    }

    /// Writes `text` as a config file and loads it as `config check` does.
    private func load(_ text: String) throws -> PipelineConfig {
        let file = try scratchFolder() + "/config.json5"
        try text.store(toFile: file)
        return try PipelineConfig.load(file: file)
    }

    @Test func aStageGivenTwiceIsRefusedWithBothLines() {
        let text = """
            {
              stages: {
                \(self.source()),
                \(self.source()),
              },
            }
            """
        #expect(throws: ConfigError.duplicateKey(path: "stages", key: "source", firstLine: 3, line: 4)) {
            try self.load(text)
        }
        // Deeper, in quotes, with comments in the way: the path says where.
        let nested = """
            { "stages": { \(self.source(settings: ", /* pace */ 'seed': 1, \"seed\": 2")) } }
            """
        #expect(throws: ConfigError.duplicateKey(path: "stages.source.settings", key: "seed", firstLine: 1, line: 1)) {
            try self.load(nested)
        }
        // The same key in two objects is no duplicate.
        #expect(
            TextChecks.firstDuplicateKey(Array("{ a: { x: 1 }, b: { x: 2 }, c: [{ x: 1 }, { x: 2 }] }".utf8)) == nil)
        #expect(
            TextChecks.firstDuplicateKey(Array("{ a: [{ x: 1, y: 'x: 1,', x: 3 }] }".utf8))
                == DuplicateKey(path: "a[0]", key: "x", firstLine: 1, line: 1))
    }

    @Test func aFileASettingNamesMustExistWithTheKeysPath() throws {
        #expect(
            throws: ConfigError.missingFile(
                path: "stages.source.settings.route", file: "/configs/nope.geojson", reason: "does not exist")
        ) {
            try self.parse(
                "{ stages: { source: { plugin: \"sim\", publish: \"tcp://*:5601\", insecure: true, settings: { route: \"nope.geojson\" } } } }"
            )
        }
        let route = """
            route: { plugin: "osm", inputs: ["tcp://127.0.0.1:5602"], topics: ["smoothed"], publish: "tcp://*:5603",
                     insecure: true, settings: { map: "/nowhere/map.osm" }, options: { destination: [43.73, 7.42] } }
            """
        #expect(
            throws: ConfigError.missingFile(
                path: "stages.route.settings.map", file: "/nowhere/map.osm", reason: "does not exist")
        ) { try self.parse("{ stages: { \(route) } }") }
        let haptic = """
            haptic: { plugin: "console", inputs: ["tcp://127.0.0.1:5603"], topics: ["target"],
                      options: { calibrationFile: "/nowhere/calibration.json" } }
            """
        do {
            _ = try self.parse("{ stages: { \(haptic) } }")
            Issue.record("accepted a calibration file that does not exist")
        } catch {
            #expect(
                "\(error)".hasPrefix("stages.haptic.options.calibrationFile: /nowhere/calibration.json does not exist"))
        }
        // `calibrate` writes it, and `monitor` does not need it.
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root = try #require(try? decoder.decode(SettingValue.self, from: Data("{ stages: { \(haptic) } }".utf8)))
        #expect(throws: Never.self) {
            try PipelineConfig.parse(root, file: "/c", baseDirectory: "/", calibrationMayBeMissing: true)
        }
    }

    @Test func anUnknownPluginListsTheKnownOnes() {
        #expect(
            throws: ConfigError.unknownPlugin(
                path: "stages.source.plugin", id: "gpsdd",
                known: PluginRegistry.pluginIDs(for: .source))
        ) {
            try self.parse("{ stages: { source: { plugin: \"gpsdd\", publish: \"tcp://*:1\" } } }")
        }
        #expect(PluginRegistry.pluginIDs(for: .source).contains("sim"))
        #expect(PluginRegistry.pluginIDs(for: .source).contains("nmea"))
    }

    @Test func anUnknownRoleListsTheKnownOnes() {
        #expect(
            throws: ConfigError.unknownRole(path: "stages.x.role", role: "x", known: StageRole.allCases.map(\.rawValue))
        ) {
            try self.parse("{ stages: { x: { plugin: \"sim\" } } }")
        }
    }

    @Test func anInputNamingNoStageIsAnError() {
        #expect(throws: ConfigError.unknownStage(path: "stages.rec.inputs", name: "sauce", known: ["rec", "source"])) {
            try self.parse(
                "{ stages: { \(self.source()), rec: { role: \"recorder\", plugin: \"console\", inputs: [\"sauce\"] } } }"
            )
        }
    }

    @Test func anUnknownTopicIsAnError() {
        #expect(throws: ConfigError.self) {
            try self.parse("{ bus: { topics: { headings: { conflate: true } } }, stages: { \(self.source()) } }")
        }
    }

    @Test func aBadEndpointIsAnError() {
        #expect(throws: ConfigError.self) {
            try self.parse(
                "{ stages: { source: { plugin: \"sim\", publish: \"localhost:5601\", settings: { route: \"\(self.route)\" } } } }"
            )
        }
    }

    @Test func busTopicsSetConflationAndHighWaterMarks() throws {
        let config = try self.parse(
            """
            { bus: { topics: { heading: { conflate: true }, fix: { highWaterMark: 7 } } }, stages: { \(self.source()) } }
            """)
        #expect(config.bus.subscriber.topicOptions["heading"]?.conflate == true)
        #expect(config.bus.subscriber.topicOptions["fix"]?.highWaterMark == 7)
    }

    @Test func environmentVariablesExpandWithDefaults() throws {
        let value = SettingValue.object([
            "a": .string("tcp://${HOST:-127.0.0.1}:${PORT:-5601}"),
            "b": .array([.string("${HOST}")]),
        ])
        let expanded = try value.expandingVariables(environment: ["HOST": "10.1.2.3"], path: "c")
        #expect(expanded == .object(["a": .string("tcp://10.1.2.3:5601"), "b": .array([.string("10.1.2.3")])]))
        #expect(throws: ConfigError.self) {
            try SettingValue.string("${MISSING}").expandingVariables(environment: [:], path: "c")
        }
        // A default that names another variable, as the shipped configs' recordings do.
        let nested = SettingValue.string("${ONE:-${TWO:-../out}/a.jsonl}")
        #expect(try nested.expandingVariables(environment: [:], path: "c") == .string("../out/a.jsonl"))
        #expect(try nested.expandingVariables(environment: ["TWO": "/rec"], path: "c") == .string("/rec/a.jsonl"))
        #expect(
            try nested.expandingVariables(environment: ["ONE": "/x.jsonl", "TWO": "/rec"], path: "c")
                == .string("/x.jsonl"))
        #expect(throws: ConfigError.self) {
            try SettingValue.string("${ONE:-${TWO}").expandingVariables(environment: [:], path: "c")
        }
    }
}

@Suite struct EndpointCheckTests {
    @Test(arguments: [
        ("tcp://999.1.1.1:5601", "IPv4"), ("tcp://127.0.0.1:99999", "port"), ("tcp://127.0.0.1:", "port"),
        ("tcp://:5601", "host"), ("tcp://exa mple:5601", "host"), ("ipc://", "socket path"),
        ("ipc:///tmp/" + String(repeating: "x", count: 100) + ".sock", "107 bytes"),
    ])
    func badEndpointsAreNamed(_ endpoint: String, _ expected: String) {
        let problem = PipelineConfig.endpointProblem(endpoint)
        #expect(problem?.contains(expected) == true, "\(endpoint): \(problem ?? "accepted")")
    }

    @Test func twoStagesBindingOneEndpointAreRefused() throws {
        let route = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("data/routes/monaco-demo-walk.geojson").path
        let text = """
            { stages: {
                source: { plugin: "sim", publish: "tcp://*:5601", insecure: true, settings: { route: "\(route)" } },
                smoother: { plugin: "kalman", inputs: ["source"], topics: ["fix"], publish: "tcp://127.0.0.1:5601" },
            } }
            """
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root = try decoder.decode(SettingValue.self, from: Data(text.utf8))
        #expect(throws: ConfigError.self) {
            try PipelineConfig.parse(root, file: "/configs/test.json5", baseDirectory: "/configs")
        }
        do {
            _ = try PipelineConfig.parse(root, file: "/configs/test.json5", baseDirectory: "/configs")
        } catch {
            #expect("\(error)".contains("which stages.source binds too"), "\(error)")
        }
    }

    @Test(arguments: [
        "tcp://*:5601", "tcp://10.0.0.5:1", "tcp://[::1]:5601", "tcp://laptop.lab:65535", "ipc:///tmp/a.sock",
    ])
    func goodEndpointsPass(_ endpoint: String) {
        #expect(PipelineConfig.endpointProblem(endpoint) == nil, "\(endpoint)")
    }
}
