/// The software's version, written into every study trial's record and session.
public enum HapticNavVersion {
    public static let text = "0.25.0"
}
