import Dispatch
import Glibc
import SystemIO
import Testing

/// A program started from a thread that blocks SIGTERM (as threads of a Swift process may) does not inherit the
/// block: asked to stop, it stops. (A bridge or a helper that ignored SIGTERM once kept a benchmark waiting forever.)
@Suite struct ChildProcessSignalTests {
    @Test func aChildStartedWhereSIGTERMIsBlockedStillStopsOnIt() async throws {
        let started = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var child: ChildProcess?
        SystemThread.start(name: "blocking") {
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            child = try? ChildProcess(executable: "/bin/sleep", arguments: ["30"])
            started.signal()
        }
        started.wait()
        let process = try #require(child)
        process.signal(SIGTERM)
        let ended = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var code: Int32 = -1
        SystemThread.start(name: "waiting") {
            code = process.wait()
            ended.signal()
        }
        #expect(ended.wait(timeout: .now() + 5) == .success, "the child stopped on SIGTERM")
        #expect(code == 128 + SIGTERM)
    }
}
