/// Why a log could not be read at all.
public enum LogError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Missing, unreadable, or of no known format.
    case unreadable(reason: String)

    public var description: String {
        switch self {
        case let .unreadable(reason): return reason
        }
    }
}
