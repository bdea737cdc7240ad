import Foundation
@testable import Links
import Testing

@Suite struct SelfConnectTests {
    @Test func aSocketConnectedToItselfIsRecognisedAndAnOrdinaryConnectionIsNot() throws {
        // Connect a bound socket to its own address: TCP's simultaneous open joins it to itself, as a device's
        // retries can when nothing listens on a port in the ephemeral range.
        let (fd, port) = Loopback.boundSocket()
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0, "the kernel joined the socket to itself")
        #expect(ByteLink.isConnectedToItself(fd))

        // An ordinary connection to a listener is not.
        let (server, serverPort) = Loopback.boundSocket()
        try #require(server >= 0)
        defer { close(server) }
        listen(server, 1)
        let link = try ByteLink.tcp(host: "127.0.0.1", port: serverPort)
        defer { link.close() }
        #expect(!ByteLink.isConnectedToItself(link.fileDescriptor))
    }
}
