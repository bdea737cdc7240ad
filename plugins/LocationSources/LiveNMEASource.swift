import Links
public import Logging
public import NavCore
import Parsers
import Synchronization

/// NMEA from a live serial device or a TCP stream (for example a phone app or `gpsfake -t`), decoded as it arrives.
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
        }
        self.problems = ProblemCounter(logger: logger, source: name)
    }

    /// Reads a config's settings: one of `file` (with `pace`), `device` (with `baud`) or `tcp` ("host:port").
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        let file = try settings.inputFile("file")
        let device = try settings.optionalString("device")
        let tcp = try settings.optionalString("tcp")
        let pace = try settings.double("pace", default: 1, in: 0...100_000)
        let baud = try settings.int("baud", default: 9600, in: 300...4_000_000)
        let options = try LogSettings.readerOptions(&settings)
        try settings.finish()
        let input: Input
        switch (file, device, tcp) {
        case let (file?, nil, nil): input = .file(path: file, pace: pace)
        case let (nil, device?, nil): input = .serial(path: device, baud: baud)
        case let (nil, nil, address?):
            guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...])
            else {
                throw ConfigError.invalidValue(
                    path: "\(settings.path).tcp", expected: "host:port", found: "'\(address)'")
            }
            input = .tcp(host: String(address[..<colon]), port: port)
        default:
            throw ConfigError.invalidValue(
                path: settings.path, expected: "exactly one of file, device or tcp", found: "\(settings.keys)")
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
        let link: ByteLink
        switch self.input {
        case let .serial(path, baud): link = try ByteLink.serial(path: path, baud: baud, splitLines: true)
        case let .tcp(host, port): link = try ByteLink.tcp(host: host, port: port, splitLines: true)
        case .file: preconditionFailure("files are replayed above")
        }
        defer { link.close() }
        var decoder = NMEADecoder(options: self.options.nmea)
        var number = 0
        for await bytes in link.chunks {
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
        for message in decoder.finish() { try await emit(message) }
        try Task.checkCancellation()
    }

    public func statusCounters() async -> [StatusCounter] { self.problems.counters }
}
