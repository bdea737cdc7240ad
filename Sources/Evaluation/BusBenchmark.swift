import Bus
internal import CZeroMQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Links
import NavCore
import Synchronization
import SystemIO

/// A raw libzmq call that failed: the reference path goes around ``Bus`` on purpose.
private struct RawZMQError: Error, CustomStringConvertible {
    let operation: String
    let code = zmq_errno()
    var description: String { "\(self.operation): \(String(cString: zmq_strerror(self.code)))" }
}

/// A benchmark hop whose connection never came up.
private struct NoConnection: Error, CustomStringConvertible {
    let endpoint: String
    var description: String { "no heartbeat from the publisher at \(self.endpoint) within 10 s" }
}

/// A round whose connection dropped while it ran (a loaded host can miss the ZMTP heartbeat's deadline, and a PUB
/// socket drops what it sends while its subscriber reconnects): its latencies would describe part of the run.
private struct IncompleteRound: Error, CustomStringConvertible {
    let endpoint: String
    let received: Int
    let sent: Int
    var description: String { "\(self.received) of \(self.sent) messages came through at \(self.endpoint)" }
}

/// A wait of at most 10 s with a watchdog thread: whichever of the waiter (`arrive`) and the watchdog comes first
/// decides, so that the watchdog cannot end the wait (`expire`) just after the waiter went on.
private final class Deadline: Sendable {
    private let state = Atomic<Int>(0)  // 0 waiting, 1 arrived, 2 given up
    /// Signalled once the watchdog has ended.
    let ended = DispatchSemaphore(value: 0)

    /// Starts the watchdog: every 10 ms while the wait lasts, `each`; after 10 s without the waiter, `expire`.
    static func watched(
        _ name: String, each: @escaping @Sendable () -> Void = {}, expire: @escaping @Sendable () -> Void
    ) -> Deadline {
        let deadline = Deadline()
        SystemThread.start(name: name) {
            for _ in 0..<1000 where deadline.state.load(ordering: .relaxed) == 0 {
                each()
                SystemThread.sleep(seconds: 0.01)
            }
            if deadline.state.compareExchange(expected: 0, desired: 2, ordering: .relaxed).exchanged { expire() }
            deadline.ended.signal()
        }
        return deadline
    }

    /// True if the waiter came before the watchdog gave up.
    func arrive() -> Bool { self.state.compareExchange(expected: 0, desired: 1, ordering: .relaxed).original != 2 }
}

/// Latency statistics of one series [microseconds].
public struct LatencySummary: Sendable, Codable {
    /// Samples measured [count].
    public var count: Int
    /// Median [µs].
    public var p50: Double
    /// 99th percentile [µs].
    public var p99: Double
    /// Largest [µs].
    public var max: Double

    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        self.count = sorted.count
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            return sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }
        self.p50 = percentile(0.5)
        self.p99 = percentile(0.99)
        self.max = sorted.last ?? .nan
    }
}

/// One hop's latency through this transport against a raw libzmq PUB→SUB hop, measured in the same run.
public enum BusBenchmark {
    /// The figures of one run.
    public struct Report: Sendable, Codable {
        /// Through ``BusPublisher`` → ``BusSubscriber`` → an async consumer.
        public var transport: LatencySummary
        /// The first part of the same hop: send → the receive thread's decode (wall clock, so less precise).
        public var receiveThread: LatencySummary
        /// The receiving side alone: the topic frame read → the consumer (one thread's monotonic clock, so precise).
        public var afterFirstFrame: LatencySummary
        /// Raw `zmq_send` → `zmq_msg_recv` on a thread.
        public var raw: LatencySummary
        /// transport p50 / raw p50, over all samples.
        public var ratioP50: Double { self.transport.p50 / self.raw.p50 }
        /// The median over rounds of each round's transport p50 / raw p50: each pair is measured seconds apart,
        /// so a machine that speeds up or slows down during the run moves both alike.
        public var medianRoundRatioP50: Double
        /// Messages per second asked for.
        public var rateHz: Double
        /// Bytes of the transport's payload frame.
        public var payloadBytes: Int
        /// "ipc" or "tcp".
        public var endpointTransport: String = "ipc"
        /// The same transport hop over CURVE (encrypted, authenticated), when asked for.
        public var curve: LatencySummary? = nil
        /// The median over rounds of each round's CURVE p50 / plain transport p50: the cost of encryption.
        public var medianRoundCurveRatioP50: Double? = nil
    }

