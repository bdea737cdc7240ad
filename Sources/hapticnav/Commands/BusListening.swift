import ArgumentParser
import Bus
import NavCore
import Runtime

/// What a command that listens to a pipeline's bus connects to: the config's advertised endpoints and any given, with
/// the config's subscriber options and the keys to read its encrypted stages; only `topics`.
func busListening(
    config: String?, endpoints given: [String], key: String, topics: [String]
) throws -> (endpoints: [String], options: SubscriberOptions, pipeline: PipelineConfig?) {
    var endpoints = given
    var options = SubscriberOptions()
    var pipeline: PipelineConfig?
    if let config {
        let loaded = try loadConfig(config, calibrationMayBeMissing: true)
        endpoints += loaded.allAdvertisedEndpoints
        options = loaded.bus.subscriber
        options.curve = try LinkSecurity.subscriberOptions(reading: endpoints, as: key, in: loaded)
        pipeline = loaded
    }
    guard !endpoints.isEmpty else { throw ValidationError("give --config or at least one --connect endpoint") }
    for topic in topics where BusMessage.Kind(topic: topic) == nil {
        throw ValidationError(
            "unknown topic '\(topic)'; topics: \(BusMessage.Kind.allCases.map(\.topic).joined(separator: ", "))")
    }
    options.topics = topics
    return (endpoints, options, pipeline)
}
