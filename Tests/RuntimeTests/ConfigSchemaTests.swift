import Foundation
import NavCore
@testable import Runtime
import Testing

@Suite struct ConfigSchemaTests {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func docsConfigIsWhatTheSchemaPrints() throws {
        let documented = try String(contentsOf: self.root.appendingPathComponent("docs/CONFIG.md"), encoding: .utf8)
        #expect(
            documented == ConfigSchema.markdown(),
            "docs/CONFIG.md is stale: run `hapticnav config schema > docs/CONFIG.md`")
    }

    @Test func everyDefaultTheReadmeQuotesIsTheSchemasDefault() throws {
        let readme = try String(contentsOf: self.root.appendingPathComponent("README.md"), encoding: .utf8)
        var checked = 0
        for section in ConfigSchema.sections {
            for setting in section.settings where setting.defaultText.first?.isNumber == true {
                // The README writes a setting with its default as `key` (default…).
                var rest = Substring(readme)
                while let range = rest.range(of: "`\(setting.key)` (") {
                    // The number that opens the parenthesis, if it opens with one.
                    let quoted = rest[range.upperBound...].prefix { $0.isNumber || $0 == "." }
                    if !quoted.isEmpty {
                        #expect(
                            String(quoted) == setting.defaultText,
                            "README quotes \(setting.key) as \(quoted); its default is \(setting.defaultText)")
                        checked += 1
                    }
                    rest = rest[range.upperBound...]
                }
            }
        }
        #expect(checked >= 10, "the README quotes the defaults it documents (\(checked) found)")
    }

    @Test func everySpecsDefaultParsesAndAValueOutsideItsRangeIsRefused() throws {
        var settings = try Settings(
            .object(["lookAheadMeters": .number(500)]), path: "stages.route.options", baseDirectory: ".")
        #expect(throws: ConfigError.self) { try settings.value(RouteTracker.Options.Setting.lookAheadMeters) }
        var empty = try Settings(.object([:]), path: "stages.route.options", baseDirectory: ".")
        #expect(try empty.value(RouteTracker.Options.Setting.lookAheadMeters) == RouteTracker.Options().lookAheadMeters)
    }
}