    /// Runs `rounds` alternating blocks of raw and transport hops over `ipc://` in `folder` or `tcp://` on loopback;
    /// with `curve`, each round also measures the transport hop over CURVE.
    public static func run(
        messages: Int, rateHz: Double, rounds: Int, folder: String, transport: String = "ipc", curve: Bool = false
    ) async throws -> Report {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let perRound = Swift.max(1, messages / Swift.max(1, rounds))
        func endpoint(_ name: String) -> String {
            transport == "tcp" ? "tcp://127.0.0.1:\(Loopback.freePort())" : "ipc://\(folder)/\(name).sock"
        }
        // A loopback port is free when drawn and bound a moment later; another program on the machine (a test's
        // server, in parallel) may take it in between, and the hop never connects: it is tried on another port. A
        // round that lost messages (its connection dropped while it ran) is measured again the same way.
        func onFreshEndpoint<T>(_ name: String, _ hop: (String) async throws -> T) async throws -> T {
            var attempt = 1
            while true {
                do {
                    return try await hop(endpoint(name))
                } catch is NoConnection where transport == "tcp" && attempt < 3 {
                    attempt += 1
                } catch is IncompleteRound where attempt < 3 {
                    attempt += 1
                }
            }
        }
        let keys: (server: CurveServerOptions, client: CurveKeyPair)? =
            curve
            ? try {
                let publisher = try CurveKeyPair.generate()
                let reader = try CurveKeyPair.generate()
                return (CurveServerOptions(identity: publisher, readers: [reader.publicKey]), reader)
            }() : nil
        var raw: [Double] = []
        var ours: [Double] = []
        var encrypted: [Double] = []
        var receiveThread: [Double] = []
        var afterFirstFrame: [Double] = []
        var roundRatios: [Double] = []
        var curveRatios: [Double] = []
        for round in 0..<rounds {
            let rawEndpoint = endpoint("raw-\(round)")
            // A raw round blocks (its paced sends, its warm-up, its wait for the last message): on a thread of its
            // own, not one of the cooperative pool's few threads, which the transport's rounds need.
            let rawRound = try await SystemThread.run(name: "bench-raw") {
                try self.rawRound(endpoint: rawEndpoint, count: perRound, rateHz: rateHz)
            }
            raw += rawRound
            let hop = try await onFreshEndpoint("bus-\(round)") {
                try await self.transportRound(endpoint: $0, count: perRound, rateHz: rateHz)
            }
            ours += hop.consumer
            receiveThread += hop.receiveThread
            afterFirstFrame += hop.afterFirstFrame
            roundRatios.append(LatencySummary(hop.consumer).p50 / LatencySummary(rawRound).p50)
            if let keys {
                let secured = try await onFreshEndpoint("curve-\(round)") {
                    try await self.transportRound(endpoint: $0, count: perRound, rateHz: rateHz, curve: keys)
                }
                encrypted += secured.consumer
                curveRatios.append(LatencySummary(secured.consumer).p50 / LatencySummary(hop.consumer).p50)
            }
        }
        let sample = BusMessage.heading(HeadingSample(timeSeconds: 0, headingDegrees: 0))
        var writer = WireWriter()
        sample.encodePayload(to: &writer)
        return Report(
            transport: LatencySummary(ours), receiveThread: LatencySummary(receiveThread),
            afterFirstFrame: LatencySummary(afterFirstFrame),
            raw: LatencySummary(raw), medianRoundRatioP50: roundRatios.sorted()[roundRatios.count / 2],
            rateHz: rateHz,
            payloadBytes: writer.bytes.count, endpointTransport: transport,
            curve: encrypted.isEmpty ? nil : LatencySummary(encrypted),
            medianRoundCurveRatioP50: curveRatios.isEmpty ? nil : curveRatios.sorted()[curveRatios.count / 2])
    }

    /// One raw libzmq hop, for reference beside a measurement through the stages [milliseconds]: `messages` at
    /// 1 kHz over `transport` ("ipc" in `folder`, or "tcp" on loopback).
    public static func rawHop(transport: String, folder: String, messages: Int) async throws -> LatencySummary {
        let endpoint =
            transport == "tcp" ? "tcp://127.0.0.1:\(Loopback.freePort())" : "ipc://\(folder)/raw.sock"
        let microseconds = try await SystemThread.run(name: "bench-raw") {
            try self.rawRound(endpoint: endpoint, count: messages, rateHz: 1000)
        }
        return LatencySummary(microseconds.map { $0 / 1000 })
    }

