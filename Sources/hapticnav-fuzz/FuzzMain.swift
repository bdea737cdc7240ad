import Fuzzing
import Glibc
import SystemIO

/// `hapticnav-fuzz TARGET [libFuzzer's options] [corpus folders]`, built by `scripts/fuzz` with libFuzzer
/// (`-sanitize=fuzzer`): coverage-guided fuzzing of one target; a broken promise stops it with the input saved.
/// `hapticnav-fuzz TARGET --replay FILE…` (any build): each input once, its violation printed; exit 1 if any.
/// `hapticnav-fuzz TARGET --mutate N SEEDFOLDER` (any build): N inputs mutated from the seeds, the same each run.
@main struct FuzzMain {
    nonisolated(unsafe) static var target: (any FuzzTarget)?

    static func main() throws {
        var arguments = CommandLine.arguments
        guard arguments.count >= 2, let entry = FuzzTargets.all.first(where: { $0.name == arguments[1] }) else {
            let named = arguments.count >= 2 ? "no target '\(arguments[1])'; " : ""
            StandardStreams.writeError(
                named + "usage: hapticnav-fuzz TARGET [--replay FILE…] [libFuzzer options]; targets:\n"
                    + FuzzTargets.all.map { "  \($0.name): \($0.feeds)\n" }.joined())
            exit(2)
        }
        Self.target = try FuzzTargets.make(entry.name)
        arguments.remove(at: 1)
        if arguments.count >= 2, arguments[1] == "--replay" {
            var broken = 0
            for file in arguments.dropFirst(2) {
                let input = try InputFile.contents(of: file)
                if let violation = Self.target!.run(input) {
                    broken += 1
                    StandardStreams.writeOutput("\(file): \(violation)\n")
                }
            }
            StandardStreams.writeOutput("\(arguments.count - 2) inputs replayed, \(broken) broke a promise\n")
            exit(broken == 0 ? 0 : 1)
        }
        if arguments.count >= 4, arguments[1] == "--mutate", let count = Int(arguments[2]) {
            // `--mutate N SEEDFOLDER`: N inputs mutated from the seeds (seeded, the same each run), without coverage.
            let seeds = try FuzzTargets.seeds(in: arguments[3])
            var broken = 0
            let started = SystemClock.monotonicSeconds()
            for (index, input) in Mutations(of: seeds, count: count, seed: 2026).enumerated() {
                let began = SystemClock.monotonicSeconds()
                if let violation = Self.target!.run(input) {
                    broken += 1
                    StandardStreams.writeOutput("mutation \(index): \(violation)\n")
                }
                let spent = SystemClock.monotonicSeconds() - began
                if spent > 0.5 { StandardStreams.writeOutput("mutation \(index) took \(spent) s\n") }
            }
            let seconds = SystemClock.monotonicSeconds() - started
            StandardStreams.writeOutput(
                "\(count) mutated inputs in \(String(cFormat: "%.1f", seconds)) s, \(broken) broke a promise\n")
            exit(broken == 0 ? 0 : 1)
        }
        #if FUZZING
        // libFuzzer reads the rest of the command line (the target's name taken out).
        var argc = Int32(arguments.count)
        let strings = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: arguments.count + 1)
        strings.initialize(from: arguments.map { strdup($0) } + [nil], count: arguments.count + 1)
        var argv = strings
        exit(
            runFuzzer(&argc, &argv) { data, size in
                let input = Array(UnsafeBufferPointer(start: data, count: size))
                if let violation = FuzzMain.target!.run(input) { fatalError("broken promise: \(violation)") }
                return 0
            })
        #else
        StandardStreams.writeError("this build has no fuzzer: build it with scripts/fuzz, or --replay inputs\n")
        exit(2)
        #endif
    }
}

#if FUZZING
/// libFuzzer's driver (its runtime is linked in by `-sanitize=fuzzer`).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzer(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32
#endif
