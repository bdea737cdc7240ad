import ArgumentParser
import Bus
import Synchronization
import SystemIO
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

struct BandEmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "band-emulator",
        abstract:
            "The band's side of the band protocol, over TCP or a pseudo-terminal: logs every frame as a JSON line.")

    @Option(help: "Listen on HOST:PORT (for example 127.0.0.1:7800).")
    var tcp: String?

    @Option(help: "Open a pseudo-terminal and link it at this path, for the band plugin's `device` setting.")
    var pty: String?

    @Option(help: "Write the JSON lines to this file instead of standard output.")
    var log: String?

    func run() throws {
        let listen: BandEmulator.Listen
        switch (self.tcp, self.pty) {
        case let (address?, nil):
            guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...])
            else {
                throw ValidationError("--tcp: expected HOST:PORT")
            }
            listen = .tcp(host: String(address[..<colon]), port: port)
        case let (nil, link?): listen = .pty(link: link)
        default: throw ValidationError("give --tcp HOST:PORT or --pty PATH")
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
        try emulator.serve { where_ in
            StandardStreams.writeError("band-emulator: listening at \(where_)\n")
        }
    }
}