    /// Sends `count` messages at `rateHz` on the calling thread, each produced by `send(index)`.
    private static func paced(count: Int, rateHz: Double, _ send: (Int) throws -> Void) rethrows {
        let interval = Int64(1e9 / rateHz)
        var due = SystemClock.monotonicNanoseconds()
        for index in 0..<count {
            due += interval
            while true {
                let left = due - SystemClock.monotonicNanoseconds()
                if left <= 0 { break }
                var spec = timespec(tv_sec: Int(left / 1_000_000_000), tv_nsec: Int(left % 1_000_000_000))
                nanosleep(&spec, nil)
            }
            try send(index)
        }
    }

    private static func rawRound(endpoint: String, count: Int, rateHz: Double) throws -> [Double] {
        // Raw libzmq, its own context: nothing of this transport on the path.
        guard let context = zmq_ctx_new() else { throw RawZMQError(operation: "zmq_ctx_new") }
        defer { zmq_ctx_term(context) }
        guard let publisher = zmq_socket(context, ZMQ_PUB), let subscriber = zmq_socket(context, ZMQ_SUB) else {
            throw RawZMQError(operation: "zmq_socket")
        }
        var zero: Int32 = 0
        zmq_setsockopt(publisher, ZMQ_LINGER, &zero, 4)
        zmq_setsockopt(subscriber, ZMQ_LINGER, &zero, 4)
        defer {
            zmq_close(publisher)
            zmq_close(subscriber)
        }
        guard zmq_bind(publisher, endpoint) == 0 else { throw RawZMQError(operation: "zmq_bind(\(endpoint))") }
        zmq_setsockopt(subscriber, ZMQ_SUBSCRIBE, nil, 0)
        guard zmq_connect(subscriber, endpoint) == 0 else { throw RawZMQError(operation: "zmq_connect(\(endpoint))") }
        nonisolated(unsafe) let receiving = subscriber
        let latencies = Mutex<[Double]>([])
        let ready = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        SystemThread.start(name: "bench-receive") {
            // A blocking receive loop with a timeout so that a lost message cannot hang the run.
            var timeout: Int32 = 2000
            zmq_setsockopt(receiving, ZMQ_RCVTIMEO, &timeout, 4)
            var received = 0
            var local: [Double] = []
            local.reserveCapacity(count)
            while received < count {
                var message = zmq_msg_t()
                zmq_msg_init(&message)
                defer { zmq_msg_close(&message) }
                guard zmq_msg_recv(&message, receiving, 0) >= 0 else { break }
                let now = SystemClock.monotonicNanoseconds()
                guard zmq_msg_size(&message) >= 16, let data = zmq_msg_data(&message) else { continue }
                let sent = data.loadUnaligned(as: Int64.self)
                let index = data.loadUnaligned(fromByteOffset: 8, as: Int64.self)
                if index < 0 {
                    ready.store(true, ordering: .releasing)
                    continue
                }
                local.append(Double(now - sent) / 1000)
                received += 1
            }
            latencies.withLock { $0 = local }
            done.signal()
        }
        func send(_ words: [Int64]) throws {
            let sent = words.withUnsafeBytes { zmq_send(publisher, $0.baseAddress, $0.count, 0) }
            if sent < 0 { throw RawZMQError(operation: "zmq_send") }
        }
        // Warm up until the subscription has reached the publisher (the slow joiner).
        var probe = [Int64](repeating: -1, count: 4)
        let warmupDeadline = SystemClock.monotonicNanoseconds() + 3_000_000_000
        while !ready.load(ordering: .acquiring) && SystemClock.monotonicNanoseconds() < warmupDeadline {
            probe[0] = SystemClock.monotonicNanoseconds()
            try send(probe)
            usleep(5_000)
        }
        var message = [Int64](repeating: 0, count: 4)
        try self.paced(count: count, rateHz: rateHz) { index in
            message[0] = SystemClock.monotonicNanoseconds()
            message[1] = Int64(index)
            try send(message)
        }
        done.wait()
        return latencies.withLock { $0 }
    }

