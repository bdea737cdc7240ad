import NavCore
import CZeroMQ
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization
import SystemIO

/// A CURVE key pair, both keys in Z85 text (40 characters each), as `zmq_curve_keypair` makes them.
public struct CurveKeyPair: Sendable, Equatable {
    /// The public key: given to peers.
    public let publicKey: String
    /// The secret key: never leaves its file (mode 0600).
    public let secretKey: String

    public init(publicKey: String, secretKey: String) throws(CurveError) {
        guard Curve.isKey(publicKey) else { throw .invalidKey("the public key '\(publicKey.prefix(48))'") }
        guard Curve.isKey(secretKey) else { throw .invalidKey("the secret key") }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new random key pair.
    public static func generate() throws(CurveError) -> CurveKeyPair {
        guard Curve.isAvailable else { throw .unavailable }
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw .unavailable }
        return try CurveKeyPair(publicKey: Curve.text(publicKey), secretKey: Curve.text(secretKey))
    }

    /// Writes `NAME.key` (the secret key, mode 0600) and `NAME.pub` (the public key, 0644) into `folder`.
    public func write(name: String, folder: String) throws(CurveError) {
        do {
            try Paths.createFolders(folder, permissions: 0o700)
            let secretPath = "\(folder)/\(name).key"
            let secret = try OutputFile(path: secretPath, mode: .truncate, createFolders: false, permissions: 0o600)
            // An existing file keeps its old mode when truncated: make sure it is private.
            guard chmod(secretPath, 0o600) == 0 else { throw SystemError("restrict", path: secretPath) }
            secret.write("# hapticnav CURVE secret key '\(name)': keep it on this host, mode 0600\n\(self.secretKey)\n")
            secret.close()
            let publicFile = try OutputFile(
                path: "\(folder)/\(name).pub", mode: .truncate, createFolders: false, permissions: 0o644)
            publicFile.write("# hapticnav CURVE public key '\(name)': give it to the peers\n\(self.publicKey)\n")
            publicFile.close()
        } catch {
            throw .file("\(error)")
        }
    }

    /// Reads `NAME.key` and `NAME.pub` from `folder`; refuses a secret key file others can read.
    public static func load(name: String, folder: String) throws(CurveError) -> CurveKeyPair {
        let secretPath = "\(folder)/\(name).key"
        var info = stat()
        guard stat(secretPath, &info) == 0 else {
            throw .file(
                "\(secretPath): \(String(cString: strerror(errno))) (make it with `hapticnav keys generate \(name) --out \(folder)`)"
            )
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .file(
                "\(secretPath): readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod 600 on it"
            )
        }
        let secret = try Self.readKey(secretPath)
        let publicKey = try Self.loadPublic(file: "\(folder)/\(name).pub")
        let pair = try CurveKeyPair(publicKey: publicKey, secretKey: secret)
        guard Curve.publicKey(ofSecret: secret) == publicKey else {
            throw .file("\(folder)/\(name).pub does not belong to \(secretPath)")
        }
        return pair
    }

    /// Reads a public key file (`NAME.pub`).
    public static func loadPublic(file: String) throws(CurveError) -> String {
        try Self.readKey(file)
    }

    private static func readKey(_ path: String) throws(CurveError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try InputFile.contents(of: path)
        } catch {
            throw .file(error.description)
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingPrefix(while: \.isWhitespace) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard lines.count == 1, Curve.isKey(String(lines[0]).trimmed()) else {
            throw .file("\(path): expected one Z85 key of 40 characters (and # comments)")
        }
        return String(lines[0]).trimmed()
    }
}

/// Why CURVE could not be used.
public enum CurveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// libzmq was built without CURVE.
    case unavailable
    /// A key that is not 40 characters of Z85.
    case invalidKey(String)
    /// A key file that is missing, unreadable, not private or not a key.
    case file(String)
    /// An encrypted subscriber given an endpoint without the key of the publisher expected there.
    case noPublisherKey(endpoint: String)

    public var description: String {
        switch self {
        case .unavailable:
            "this libzmq has no CURVE (zmq_has(\"curve\") is false): install a libzmq built with libsodium (Debian's libzmq5 is)"
        case let .invalidKey(what): "\(what) is not a CURVE key (40 characters of Z85)"
        case let .file(detail): detail
        case let .noPublisherKey(endpoint): "no publisher key for \(endpoint): whose messages are expected there?"
        }
    }
}

