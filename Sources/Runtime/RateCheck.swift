import Logging
import NavCore
import Stages
import StageHaptic

/// Holds each haptic stage's stale limits against the rates of the inputs they watch: a limit shorter than
/// 2.5 periods of its input would declare a steady stream lost between two messages (spurious signal-lost
/// alarms), so the config is refused with the numbers.
enum RateCheck {
    /// How many input periods a stale limit must cover.
    static let periodsPerLimit = 2.5

    /// What a stage publishes how often, and where that comes from (for the message).
    struct Rate {
        var periodSeconds: Double
        var origin: String
    }

    static func check(_ stages: [StageConfig], checked: [String: CheckedStage]) throws {
        // Which stage publishes on which endpoint, so that inputs (resolved to endpoints) name their stages again.
        var publisherOf: [String: String] = [:]
        for stage in stages {
            for endpoint in stage.advertise + stage.publish { publisherOf[endpoint] = stage.name }
        }
        func inputStages(_ stage: StageConfig) -> [String] {
            Array(Set(stage.inputs.compactMap { publisherOf[$0] })).sorted()
        }
        var rates: [String: [String: Rate]] = [:]
        // Stages are sorted by role: sources, smoothers, route controllers, sinks.
        for stage in stages {
            switch stage.role {
            case .source:
                for (kind, period) in checked[stage.name]?.nominalPeriods ?? [:] where period > 0 {
                    rates[stage.name, default: [:]][kind.topic] = Rate(
                        periodSeconds: period,
                        origin: "\(stage.name) (\(stage.plugin)) sends a \(kind.topic) every \(Self.format(period)) s")
                }
            case .smoother:
                if let fix = Self.slowest(inputStages(stage).compactMap { rates[$0]?["fix"] }) {
                    rates[stage.name, default: [:]]["smoothed"] = Rate(
                        periodSeconds: fix.periodSeconds, origin: "\(stage.name) smooths each fix: \(fix.origin)")
                }
            case .route:
                if let smoothed = Self.slowest(
                    inputStages(stage).compactMap { rates[$0]?["smoothed"] ?? rates[$0]?["fix"] })
                {
                    for topic in ["target", "progress"] {
                        rates[stage.name, default: [:]][topic] = Rate(
                            periodSeconds: smoothed.periodSeconds,
                            origin: "\(stage.name) sends a target per smoothed fix; \(smoothed.origin)")
                    }
                }
            case .haptic:
                guard let options = checked[stage.name]?.sink else { continue }
                typealias Setting = HapticSinkOptions.Setting
                let targetLimit = options.staleAfterSeconds
                let headingLimit = options.headingStaleAfterSeconds ?? targetLimit
                let sources = inputStages(stage)
                for (topic, limit, key) in [
                    ("target", targetLimit, Setting.staleAfterSeconds.key),
                    ("heading", headingLimit, Setting.headingStaleAfterSeconds.key),
                ] {
                    guard stage.topics.isEmpty || stage.topics.contains(topic),
                        let rate = Self.slowest(sources.compactMap { rates[$0]?[topic] })
                    else { continue }
                    let needed = Self.periodsPerLimit * rate.periodSeconds
                    if limit < needed - 1e-9 {
                        throw ConfigError.invalidValue(
                            path: "stages.\(stage.name).options.\(key)",
                            expected:
                                "at least \(Self.format(needed)) s: 2.5 periods of its '\(topic)' input (\(rate.origin))",
                            found: "\(Self.format(limit)) s")
                    }
                }
            case .recorder:
                continue
            }
        }
    }

    private static func slowest(_ rates: [Rate]) -> Rate? {
        rates.max { $0.periodSeconds < $1.periodSeconds }
    }

    private static func format(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
