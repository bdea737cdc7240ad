public import NavCore
import Stages
import StageHaptic
import StageRoute
import StageSmoother

/// The documented settings of a pipeline config, read from the specs beside each type: what
/// `hapticnav config schema` prints and `docs/CONFIG.md` holds (a test keeps the two equal).
public enum ConfigSchema {
    /// A part of a config and its settings.
    public struct Section: Sendable {
        /// Where in a config.
        public let path: String
        /// What it configures.
        public let about: String
        /// Its settings.
        public let settings: [SettingDoc]
    }

    /// Every documented section.
    public static let sections: [Section] =
        [
            Section(path: "bus", about: "the transport, for every stage", settings: BusConfig.Setting.all),
            Section(
                path: "stages.NAME.options", about: "a smoother stage: its inputs' times",
                settings: SmootherStageOptions.settings),
            Section(
                path: "stages.NAME.options", about: "a route stage: where to go and how to follow",
                settings: RouteControllerOptions.Setting.all),
            Section(
                path: "stages.NAME.options", about: "a haptic stage: guidance and the fail-safe",
                settings: HapticSinkOptions.Setting.all + ControlConfig.Setting.all),
        ]
        // Every plugin's, role by role: a stage's own plugin in its `settings`, a fallback's in its own.
        + StageRole.allCases.flatMap { role in
            (PluginRegistry.settingDocs[role] ?? [:]).sorted { $0.key < $1.key }.map { id, settings in
                Section(
                    path: role == .route || role == .haptic
                        ? "stages.NAME.settings` or a `fallback`'s `settings" : "stages.NAME.settings",
                    about: "the \(role.rawValue) plugin `\(id)`", settings: settings)
            }
        }

    /// The whole schema as Markdown.
    public static func markdown() -> String {
        var text = """
            # Config settings

            Every setting below is declared once, beside the type it configures (a `Setting` enum holding each key,
            unit, default and range); configs are parsed through those declarations, and this page is what
            `hapticnav config schema` prints from them, plugins' settings included. A test fails when the two disagree.

            """
        for section in self.sections {
            text += "\n## `\(section.path)`: \(section.about)\n\n"
            text += "| key | unit | default | range | what it does |\n|---|---|---|---|---|\n"
            for setting in section.settings {
                let unit = setting.unit.isEmpty ? "" : setting.unit
                text +=
                    "| `\(setting.key)` | \(unit) | \(setting.defaultText) | \(setting.rangeText) | \(setting.summary) |\n"
            }
        }
        return text
    }
}