/// CURVE helpers.
public enum Curve {
    /// Whether this libzmq speaks CURVE.
    public static var isAvailable: Bool { zmq_has("curve") == 1 }

    /// True for a 40-character Z85 text that decodes to 32 bytes.
    public static func isKey(_ text: String) -> Bool {
        guard text.utf8.count == 40 else { return false }
        var bytes = [UInt8](repeating: 0, count: 32)
        return zmq_z85_decode(&bytes, text) != nil
    }

    /// The public key that belongs to a secret key.
    public static func publicKey(ofSecret secret: String) -> String? {
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secret) == 0 else { return nil }
        return Self.text(publicKey)
    }

    /// The Z85 text of a 32-byte key.
    static func z85(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        guard zmq_z85_encode(&text, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), 32) != nil else {
            return nil
        }
        return Self.text(text)
    }

    /// A NUL-terminated C string from a buffer libzmq filled (Z85 keys are ASCII).
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A publisher's CURVE role: it is the CURVE server of its socket, proves it holds `identity`'s secret key to
/// every subscriber, and admits only subscribers whose public keys are in `readers` (checked by the process's ZAP
/// handler; with no handler the socket refuses everyone).
public struct CurveServerOptions: Sendable, Equatable {
    public var identity: CurveKeyPair
    /// Public keys (Z85) of the subscribers allowed to read.
    public var readers: Set<String>

    public init(identity: CurveKeyPair, readers: Set<String>) {
        self.identity = identity
        self.readers = readers
    }
}

/// A subscriber's CURVE role: a CURVE client that completes a connection only with a publisher holding the secret
/// key of `publisherKeys[endpoint]`: anyone else bound there (another key, no key, plain TCP) is never heard.
public struct CurveClientOptions: Sendable, Equatable {
    public var identity: CurveKeyPair
    /// For each endpoint, the public key (Z85) of the publisher allowed to publish there.
    public var publisherKeys: [String: String]

    public init(identity: CurveKeyPair, publisherKeys: [String: String]) {
        self.identity = identity
        self.publisherKeys = publisherKeys
    }
}

/// ZMQ_ZAP_ENFORCE_DOMAIN: in libzmq 4.3 a draft option (93) that stable builds honour; its header hides the name.
private let zapEnforceDomain: Int32 = 93

extension ZMQSocket {
    func setOption(_ option: Int32, text: String) throws(ZMQError) {
        let bytes = Array(text.utf8)
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(self.handle, option, $0.baseAddress, bytes.count) }
        if rc != 0 { throw ZMQError(operation: "zmq_setsockopt(\(option))") }
    }

    /// Makes this socket a CURVE server whose connections the ZAP handler checks in `domain`.
    func makeCurveServer(_ options: CurveServerOptions, domain: String) throws(ZMQError) {
        try self.setOption(ZMQ_CURVE_SERVER, 1)
        try self.setOption(ZMQ_CURVE_SECRETKEY, text: options.identity.secretKey)
        try self.setOption(ZMQ_ZAP_DOMAIN, text: domain)
        // Fail closed: without a ZAP handler, refuse rather than admit every key.
        try self.setOption(zapEnforceDomain, 1)
    }

    /// Makes this socket a CURVE client of the publisher holding `serverKey`'s secret key.
    func makeCurveClient(identity: CurveKeyPair, serverKey: String) throws(ZMQError) {
        try self.setOption(ZMQ_CURVE_SERVERKEY, text: serverKey)
        try self.setOption(ZMQ_CURVE_PUBLICKEY, text: identity.publicKey)
        try self.setOption(ZMQ_CURVE_SECRETKEY, text: identity.secretKey)
    }
}

