#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
public import Devices
import Links
import NavCore
import Synchronization
import SystemIO

/// The emulated band as a Bluetooth LE peripheral without Bluetooth hardware: two virtual controllers on loopback
/// joined by one radio link (tools/hapticnav_ble_controllers.py), the band emulator in this process, and the Bumble
/// bridge advertising it as `name` on one controller; the `band` plugin reaches it by that name on the other
/// (``hostTransport``). The emulator's log lines go to `log`.
public final class VirtualBLEBand: Sendable {
    /// The emulated band.
    public let emulator: BandEmulator
    /// The HCI transport of the host's controller, for the plugin's `bleTransport`.
    public let hostTransport: String
    /// The name the band advertises.
    public let name: String
    private let processes: [ChildProcess]

    /// Why the virtual band could not start.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts the controllers, the emulator and the bridge.
    public init(name: String, log: @escaping @Sendable (String) -> Void) throws {
        guard let python = executableOnPath("python3"), let bridge = BLELink.findBridge() else {
            throw Failure(description: "BLE: python3 or tools/hapticnav_ble.py not found")
        }
        let emulator = BandEmulator(listen: .tcp(host: "127.0.0.1", port: 0), log: log)
        let listening = Mutex("")
        let ready = DispatchSemaphore(value: 0)
        SystemThread.start(name: "band-emulator") {
            try? emulator.serve { where_ in
                listening.withLock { $0 = where_ }
                ready.signal()
            }
        }
        guard ready.wait(timeout: .now() + 5) == .success else {
            throw Failure(description: "the band emulator did not start")
        }
        let emulatorPort = listening.withLock { $0 }.split(separator: ":").last.map(String.init) ?? ""
        let tools = String(bridge[..<(bridge.lastIndex(of: "/") ?? bridge.startIndex)])
        let controllers = try ChildProcess(
            executable: python, arguments: ["\(tools)/hapticnav_ble_controllers.py", "--slots", "2"], input: .pipe,
            output: .pipe, error: .inherit)
        let line = Mutex<[UInt8]>([])
        let started = DispatchSemaphore(value: 0)
        SystemThread.start(name: "ble-controllers") {
            var pending: [UInt8] = []
            while let output = controllers.output, let chunk = try? output.read(upTo: 4096), !chunk.isEmpty {
                pending += chunk
                if let newline = pending.firstIndex(of: 10) {
                    line.withLock { $0 = Array(pending[..<newline]) }
                    break
                }
            }
            started.signal()
        }
        guard started.wait(timeout: .now() + 30) == .success,
            let answer = try? JSONDecoder().decode(JSONValue.self, from: Data(line.withLock { $0 })),
            let slots = answer["slots"]?.arrayValue, slots.count == 2,
            let hostPort = slots[0]["port"]?.doubleValue, let bandPort = slots[1]["port"]?.doubleValue
        else {
            controllers.signal(SIGTERM)
            controllers.wait()
            emulator.stop()
            throw Failure(description: "BLE: the virtual controllers did not start")
        }
        let peripheral = try ChildProcess(
            executable: python,
            arguments: [
                bridge, "peripheral", "--transport", "tcp-client:127.0.0.1:\(Int(bandPort))", "--name", name,
                "--connect", "127.0.0.1:\(emulatorPort)",
            ], input: .pipe, output: .null, error: .inherit)
        self.emulator = emulator
        self.name = name
        self.hostTransport = "tcp-client:127.0.0.1:\(Int(hostPort))"
        self.processes = [peripheral, controllers]
    }

    /// Stops the bridge, the controllers and the emulator.
    public func stop() {
        for process in self.processes { process.signal(SIGTERM) }
        for process in self.processes { process.wait() }
        self.emulator.stop()
    }
}
