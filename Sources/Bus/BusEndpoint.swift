/// Endpoints for stages composed in one process.
public enum BusEndpoint {
    /// The in-memory endpoint standing for `endpoint` when stages share a process and a context: `ipc://PATH`
    /// becomes `inproc://PATH` (the same name, so every stage and reader agrees on it); any other is kept.
    public static func inProcess(_ endpoint: String) -> String {
        endpoint.hasPrefix("ipc://") ? "inproc://" + endpoint.dropFirst("ipc://".count) : endpoint
    }
}
