internal import CPseudoTerminal
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Links
import NavCore
public import Synchronization
import SystemIO

/// The band's side of ``BandProtocol``, for tests and for trying a pipeline without the hardware
/// (`hapticnav band-emulator`). It listens on TCP or a pseudo-terminal, acknowledges every valid frame,
/// reports its battery every few seconds, and logs every frame it receives as a JSON line with its receive
/// time and the motor state after it. Like the band, it stops every motor by itself when no frame has arrived
/// for the watchdog's limit, and when its host disconnects, and logs each such stop as an `event` line.
public final class BandEmulator: Sendable {
    /// Where it listens.
    public enum Listen: Sendable {
        /// A TCP port on a host (127.0.0.1 for tests; port 0 for any free one, said in `serve`'s ready).
        case tcp(host: String, port: UInt16)
        /// A new pseudo-terminal, linked at this path for the plugin to open.
        case pty(link: String)
    }

    private struct State {
        var left: UInt8 = 0
        var right: UInt8 = 0
        var frames = 0
    }

    private let listen: Listen
    private let log: @Sendable (String) -> Void
    private let state = Mutex(State())
    /// While true, frames are logged but not acknowledged (a band that hangs).
    public let muted = Atomic<Bool>(false)
    /// While above 0, each answer goes out this long after its frame came, in order (a band whose link is backed up):
    /// answers keep coming, each late [milliseconds].
    public let answerLagMilliseconds = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Creates an emulator that writes its log lines through `log`.
    public init(listen: Listen, log: @escaping @Sendable (String) -> Void) {
        self.listen = listen
        self.log = log
    }

