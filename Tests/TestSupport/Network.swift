import Foundation
import Links
import Synchronization

/// Ports this test process has handed out: tests run in parallel, and a port free when asked for is bound only
/// later, so two tests must never be given the same one (a band plugin would then reach another test's emulator).
private let handedOut = Mutex<Set<Int>>([])

/// A TCP port on 127.0.0.1 that nothing listens on right now, and that no other test of this process was given.
public func freeTCPPort() -> Int {
    while true {
        let port = Loopback.freePort()
        if handedOut.withLock({ $0.insert(port).inserted }) { return port }
    }
}

/// Runs `body`, giving up after `seconds`: then `onTimeout` runs (to unblock `body`, say by closing
/// what it reads) and the result is nil unless `body` still returns one.
public func withDeadline<T: Sendable>(
    seconds: Double, onTimeout: @escaping @Sendable () -> Void = {},
    _ body: @escaping @Sendable () async -> T?
) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            if !Task.isCancelled { onTimeout() }
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Two test hosts joined by a veth pair, each in a network namespace this test made (needs root, as CI has):
/// a link that can be cut and healed. Every address lives inside these namespaces; nothing leaves the machine.
public final class TwoHostNetwork: @unchecked Sendable {
    /// The namespaces' names.
    public let host1: String
    public let host2: String
    /// The hosts' addresses on the link.
    public let address1: String
    public let address2: String
    private let link1: String
    private let link2: String

    public init() throws {
        let token = UUID().uuidString.prefix(6).lowercased()
        self.host1 = "hn1-\(token)"
        self.host2 = "hn2-\(token)"
        self.link1 = "hnv1\(token)"
        self.link2 = "hnv2\(token)"
        let subnet = Int.random(in: 0...250)
        self.address1 = "10.231.\(subnet).1"
        self.address2 = "10.231.\(subnet).2"
        try Self.ip(["netns", "add", self.host1])
        try Self.ip(["netns", "add", self.host2])
        try Self.ip(["link", "add", self.link1, "type", "veth", "peer", "name", self.link2])
        try Self.ip(["link", "set", self.link1, "netns", self.host1])
        try Self.ip(["link", "set", self.link2, "netns", self.host2])
        for (host, link, address) in [(self.host1, self.link1, self.address1), (self.host2, self.link2, self.address2)]
        {
            try Self.ip(["-n", host, "link", "set", "lo", "up"])
            try Self.ip(["-n", host, "addr", "add", "\(address)/30", "dev", link])
            try Self.ip(["-n", host, "link", "set", link, "up"])
        }
    }

    /// Cuts the link: packets between the hosts are lost, and neither host's connections are told.
    public func cut() throws { try Self.ip(["-n", self.host1, "link", "set", self.link1, "down"]) }

    /// Heals the link.
    public func heal() throws { try Self.ip(["-n", self.host1, "link", "set", self.link1, "up"]) }

    /// The arguments that run a command inside `host`.
    public func inside(_ host: String, _ command: [String]) -> [String] { ["netns", "exec", host] + command }

    /// The `ip` command's path.
    public static let ipPath =
        ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        } ?? "ip"

    public func remove() {
        _ = try? Self.ip(["netns", "del", self.host1])
        _ = try? Self.ip(["netns", "del", self.host2])
    }

    @discardableResult
    static func ip(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.ipPath)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw NetworkSetupError("ip \(arguments.joined(separator: " ")): \(text)")
        }
        return process.terminationStatus
    }
}

/// Three test hosts on one shared segment, as on a lab's network: network namespaces whose veth links meet at a
/// bridge in a fourth namespace (the switch). Needs root.
public final class LabNetwork: @unchecked Sendable {
    /// The hosts' namespaces and their addresses on the segment.
    public let hosts: [String]
    public let addresses: [String]
    private let switchHost: String

    public init(hostCount: Int = 3) throws {
        let token = UUID().uuidString.prefix(5).lowercased()
        self.switchHost = "hnsw-\(token)"
        self.hosts = (1...hostCount).map { "hnl\($0)-\(token)" }
        let subnet = Int.random(in: 0...250)
        self.addresses = (1...hostCount).map { "10.232.\(subnet).\($0)" }
        try TwoHostNetwork.ip(["netns", "add", self.switchHost])
        try TwoHostNetwork.ip(["-n", self.switchHost, "link", "add", "br0", "type", "bridge"])
        try TwoHostNetwork.ip(["-n", self.switchHost, "link", "set", "br0", "up"])
        for (index, host) in self.hosts.enumerated() {
            let hostSide = "hl\(index)\(token)"
            let switchSide = "hs\(index)\(token)"
            try TwoHostNetwork.ip(["netns", "add", host])
            try TwoHostNetwork.ip(["link", "add", hostSide, "type", "veth", "peer", "name", switchSide])
            try TwoHostNetwork.ip(["link", "set", hostSide, "netns", host])
            try TwoHostNetwork.ip(["link", "set", switchSide, "netns", self.switchHost])
            try TwoHostNetwork.ip(["-n", self.switchHost, "link", "set", switchSide, "master", "br0"])
            try TwoHostNetwork.ip(["-n", self.switchHost, "link", "set", switchSide, "up"])
            try TwoHostNetwork.ip(["-n", host, "link", "set", "lo", "up"])
            try TwoHostNetwork.ip(["-n", host, "addr", "add", "\(self.addresses[index])/24", "dev", hostSide])
            try TwoHostNetwork.ip(["-n", host, "link", "set", hostSide, "up"])
        }
    }

    /// The arguments that run a command inside `host`.
    public func inside(_ host: String, _ command: [String]) -> [String] { ["netns", "exec", host] + command }

    public func remove() {
        for host in self.hosts + [self.switchHost] { _ = try? TwoHostNetwork.ip(["netns", "del", host]) }
    }
}

public struct NetworkSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
