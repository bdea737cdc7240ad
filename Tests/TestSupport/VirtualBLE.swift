public import Foundation

/// The project's folder (where `tools/` is), from this file's place in it.
public let projectFolder: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// Virtual Bluetooth LE controllers on loopback (`tools/hapticnav_ble_controllers.py`): each slot a device's
/// controller that its host reaches over HCI on a TCP port of its own, all on one in-process radio link of Bumble's.
/// A slot's radio can be cut (out of range) for a while.
public final class VirtualBLE: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output: ChildProcess.Output
    /// The standard inputs of the peripherals started, held open while they run.
    private var inputs: [Pipe] = []
    /// Each slot's HCI port.
    public private(set) var ports: [Int] = []

    /// Starts `slots` controllers and waits until they listen.
    public init(slots: Int = 3) async throws {
        self.output = try ChildProcess.Output()
        self.process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        self.process.arguments = [
            "python3", projectFolder + "/tools/hapticnav_ble_controllers.py", "--slots", "\(slots)",
        ]
        self.process.standardInput = self.input
        self.process.standardOutput = try FileHandle(forWritingTo: self.output.stdout)
        self.process.standardError = try FileHandle(forWritingTo: self.output.stderr)
        try self.process.run()
        let stdout = self.output.stdout
        var ready: [String: Any]?
        _ = await eventually(within: 30) {
            let text = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
            guard let line = text.split(separator: "\n").first(where: { $0.contains("\"ready\"") }) else {
                return false
            }
            ready = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return true
        }
        guard let slotsSeen = ready?["slots"] as? [[String: Any]] else {
            self.stop()
            throw TestProcessError("the virtual BLE controllers did not start: \(self.log)")
        }
        self.ports = slotsSeen.compactMap { $0["port"] as? Int }
    }

    /// The HCI transport of `slot`, as the bridge takes it.
    public func transport(_ slot: Int) -> String { "tcp-client:127.0.0.1:\(self.ports[slot])" }

    /// Takes `slot`'s radio away for `seconds` (nothing passes), then ends its connections on both sides.
    public func cut(slot: Int, seconds: Double) {
        self.input.fileHandleForWriting.write(Data("cut \(slot) \(seconds)\n".utf8))
    }

    /// What the controllers said (their JSON lines, and Bumble's warnings).
    public var log: String {
        ((try? String(contentsOf: self.output.stdout, encoding: .utf8)) ?? "")
            + ((try? String(contentsOf: self.output.stderr, encoding: .utf8)) ?? "")
    }

    public func stop() {
        if self.process.isRunning {
            kill(self.process.processIdentifier, SIGKILL)
            self.process.waitUntilExit()
        }
    }

    deinit { self.stop() }

    /// The bridge as a BLE band's side (`tools/hapticnav_ble.py peripheral`) in front of a band emulator listening on
    /// loopback at `emulatorPort`, on `slot`'s controller.
    public func peripheral(
        slot: Int, name: String, emulatorPort: Int, withoutService: Bool = false
    ) throws
        -> ChildProcess
    {
        var arguments = [
            "python3", projectFolder + "/tools/hapticnav_ble.py", "peripheral", "--transport", self.transport(slot),
            "--name", name, "--connect", "127.0.0.1:\(emulatorPort)",
        ]
        if withoutService { arguments.append("--without-service") }
        // Its standard input a pipe this process holds: the band goes when the test does.
        let input = Pipe()
        self.inputs.append(input)
        return try ChildProcess("/usr/bin/env", arguments, input: input)
    }
}
