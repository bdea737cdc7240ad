#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NavCore
import Synchronization
import SystemIO

/// A byte stream to a Bluetooth LE device over the Nordic UART Service, through HapticNav's Bumble bridge
/// (`tools/hapticnav_ble.py central`, one run per BLE connection). The bridge finds the device by advertised name or
/// address, connects, checks that it offers the service, and then carries bytes both ways over a socket pair; what it
/// finds says itself in JSON lines, which become a ``Status``. The link's ``ByteLink`` ends when the BLE link drops
/// (the bridge exits); closing it makes the bridge disconnect and exit.
public enum BLELink {
    /// Which device, over which Bluetooth controller.
    public struct Target: Sendable, Equatable {
        /// The device by its advertised name or by its address.
        public enum Device: Sendable, Equatable {
            case name(String)
            case address(String)
        }

        public var device: Device
        /// Bumble's HCI transport: `usb:0`, `hci-socket:0`, `serial:/dev/ttyACM0`, `tcp-client:127.0.0.1:PORT`.
        public var transport: String
        /// How long to look for the device before giving up this attempt [seconds].
        public var scanSeconds: Double
        /// The Python that has Bumble (a name on PATH or a path).
        public var python: String
        /// The bridge script; nil: found beside the program (see ``findBridge()``).
        public var bridge: String?

        public init(
            device: Device, transport: String, scanSeconds: Double = 10, python: String = "python3",
            bridge: String? = nil
        ) {
            self.device = device
            self.transport = transport
            self.scanSeconds = scanSeconds
            self.python = python
            self.bridge = bridge
        }

        /// The device as a person would name it: "name 'HN-Band'" or "address F0:…".
        public var deviceText: String {
            switch self.device {
            case let .name(name): return "name '\(name)'"
            case let .address(address): return "address \(address)"
            }
        }
    }

    /// What the bridge found and reports.
    public struct Status: Sendable, Equatable {
        /// The device's advertised name and address.
        public var name: String?
        public var address: String?
        /// The signal strength of its advertisement when found [dBm].
        public var advertisedRSSI: Int?
        /// The connection's signal strength, where the controller reports it [dBm].
        public var rssi: Int?
        /// The ATT MTU agreed [bytes].
        public var mtu: Int?
        /// The battery level of the standard Battery Service, where the device has one [%].
        public var battery: Int?
        /// Why the last connection ended, once it has.
        public var disconnected: String?

        public init() {}

        /// One line: "HN-Band (F1:69:…) at −50 dBm, MTU 247".
        public var text: String {
            var parts: [String] = []
            parts.append("\(self.name ?? "unnamed") (\(self.address ?? "?"))")
            if let rssi = self.rssi ?? self.advertisedRSSI { parts.append("signal \(rssi) dBm") }
            if let mtu = self.mtu { parts.append("MTU \(mtu)") }
            if let battery = self.battery { parts.append("BLE battery \(battery) %") }
            return parts.joined(separator: ", ")
        }
    }

    /// A connected link and its status, which the bridge keeps up to date (the signal strength every few seconds,
    /// the reason of a disconnection).
    public final class Connection: Sendable {
        public let link: ByteLink
        private let state: Mutex<Status>
        /// The bridge's process id.
        public let pid: Int32

        init(link: ByteLink, status: Status, pid: Int32) {
            self.link = link
            self.state = Mutex(status)
            self.pid = pid
        }

        public var status: Status { self.state.withLock { $0 } }

        func update(_ body: (inout Status) -> Void) { self.state.withLock { body(&$0) } }
    }

    /// Where the bridge script is: `HAPTICNAV_BLE_BRIDGE`, else `tools/hapticnav_ble.py` in the working directory, in
    /// a folder above the program (a build in a checkout), or where a package installs it.
    public static func findBridge() -> String? {
        if let path = getenv("HAPTICNAV_BLE_BRIDGE").map({ String(cString: $0) }), !path.isEmpty { return path }
        var candidates = ["tools/hapticnav_ble.py"]
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 {
            var directory = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            for _ in 0..<5 {
                guard let slash = directory.lastIndex(of: "/") else { break }
                directory = String(directory[..<slash])
                candidates.append("\(directory)/tools/hapticnav_ble.py")
            }
        }
        candidates += [
            "/usr/share/hapticnav/tools/hapticnav_ble.py", "/usr/local/share/hapticnav/tools/hapticnav_ble.py",
        ]
        return candidates.first { access($0, R_OK) == 0 }
    }

