#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Links
import Parsers
import NavCore
import Synchronization
import SystemIO

/// A phone running phyphox with HapticNav's experiment, for tests, dry runs and `hapticnav preflight` rehearsals:
/// serves a phyphox recording (a folder of phyphox's CSV export: `Location.csv`, `Accelerometer.csv`,
/// `Magnetometer.csv`) over phyphox's remote-access interface as the app does (the same paths, the same JSON, numbers
/// in the app's format, the same threshold rules), the samples appearing as the experiment's clock passes their
/// time. It can pause (as the phone's ▶/❚❚ button), stop answering (a phone that sleeps or leaves the Wi-Fi), run a
/// different experiment, and have its clock off. Live (``init(liveOn:port:options:)``), it serves what a simulation
/// records as it goes (``record(_:_:)``), each sample at the experiment's time of its recording.
public final class PhyphoxStandIn: Sendable {
    /// How the stand-in behaves.
    public struct Options: Sendable {
        /// The experiment's title, as `/config` gives it.
        public var title = "HapticNav phone"
        /// Buffers the experiment lacks (a wrong experiment).
        public var withoutBuffers: Set<String> = []
        /// Measuring from the start (false: waits for `/control?cmd=start` or ``resume()``).
        public var measuring = true
        /// The phone's clock against the host's [seconds].
        public var clockOffsetSeconds = 0.0
        /// The recording starts again at its end.
        public var loop = true
        /// Experiment time passes this many times faster than real time.
        public var rate = 1.0

        public init() {}
    }

    private struct Column: Sendable {
        var times: [Double]
        var values: [[Double]]  // per buffer of the group, the value of each row
    }

    /// The sensor groups a live stand-in records.
    public enum Group: Int, Sendable {
        /// latitude, longitude, height, velocity, direction, horizontal accuracy.
        case location = 0
        /// x, y, z [m/s², gravity's reaction included].
        case accelerometer = 1
        /// x, y, z [µT].
        case magnetometer = 2
    }

    private struct State: Sendable {
        var measuring = false
        var answering = true
        var events: [(start: Bool, experimentTime: Double, systemTime: Double)] = []
        /// Monotonic time and experiment time of the latest start.
        var startedAt: (monotonic: Double, experiment: Double)?
        var pausedAt = 0.0
        var requests: UInt64 = 0
    }

    private let options: Options
    private let names: [[String]]
    private let columns: Mutex<[Column]>
    private let duration: Double
    private let session: String
    private let state = Mutex(State())
    private let server: HTTPServer
    /// The address to give the source ("http://127.0.0.1:PORT").
    public let url: String

    /// Serves the recording in `folder` on `host`:`port` (0: any free port).
    public convenience init(
        recording folder: String, host: String = "127.0.0.1", port: UInt16 = 0, options: Options = Options()
    )
        throws
    {
        func load(_ file: String, columns: Int) throws -> Column {
            let text: String
            do {
                text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            } catch {
                throw LogError.unreadable(reason: "\(folder)/\(file): \(error)")
            }
            let table = SensorLog.table(text)
            let rows = table.rows.filter { $0.values.count >= columns + 1 }
            return Column(
                times: rows.map { $0.values[0] }, values: (1...columns).map { c in rows.map { $0.values[c] } })
        }
        // Location.csv: time, latitude, longitude, height, velocity, direction, horizontal accuracy[, vertical].
        let location = try load("Location.csv", columns: 6)
        let accelerometer = try load("Accelerometer.csv", columns: 3)
        let magnetometer = try load("Magnetometer.csv", columns: 3)
        let duration =
            ([location.times.last, accelerometer.times.last, magnetometer.times.last].compactMap { $0 }.max() ?? 0)
            + 0.01
        try self.init(
            columns: [location, accelerometer, magnetometer], duration: duration, host: host, port: port,
            options: options)
    }

    /// A live phone on `host`:`port` (0: any free port): it serves what ``record(_:_:)`` is given, never looping.
    public convenience init(liveOn host: String = "127.0.0.1", port: UInt16 = 0, options: Options = Options()) throws {
        var options = options
        options.loop = false
        let empty = [6, 3, 3].map { Column(times: [], values: Array(repeating: [], count: $0)) }
        try self.init(columns: empty, duration: .infinity, host: host, port: port, options: options)
    }

    private init(columns: [Column], duration: Double, host: String, port: UInt16, options: Options) throws {
        self.names = [PhyphoxProtocol.location, PhyphoxProtocol.accelerometer, PhyphoxProtocol.magnetometer]
        self.columns = Mutex(columns)
        self.duration = duration
        self.options = options
        self.session = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        let box = Box()
        self.server = try HTTPServer(host: host, port: port) { request in
            box.standIn?.answer(request) ?? .text(503, "starting")
        }
        self.url = "http://\(host.contains(":") ? "[\(host)]" : host):\(self.server.port)"
        box.standIn = self
        if options.measuring { self.resume() }
    }

