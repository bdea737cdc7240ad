import FoundationEssentials
import Glibc
import NavCore
import SystemIO
import Testing
import TestSupport

@Suite struct SystemIOTests {
    @Test func outputFileWritesCreatesFoldersAndUpdatesInPlace() throws {
        let path = try scratchFolder() + "/a/b/out.bin"
        let file = try OutputFile(path: path, mode: .truncate)
        #expect(file.write("hello world"))
        #expect(file.write(Array("J".utf8), at: 6))
        file.close()
        #expect(String(decoding: try InputFile.contents(of: path), as: UTF8.self) == "hello Jorld")
        let again = try OutputFile(path: path, mode: .append)
        again.write("!")
        again.close()
        #expect(String(decoding: try InputFile.contents(of: path), as: UTF8.self) == "hello Jorld!")
    }

    @Test func aMissingFileSaysWhy() {
        #expect(throws: SystemError("open", path: "/nonexistent/x", code: ENOENT)) {
            try InputFile.contents(of: "/nonexistent/x")
        }
        #expect(
            SystemError("open", path: "/x", code: ENOENT).description == "cannot open /x: No such file or directory")
    }

    @Test func childProcessPipesBothWays() throws {
        let child = try ChildProcess(executable: "/bin/cat", arguments: [], input: .pipe, output: .pipe)
        child.input!.write("through cat\n")
        child.input!.close()
        #expect(String(decoding: try child.output!.readToEnd(), as: UTF8.self) == "through cat\n")
        #expect(child.wait() == 0)
        #expect(!child.isRunning)
        let failing = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "exit 3"])
        #expect(failing.wait() == 3)
        let sleeper = try ChildProcess(executable: "/bin/sleep", arguments: ["30"])
        #expect(sleeper.isRunning)
        sleeper.signal(SIGKILL)
        #expect(sleeper.wait() == 128 + SIGKILL)
        #expect(throws: SystemError.self) { try ChildProcess(executable: "/nonexistent/tool", arguments: []) }
    }

    /// A program started here inherits its standard streams only: a descriptor this process opened without
    /// close-on-exec (a band's port opened by a library, one end of a socket pair) would otherwise stay open in it
    /// for its whole life, and the peer waiting for that end would never see it.
    @Test func aStartedProgramInheritsNoDescriptorBeyondItsStandardStreams() throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { for fd in pair { close(fd) } }
        #expect(fcntl(pair[1], F_GETFD) & FD_CLOEXEC == 0, "the end is inheritable as far as the system goes")
        let child = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "[ -e /proc/self/fd/\(pair[1]) ] && echo open || echo closed"],
            output: .pipe)
        #expect(String(decoding: try child.output!.readToEnd(), as: UTF8.self) == "closed\n")
        #expect(child.wait() == 0)
    }

    @Test func numbersFormatLikePrintf() {
        #expect(String(cFormat: "%6.1f|%02d|%+.2f%%", 3.14159, 7, -0.5) == "   3.1|07|-0.50%")
        let long = String(cFormat: "%0300d", 1)
        #expect(long.count == 300 && long.hasSuffix("01"))
    }

    @Test func jsonValuesRoundTrip() throws {
        let text = #"{"a":[1,2.5,"x",true,null],"b":{"c":"d"}}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(value["a"]?[1]?.doubleValue == 2.5)
        #expect(value["a"]?[2]?.stringValue == "x")
        #expect(value["a"]?[9] == nil)
        #expect(value["b"]?["c"]?.stringValue == "d")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == text)
    }

    @Test func paths() {
        #expect(Paths.folder(of: "/a/b/c.sock") == "/a/b")
        #expect(Paths.folder(of: "c.sock") == "")
        #expect(Paths.folder(of: "/c") == "/")
        #expect(Paths.lastComponent(of: "/a/b/c.json5") == "c.json5")
        #expect("  x y \n".trimmed() == "x y")
        #expect("ab".padded(to: 4) == "ab  " && "abcdef".padded(to: 3) == "abc")
    }
}
