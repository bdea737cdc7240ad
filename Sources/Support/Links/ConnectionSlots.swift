import Glibc
import Synchronization

/// The slots of a server's connections, and who gives one up when all are taken.
///
/// On a network shared with strangers a connection is a slot someone else may want: one that never sends, or sends a
/// byte now and then, must not lock out the phone or the viewer the server is for. So one peer address holds at most
/// `perPeer` slots (its own quietest connection makes room for its next), and when all are taken a new connection
/// takes a slot from the peer holding the most connections never proven (a request answered with success; for a
/// WebSocket, a ping answered), or else the slot of the connection quiet longest among those never proven; only when there
/// is none is it refused. A proven client keeps its slot against strangers.
final class ConnectionSlots: Sendable {
    /// A connection's slot.
    struct Slot: Hashable, Sendable {
        fileprivate let id: Int
    }

    private struct Connection {
        var descriptor: Int32
        var peer: String
        /// When bytes last came, or a request was answered [monotonic nanoseconds].
        var lastHeard: Int64
        /// A request of its was answered with success.
        var proven = false
        /// Its thread has begun to read it: until then it cannot be judged quiet (a loaded machine may take a while
        /// to start the thread, and the client's first bytes wait in the socket meanwhile).
        var begun = false
    }

    private struct State {
        var connections: [Int: Connection] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    let capacity: Int
    let perPeer: Int
    let quietNanoseconds: Int64

    init(capacity: Int, perPeer: Int, quietNanoseconds: Int64) {
        self.capacity = capacity
        self.perPeer = perPeer
        self.quietNanoseconds = quietNanoseconds
    }

    /// A server's slots: `connections` at once (at least one), a quarter of them per peer address.
    convenience init(serving connections: Int, quietSeconds: Double) {
        self.init(
            capacity: max(1, connections), perPeer: max(1, connections / 4),
            quietNanoseconds: Int64(quietSeconds * 1e9))
    }

    /// A slot for a new connection, and whether another connection was shut down to make room; nil when every slot
    /// is held by a connection that may keep it. Room is made, in this order: from the peer's own quietest
    /// connection when it holds its share; in a free slot; when all are taken, from the peer holding the most
    /// connections never proven, if it holds more than the newcomer's peer would (its quietest); else from the
    /// connection quiet longest (at least `quietNanoseconds`, its thread begun) among those never proven.
    func take(_ descriptor: Int32, peer: String, now: Int64) -> (slot: Slot?, evicted: Bool) {
        self.state.withLock { state in
            var evicted = false
            func evict(_ id: Int) {
                if let victim = state.connections.removeValue(forKey: id) {
                    // Its thread sees the end of its stream and closes it; the number stays its own until then.
                    _ = shutdown(victim.descriptor, Int32(SHUT_RDWR))
                    evicted = true
                }
            }
            func quietest(_ connections: [Int: Connection]) -> Int? {
                connections.min { $0.value.lastHeard < $1.value.lastHeard }?.key
            }
            let own = state.connections.filter { $0.value.peer == peer }
            if own.count >= self.perPeer, let id = quietest(own) {
                evict(id)
            } else if state.connections.count >= self.capacity {
                let strangers = state.connections.filter { !$0.value.proven }
                var held: [String: Int] = [:]
                for connection in strangers.values { held[connection.peer, default: 0] += 1 }
                if let (heaviest, count) = held.max(by: { $0.value < $1.value }), count > own.count + 1,
                    let id = quietest(strangers.filter { $0.value.peer == heaviest })
                {
                    evict(id)
                } else if let id = quietest(
                    strangers.filter { $0.value.begun && now - $0.value.lastHeard >= self.quietNanoseconds })
                {
                    evict(id)
                } else {
                    return (nil, false)
                }
            }
            let id = state.nextID
            state.nextID += 1
            state.connections[id] = Connection(descriptor: descriptor, peer: peer, lastHeard: now)
            return (Slot(id: id), evicted)
        }
    }

    /// The connection's thread has begun to read it.
    func began(_ slot: Slot, now: Int64) {
        self.state.withLock {
            $0.connections[slot.id]?.begun = true
            $0.connections[slot.id]?.lastHeard = now
        }
    }

    /// Bytes came on the connection.
    func heard(_ slot: Slot, now: Int64) {
        self.state.withLock { $0.connections[slot.id]?.lastHeard = now }
    }

    /// A request on the connection was answered with success: it keeps its slot against those never proven.
    func proved(_ slot: Slot, now: Int64) {
        self.state.withLock {
            $0.connections[slot.id]?.proven = true
            $0.connections[slot.id]?.lastHeard = now
        }
    }

    /// The connection ended; its descriptor may be closed after this.
    func release(_ slot: Slot) {
        _ = self.state.withLock { $0.connections.removeValue(forKey: slot.id) }
    }

    /// Connections holding a slot [count].
    var count: Int { self.state.withLock { $0.connections.count } }
}
