@testable import Bus
import Foundation
import NavCore
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
    return await withTaskGroup(of: BusEvent?.self) { group in
        group.addTask {
            var copy = local
            return await copy.next()
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Collects messages until `count` have arrived or `seconds` have passed.
func collectMessages(_ subscriber: BusSubscriber, count: Int, within seconds: Double) async -> [ReceivedMessage] {
    await withTaskGroup(of: [ReceivedMessage].self) { group in
        group.addTask {
            var received: [ReceivedMessage] = []
            for await message in subscriber.messages {
                received.append(message)
                if received.count >= count { break }
            }
            return received
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return []
        }
        var result: [ReceivedMessage] = []
        if let first = await group.next() { result = first }
        group.cancelAll()
        if result.isEmpty, let second = await group.next() { result = second }
        return result
    }
}
