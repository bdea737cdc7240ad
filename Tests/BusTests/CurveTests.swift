@testable import Bus
import Foundation
import Links
import Logging
import NavCore
import Synchronization
import Testing
import TestSupport

/// CURVE on real TCP sockets on loopback: the right publisher is heard; anyone else bound at its endpoint
/// (another key, no key, not ZeroMQ at all) is never heard; a subscriber whose key is not a reader is refused.
@Suite(.serialized) struct CurveTests {
    let route = try! CurveKeyPair.generate()
    let sink = try! CurveKeyPair.generate()
    let stranger = try! CurveKeyPair.generate()
    let heading = BusMessage.heading(HeadingSample(timeSeconds: 5, headingDegrees: 12))

    private func publisher(
        _ context: ZMQContext, _ endpoint: String, identity: CurveKeyPair?, readers: Set<String>,
        stage: String = "route"
    ) throws -> BusPublisher {
        var options = PublisherOptions()
        options.curve = identity.map { CurveServerOptions(identity: $0, readers: readers) }
        return try BusPublisher(context: context, bind: [endpoint], stage: stage, options: options)
    }

    private func subscriber(
        _ context: ZMQContext, _ endpoint: String, identity: CurveKeyPair?, expecting key: String
    ) throws -> BusSubscriber {
        var options = SubscriberOptions()
        options.curve = identity.map { CurveClientOptions(identity: $0, publisherKeys: [endpoint: key]) }
        options.expectedStages = [endpoint: "route"]
        return try BusSubscriber(context: context, connect: [endpoint], options: options)
    }

    /// Publishes until `done` or a bound; true when `done` became true.
    private func publish(_ publisher: BusPublisher, until done: () -> Bool) async throws -> Bool {
        for _ in 0..<300 {
            try publisher.send(self.heading)
            if done() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return done()
    }

    @Test func theExpectedPublisherIsHeardAndAdmitsItsReader() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("tcp")
        let publisher = try self.publisher(context, endpoint, identity: self.route, readers: [self.sink.publicKey])
        let subscriber = try self.subscriber(context, endpoint, identity: self.sink, expecting: self.route.publicKey)
        defer {
            publisher.close()
            subscriber.close()
        }
        #expect(try await self.publish(publisher) { subscriber.snapshot.received > 0 })
        let zap = try context.zapHandler(logger: Logger(label: "test"))
        #expect(zap.admitted(domain: "route") >= 1 && zap.refused(domain: "route") == 0)
        #expect(subscriber.snapshot.refusedHandshakes == 0)
    }

    @Test(arguments: ["another key", "no key"])
    func aPublisherWithoutTheExpectedKeyIsNeverHeard(_ impostor: String) async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("tcp")
        // The impostor took the endpoint and admits anyone: only the subscriber's own check stands in its way.
        let publisher = try self.publisher(
            context, endpoint, identity: impostor == "no key" ? nil : self.stranger,
            readers: [self.sink.publicKey])
        let subscriber = try self.subscriber(context, endpoint, identity: self.sink, expecting: self.route.publicKey)
        defer {
            publisher.close()
            subscriber.close()
        }
        #expect(
            try await self.publish(publisher) { subscriber.snapshot.refusedHandshakes >= 1 },
            "\(subscriber.snapshot)")
        #expect(subscriber.snapshot.received == 0 && subscriber.snapshot.heartbeats == 0)
        // The impostor leaves and the rightful publisher binds the endpoint again: it is heard within seconds
        // (a failed handshake does not hold the connection for libzmq's default 30 s).
        publisher.close()
        var rightful: BusPublisher?
        for _ in 0..<100 where rightful == nil {
            // The impostor's port is free once libzmq's I/O thread has closed it.
            rightful = try? self.publisher(context, endpoint, identity: self.route, readers: [self.sink.publicKey])
            if rightful == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let rightfulPublisher = try #require(rightful)
        defer { rightfulPublisher.close() }
        let start = ContinuousClock.now
        var heard = false
        while !heard && ContinuousClock.now - start < .seconds(10) {
            try rightfulPublisher.send(self.heading)
            heard = subscriber.snapshot.received > 0
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(heard, "\(subscriber.snapshot)")
    }

    @Test func plainTextAtTheEndpointIsNeverHeard() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let (listener, port) = Loopback.boundSocket()
        #expect(listen(listener, 4) == 0)
        let endpoint = "tcp://127.0.0.1:\(port)"
        let subscriber = try self.subscriber(context, endpoint, identity: self.sink, expecting: self.route.publicKey)
        defer { subscriber.close() }
        // A server that answers every connection with text, until the test ends.
        let stop = Atomic<Bool>(false)
        let served = Atomic<Int>(0)
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed) {
                var item = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&item, 1, 50) == 1 else { continue }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                let text = "HTTP/1.1 200 OK\r\n\r\n{\"heading\": 12}\n"
                _ = send(client, text, text.utf8.count, Int32(MSG_NOSIGNAL))
                served.add(1, ordering: .relaxed)
            }
            close(listener)
        }
        defer { stop.store(true, ordering: .relaxed) }
        // The subscriber keeps trying (it is not stuck on the first bad peer) and hears nothing.
        #expect(await eventually(within: 15) { served.load(ordering: .relaxed) >= 3 }, "\(subscriber.snapshot)")
        #expect(subscriber.snapshot.refusedHandshakes >= 2)
        #expect(subscriber.snapshot.received == 0 && subscriber.snapshot.heartbeats == 0)
    }

    @Test(arguments: ["unknown key", "no key"])
    func aSubscriberThatIsNotAReaderIsRefusedByTheZAPHandler(_ kind: String) async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("tcp")
        let publisher = try self.publisher(context, endpoint, identity: self.route, readers: [self.sink.publicKey])
        let subscriber = try self.subscriber(
            context, endpoint, identity: kind == "no key" ? nil : self.stranger, expecting: self.route.publicKey)
        defer {
            publisher.close()
            subscriber.close()
        }
        let zap = try context.zapHandler(logger: Logger(label: "test"))
        if kind == "unknown key" {
            #expect(try await self.publish(publisher) { zap.refused(domain: "route") >= 1 })
        } else {
            // A plain subscriber never gets as far as the ZAP handler: the CURVE server refuses its NULL greeting.
            #expect(try await self.publish(publisher) { false } == false)
        }
        #expect(subscriber.snapshot.received == 0 && zap.admitted(domain: "route") == 0)
    }

    @Test func aMessageFromAnotherStageOnAnInputIsDropped() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("tcp")
        let publisher = try self.publisher(
            context, endpoint, identity: self.route, readers: [self.sink.publicKey], stage: "intruder")
        let subscriber = try self.subscriber(context, endpoint, identity: self.sink, expecting: self.route.publicKey)
        defer {
            publisher.close()
            subscriber.close()
        }
        #expect(try await self.publish(publisher) { subscriber.snapshot.dropped[.unexpectedSender, default: 0] >= 3 })
        #expect(subscriber.snapshot.received == 0)
    }

    @Test func keysAreWrittenPrivatelyAndReadBack() throws {
        let folder = try scratchFolder() + "/keys"
        try self.route.write(name: "group1", folder: folder)
        let loaded = try CurveKeyPair.load(name: "group1", folder: folder)
        #expect(loaded == self.route)
        var info = stat()
        #expect(stat(folder + "/group1.key", &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try CurveKeyPair.loadPublic(file: folder + "/group1.pub") == self.route.publicKey)
        chmod(folder + "/group1.key", 0o644)
        #expect(throws: CurveError.self) { try CurveKeyPair.load(name: "group1", folder: folder) }
        #expect(throws: CurveError.self) { try CurveKeyPair.load(name: "absent", folder: folder) }
        #expect(!Curve.isKey("too short") && Curve.isKey(self.route.publicKey))
    }
}

