#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Links
public import Logging
public import NavCore
import Synchronization
import SystemIO

/// The participant's phone, live, over phyphox's remote-access interface (phyphox: free and open source, iOS and
/// Android; "Allow remote access" in the experiment's menu shows the address, port 8080 on Android, 80 on iOS).
///
/// The phone runs HapticNav's experiment (`configs/phone/hapticnav.phyphox`: location, accelerometer, magnetometer
/// into the buffers ``PhyphoxProtocol/buffers`` names). Each poll asks `/get` for the samples after the last one
/// seen (the buffer's time above a threshold), so only new samples cross the network; experiment time is mapped to
/// UTC with `/time`'s start events; headings and attitude come from the tilt-compensated compass (``PhoneMotion``)
/// ten times a second, magnetic north, checked against the World Magnetic Model. A phone that does not answer, a
/// paused experiment and a wrong experiment are conditions in the stage's status, never a hang.
public final class PhyphoxSource: MessageSource, PhoneReporting {
    public static let id = "phyphox"

    /// How to reach the phone and how often to ask.
    public struct Options: Sendable, Equatable {
        /// The address phyphox shows ("http://192.168.1.20:8080").
        public var url: String
        /// Time between polls [seconds].
        public var pollIntervalSeconds = PhyphoxSource.Setting.pollIntervalSeconds.defaultValue
        /// The longest a request may take before the phone counts as unreachable [seconds].
        public var timeoutSeconds = PhyphoxSource.Setting.timeoutSeconds.defaultValue
        /// One heading per this interval [seconds].
        public var headingIntervalSeconds = PhyphoxSource.Setting.headingIntervalSeconds.defaultValue
        /// A failed request within this of the last answer carries on from where reading was; after a longer
        /// silence the source skips to the newest samples [seconds].
        public var catchUpSeconds = 2.0
        /// Start the experiment on the phone when it is not measuring at connection (once; a pause later is the
        /// experimenter's and is reported, not undone).
        public var startMeasuring = PhyphoxSource.Setting.startMeasuring.defaultValue ?? true

        /// Options for the phone at `url`.
        public init(url: String) { self.url = url }
    }

    public let options: Options
    private let client: HTTPClient
    private let logger: Logger
    private let state = Mutex(PhoneState())

    /// Creates the source.
    public init(options: Options, logger: Logger) throws {
        guard let client = HTTPClient(baseURL: options.url) else {
            throw ConfigError.invalidValue(
                path: "phyphox.url", expected: "http://host:port (the address phyphox shows)", found: options.url)
        }
        self.options = options
        self.client = client
        self.logger = logger
    }

    /// Reads a config's settings: `url`, and optionally `pollIntervalSeconds`, `timeoutSeconds`,
    /// `headingIntervalSeconds`, `startMeasuring`.
    public convenience init(settings: Settings, logger: Logger) throws {
        var settings = settings
        guard let url = try settings.optionalValue(Setting.url) else {
            throw ConfigError.invalidValue(
                path: "\(settings.path).url", expected: "the address phyphox shows, http://host:port", found: "nothing")
        }
        var options = Options(url: url)
        options.pollIntervalSeconds = try settings.value(Setting.pollIntervalSeconds)
        options.timeoutSeconds = try settings.value(Setting.timeoutSeconds)
        options.headingIntervalSeconds = try settings.value(Setting.headingIntervalSeconds)
        options.startMeasuring = try settings.value(Setting.startMeasuring)
        try settings.finish()
        try self.init(options: options, logger: logger)
    }

    public var isLive: Bool { true }
    public var nominalPeriods: [BusMessage.Kind: Double] {
        [.fix: 1, .heading: self.options.headingIntervalSeconds, .attitude: self.options.headingIntervalSeconds]
    }

    public func condition() async -> SourceCondition? { self.state.withLock { $0.condition } }
    public func statusCounters() async -> [StatusCounter] { self.state.withLock { $0.counters } }
    public func phoneReport() async -> PhoneReport { self.state.withLock { $0.report } }

