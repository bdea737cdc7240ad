public import HapticLogic
internal import CEmergencyStop
public import Links
public import Logging
public import NavCore

/// The `band` device: a vibrating band on a byte stream (TCP, a serial device or pseudo-terminal by path, or Bluetooth
/// LE's Nordic UART Service through the Bumble bridge, ``BLELink``) speaking ``BandProtocol``. At each connection it sets the band's watchdog (the band stops every motor by itself
/// when no frame arrives for that long) and then pings four times per limit, so that a frozen or killed host stops the
/// motors within the limit. It is available while connected and acknowledging within the last second, and it
/// reconnects, with backoff, when the link drops. If the process crashes, a fatal-signal handler writes `stopAll`.
public actor BandDevice: OutputDevice {
    public static let id = "band"
    public nonisolated let name = "band"

    /// Where the band is.
    public enum Address: Sendable, Equatable {
        /// A TCP endpoint.
        case tcp(host: String, port: UInt16)
        /// A serial device or pseudo-terminal.
        case path(String, baud: Int)
        /// A Bluetooth LE band with the Nordic UART Service, by name or address, over a Bumble HCI transport.
        case ble(BLELink.Target)
    }

    /// The band's address.
    public let address: Address
    /// A frame left this long without its acknowledgement (or no acknowledgement at all for this long) makes the band
    /// count as gone [seconds].
    public let acknowledgeTimeoutSeconds: Double
    /// The watchdog limit agreed at each connection [milliseconds, 50–5000]. 400 by default, below the band's own
    /// 500, so that with pings every 100 ms a host that freezes has its motors stopped within half a second.
    public let watchdogMilliseconds: Int
    /// The time between pings [milliseconds]: a quarter of the watchdog limit.
    public var pingIntervalMilliseconds: Int { max(10, self.watchdogMilliseconds / 4) }
    /// How long a frame may wait to leave [seconds]: the watchdog's period (later, the band has stopped by itself).
    var writeLimitSeconds: Double { Double(self.watchdogMilliseconds) / 1000 }
    private let logger: Logger
    private var link: ByteLink?
    private var sequence: UInt8 = 0
    private var lastAck: ContinuousClock.Instant?
    /// The frames sent on this link and not yet answered, oldest first (bounded: the sequence wraps at 256).
    private var unanswered: [(sequence: UInt8, sentAt: ContinuousClock.Instant)] = []
    private var connectedAt: ContinuousClock.Instant?
    private var framesSent = 0
    private var acks = 0
    private var connections = 0
    private var battery: Int?
    private var buttons = 0
    private var motors: (left: UInt8, right: UInt8) = (0, 0)
    private var lastSent: ContinuousClock.Instant?
    /// Which turn events the band tells (one turn at a time).
    private var telling = BandProtocol.TurnTelling()
    /// The latest BLE connection (what the bridge found and reports; current while `link` is set), and why the last
    /// attempt to reach the band failed.
    private var bleConnection: BLELink.Connection?
    private var lastProblem: String?

    /// Creates the device.
    public init(
        address: Address, acknowledgeTimeoutSeconds: Double = 1, watchdogMilliseconds: Int = 400,
        logger: Logger
    ) {
        self.address = address
        self.acknowledgeTimeoutSeconds = acknowledgeTimeoutSeconds
        self.watchdogMilliseconds = min(
            max(watchdogMilliseconds, BandProtocol.watchdogRange.lowerBound),
            BandProtocol.watchdogRange.upperBound)
        self.logger = logger
    }

    /// Reads a config's settings: one of `tcp` ("host:port"), `device` (a serial port or pty path, with `baud`),
    /// `bleName` or `bleAddress` (with `bleTransport`, `bleScanSeconds` and `python`), an empty one counting as not
    /// given, then
    /// `acknowledgeTimeoutSeconds` and `watchdogMilliseconds`.
    public init(settings: Settings, logger: Logger) throws {
        var settings = settings
        // An empty value counts as not given, so that a config can leave the choice to the environment
        // (`device: "${HAPTICNAV_BAND_DEVICE:-}", bleName: "${HAPTICNAV_BAND_BLE:-}"`).
        func given(_ value: String?) -> String? { value?.isEmpty == false ? value : nil }
        let tcp = given(try settings.optionalValue(Setting.tcp))
        let device = given(try settings.optionalValue(Setting.device))
        let bleName = given(try settings.optionalValue(Setting.bleName))
        let bleAddress = given(try settings.optionalValue(Setting.bleAddress))
        let bleTransport = try settings.value(Setting.bleTransport)
        let bleScanSeconds = try settings.value(Setting.bleScanSeconds)
        let python = try settings.value(Setting.python)
        let baud = try settings.value(Setting.baud)
        let timeout = try settings.value(Setting.acknowledgeTimeoutSeconds)
        let watchdog = try settings.value(Setting.watchdogMilliseconds)
        try settings.finish()
        let address: Address
        switch (tcp, device, bleName, bleAddress) {
        case let (text?, nil, nil, nil):
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
                throw ConfigError.invalidValue(path: "\(settings.path).tcp", expected: "host:port", found: "'\(text)'")
            }
            address = .tcp(host: String(text[..<colon]), port: port)
        case let (nil, path?, nil, nil): address = .path(path, baud: baud)
        case let (nil, nil, name?, nil):
            guard !name.isEmpty, name.utf8.count <= 29 else {
                throw ConfigError.invalidValue(
                    path: "\(settings.path).bleName", expected: "an advertised name, 1 to 29 bytes", found: "'\(name)'")
            }
            address = .ble(
                BLELink.Target(
                    device: .name(name), transport: bleTransport, scanSeconds: bleScanSeconds, python: python))
        case let (nil, nil, nil, text?):
            guard Self.isBluetoothAddress(text) else {
                throw ConfigError.invalidValue(
                    path: "\(settings.path).bleAddress", expected: "AA:BB:CC:DD:EE:FF", found: "'\(text)'")
            }
            address = .ble(
                BLELink.Target(
                    device: .address(text.uppercased()), transport: bleTransport, scanSeconds: bleScanSeconds,
                    python: python))
        default:
            throw ConfigError.invalidValue(
                path: settings.path,
                expected: "exactly one of tcp, device, bleName or bleAddress (an empty one: not given)",
                found: "\([tcp, device, bleName, bleAddress].compactMap { $0 })")
        }
        self.init(address: address, acknowledgeTimeoutSeconds: timeout, watchdogMilliseconds: watchdog, logger: logger)
    }

    /// Six hexadecimal octets separated by colons.
    static func isBluetoothAddress(_ text: String) -> Bool {
        let octets = text.split(separator: ":", omittingEmptySubsequences: false)
        return octets.count == 6 && octets.allSatisfy { $0.count == 2 && UInt8($0, radix: 16) != nil }
    }

    /// How long preflight waits for the band to answer: a BLE band is looked for first.
    public nonisolated var answerWithinSeconds: Double {
        if case let .ble(target) = self.address { return target.scanSeconds + 5 }
        return 3
    }

    public func run() async throws {
        var backoff = 0.1
        while !Task.isCancelled {
            let link: ByteLink
            do {
                switch self.address {
                case let .tcp(host, port): link = try ByteLink.tcp(host: host, port: port)
                case let .path(path, baud): link = try ByteLink.serial(path: path, baud: baud)
                case let .ble(target):
                    let logger = self.logger
                    let connection = try await BLELink.connect(target) { logger.info("band: \($0)") }
                    self.bleConnection = connection
                    link = connection.link
                }
            } catch {
                try Task.checkCancellation()
                let problem = "\(error)"
                // Said once per kind of failure (a BLE band out of range is looked for again and again).
                if (self.connections == 0 && backoff == 0.1) || problem != self.lastProblem {
                    self.logger.warning("band unreachable (\(problem)); retrying")
                }
                self.lastProblem = problem
                try await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 1)
                continue
            }
            self.lastProblem = nil
            backoff = 0.1
            self.connections += 1
            self.link = link
            self.connectedAt = ContinuousClock.now
            self.lastAck = nil
            self.unanswered.removeAll()
            let over = self.bleConnection.map { "; BLE \($0.status.text)" } ?? ""
            self.logger.info(
                "band connected (\(self.connections == 1 ? "first time" : "again")); watchdog \(self.watchdogMilliseconds) ms\(over)"
            )
            hn_emergency_install()
            let stopFrame = BandProtocol.Frame(type: .stopAll, sequence: 0xFF).bytes
            // Registered while the descriptor cannot be given back, and unregistered just before its number is,
            // whoever closes the link.
            link.withOpenDescriptor { fd in
                _ = stopFrame.withUnsafeBufferPointer { hn_emergency_register(fd, $0.baseAddress, $0.count) }
                link.whenClosing { hn_emergency_unregister($0) }
            }
            _ = self.send(.watchdog, BandProtocol.watchdogPayload(milliseconds: self.watchdogMilliseconds))
            _ = self.send(.stopAll, [])
            let pingInterval = self.pingIntervalMilliseconds
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    var decoder = BandProtocol.Decoder()
                    for await chunk in link.chunks {
                        for result in decoder.feed(chunk) {
                            if case let .success(frame) = result { await self.received(frame) }
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(pingInterval))
                        guard await self.send(.ping, []) else { break }
                    }
                }
                await group.next()
                group.cancelAll()
                // Never leave a motor running behind a closed link. (A link given up by a write that waited out its
                // limit is closed already: the band, if it still runs, stops by its watchdog.)
                self.sequence &+= 1
                _ = link.write(
                    BandProtocol.Frame(type: .stopAll, sequence: self.sequence).bytes,
                    timeoutSeconds: self.writeLimitSeconds)
                link.close()
            }
            self.link = nil
            if let connection = self.bleConnection {
                self.logger.warning(
                    "band link dropped (BLE: \(connection.status.disconnected ?? "the host closed it")); reconnecting")
            } else {
                self.logger.warning("band link dropped; reconnecting")
            }
        }
    }

    private func received(_ frame: BandProtocol.Frame) {
        switch frame.type {
        case .ack:
            self.acks += 1
            self.lastAck = ContinuousClock.now
            self.answered(frame.payload.first)
        // A refusal names its frame, except one for a bad checksum (its sequence could not be trusted).
        case .nack where frame.payload.count >= 2 && frame.payload[1] != 1: self.answered(frame.payload.first)
        case .battery: self.battery = frame.payload.first.map(Int.init)
        case .button: self.buttons += frame.payload.count > 1 && frame.payload[1] == 1 ? 1 : 0
        default: break
        }
    }

    /// Sends one frame; false when the link is down.
    @discardableResult
    private func send(_ type: BandProtocol.FrameType, _ payload: [UInt8]) -> Bool {
        guard let link = self.link else { return false }
        let now = ContinuousClock.now
        if let last = self.lastSent, now - last >= .milliseconds(self.watchdogMilliseconds), self.motors != (0, 0) {
            // This process was frozen longer than the watchdog's limit: the band has stopped by itself.
            self.motors = (0, 0)
            self.logger.warning(
                "band: nothing sent for \(now - last), beyond the watchdog's \(self.watchdogMilliseconds) ms; the band has stopped its motors"
            )
        }
        self.lastSent = now
        self.sequence &+= 1
        // A frame that cannot leave within the watchdog's limit would come after the band stopped by itself: a band
        // that stopped reading (hung firmware, a stuck bridge) is given up then, not waited for with this actor, which
        // the sink asks whether the band is there before it falls back.
        let ok = link.write(
            BandProtocol.Frame(type: type, sequence: self.sequence, payload: payload).bytes,
            timeoutSeconds: self.writeLimitSeconds)
        if ok {
            self.framesSent += 1
            // Bounded, keeping the oldest (the one the band is judged by) and the newest.
            if self.unanswered.count >= 128 { self.unanswered.remove(at: 1) }
            self.unanswered.append((self.sequence, now))
            if type == .setMotors { self.motors = (payload[0], payload[1]) }
            if type == .stopAll { self.motors = (0, 0) }
        } else {
            link.close()
        }
        return ok
    }

    /// Connected, an acknowledgement within the limit, and no frame waiting for its answer longer than the limit:
    /// late acknowledgements of old frames (a link backed up by seconds) do not keep a band that has stopped answering
    /// the frames sent now.
    public func isAvailable() -> Bool {
        guard self.link != nil, let connected = self.connectedAt else { return false }
        let now = ContinuousClock.now
        let limit = Duration.seconds(self.acknowledgeTimeoutSeconds)
        if let oldest = self.unanswered.first, now - oldest.sentAt >= limit { return false }
        // Not before it has answered on this link: a link that keeps dropping and coming back does not make a band
        // that never answers available.
        guard let lastAck = self.lastAck, lastAck >= connected else { return false }
        return now - lastAck < limit
    }

    /// The band answered the frame numbered `sequence`: it and every frame sent before it are settled (a band answers
    /// in order). An answer to no frame waiting is ignored.
    private func answered(_ sequence: UInt8?) {
        guard let sequence, let index = self.unanswered.firstIndex(where: { $0.sequence == sequence }) else { return }
        self.unanswered.removeFirst(index + 1)
    }

    public func render(_ cue: HapticCue) throws {
        for (type, payload) in BandProtocol.frames(for: cue) { self.send(type, payload) }
    }

    public func stopAll() {
        self.send(.stopAll, [])
    }

    public func renderTurn(_ event: TurnEvent) {
        guard self.telling.tells(event) else { return }
        for (type, payload) in BandProtocol.frames(for: event) { self.send(type, payload) }
    }

    /// A band cannot speak: a prompt is one tick, so that the wearer knows something was said elsewhere.
    public func announce(_ text: String) {
        self.send(.pulse, [BandProtocol.Pattern.tick.rawValue, 160, 1])
    }

    public func observe(_ message: BusMessage) {}

    public func summary() -> String {
        var text = "\(self.framesSent) frames sent, \(self.acks) acknowledged, \(self.connections) connection(s)"
        let connected = self.link != nil
        if let battery = self.battery ?? (connected ? self.bleConnection?.status.battery : nil) {
            text += ", battery \(battery) %"
        }
        text += ", motors now \(self.motors.left)/\(self.motors.right)"
        if let status = self.bleConnection?.status {
            text += "; BLE \(status.text)" + (connected ? "" : " (not connected now)")
        }
        if let problem = self.lastProblem, self.link == nil { text += "; \(problem)" }
        return text
    }
}