    private final class Box: @unchecked Sendable {
        // Set once, before the first request can be answered.
        nonisolated(unsafe) weak var standIn: PhyphoxStandIn?
    }

    /// Stops serving.
    public func close() { self.server.close() }

    /// Presses ❚❚ on the phone.
    public func pause() { self.control("stop") }

    /// Presses ▶ on the phone.
    public func resume() { self.control("start") }

    /// Stops answering (requests wait, as to a phone that left the Wi-Fi) or answers again.
    public func setAnswering(_ answering: Bool) { self.state.withLock { $0.answering = answering } }

    /// The phone's clock at the experiment's first start [seconds since 1970].
    public var firstStart: Double? { self.state.withLock { $0.events.first?.systemTime } }

    /// Requests answered so far.
    public var requests: UInt64 { self.state.withLock { $0.requests } }

    /// Records one sample of `group` (its values in the group's order) at the experiment's time now, or
    /// `secondsAgo` before (a batch of samples taken since the last call); nothing while the experiment is paused, as
    /// on the phone.
    public func record(_ group: Group, _ values: [Double], secondsAgo: Double = 0) {
        guard let now = self.state.withLock({ $0.measuring ? self.experimentTime($0) : nil }) else { return }
        let time = max(0, now - max(0, secondsAgo))
        self.columns.withLock { columns in
            // Times only rise within a buffer (a reader asks for what follows a time).
            guard values.count == columns[group.rawValue].values.count,
                time >= columns[group.rawValue].times.last ?? -.infinity
            else { return }
            columns[group.rawValue].times.append(time)
            for (index, value) in values.enumerated() { columns[group.rawValue].values[index].append(value) }
        }
    }

    private var phoneClock: Double { SystemClock.wallSeconds() + self.options.clockOffsetSeconds }

    private func experimentTime(_ state: State) -> Double {
        guard state.measuring, let started = state.startedAt else { return state.pausedAt }
        return started.experiment + (SystemClock.monotonicSeconds() - started.monotonic) * self.options.rate
    }

    @discardableResult
    private func control(_ command: String) -> Bool {
        self.state.withLock { state in
            switch command {
            case "start":
                guard !state.measuring else { return true }
                let experiment = state.pausedAt
                state.events.append((true, experiment, self.phoneClock))
                state.startedAt = (SystemClock.monotonicSeconds(), experiment)
                state.measuring = true
            case "stop":
                guard state.measuring else { return true }
                state.pausedAt = self.experimentTime(state)
                state.events.append((false, state.pausedAt, self.phoneClock))
                state.measuring = false
            case "clear":
                state.events = []
                state.pausedAt = 0
                if state.measuring {
                    state.events.append((true, 0, self.phoneClock))
                    state.startedAt = (SystemClock.monotonicSeconds(), 0)
                }
            default: return false
            }
            return true
        }
    }

    /// The value of buffer `column` of `group` at index `index` of the (looped) recording.
    private func value(_ columns: [Column], _ group: Int, _ column: Int, _ index: Int) -> Double {
        let data = columns[group]
        let n = data.times.count
        let lap = index < n ? 0 : Double(index / n) * self.duration
        return column == 0 ? data.times[index % n] + lap : data.values[column - 1][index % n]
    }

    /// How many rows of `group` the experiment has recorded by experiment time `t`.
    private func filled(_ columns: [Column], _ group: Int, at t: Double) -> Int {
        let times = columns[group].times
        guard !times.isEmpty, t >= 0 else { return 0 }
        let laps = self.options.loop ? Int(t / self.duration) : 0
        let within = laps == 0 ? t : t - Double(laps) * self.duration
        var low = 0, high = times.count  // first index with time > within
        while low < high {
            let mid = (low + high) / 2
            if times[mid] <= within { low = mid + 1 } else { high = mid }
        }
        return laps * times.count + low
    }

    private func locate(_ name: String) -> (group: Int, column: Int)? {
        guard !self.options.withoutBuffers.contains(name) else { return nil }
        for (g, names) in self.names.enumerated() {
            if let c = names.firstIndex(of: name) { return (g, c) }
        }
        return nil
    }

