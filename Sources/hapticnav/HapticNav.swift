public import ArgumentParser
import Bus
import Foundation
import Devices
import LocationSources
import Routers
public import Logging
import NavCore
import Runtime

@main
struct HapticNav: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hapticnav",
        abstract: "Guidance for blind and low-vision walkers, as a pipeline of processes on a ZeroMQ bus.",
        subcommands: [Run.self, StageCommand.self, Monitor.self, Calibrate.self, Fixes.self, RouteCommand.self, BandEmulatorCommand.self, ConfigCommand.self, BusCommand.self, Bench.self, Eval.self])
}
