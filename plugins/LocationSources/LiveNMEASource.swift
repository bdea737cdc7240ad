import Links
public import Logging
public import NavCore
import Parsers
import Synchronization

/// NMEA from a live serial device, a TCP stream (for example `gpsfake -t`) or UDP datagrams (what GPS-forwarding phone
/// apps send, to port 10110 by convention), decoded as it arrives.
public struct LiveNMEASource: MessageSource {
    public static let id = "nmea"

    /// Where the sentences come from.
    public enum Input: Sendable, Equatable {
        /// A serial device at a baud rate.
        case serial(path: String, baud: Int)
        /// A TCP server (host, port).
        case tcp(host: String, port: UInt16)
        /// A file, replayed at a pace.
        case file(path: String, pace: Double)
        /// A UDP port (host to bind, port), taking datagrams from the given senders only when `from` is not nil.
        case udp(host: String, port: UInt16, from: Set<String>?)
    }

    /// The input.
    public let input: Input
    /// Decoder settings.
    public let options: LogReader.Options
    private let logger: Logger
    private let problems: ProblemCounter

    /// Creates a source.
    public init(input: Input, options: LogReader.Options = .init(), logger: Logger) {
        self.input = input
        self.options = options
        self.logger = logger
        let name: String
        switch input {
        case let .serial(path, _): name = path
        case let .tcp(host, port): name = "tcp://\(host):\(port)"
        case let .file(path, _): name = path
        case let .udp(host, port, _): name = "udp://\(host):\(port)"
        }
        self.problems = ProblemCounter(logger: logger, source: name)
    }

    /// Reads a config's settings: one of `file` (with `pace`), `device` (with `baud`), `tcp` ("host:port") or `udp`
    /// ("0.0.0.0:10110", with `udpFrom`, the senders' addresses to take datagrams from).
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        let file = try settings.inputFile(Setting.file)
        let device = try settings.optionalValue(Setting.device)
        let tcp = try settings.optionalValue(Setting.tcp)
        let udp = try settings.optionalValue(Setting.udp)
        let udpFrom = settings.value(Setting.udpFrom.key) == nil ? nil : try settings.value(Setting.udpFrom)
        let pace = try settings.value(Setting.pace)
        let baud = try settings.value(Setting.baud)
        let options = try LogSettings.readerOptions(&settings)
        try settings.finish()
        let input: Input
        func hostPort(_ address: String, _ key: String) throws -> (String, UInt16) {
            guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...])
            else {
                throw ConfigError.invalidValue(
                    path: "\(settings.path).\(key)", expected: "host:port", found: "'\(address)'")
            }
            var host = String(address[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host, port)
        }
        switch (file, device, tcp, udp) {
        case let (file?, nil, nil, nil): input = .file(path: file, pace: pace)
        case let (nil, device?, nil, nil): input = .serial(path: device, baud: baud)
        case let (nil, nil, address?, nil):
            let (host, port) = try hostPort(address, "tcp")
            input = .tcp(host: host, port: port)
        case let (nil, nil, nil, address?):
            let (host, port) = try hostPort(address, "udp")
            input = .udp(host: host, port: port, from: udpFrom.map(Set.init))
        default:
            throw ConfigError.invalidValue(
                path: settings.path, expected: "exactly one of file, device, tcp or udp", found: "\(settings.keys)")
        }
        if udpFrom != nil, udp == nil {
            throw ConfigError.invalidValue(path: "\(settings.path).udpFrom", expected: "udp beside it", found: "no udp")
        }
        self.init(input: input, options: options, logger: logger)
    }

    public var isLive: Bool {
        if case .file = self.input { return false }
        return true
    }

    /// A live receiver reports once a second unless set otherwise; a file's rate is its own.
    public var nominalPeriods: [BusMessage.Kind: Double] { self.isLive ? [.fix: 1] : [:] }

    public func run(emit: @Sendable (BusMessage) async throws -> Void) async throws {
        if case let .file(path, pace) = self.input {
            try await LogReplaySource(file: path, pace: pace, options: self.options, logger: self.logger).run(
                emit: emit)
            return
        }
        var decoder = NMEADecoder(options: self.options.nmea)
        var number = 0
        func take(_ bytes: some Collection<UInt8>) async throws {
            let line = String(decoding: bytes, as: UTF8.self)
            number += 1
            self.problems.read()
            switch decoder.decode(line: Substring(line)) {
            case let .success(messages):
                for message in messages { try await emit(message) }
            case let .failure(error):
                self.problems.report(LogProblem(line: number, reason: "\(error)"))
            }
        }
        if case let .udp(host, port, from) = self.input {
            let link = try DatagramLink(host: host, port: port, allowedSenders: from)
            self.udp.set(link)
            defer { link.close() }
            try await withTaskCancellationHandler {
                // A datagram holds one or more sentences; a sentence never spans two.
                for await datagram in link.datagrams {
                    for line in datagram.bytes.split(whereSeparator: { $0 == 10 || $0 == 13 }) where !line.isEmpty {
                        try await take(line.prefix(4096))
                    }
                }
            } onCancel: {
                link.close()
            }
        } else {
            let link: ByteLink
            switch self.input {
            case let .serial(path, baud): link = try ByteLink.serial(path: path, baud: baud, splitLines: true)
            case let .tcp(host, port): link = try ByteLink.tcp(host: host, port: port, splitLines: true)
            case .file, .udp: preconditionFailure("handled above")
            }
            defer { link.close() }
            for await bytes in link.chunks { try await take(bytes) }
        }
        for message in decoder.finish() { try await emit(message) }
        try Task.checkCancellation()
    }

    /// The UDP link while one is open, for its counters.
    private let udp = LinkBox()
    private final class LinkBox: Sendable {
        let link = Mutex<DatagramLink?>(nil)
        func set(_ link: DatagramLink) { self.link.withLock { $0 = link } }
        var current: DatagramLink? { self.link.withLock { $0 } }
    }

    public func statusCounters() async -> [StatusCounter] {
        var counters = self.problems.counters
        if let link = self.udp.current {
            counters.append(StatusCounter(name: "udp.datagrams", value: link.receivedCount))
            counters.append(StatusCounter(name: "udp.refusedSenders", value: link.refusedCount))
        }
        return counters
    }
}

extension LiveNMEASource {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let pace = SettingSpec<Double>(
            "pace", default: 1, in: 0...100_000, "A file: 1 at its own pace, 0 as fast as the readers take it.")
        public static let baud = SettingSpec<Int>(
            "baud", unit: "Bd", default: 9600, in: 300...4_000_000, "The serial port's speed.")
        public static let device = ValueSpec<String>("device", "A serial port to read (/dev/ttyUSB0).")
        public static let tcp = ValueSpec<String>("tcp", accepts: "host:port", "A TCP stream to read (host:port).")
        public static let udp = ValueSpec<String>(
            "udp", accepts: "host:port",
            "Datagrams to take, as GPS-forwarding phone apps send them (host:port to listen on, port 10110 usual).")
        public static let file = ValueSpec<String>("file", accepts: "a file", "An NMEA log to read at its own pace.")
        public static let udpFrom = ValueSpec<[String]>(
            "udpFrom", default: [], "Take datagrams from these addresses only (a phone's).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] =
            [pace.doc, baud.doc, device.doc, tcp.doc, udp.doc, file.doc, udpFrom.doc] + LogSettings.Setting.all
    }
}