    /// Serves until ``stop()``; connections are served one at a time, and a new one is accepted when one ends.
    public func serve(ready: @Sendable (String) -> Void = { _ in }) throws {
        switch self.listen {
        case let .tcp(host, port):
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var one: Int32 = 1
            setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(host)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, Glibc.listen(server, 4) == 0 else {
                throw LinkError.unreachable("cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
            }
            var bound_ = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &bound_) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(server, $0, &length) }
            }
            // Port 0: the system's choice, said in the ready line.
            ready("tcp://\(host):\(UInt16(bigEndian: bound_.sin_port))")
            while !self.stopped.load(ordering: .relaxed) {
                let client = accept(server, nil, nil)
                if client < 0 { continue }
                var noDelay: Int32 = 1
                setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
                self.session(fd: client)
                Glibc.close(client)
            }
            Glibc.close(server)
        case let .pty(link):
            var name = [CChar](repeating: 0, count: 256)
            let master = hn_open_pseudo_terminal(&name, name.count)
            guard master >= 0 else {
                throw LinkError.unreachable("cannot open a pseudo-terminal: \(String(cString: strerror(errno)))")
            }
            let slave = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // Raw mode on the slave side, so that no byte is translated; keep one descriptor open so that the
            // master does not see a hang-up between the plugin's connections.
            let keeper = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC)
            var options = termios()
            if tcgetattr(keeper, &options) == 0 {
                cfmakeraw(&options)
                _ = tcsetattr(keeper, TCSANOW, &options)
            }
            unlink(link)
            guard symlink(slave, link) == 0 else {
                throw LinkError.unreachable("cannot link \(link) to \(slave): \(String(cString: strerror(errno)))")
            }
            ready(link)
            self.session(fd: master)
            Glibc.close(keeper)
            unlink(link)
        }
    }

    /// Stops serving (the current session ends when its peer goes).
    public func stop() {
        self.stopped.store(true, ordering: .relaxed)
    }

    private func session(fd: Int32) {
        var decoder = BandProtocol.Decoder()
        var buffer = [UInt8](repeating: 0, count: 1024)
        var sequence: UInt8 = 0
        var lastBattery = Date.distantPast
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // The watchdog: armed from the connection, at the default limit until the host sets one.
        var watchdogLimit = BandProtocol.defaultWatchdogMilliseconds
        var lastFrame = SystemClock.monotonicSeconds()
        var watchdogFired = false
        // Answers held back by `answerLagMilliseconds`: when each is due, and its bytes.
        var lagging: [(due: Double, bytes: [UInt8])] = []
        defer {
            // A band whose host has gone stops: a closed link never leaves a motor running.
            self.stopMotors(event: "disconnected", silenceSeconds: SystemClock.monotonicSeconds() - lastFrame)
        }
        while !self.stopped.load(ordering: .relaxed) {
            if Date().timeIntervalSince(lastBattery) >= 5 {
                lastBattery = Date()
                sequence &+= 1
                _ = self.write(fd, BandProtocol.Frame(type: .battery, sequence: sequence, payload: [87]).bytes)
            }
            while let first = lagging.first, first.due <= SystemClock.monotonicSeconds() {
                _ = self.write(fd, first.bytes)
                lagging.removeFirst()
            }
            // Wake at the watchdog's deadline, not a fixed tick, so that the stop is on time to the millisecond.
            let untilDeadline = Double(watchdogLimit) / 1000 - (SystemClock.monotonicSeconds() - lastFrame)
            var timeout = watchdogFired ? 200 : Int32(max(0, min(200, (untilDeadline * 1000).rounded(.up))))
            if let first = lagging.first {
                let untilDue = (first.due - SystemClock.monotonicSeconds()) * 1000
                timeout = min(timeout, Int32(min(200, max(0, untilDue.rounded(.up)))))
            }
            let ready = poll(&descriptor, 1, timeout)
            if ready == 0 {
                let silence = SystemClock.monotonicSeconds() - lastFrame
                if !watchdogFired, silence * 1000 >= Double(watchdogLimit) {
                    watchdogFired = true
                    self.stopMotors(event: "watchdog", silenceSeconds: silence)
                }
                continue
            }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return }
            let received = Date().timeIntervalSince1970
            for result in decoder.feed(buffer[0..<count]) {
                switch result {
                case let .success(frame):
                    lastFrame = SystemClock.monotonicSeconds()
                    watchdogFired = false
                    var accepted = true
                    if frame.type == .watchdog {
                        if let limit = BandProtocol.watchdogLimit(payload: frame.payload) {
                            watchdogLimit = limit
                        } else {
                            accepted = false
                        }
                    }
                    let motors = self.state.withLock { state -> (UInt8, UInt8) in
                        state.frames += 1
                        switch frame.type {
                        case .setMotors where frame.payload.count >= 2:
                            (state.left, state.right) = (frame.payload[0], frame.payload[1])
                        case .stopAll: (state.left, state.right) = (0, 0)
                        default: break
                        }
                        return (state.left, state.right)
                    }
                    let payload = frame.payload.map(String.init).joined(separator: ",")
                    self.log(
                        "{\"receiveTimeSeconds\":\(fixedDecimal(received, digits: 6)),\"type\":\"\(frame.type.name)\",\"sequence\":\(frame.sequence),\"payload\":[\(payload)],\"motors\":{\"left\":\(motors.0),\"right\":\(motors.1)}}"
                    )
                    if !self.muted.load(ordering: .relaxed) {
                        sequence &+= 1
                        let reply =
                            accepted
                            ? BandProtocol.Frame(type: .ack, sequence: sequence, payload: [frame.sequence])
                            : BandProtocol.Frame(type: .nack, sequence: sequence, payload: [frame.sequence, 2])
                        let lag = self.answerLagMilliseconds.load(ordering: .relaxed)
                        if lag > 0 || !lagging.isEmpty {
                            lagging.append((SystemClock.monotonicSeconds() + Double(max(0, lag)) / 1000, reply.bytes))
                        } else {
                            _ = self.write(fd, reply.bytes)
                        }
                    }
                case let .failure(problem):
                    self.log(
                        "{\"receiveTimeSeconds\":\(fixedDecimal(received, digits: 6)),\"error\":\"\(problem.problem)\"}"
                    )
                    if case .badChecksum = problem.problem {
                        sequence &+= 1
                        _ = self.write(fd, BandProtocol.Frame(type: .nack, sequence: sequence, payload: [0, 1]).bytes)
                    }
                }
            }
        }
    }

    /// Stops both motors by the band's own decision and logs why, with the motors after it.
    private func stopMotors(event: String, silenceSeconds: Double) {
        let before = self.state.withLock { state -> (UInt8, UInt8) in
            defer { (state.left, state.right) = (0, 0) }
            return (state.left, state.right)
        }
        self.log(
            "{\"event\":\"\(event)\",\"timeSeconds\":\(fixedDecimal(Date().timeIntervalSince1970, digits: 6)),\"silenceSeconds\":\(fixedDecimal(silenceSeconds, digits: 3)),\"motorsBefore\":{\"left\":\(before.0),\"right\":\(before.1)},\"motors\":{\"left\":0,\"right\":0}}"
        )
    }

    /// Writes to a socket without SIGPIPE when the peer has gone (and to a pty with a plain write).
    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        let sent = bytes.withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent < 0 && errno == ENOTSOCK {
            return bytes.withUnsafeBufferPointer { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
        }
        return sent == bytes.count
    }
}