/// The process's ZAP handler (RFC 27): libzmq asks it, for each CURVE connection to a publisher, whether the
/// client's public key may read in that publisher's domain. It answers 200 only for registered keys; refusals are
/// counted per domain and logged once per key.
public final class ZAPHandler: Sendable {
    private struct State {
        var readers: [String: Set<String>] = [:]
        var refused: [String: UInt64] = [:]
        var admitted: [String: UInt64] = [:]
        var logged: Set<String> = []
    }

    private let state = Mutex(State())
    private let logger: Logger

    /// Binds the handler's socket in `context` and serves on a thread of its own until the context terminates.
    init(context: ZMQContext, logger: Logger) throws(ZMQError) {
        self.logger = logger
        let socket = try ZMQSocket(context: context, type: ZMQ_REP)
        do {
            try socket.bind("inproc://zeromq.zap.01")
        } catch {
            socket.close()
            throw error
        }
        SystemThread.start(name: "zap-handler") { [self] in self.serve(socket) }
    }

    /// Admits `readers` (Z85 public keys) in `domain` from now on.
    func register(domain: String, readers: Set<String>) {
        self.state.withLock { $0.readers[domain, default: []].formUnion(readers) }
    }

    /// Connections refused in `domain` so far.
    public func refused(domain: String) -> UInt64 { self.state.withLock { $0.refused[domain, default: 0] } }

    /// Connections admitted in `domain` so far.
    public func admitted(domain: String) -> UInt64 { self.state.withLock { $0.admitted[domain, default: 0] } }

    private func serve(_ socket: ZMQSocket) {
        defer { socket.close() }
        var item = zmq_pollitem_t(socket: socket.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
        while true {
            let ready = zmq_poll(&item, 1, 200)
            if ready < 0 {
                if zmq_errno() == EINTR { continue }
                return  // ETERM: the context is closing.
            }
            guard ready > 0 else { continue }
            var frames: [[UInt8]] = []
            while true {
                let frame = ZMQFrame()
                guard (try? frame.receive(from: socket)) == true else { break }
                frames.append(frame.withBytes { Array($0) })
                if !frame.hasMore { break }
            }
            let reply = self.answer(frames)
            for (index, part) in reply.enumerated() {
                let sent = part.withUnsafeBytes { bytes in
                    zmq_send(socket.handle, bytes.baseAddress, bytes.count, index + 1 < reply.count ? ZMQ_SNDMORE : 0)
                }
                if sent < 0 { break }
            }
        }
    }

    /// The reply frames to one request: version, request id, status code, status text, user id, metadata.
    private func answer(_ frames: [[UInt8]]) -> [[UInt8]] {
        func reply(_ id: [UInt8], _ code: String, _ text: String, user: String = "") -> [[UInt8]] {
            [Array("1.0".utf8), id, Array(code.utf8), Array(text.utf8), Array(user.utf8), []]
        }
        guard frames.count >= 6, frames[0] == Array("1.0".utf8) else {
            return reply(frames.count > 1 ? frames[1] : [], "500", "malformed ZAP request")
        }
        let id = frames[1]
        let domain = String(decoding: frames[2], as: UTF8.self)
        let address = String(decoding: frames[3], as: UTF8.self)
        let mechanism = String(decoding: frames[5], as: UTF8.self)
        guard mechanism == "CURVE", frames.count >= 7,
            let key = frames[6].withUnsafeBytes({ Curve.z85($0) })
        else {
            self.refuse(domain: domain, key: "(\(mechanism))", address: address)
            return reply(id, "400", "CURVE required")
        }
        let allowed = self.state.withLock { $0.readers[domain]?.contains(key) ?? false }
        guard allowed else {
            self.refuse(domain: domain, key: key, address: address)
            return reply(id, "400", "unknown key")
        }
        self.state.withLock { $0.admitted[domain, default: 0] += 1 }
        return reply(id, "200", "OK", user: key)
    }

    private func refuse(domain: String, key: String, address: String) {
        let first = self.state.withLock { state in
            state.refused[domain, default: 0] += 1
            return state.logged.insert("\(domain)|\(key)").inserted
        }
        if first {
            self.logger.warning(
                "refused a subscriber to '\(domain)' from \(address) with key \(key): not among its readers (counted; this key is not logged again)"
            )
        }
    }
}
