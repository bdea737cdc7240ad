import ArgumentParser
import Runtime
#if canImport(Glibc)
import Glibc
#endif
import HapticLogic

/// The `hapticnav` command: its subcommands, one file each under `Commands/`.
struct HapticNav: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hapticnav",
        abstract: "Guidance for blind and low-vision walkers, as a pipeline of processes on a ZeroMQ bus.",
        version: HapticNavVersion.text,
        subcommands: [
            Run.self, StageCommand.self, Monitor.self, Calibrate.self, Fixes.self, RouteCommand.self,
            BandEmulatorCommand.self, RehearseCommand.self, ConfigCommand.self, KeysCommand.self, BusCommand.self,
            Bench.self, Eval.self,
            Export.self, Record.self, Replay.self, Report.self, Repair.self, Magnetic.self, PreflightCommand.self,
            PhoneStandInCommand.self, ControlCommandLine.self, FoxgloveCommand.self, StudyCommand.self,
        ])
}

/// The process's entry: a peer that hangs up is an error to handle (EPIPE), never a reason to die, whatever the
/// command; then the command runs. A runtime failure prints its message and exits 1, a usage error exits 64.
@main
enum Entry {
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        await HapticNav.main()
    }
}
