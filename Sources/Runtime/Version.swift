/// The software's version, written into every study trial's record and session, and the Debian package's version
/// (`scripts/package`).
public enum HapticNavVersion {
    public static let text = "0.26.0"
}
