@testable import Bus
import Foundation
import NavCore
import Synchronization
import TestSupport

/// A unique endpoint for a test.
func uniqueEndpoint(_ transport: String) -> String {
    let token = UUID().uuidString.prefix(8)
    switch transport {
    case "inproc": return "inproc://test-\(token)"
    case "ipc": return "ipc:///tmp/hapticnav-tests/\(token).sock"
    default: return "tcp://127.0.0.1:\(freeTCPPort())"
    }
}

/// Sends hand-made frames, to feed a subscriber bad input.
final class RawSender {
    let socket: ZMQSocket

    init(context: ZMQContext, bind endpoint: String) throws {
        self.socket = try ZMQSocket(context: context, type: ZMQSocketType.publisher)
        try prepareEndpoint(endpoint)
        try self.socket.bind(endpoint)
    }

    func send(_ frames: [[UInt8]]) throws {
        for (index, frame) in frames.enumerated() {
            try frame.withUnsafeBytes { try self.socket.send($0, more: index < frames.count - 1) }
        }
    }

    func close() {
        self.socket.close()
    }
}

/// Waits for the next event, or nil after `seconds`.
func nextEvent(_ iterator: inout BusSubscriber.AsyncIterator, within seconds: Double) async -> BusEvent? {
    let local = iterator
    return await withDeadline(seconds: seconds) {
        var copy = local
        return await copy.next()
    }
}

/// Collects messages until `count` have arrived or `seconds` have passed.
func collectMessages(_ subscriber: BusSubscriber, count: Int, within seconds: Double) async -> [ReceivedMessage] {
    let collected = Mutex<[ReceivedMessage]>([])
    _ = await withDeadline(seconds: seconds) {
        for await message in subscriber.messages {
            let total = collected.withLock {
                $0.append(message); return $0.count
            }
            if total >= count { break }
        }
        return true
    }
    return collected.withLock { $0 }
}
