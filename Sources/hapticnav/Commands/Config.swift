import ArgumentParser
import Bus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check pipeline configs, or print the settings they may give.",
        subcommands: [Check.self, Schema.self])

    struct Schema: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every documented setting with its unit, default and range (docs/CONFIG.md).")

        func run() {
            print(ConfigSchema.markdown(), terminator: "")
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a config and print its stages and endpoints.")

        @Argument(help: "The config files to check.")
        var files: [String]

        func run() throws {
            for file in self.files {
                let pipeline = try loadConfig(file)
                print("\(file): pipeline '\(pipeline.name)', \(pipeline.stages.count) stage(s)")
                for stage in pipeline.stages {
                    let group = stage.group.map { " group \($0)" } ?? ""
                    print(
                        "  \(stage.name): \(stage.role.rawValue)/\(stage.plugin)\(group)"
                            + (stage.publish.isEmpty ? "" : " publish \(stage.publish.joined(separator: ","))")
                            + (stage.inputs.isEmpty ? "" : " inputs \(stage.inputs.joined(separator: ","))"))
                }
            }
        }
    }
}