extension BandDevice {
    /// Its settings, each declared once: a config is parsed through these, and `hapticnav config schema` documents
    /// them.
    public enum Setting {
        public static let baud = SettingSpec<Int>(
            "baud", unit: "Bd", default: 115_200, in: 1200...4_000_000, "The serial port's speed.")
        public static let acknowledgeTimeoutSeconds = SettingSpec<Double>(
            "acknowledgeTimeoutSeconds", unit: "s", default: 1, in: 0.1...30,
            "How long a frame may wait for its acknowledgement before the band counts as gone.")
        public static let watchdogMilliseconds = SettingSpec<Int>(
            "watchdogMilliseconds", unit: "ms", default: 400, in: BandProtocol.watchdogRange,
            "The band's own watchdog: it stops every motor when nothing comes for this long.")
        public static let tcp = ValueSpec<String>("tcp", accepts: "host:port", "The band over TCP (host:port).")
        public static let device = ValueSpec<String>("device", "The band on a serial port or pty.")
        public static let bleName = ValueSpec<String>(
            "bleName", "The band over Bluetooth LE (Nordic UART Service), found by its advertised name.")
        public static let bleAddress = ValueSpec<String>(
            "bleAddress", accepts: "AA:BB:CC:DD:EE:FF", "The band over Bluetooth LE, found by its address.")
        public static let bleTransport = ValueSpec<String>(
            "bleTransport", default: "usb:0", accepts: "Bumble HCI transport",
            "The Bluetooth controller: usb:0 (a USB dongle), hci-socket:0 (the kernel's hci0), serial:/dev/ttyACM0, tcp-client:HOST:PORT (docs/FIELD.md)."
        )
        public static let bleScanSeconds = SettingSpec<Double>(
            "bleScanSeconds", unit: "s", default: 10, in: 1...120,
            "How long each attempt looks for the BLE band before it is said to be out of range (and looked for again).")
        public static let python = ValueSpec<String>(
            "python", default: "python3", accepts: "program",
            "The Python with Bumble that runs the BLE bridge (tools/hapticnav_ble.py).")

        /// Every setting, as documentation shows it.
        public static let all: [SettingDoc] = [
            baud.doc, acknowledgeTimeoutSeconds.doc, watchdogMilliseconds.doc, tcp.doc, device.doc, bleName.doc,
            bleAddress.doc, bleTransport.doc, bleScanSeconds.doc, python.doc,
        ]
    }
}
