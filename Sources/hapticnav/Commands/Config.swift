import ArgumentParser
import Bus
#if canImport(Glibc)
import Glibc
#endif
import Devices
import LocationSources
import Routers
import Logging
import NavCore
import Runtime
import SystemIO

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

        @Option(
            name: [.customLong("host"), .customLong("group")],
            help: "Show only the stages of this host group, with each link's encryption, and check their secret keys.")
        var group: String?

        func run() throws {
            for file in self.files {
                let pipeline = try loadConfig(file)
                let stages = pipeline.stages.filter { self.group == nil || $0.group == self.group }
                print(
                    "\(file): pipeline '\(pipeline.name)', \(pipeline.stages.count) stage(s)"
                        + (self.group.map { ", \(stages.count) in group \($0)" } ?? ""))
                for stage in stages {
                    let group = stage.group.map { " group \($0)" } ?? ""
                    print(
                        "  \(stage.name): \(stage.role.rawValue)/\(stage.plugin)\(group)"
                            + (stage.publish.isEmpty ? "" : " publish \(stage.publish.joined(separator: ","))")
                            + (stage.inputs.isEmpty ? "" : " inputs \(stage.inputs.joined(separator: ","))"))
                    for line in LinkSecurity.describe(stage, in: pipeline) { print("    \(line)") }
                    // On the host that runs it, the stage's secret key must be here and private.
                    if self.group != nil, let key = stage.key, let security = pipeline.security {
                        do {
                            _ = try security.keyPair(key)
                            print("    key '\(key)': secret and public key present, secret private")
                        } catch {
                            throw CommandFailure("stages.\(stage.name).key: \(error)")
                        }
                    }
                }
                for warning in Self.runDirectoryWarnings(stages) { print("warning: \(warning)") }
            }
        }

        /// ipc endpoints whose folder others may write to: another user could replace a socket there.
        static func runDirectoryWarnings(_ stages: [StageConfig]) -> [String] {
            let folders = Set(
                stages.flatMap { $0.publish + $0.inputs }.filter { $0.hasPrefix("ipc://") }
                    .map { Paths.folder(of: String($0.dropFirst("ipc://".count))) })
            return folders.sorted().compactMap { folder in
                var info = stat()
                guard stat(folder, &info) == 0, info.st_mode & 0o022 != 0 else { return nil }
                return
                    "run directory \(folder) is writable by others (mode \(String(info.st_mode & 0o777, radix: 8))): another user could replace a socket in it; use a private folder (hapticnav makes new ones 0700)"
            }
        }
    }
}