    private func get(_ path: String) async throws(HTTPError) -> JSONValue {
        let response = try await self.client.send(
            method: "GET", path: path, timeoutSeconds: self.options.timeoutSeconds)
        guard response.status == 200 else {
            throw HTTPError(
                server: self.client.server, request: "GET \(path.prefix(40))",
                reason: .malformed("HTTP \(response.status)"))
        }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(response.body)) else {
            throw HTTPError(
                server: self.client.server, request: "GET \(path.prefix(40))", reason: .malformed("not JSON"))
        }
        return value
    }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        var poller = PhyphoxProtocol.Poller(headingInterval: self.options.headingIntervalSeconds)
        var startAsked = false
        var lastTimeCheck = -Double.infinity
        while true {
            try Task.checkCancellation()
            let began = SystemClock.wallSeconds()
            do {
                if !poller.configChecked {
                    let config = try await self.get("/config")
                    if let problem = poller.check(config: config) {
                        self.state.withLock { $0.set(.stale, problem, counting: "phyphox.wrongExperiment") }
                        try await Task.sleep(for: .seconds(2))
                        continue
                    }
                }
                if began - lastTimeCheck >= 1 || !poller.hasStart {
                    poller.take(time: try await self.get("/time"))
                    lastTimeCheck = began
                }
                let answer = try await self.get(poller.request())
                let received = SystemClock.wallSeconds()
                let result = poller.take(get: answer, receivedAt: received)
                if !result.measuring, self.options.startMeasuring, !startAsked {
                    startAsked = true
                    _ = try await self.get("/control?cmd=start")
                    lastTimeCheck = -.infinity
                }
                startAsked = startAsked || result.measuring
                for message in result.messages { try await emit(message) }
                self.state.withLock { state in
                    state.polled(result, poller: poller, received: received)
                    if !result.measuring {
                        state.set(.stale, "phyphox is paused on the phone (not measuring): press ▶ in the experiment")
                    } else if !poller.hasStart {
                        state.set(.stale, "phyphox measures but its /time has no start yet")
                    } else if let text = poller.motion.compass.statusText {
                        state.set(.degraded, text)
                    } else {
                        state.set(nil, nil)
                    }
                }
            } catch {
                if Task.isCancelled { throw CancellationError() }
                let text = "phone unreachable: \(error)"
                self.state.withLock { $0.set(.stale, text, counting: "phyphox.unreachable") }
                poller.lostConnection(at: SystemClock.wallSeconds(), catchUpSeconds: self.options.catchUpSeconds)
            }
            let spent = SystemClock.wallSeconds() - began
            try await Task.sleep(for: .seconds(max(0.005, self.options.pollIntervalSeconds - spent)))
        }
    }
}

/// What a live phone source knows about the phone, for `hapticnav preflight`.
public struct PhoneReport: Sendable, Equatable {
    /// The latest compass check against the model, once a position and a field are known.
    public var compass: CompassCheck.Reading?
    /// How long after their own time stamps the latest samples arrived (the phone's clock against the host's plus the
    /// network's delay) [seconds, median of the last polls].
    public var sampleAgeSeconds: Double?
    /// The phone's own name for what it runs ("HapticNav phone", an app version).
    public var description: String?

    public init(compass: CompassCheck.Reading? = nil, sampleAgeSeconds: Double? = nil, description: String? = nil) {
        self.compass = compass
        self.sampleAgeSeconds = sampleAgeSeconds
        self.description = description
    }
}

/// A source that reads a phone and can say how the phone is doing.
public protocol PhoneReporting: Sendable {
    func phoneReport() async -> PhoneReport
}

/// The shared bookkeeping of the phone sources: condition, counters and the report.
struct PhoneState: Sendable {
    var condition: SourceCondition?
    var counts: [String: UInt64] = [:]
    var extra: [StatusCounter] = []
    var report = PhoneReport()
    var ages: [Double] = []

    mutating func set(_ health: StageHealth?, _ message: String?, counting counter: String? = nil) {
        if let counter { self.counts[counter, default: 0] &+= 1 }
        if let health, let message {
            self.condition = SourceCondition(health: health, message: message)
        } else {
            self.condition = nil
        }
    }

    mutating func count(_ counter: String, _ n: UInt64 = 1) { self.counts[counter, default: 0] &+= n }

    /// Notes how old the newest sample was when it arrived.
    mutating func age(_ seconds: Double) {
        guard seconds.isFinite else { return }
        self.ages.append(seconds)
        if self.ages.count > 50 { self.ages.removeFirst(self.ages.count - 50) }
        let sorted = self.ages.sorted()
        self.report.sampleAgeSeconds = sorted[sorted.count / 2]
    }

    mutating func polled(_ result: PhyphoxProtocol.PollResult, poller: PhyphoxProtocol.Poller, received: Double) {
        self.count("phyphox.polls")
        self.count("phyphox.samples", UInt64(result.samples))
        self.count("phyphox.dropped", UInt64(result.dropped))
        if let newest = result.newestSampleTime { self.age(received - newest) }
        self.report.compass = poller.motion.compass.latest
        self.report.description = poller.title
        self.extra = poller.motion.statusCounters
    }

    var counters: [StatusCounter] {
        self.counts.sorted { $0.key < $1.key }.map { StatusCounter(name: $0.key, value: $0.value) } + self.extra
    }
}

extension PhyphoxSource {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let pollIntervalSeconds = SettingSpec<Double>(
            "pollIntervalSeconds", unit: "s", default: 0.1, in: 0.02...5, "Time between polls of the phone.")
        public static let timeoutSeconds = SettingSpec<Double>(
            "timeoutSeconds", unit: "s", default: 1.0, in: 0.1...30, "Each poll's deadline.")
        public static let headingIntervalSeconds = SettingSpec<Double>(
            "headingIntervalSeconds", unit: "s", default: 0.1, in: 0.02...1,
            "Time between headings sent (the newest sample of each interval).")
        public static let startMeasuring = ValueSpec<Bool>(
            "startMeasuring", default: true, "Start the experiment's measurement if it is paused.")
        public static let url = ValueSpec<String>(
            "url", accepts: "http://host:port",
            "The phone's remote-access address, as phyphox shows it (http://192.168.1.23:8080).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [
            pollIntervalSeconds.doc, timeoutSeconds.doc, headingIntervalSeconds.doc, startMeasuring.doc, url.doc,
        ]
    }
}