    private static func transportRound(
        endpoint: String, count: Int, rateHz: Double, curve: (server: CurveServerOptions, client: CurveKeyPair)? = nil
    ) async throws -> (consumer: [Double], receiveThread: [Double], afterFirstFrame: [Double]) {
        // Each round its own context, as each stage process has its own. (One context shared by many short-lived
        // TCP publisher and subscriber pairs has left a subscriber unconnected for more than 10 s, about once in
        // fifty rounds; not seen with a context per round, nor in the stages.)
        let context = ZMQContext()
        defer { context.terminate() }
        var publisherOptions = PublisherOptions()
        publisherOptions.curve = curve?.server
        let publisher = try BusPublisher(context: context, bind: [endpoint], stage: "bench", options: publisherOptions)
        var subscriberOptions = SubscriberOptions(topics: ["heading"])
        subscriberOptions.curve = curve.map {
            CurveClientOptions(identity: $0.client, publisherKeys: [endpoint: $0.server.identity.publicKey])
        }
        let subscriber = try BusSubscriber(context: context, connect: [endpoint], options: subscriberOptions)
        defer {
            publisher.close()
            subscriber.close()
        }
        // The heartbeat tells the subscriber that the connection is up before timing starts; a connection that does
        // not come up within 10 s ends the run with an error instead of waiting for ever.
        let joined = Deadline.watched("bench-join") { subscriber.close() }
        var iterator = subscriber.makeAsyncIterator()
        var up = false
        while let event = await iterator.next() {
            if case .publisherUp = event {
                up = true
                break
            }
        }
        guard up, joined.arrive() else {
            throw NoConnection(endpoint: endpoint)
        }
        // The subscriptions travel apart: the publisher may hold the heartbeat's and not yet the heading's, and drop
        // the first headings. Probes (marked by a negative time) go every 10 ms until one has come through.
        let probed = Deadline.watched(
            "bench-probe", each: { try? publisher.send(.heading(HeadingSample(timeSeconds: -1, headingDegrees: 0))) },
            expire: { subscriber.close() })
        var probeCame = false
        while let event = await iterator.next() {
            if case let .message(received) = event, case let .heading(sample) = received.message,
                sample.timeSeconds < 0
            {
                probeCame = true
                break
            }
        }
        guard probeCame, probed.arrive() else {
            throw NoConnection(endpoint: endpoint)
        }
        let finished = DispatchSemaphore(value: 0)
        SystemThread.start(name: "bench-send") {
            probed.ended.wait()  // no probe among the measured messages' sends
            try? self.paced(count: count, rateHz: rateHz) { index in
                // The monotonic send time travels in the payload; the header's wall-clock time is
                // not precise enough across a clock adjustment.
                try publisher.send(
                    .heading(
                        HeadingSample(
                            timeSeconds: Double(SystemClock.monotonicNanoseconds()),
                            headingDegrees: Double(index % 360))))
            }
            finished.signal()
        }
        // The subscriber is closed once the consumer has taken nothing for 5 s after the last send (on a loaded
        // machine it may still be draining seconds after it).
        let consumed = Atomic<Int>(0)
        SystemThread.start(name: "bench-watchdog") {
            finished.wait()
            var seen = -1
            while consumed.load(ordering: .relaxed) != seen, consumed.load(ordering: .relaxed) < count {
                seen = consumed.load(ordering: .relaxed)
                SystemThread.sleep(seconds: 5)
            }
            subscriber.close()
        }
        // Consume as a stage does: on the subscriber's receive thread, through its task executor.
        let hop: (consumer: [Double], receiveThread: [Double], afterFirstFrame: [Double]) =
            await withTaskExecutorPreference(subscriber.executor) {
                var latencies: [Double] = []
                var wire: [Double] = []
                var local: [Double] = []
                latencies.reserveCapacity(count)
                wire.reserveCapacity(count)
                local.reserveCapacity(count)
                while latencies.count < count {
                    // The sender closes the subscriber a while after its last message, so a lost one cannot hang the run.
                    guard let event = await iterator.next() else { break }
                    guard case let .message(received) = event, case let .heading(sample) = received.message,
                        sample.timeSeconds >= 0
                    else {
                        continue  // a probe sent before the first came through
                    }
                    let now = SystemClock.monotonicNanoseconds()
                    latencies.append((Double(now) - sample.timeSeconds) / 1000)
                    local.append(Double(now - received.receiveMonotonicNanoseconds) / 1000)
                    consumed.store(latencies.count, ordering: .relaxed)
                    wire.append(Double(received.receiveTimeNanoseconds - received.header.sendTimeNanoseconds) / 1000)
                }
                return (latencies, wire, local)
            }
        guard hop.consumer.count == count else {
            throw IncompleteRound(endpoint: endpoint, received: hop.consumer.count, sent: count)
        }
        return hop
    }
}
