import Foundation
import SystemIO
import Testing

@Suite struct SystemThreadTests {
    /// What the thread's name is, as `ps -L` and `perf` read it.
    private static func names(_ given: [String]) async -> [String] {
        await withTaskGroup(of: String.self) { group in
            for name in given {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        SystemThread.start(name: name) {
                            continuation.resume(returning: SystemThread.currentName)
                        }
                    }
                }
            }
            var names: [String] = []
            for await name in group { names.append(name) }
            return names.sorted()
        }
    }

    /// A thread carries its own name, not its creator's (a Swift pool thread's, which misleads a profile); a long
    /// one is cut to the kernel's 15 bytes.
    @Test func aThreadIsNamedAsStarted() async {
        let names = await Self.names(["bus-receive", "a-name-longer-than-fifteen"])
        #expect(names == ["a-name-longer-t", "bus-receive"])
    }

    private struct Refused: Error, Equatable { let code: Int }

    /// Blocking work run on a thread of its own gives back its result, or its error as thrown, to the awaiting task.
    @Test func workRunOnAThreadOfItsOwnGivesBackItsResultOrItsError() async {
        let (thread, value) = await SystemThread.run(name: "run-test") { (SystemThread.currentName, 6 * 7) }
        #expect(thread == "run-test" && value == 42)
        do {
            _ = try await SystemThread.run(name: "run-test") { () throws(Refused) -> Int in throw Refused(code: 7) }
            Issue.record("the error was not thrown")
        } catch {
            #expect(error == Refused(code: 7))
        }
    }
}
