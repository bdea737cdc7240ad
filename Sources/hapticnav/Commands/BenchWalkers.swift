import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Evaluation
import NavCore
import Runtime
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

extension Bench {
    struct WalkersBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "walkers",
            abstract:
                "`eval walkers` with its stages composed in one process against a process per stage: the same walks "
                + "(checked), their cost in CPU time (this process and its children) as walks per core-minute, run "
                + "after run.")

        @Option(help: "The config whose stages walk.")
        var config = "configs/demo.json5"

        @Option(help: "The route pairs.")
        var pairs = "data/routing/monaco-pedestrian-routes.json"

        @Option(help: "Routes walked in each run (network participants, σ 5 m, one seed).")
        var routes = 4

        @Option(help: "Measured runs of each way (alternating).")
        var runs = 3

        private static func cpuSeconds() -> Double {
            func seconds(_ who: __rusage_who_t) -> Double {
                var usage = rusage()
                getrusage(who, &usage)
                return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                    + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
            }
            return seconds(RUSAGE_SELF.rawValue) + seconds(RUSAGE_CHILDREN.rawValue)
        }

        func run() async throws {
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let pairs = Array(try RouteBenchmark.endpoints(file: self.pairs).prefix(max(1, self.routes)))
            let folder = "/tmp/hapticnav-bench-walkers-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            var setup = WalkerEvaluation.Setup(
                executable: executable, config: self.config, pairs: pairs, seeds: [1],
                conditions: [WalkerEvaluation.Condition("5")!], folder: folder)
            setup.participants = [.network]
            let composed = StageComposition.composedByStageHost
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            func figures(_ walks: [WalkerEvaluation.Walk]) throws -> Data {
                // Everything but the measured latency of each cue, which is the machine's.
                try encoder.encode(
                    walks.map { walk -> WalkerEvaluation.Walk in
                        var walk = walk
                        walk.latenciesMilliseconds = []
                        return walk
                    })
            }
            var rates: [String: [Double]] = [:]
            var reference: Data?
            var identical = true
            print("\(pairs.count) walks a run (network participants, σ 5 m), \(self.runs) runs each way, alternating")
            for run in 1...max(1, self.runs) {
                for (name, composition) in [("composed", composed), ("processes", StageComposition.processes)] {
                    setup.composition = composition
                    let before = Self.cpuSeconds()
                    let started = SystemClock.monotonicSeconds()
                    let (walks, _) = try await WalkerEvaluation.run(setup) { _ in }
                    let cpu = Self.cpuSeconds() - before
                    let wall = SystemClock.monotonicSeconds() - started
                    let perCoreMinute = Double(walks.count) / (cpu / 60)
                    rates[name, default: []].append(perCoreMinute)
                    let data = try figures(walks)
                    if let reference, reference != data { identical = false }
                    reference = reference ?? data
                    let line =
                        "run \(run) \(name): \(fixedDecimal(cpu, digits: 1)) s CPU, \(fixedDecimal(wall, digits: 1)) s wall, \(fixedDecimal(perCoreMinute, digits: 1)) walks per core-minute"
                    print(line)
                }
            }
            func median(_ values: [Double]) -> Double {
                let sorted = values.sorted()
                return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
            }
            let fast = median(rates["composed"] ?? []), slow = median(rates["processes"] ?? [])
            print(
                "median walks per core-minute: composed \(fixedDecimal(fast, digits: 1)), processes \(fixedDecimal(slow, digits: 1)); "
                    + "composed is \(fixedDecimal(fast / slow, digits: 2))× the processes")
            print(identical ? "walks: identical in every run" : "walks: DIFFERENT between runs or ways")
            if !identical { throw ExitCode(1) }
        }
    }
}
