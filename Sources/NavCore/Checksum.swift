/// FNV-1a, 64 bits: a fast checksum of bytes, for a cache's integrity or a digest of a run's inputs (not for
/// anything an adversary chooses).
public func fnv1a64(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01B3
    }
    return hash
}