@Suite struct IPCEndpointTests {
    @Test func aSecondProcessCannotTakeOverALiveIPCEndpointButMayReuseADeadOne() throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("ipc")
        let path = String(endpoint.dropFirst("ipc://".count))
        let first = try BusPublisher(context: context, bind: [endpoint], stage: "route")
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "only this user may connect")
        #expect(throws: EndpointInUse.self) {
            try BusPublisher(context: context, bind: [endpoint], stage: "impostor")
        }
        first.close()
        // A socket file left behind by a process that died (nobody listens) is taken over.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(listener)  // bound, never listened: a stale file
        let second = try BusPublisher(context: context, bind: [endpoint], stage: "route")
        second.close()
    }
    /// The experimenter's control channel over CURVE: the admitted sender's request is carried out; a sender with
    /// another key is refused by the ZAP handler and one without CURVE (plain text) by the handshake, and both are
    /// counted (the sink's `control.refusedSenders` adds the two), neither reaching the handler.
    @Test func aControlListenerCountsARogueKeyAndAPlainSenderAndHearsOnlyItsSender() async throws {
        let context = ZMQContext()
        defer { context.terminate() }
        let endpoint = uniqueEndpoint("tcp")
        let experimenter = try CurveKeyPair.generate()
        let sink = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let zap = try context.zapHandler(logger: Logger(label: "test"))
        let options = ControlListenerOptions(
            curve: CurveServerOptions(identity: sink, readers: [experimenter.publicKey]),
            senderNames: [experimenter.publicKey: "experimenter"], handlerTimeoutSeconds: 10)
        let handled = Mutex<[String]>([])
        let listener = try ControlListener(
            context: context, bind: [endpoint], stage: "haptic", options: options, zap: zap,
            logger: Logger(label: "test")
        ) { request, sender in
            handled.withLock { $0.append(sender) }
            return ControlReply(
                requestID: request.requestID, stage: "haptic", accepted: true, stopped: true, message: "ok")
        }
        defer { listener.close() }
        // Each request waits on a thread of its own: the listener's handler needs the cooperative pool meanwhile.
        func send(_ identity: CurveKeyPair?, serverKey: String?, within seconds: Double) async throws -> Bool {
            try await offThePool {
                let request = ControlRequest(command: .stop, requestID: UUID().uuidString, sentSeconds: 1)
                return
                    (try? ControlClient.send(
                        request, to: endpoint, identity: identity, serverKey: serverKey, timeoutSeconds: seconds,
                        context: context))
                    != nil
            }
        }
        #expect(try await !send(stranger, serverKey: sink.publicKey, within: 1), "a rogue key is not answered")
        #expect(try await !send(nil, serverKey: nil, within: 1), "a plain sender is not answered")
        #expect(handled.withLock { $0 }.isEmpty)
        #expect(zap.refused(domain: "control:haptic") >= 1, "the rogue key, refused by ZAP")
        #expect(await eventually(within: 5) { listener.refusedHandshakes >= 1 }, "the plain sender, by its handshake")
        // A generous bound: a loaded machine takes its time over the handshake and the ZAP round trip.
        #expect(try await send(experimenter, serverKey: sink.publicKey, within: 15), "the experimenter is answered")
        #expect(
            await eventually(within: 10) { handled.withLock { $0 } == ["experimenter"] }, "\(handled.withLock { $0 })")
    }
}
