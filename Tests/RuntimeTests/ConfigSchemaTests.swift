import Foundation
import Logging
import NavCore
import Stages
@testable import Runtime
import Testing
import MapLogic
import StageRoute
import StageSmoother

@Suite struct ConfigSchemaTests {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func docsConfigIsWhatTheSchemaPrints() throws {
        let documented = try String(contentsOf: self.root.appendingPathComponent("docs/CONFIG.md"), encoding: .utf8)
        #expect(
            documented == ConfigSchema.markdown(),
            "docs/CONFIG.md is stale: run `hapticnav config schema > docs/CONFIG.md`")
    }

    @Test func theReadmeRestatesNoDefaultAndPointsToTheSchema() throws {
        let readme = try String(contentsOf: self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("docs/CONFIG.md"))
        for section in ConfigSchema.sections {
            for setting in section.settings where setting.defaultText.first?.isNumber == true {
                // A default restated as `key` (default…) would go stale the day the declaration changes.
                var rest = Substring(readme)
                while let range = rest.range(of: "`\(setting.key)` (") {
                    let quoted = rest[range.upperBound...].prefix { $0.isNumber || $0 == "." }
                    #expect(
                        quoted.isEmpty, "README restates \(setting.key)'s default (\(quoted)): docs/CONFIG.md has it")
                    rest = rest[range.upperBound...]
                }
            }
        }
    }

    @Test func everyPluginOfEveryRoleHasItsSettingsDocumented() {
        for role in StageRole.allCases {
            #expect(
                Set(PluginRegistry.settingDocs[role]?.keys.map { $0 } ?? [])
                    == Set(PluginRegistry.pluginIDs(for: role)),
                "\(role): the registry's plugins and their documented settings differ")
        }
        let schema = ConfigSchema.markdown()
        for role in StageRole.allCases {
            for id in PluginRegistry.pluginIDs(for: role) {
                #expect(schema.contains("the \(role.rawValue) plugin `\(id)`"), "\(role) \(id) is not in the schema")
            }
        }
    }

    /// The keys a plugin accepts are the keys it documents: an unknown key is refused with the valid ones listed.
    @Test(
        arguments: [
            ("route", "osm", ["map": SettingValue.string("../data/maps/monaco-highways.osm")]),
            ("source", "gpsd", [:]),
            ("source", "sim", ["route": .string("../data/routes/monaco-demo-walk.geojson")]),
            ("recorder", "mcap", ["folder": .string("/tmp/hapticnav-schema-test")]),
            ("haptic", "console", [:]),
        ] as [(String, String, [String: SettingValue])])
    func aPluginsValidKeysAreItsDocumentedKeys(role: String, id: String, given: [String: SettingValue]) throws {
        let role = try #require(StageRole(rawValue: role))
        let documented = Set((PluginRegistry.settingDocs[role]?[id] ?? []).map(\.key))
        #expect(!documented.isEmpty)
        var values = given
        values["noSuchKey"] = .number(1)
        let settings = try Settings(
            .object(values), path: "stages.x.settings", baseDirectory: self.root.appendingPathComponent("configs").path)
        var valid: [String]?
        let logger = Logger(label: "test")
        do {
            switch role {
            case .route:
                _ = try PluginRegistry.makeRouter(id: id, settings: settings, path: "stages.x", logger: logger)
            case .source: _ = try PluginRegistry.sources[id]?(settings, logger)
            case .recorder: try PluginRegistry.sinks[id]?.check(settings)
            case .haptic:
                _ = try PluginRegistry.makeDevice(id: id, settings: settings, path: "stages.x", logger: logger)
            case .smoother: break
            }
        } catch let ConfigError.unknownKey(_, key, keys) {
            #expect(key == "noSuchKey")
            valid = keys
        }
        let listed = try #require(valid, "\(id): an unknown key was not refused")
        #expect(Set(listed) == documented, "\(id) accepts \(listed.sorted()), documents \(documented.sorted())")
    }

    /// A route stage's `options` accept exactly the keys documented for them (a documented key the stage did not
    /// read would be refused as unknown).
    @Test func aRouteStagesValidOptionsAreItsDocumentedOnes() throws {
        let documented = Set(RouteControllerOptions.Setting.all.map(\.key))
        let settings = try Settings(
            .object(["destination": .array([.number(43.73), .number(7.42)]), "noSuchKey": .number(1)]),
            path: "stages.route.options", baseDirectory: ".")
        var valid: [String]?
        do {
            _ = try RouteStageOptions.parse(settings)
        } catch let ConfigError.unknownKey(_, key, keys) {
            #expect(key == "noSuchKey")
            valid = keys
        }
        let listed = try #require(valid, "an unknown key was not refused")
        #expect(Set(listed) == documented, "accepts \(listed.sorted()), documents \(documented.sorted())")
    }

    /// A stage's `options` that nothing reads are refused, naming the key and the valid ones: a source and a recorder
    /// take none, a smoother only its lateness limit (before, any key there was accepted and did nothing).
    @Test(
        arguments: [
            ("source", "sim", ["route": SettingValue.string("../data/routes/monaco-demo-walk.geojson")]),
            ("smoother", "kalman", [:]),
            ("recorder", "mcap", ["folder": .string("/tmp/hapticnav-schema-test")]),
        ] as [(String, String, [String: SettingValue])])
    func aStagesOptionsThatNothingReadsAreRefused(role: String, id: String, given: [String: SettingValue]) throws {
        let configs = self.root.appendingPathComponent("configs").path
        let stage = StageConfig(
            name: "x", role: try #require(StageRole(rawValue: role)), plugin: id,
            settings: try Settings(.object(given), path: "stages.x.settings", baseDirectory: configs),
            options: try Settings(
                .object(["latenesLimitSeconds": .number(3)]), path: "stages.x.options", baseDirectory: configs),
            publish: [], advertise: [], inputs: [], topics: [], group: nil)
        var refused: (key: String, valid: [String])?
        do {
            try PluginRegistry.check(stage)
        } catch let ConfigError.unknownKey(path, key, valid) {
            #expect(path == "stages.x.options")
            refused = (key, valid)
        }
        let (key, valid) = try #require(refused, "\(role): a misspelt option was accepted")
        #expect(key == "latenesLimitSeconds")
        #expect(valid == (role == "smoother" ? ["latenessLimitSeconds"] : []))
    }

    /// A smoother's and a route stage's lateness limit is read from their options; for a replay's lossless inputs
    /// the default is lifted, and a limit the options give still holds.
    @Test func theLatenessLimitIsReadAndOnlyItsDefaultLiftedForLosslessInputs() throws {
        func limits(given: Double?, lossless: Bool) throws -> [Double?] {
            var values: [String: SettingValue] = [:]
            if let given { values["latenessLimitSeconds"] = .number(given) }
            let smoother = try Settings(.object(values), path: "stages.smoother.options", baseDirectory: ".")
            values["destination"] = .array([.number(43.73), .number(7.42)])
            let route = try Settings(.object(values), path: "stages.route.options", baseDirectory: ".")
            return [
                try SmootherStageOptions.parse(smoother, losslessInputs: lossless).latenessLimitSeconds,
                try RouteStageOptions.parse(route, losslessInputs: lossless).0.latenessLimitSeconds,
            ]
        }
        let standard = InputTimeGuard.Setting.latenessLimitSeconds.defaultValue
        #expect(try limits(given: 3.5, lossless: false) == [3.5, 3.5])
        #expect(try limits(given: 3.5, lossless: true) == [3.5, 3.5])
        #expect(try limits(given: nil, lossless: false) == [standard, standard])
        #expect(try limits(given: nil, lossless: true) == [nil, nil])
    }

    /// The network place's odometer is read from `placeOdometry`; one it does not know is refused with its path.
    @Test func theNetworkPlacesOdometerIsReadAndAnUnknownOneRefused() throws {
        func odometry(_ value: String) throws -> NetworkPlace.Options.Odometry {
            let settings = try Settings(
                .object(["destination": .array([.number(43.73), .number(7.42)]), "placeOdometry": .string(value)]),
                path: "stages.route.options", baseDirectory: ".")
            return try RouteStageOptions.parse(settings).0.network.odometry
        }
        #expect(try odometry("steps") == .steps)
        #expect(try odometry("speed") == .speed)
        #expect(throws: ConfigError.self) { try odometry("stride") }
    }

    @Test func everySpecsDefaultParsesAndAValueOutsideItsRangeIsRefused() throws {
        var settings = try Settings(
            .object(["lookAheadMeters": .number(500)]), path: "stages.route.options", baseDirectory: ".")
        #expect(throws: ConfigError.self) { try settings.value(RouteTracker.Options.Setting.lookAheadMeters) }
        var empty = try Settings(.object([:]), path: "stages.route.options", baseDirectory: ".")
        #expect(try empty.value(RouteTracker.Options.Setting.lookAheadMeters) == RouteTracker.Options().lookAheadMeters)
    }
}
