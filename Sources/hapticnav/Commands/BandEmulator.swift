import ArgumentParser
import Synchronization
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Devices
import Links
import NavCore

struct BandEmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "band-emulator",
        abstract:
            "The band's side of the band protocol, over TCP, a pseudo-terminal or Bluetooth LE: logs every frame as a JSON line.",
        discussion: """
            With --ble it is a Bluetooth LE band: it advertises --ble-name with the Nordic UART Service through the \
            Bumble bridge (tools/hapticnav_ble.py peripheral) on the controller of --ble-transport, and each central \
            that connects and listens is one session of the emulated band (docs/FIELD.md).
            """)

    @Option(help: "Listen on HOST:PORT (for example 127.0.0.1:7800).")
    var tcp: String?

    @Option(help: "Open a pseudo-terminal and link it at this path, for the band plugin's `device` setting.")
    var pty: String?

    @Flag(help: "Be a Bluetooth LE band (Nordic UART Service) on the controller of --ble-transport.")
    var ble = false

    @Option(help: "The BLE band's advertised name.")
    var bleName = "HapticNav Band"

    @Option(help: "The BLE band's address (default: one derived from its name, the same on every start).")
    var bleAddress: String?

    @Option(help: "The Bumble HCI transport of the BLE band's controller (usb:1, tcp-client:127.0.0.1:PORT, …).")
    var bleTransport: String?

    @Flag(help: "With --ble: advertise the name without the Nordic UART Service (a look-alike, for tests).")
    var withoutService = false

    @Option(help: "The Python with Bumble that runs the BLE bridge.")
    var python = "python3"

    @Option(help: "Write the JSON lines to this file instead of standard output.")
    var log: String?

    func run() throws {
        let listen: BandEmulator.Listen
        switch (self.tcp, self.pty, self.ble) {
        case let (address?, nil, false):
            guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...])
            else {
                throw ValidationError("--tcp: expected HOST:PORT")
            }
            listen = .tcp(host: String(address[..<colon]), port: port)
        case let (nil, link?, false): listen = .pty(link: link)
        case (nil, nil, true):
            guard self.bleTransport != nil else { throw ValidationError("--ble needs --ble-transport") }
            // The emulator on a loopback port of the system's choice; the bridge carries each BLE connection to it.
            listen = .tcp(host: "127.0.0.1", port: 0)
        default: throw ValidationError("give one of --tcp HOST:PORT, --pty PATH or --ble")
        }
        let output: OutputFile
        if let log = self.log {
            do {
                output = try OutputFile(path: log, mode: .truncate)
            } catch {
                throw ValidationError("--log: \(error)")
            }
        } else {
            output = OutputFile(descriptor: 1, path: "standard output")
        }
        let emulator = BandEmulator(listen: listen) { line in output.write(line + "\n") }
        // SIGUSR1 toggles acknowledgements: a band that hangs, for fallback tests.
        signal(SIGUSR1, SIG_IGN)
        let toggle = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
        toggle.setEventHandler {
            let now = !emulator.muted.load(ordering: .relaxed)
            emulator.muted.store(now, ordering: .relaxed)
            StandardStreams.writeError("band-emulator: acknowledgements \(now ? "off" : "on")\n")
        }
        toggle.resume()
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_DFL)
        }
        guard self.ble, let transport = self.bleTransport else {
            try emulator.serve { where_ in
                StandardStreams.writeError("band-emulator: listening at \(where_)\n")
            }
            return
        }
        try self.serveOverBLE(emulator, transport: transport)
    }

    /// The emulator on loopback, and the bridge as the BLE peripheral in front of it, until the bridge ends.
    private func serveOverBLE(_ emulator: BandEmulator, transport: String) throws {
        let port = Mutex<String?>(nil)
        let failure = Mutex<String?>(nil)
        let listening = DispatchSemaphore(value: 0)
        SystemThread.start(name: "band-emulator") {
            do {
                try emulator.serve { where_ in
                    port.withLock { $0 = String(where_.split(separator: ":").last ?? "") }
                    listening.signal()
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
                listening.signal()
            }
        }
        listening.wait()
        guard let port = port.withLock({ $0 }) else {
            throw CommandFailure("band-emulator: \(failure.withLock { $0 } ?? "cannot listen")")
        }
        guard let python = executableOnPath(self.python) else { throw CommandFailure("--python: no '\(self.python)'") }
        guard let bridge = BLELink.findBridge() else {
            throw CommandFailure("band-emulator: tools/hapticnav_ble.py is not found (set HAPTICNAV_BLE_BRIDGE)")
        }
        var arguments = [
            bridge, "peripheral", "--transport", transport, "--name", self.bleName, "--connect", "127.0.0.1:\(port)",
        ]
        if let address = self.bleAddress { arguments += ["--address", address] }
        if self.withoutService { arguments.append("--without-service") }
        // The bridge's standard input is our pipe: it ends, and the band stops advertising, when this process does.
        let child = try ChildProcess(
            executable: python, arguments: arguments, input: .pipe, output: .pipe, error: .inherit)
        while let output = child.output, let chunk = try? output.read(upTo: 4096), !chunk.isEmpty {
            let lines = String(decoding: chunk, as: UTF8.self).split(separator: "\n")
            StandardStreams.writeError(lines.map { "band-emulator: BLE \($0)\n" }.joined())
        }
        let code = child.wait()
        emulator.stop()
        throw CommandFailure("band-emulator: the BLE bridge ended (exit \(code))")
    }
}
