/// Turn events in words, as the speaker says them and the console and the AR client show them: "Second left onto Rue
/// Grimaldi, in 85 metres", "Turn left now", "Straight on".
public enum TurnWords {
    /// How sharp a turn is, whichever its side: the classes the speaker says and the band pulses.
    public enum Sharpness: Sendable, Equatable, CaseIterable {
        /// Within 20°.
        case straight
        /// Under 45°.
        case bear
        /// Under 135°.
        case turn
        /// Under 170°.
        case sharp
        /// From 170°: a way that leaves nearly back the way the walker came (a route's instructions say a U-turn).
        case back

        /// The class of a turn of `turnDegrees` (either side).
        public init(turnDegrees: Double) {
            switch abs(turnDegrees) {
            case ..<20: self = .straight
            case ..<45: self = .bear
            case ..<135: self = .turn
            case ..<170: self = .sharp
            default: self = .back
            }
        }
    }

    /// The side and sharpness of a turn: "left", "bear right", "sharp left", "back left" (``Sharpness``); "straight"
    /// within 20°.
    public static func direction(_ turnDegrees: Double) -> String {
        let side = turnDegrees > 0 ? "right" : "left"
        switch Sharpness(turnDegrees: turnDegrees) {
        case .straight: return "straight"
        case .bear: return "bear \(side)"
        case .turn: return side
        case .sharp: return "sharp \(side)"
        case .back: return "back \(side)"
        }
    }

    /// "next", "second", "third", … for the junction that is `junctionsBefore + 1`-th ahead.
    public static func ordinal(junctionsBefore: UInt32) -> String {
        let words = ["next", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
        let index = Int(junctionsBefore)
        return index < words.count ? words[index] : "\(index + 1)th"
    }

    /// A distance as it is spoken: to the nearest 5 metres, at least 5 [metres].
    public static func spokenMeters(_ meters: Double) -> Int {
        guard meters.isFinite else { return 5 }
        return max(5, Int((min(meters, 100_000) / 5).rounded()) * 5)
    }

    /// The event in words, a sentence fit to be spoken.
    public static func text(_ event: TurnEvent) -> String {
        let direction = self.direction(event.turnDegrees)
        let onto = event.street.isEmpty ? "" : " onto \(event.street)"
        switch event.phase {
        case .announce:
            let ordinal = self.ordinal(junctionsBefore: event.junctionsBefore)
            let what =
                direction == "left" || direction == "right"
                ? "\(ordinal) \(direction)"
                : "\(ordinal) junction, \(direction == "straight" ? "straight on" : direction.hasPrefix("back") ? "turn \(direction)" : direction)"
            return Self.capitalized(what) + onto + ", in \(self.spokenMeters(event.distanceMeters)) metres"
        case .now:
            switch direction {
            case "straight": return "Straight on now" + onto
            case "left", "right", "back left", "back right": return "Turn \(direction) now" + onto
            default: return Self.capitalized(direction) + " now" + onto
            }
        case .straightOn:
            return "Straight on" + (event.street.isEmpty ? "" : " along \(event.street)")
        }
    }

    private static func capitalized(_ text: String) -> String {
        guard let first = text.first else { return text }
        return first.uppercased() + text.dropFirst()
    }
}
