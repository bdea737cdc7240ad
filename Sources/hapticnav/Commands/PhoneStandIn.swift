import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import LocationSources
import SystemIO

struct PhoneStandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phone-standin",
        abstract:
            "A phone running phyphox with HapticNav's experiment, serving a phyphox recording (for rehearsals and tests).",
        discussion: """
            Serves a folder of phyphox's CSV export (Location.csv, Accelerometer.csv, Magnetometer.csv) over phyphox's
            remote-access interface, the samples appearing in real time, looped. Point a 'phyphox' source at the
            address it prints.
            """)

    @Option(help: "The phyphox recording folder.")
    var recording: String = "data/walks/phyphox-indoor-loop-116m"

    @Option(help: "Where to listen, host:port.")
    var listen: String = "127.0.0.1:8080"

    @Option(help: "The phone's clock against the host's [seconds].")
    var clockOffset: Double = 0

    func run() async throws {
        guard let colon = self.listen.lastIndex(of: ":"),
            let port = UInt16(self.listen[self.listen.index(after: colon)...])
        else { throw ValidationError("--listen: host:port") }
        var options = PhyphoxStandIn.Options()
        options.clockOffsetSeconds = self.clockOffset
        let standIn: PhyphoxStandIn
        do {
            standIn = try PhyphoxStandIn(
                recording: self.recording, host: String(self.listen[..<colon]), port: port, options: options)
        } catch {
            throw CommandFailure("\(error)")
        }
        let started =
            standIn.firstStart.map { " (experiment started at \(String(cFormat: "%.6f", $0)) on the phone's clock)" }
            ?? ""
        print("phyphox stand-in serving \(self.recording) at \(standIn.url)\(started)")
        fflush(nil)
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
        standIn.close()
    }
}
