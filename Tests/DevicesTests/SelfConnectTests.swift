import Foundation
@testable import Links
import Testing

@Suite struct SelfConnectTests {
    @Test func aSocketConnectedToItselfIsRecognisedAndAnOrdinaryConnectionIsNot() throws {
        // Bind a socket to a loopback port and connect it to that same address: TCP's simultaneous open joins it to
        // itself, as a device's retries can when nothing listens on a port in the ephemeral range.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        try #require(bound == 0)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        try #require(connected == 0, "the kernel joined the socket to itself")
        #expect(ByteLink.isConnectedToItself(fd))

        // An ordinary connection to a listener is not.
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(server) }
        var serverAddress = sockaddr_in()
        serverAddress.sin_family = sa_family_t(AF_INET)
        serverAddress.sin_addr.s_addr = inet_addr("127.0.0.1")
        var serverLength = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &serverAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, serverLength) }
        }
        _ = withUnsafeMutablePointer(to: &serverAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(server, $0, &serverLength) }
        }
        listen(server, 1)
        let link = try ByteLink.tcp(host: "127.0.0.1", port: UInt16(bigEndian: serverAddress.sin_port))
        defer { link.close() }
        #expect(!ByteLink.isConnectedToItself(link.fileDescriptor))
    }
}