    private func answer(_ request: HTTPRequest) -> HTTPServerResponse {
        let deadline = SystemClock.monotonicSeconds() + 30
        while !self.state.withLock({ $0.answering }), SystemClock.monotonicSeconds() < deadline {
            usleep(10_000)
        }
        self.state.withLock { $0.requests &+= 1 }
        func json(_ text: String) -> HTTPServerResponse {
            HTTPServerResponse(status: 200, contentType: "application/json", body: Array(text.utf8))
        }
        switch request.path {
        case "/get": return json(self.get(request))
        case "/time":
            let events = self.state.withLock { $0.events }
            let items = events.map {
                "{\"event\":\"\($0.start ? "START" : "PAUSE")\",\"experimentTime\":\(Self.java($0.experimentTime)),"
                    + "\"systemTime\":\(Self.java($0.systemTime))}"
            }
            return json("[" + items.joined(separator: ",") + "]")
        case "/control":
            return json(self.control(request.query["cmd"] ?? "") ? "{\"result\": true}" : "{\"result\": false}")
        case "/config":
            let buffers = self.names.flatMap { $0 }.filter { !self.options.withoutBuffers.contains($0) }
            let list = buffers.map { "{\"name\":\"\($0)\",\"size\":0}" }.joined(separator: ",")
            let title = String(self.options.title.map { $0 == "\"" || $0 == "\\" ? "'" : $0 })
            return json(
                "{\"crc32\":\"5eed1234\",\"title\":\"\(title)\",\"localTitle\":\"\(title)\",\"category\":\"HapticNav\","
                    + "\"localCategory\":\"HapticNav\",\"buffers\":[\(list)],\"inputs\":[],\"export\":[]}")
        case "/meta":
            return json("{\"version\":\"1.2.0\",\"build\":\"1020009\",\"deviceModel\":\"HapticNav stand-in\"}")
        default:
            return .text(404, "not found")
        }
    }

    /// `/get`: each requested buffer (in the request's order) as the app builds it.
    private func get(_ request: HTTPRequest) -> String {
        let (now, measuring) = self.state.withLock { (self.experimentTime($0), $0.measuring) }
        return self.columns.withLock { columns in self.get(request, columns: columns, now: now, measuring: measuring) }
    }

    private func get(_ request: HTTPRequest, columns: [Column], now: Double, measuring: Bool) -> String {
        var parts: [String] = []
        for (name, value) in request.queryItems {
            guard let (group, column) = self.locate(name) else { continue }
            var threshold = Double.nan
            var reference = (group, column)
            if value == "full" {
                threshold = -.infinity
            } else if !value.isEmpty {
                let split = value.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
                threshold = Double(split[0]) ?? .nan
                if split.count > 1 {
                    guard let located = self.locate(String(split[1])), located.group == group else { continue }
                    reference = located
                }
                // The app moves the threshold by one unit of its eighth digit, so a value it sent is not sent again;
                // a threshold of zero or below becomes NaN there, which answers with the latest value only.
                threshold += pow(10, (log10(threshold / 1e7)).rounded(.down))
            }
            let n = self.filled(columns, group, at: now)
            var text = "\"\(name)\":{\"size\":0,\"updateMode\":\""
            text += threshold.isNaN ? "single" : (threshold.isInfinite ? "full" : "partial")
            text += "\", \"buffer\":["
            if threshold.isNaN {
                text += n > 0 ? PhyphoxProtocol.format(self.value(columns, group, column, n - 1)) : "null"
            } else {
                // The first index past the threshold (the reference is a time, rising), then every value after it.
                var low = 0, high = n
                while low < high {
                    let mid = (low + high) / 2
                    if self.value(columns, reference.0, reference.1, mid) <= threshold {
                        low = mid + 1
                    } else {
                        high = mid
                    }
                }
                text += (low..<n).map { PhyphoxProtocol.format(self.value(columns, group, column, $0)) }.joined(
                    separator: ",")
            }
            parts.append(text + "]}")
        }
        return "{\"buffer\":{\n" + parts.joined(separator: ",\n")
            + "\n},\n\"status\":{\n\"session\":\"\(self.session)\", "
            + "\"measuring\":\(measuring), \"timedRun\":false, \"countDown\":0\n}\n}\n"
    }

    /// A number as Java's `JSONObject` writes a double (`Double.toString`, shortest digits, "1.764496800123E9"
    /// from ten million up; a trailing ".0" dropped).
    static func java(_ value: Double) -> String {
        let magnitude = abs(value)
        if value == value.rounded(), magnitude < 1e7 { return String(Int64(value)) }
        guard magnitude >= 1e7, magnitude < 1e15 else { return "\(value)" }
        let text = "\(magnitude)"  // "1764496800.123"
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let whole = String(parts[0]), fraction = parts.count > 1 ? String(parts[1]) : ""
        var digits = whole + fraction
        while digits.count > 1, digits.hasSuffix("0") { digits.removeLast() }
        let mantissa = digits.count > 1 ? "\(digits.prefix(1)).\(digits.dropFirst())" : "\(digits).0"
        return "\(value < 0 ? "-" : "")\(mantissa)E\(whole.count - 1)"
    }
}