    /// Starts the bridge and waits until it is connected to the device with the service found: the link, or an error
    /// that says what went wrong ("not found within 10 s", "… lacks the Nordic UART Service …", a transport that
    /// cannot be opened). `log` receives the bridge's progress lines ("found HN-Band …").
    public static func connect(
        _ target: Target, log: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws(LinkError) -> Connection {
        guard let python = executableOnPath(target.python) else {
            throw .unreachable("BLE: no '\(target.python)' on PATH (the bridge runs on a Python with Bumble)")
        }
        guard let bridge = target.bridge ?? Self.findBridge() else {
            throw .unreachable("BLE: the bridge tools/hapticnav_ble.py is not found (set HAPTICNAV_BLE_BRIDGE)")
        }
        guard let (ours, theirs) = streamSocketPair() else {
            throw .unreachable("BLE: cannot create a socket pair: \(String(cString: strerror(errno)))")
        }
        var arguments = [bridge, "central", "--transport", target.transport]
        switch target.device {
        case let .name(name): arguments += ["--name", name]
        case let .address(address): arguments += ["--address", address]
        }
        arguments += ["--scan-seconds", "\(target.scanSeconds)"]
        let child: ChildProcess
        do {
            child = try ChildProcess(
                executable: python, arguments: arguments, input: .descriptor(theirs), output: .pipe, error: .inherit)
        } catch {
            Glibc.close(ours)
            Glibc.close(theirs)
            throw .unreachable("BLE: cannot start the bridge: \(error)")
        }
        Glibc.close(theirs)
        let (lines, continuation) = AsyncStream.makeStream(of: JSONValue.self, bufferingPolicy: .unbounded)
        let connection = Shared<Connection?>(nil)
        // The bridge's lines, read until it exits; then it is reaped.
        SystemThread.start(name: "ble-bridge") {
            var pending: [UInt8] = []
            while let output = child.output, let chunk = try? output.read(upTo: 4096), !chunk.isEmpty {
                pending += chunk
                while let newline = pending.firstIndex(of: 10) {
                    let line = Array(pending[..<newline])
                    pending.removeSubrange(...newline)
                    guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else { continue }
                    if let open = connection.withLock({ $0 }) {
                        Self.apply(value, to: open, log: log)
                    } else {
                        continuation.yield(value)
                    }
                }
            }
            continuation.finish()
            let code = child.wait()
            if let open = connection.withLock({ $0 }) {
                // The BLE link has gone: its stream ends too (the bridge's end closed as it exited).
                open.update { if $0.disconnected == nil { $0.disconnected = "the bridge ended (exit \(code))" } }
                open.link.close()
            }
        }
        let deadline = target.scanSeconds + 20
        let outcome: Result<Connection, LinkError> = await withTaskCancellationHandler {
            await withTaskGroup(of: Result<Connection, LinkError>?.self) { group in
                group.addTask {
                    var status = Status()
                    for await line in lines {
                        let event = line["event"]?.stringValue ?? ""
                        let message = line["message"]?.stringValue ?? line["reason"]?.stringValue ?? ""
                        switch event {
                        case "found":
                            status.name = line["name"]?.stringValue
                            status.address = line["address"]?.stringValue
                            status.advertisedRSSI = line["rssi"]?.doubleValue.map { Int($0) }
                            log("BLE: found \(status.text)")
                        case "connected":
                            status.rssi = line["rssi"]?.doubleValue.map { Int($0) }
                            status.mtu = line["mtu"]?.doubleValue.map { Int($0) }
                            status.battery = line["battery"]?.doubleValue.map { Int($0) }
                            let open = Connection(link: ByteLink(descriptor: ours), status: status, pid: child.pid)
                            connection.withLock { $0 = open }
                            return .success(open)
                        case "not-found":
                            let seen = line["devicesSeen"]?.doubleValue.map { Int($0) } ?? 0
                            return .failure(
                                .unreachable(
                                    "BLE: no device with \(target.deviceText) within \(Self.seconds(target.scanSeconds)) (\(seen) other device(s) seen)"
                                ))
                        case "refused": return .failure(.unreachable("BLE: refused: \(message)"))
                        case "error": return .failure(.unreachable("BLE: \(message)"))
                        default: continue
                        }
                    }
                    return .failure(.unreachable("BLE: the bridge ended before it connected (see its messages above)"))
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(deadline))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
                    ?? .failure(.unreachable("BLE: the bridge did not connect within \(Self.seconds(deadline))"))
            }
        } onCancel: {
            child.signal(SIGTERM)
        }
        switch outcome {
        case let .success(open): return open
        case let .failure(error):
            if connection.withLock({ $0 }) == nil { Glibc.close(ours) }
            child.signal(SIGTERM)
            throw error
        }
    }

    private static func apply(_ line: JSONValue, to connection: Connection, log: @Sendable (String) -> Void) {
        switch line["event"]?.stringValue {
        case "rssi": connection.update { $0.rssi = line["rssi"]?.doubleValue.map { Int($0) } }
        case "disconnected":
            let reason = line["reason"]?.stringValue ?? "unknown"
            connection.update { $0.disconnected = reason }
            log("BLE: disconnected (\(reason))")
        case "error": log("BLE: \(line["message"]?.stringValue ?? "error")")
        default: break
        }
    }

    /// A value the bridge's reading thread and the waiting task share.
    private final class Shared<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func withLock<Result>(_ body: (inout Value) -> Result) -> Result { self.value.withLock { body(&$0) } }
    }

    private static func seconds(_ value: Double) -> String { "\(fixedDecimal(value, digits: 1)) s" }
}
