/// An order-independent digest of a set of records (an item type's items on one side of a
/// migration): the wrapping sum, over the records, of a 128-bit hash of each record's type, key
/// and canonical attribute bytes. Two sides with the same records have the same digest whatever
/// order they are visited in; a record missing, added or changed on one side changes it (with
/// probability 1 - 2^-128 for accidental changes; not a defence against an adversary).
///
/// The per-record hash is SipHash-2-4 under two fixed keys (so digests are stable across
/// processes, machines and versions, and can be compared between runs). A value; any thread.
public struct BackendMigrationDigest: Sendable, Equatable, CustomStringConvertible {
    var high: UInt64 = 0
    var low: UInt64 = 0
    /// How many records were added.
    public private(set) var count = 0

    /// An empty digest.
    public init() {}

    /// Adds one record.
    public mutating func add(itemType: String, key: RecordKey, value: some Collection<UInt8>) {
        var a = SipHasher(k0: 0x0706_0504_0302_0100, k1: 0x0F0E_0D0C_0B0A_0908)
        var b = SipHasher(k0: 0x4C6F_6753_746F_7265, k1: 0x4D69_6772_6174_6F72)
        for h in [0, 1] {
            var s = h == 0 ? a : b
            s.lengthPrefixed(Array(itemType.utf8))
            key.withUnsafeBytes { s.lengthPrefixed($0) }
            s.lengthPrefixed(value)
            if h == 0 { a = s } else { b = s }
        }
        high &+= a.finish()
        low &+= b.finish()
        count += 1
    }

    /// 32 hex digits.
    public var description: String {
        func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return hex(high) + hex(low)
    }
}

/// SipHash-2-4 (Aumasson and Bernstein), streaming over bytes.
struct SipHasher {
    var v0: UInt64, v1: UInt64, v2: UInt64, v3: UInt64
    var tail: UInt64 = 0
    var tailCount = 0
    var length = 0

    init(k0: UInt64, k1: UInt64) {
        v0 = k0 ^ 0x736F_6D65_7073_6575
        v1 = k1 ^ 0x646F_7261_6E64_6F6D
        v2 = k0 ^ 0x6C79_6765_6E65_7261
        v3 = k1 ^ 0x7465_6462_7974_6573
    }

    mutating func round() {
        v0 &+= v1
        v1 = (v1 << 13) | (v1 >> 51)
        v1 ^= v0
        v0 = (v0 << 32) | (v0 >> 32)
        v2 &+= v3
        v3 = (v3 << 16) | (v3 >> 48)
        v3 ^= v2
        v0 &+= v3
        v3 = (v3 << 21) | (v3 >> 43)
        v3 ^= v0
        v2 &+= v1
        v1 = (v1 << 17) | (v1 >> 47)
        v1 ^= v2
        v2 = (v2 << 32) | (v2 >> 32)
    }

    mutating func compress(_ m: UInt64) {
        v3 ^= m
        round()
        round()
        v0 ^= m
    }

    mutating func byte(_ b: UInt8) {
        tail |= UInt64(b) << (8 * UInt64(tailCount))
        tailCount += 1
        length += 1
        if tailCount == 8 {
            compress(tail)
            tail = 0
            tailCount = 0
        }
    }

    mutating func bytes(_ c: some Sequence<UInt8>) { for b in c { byte(b) } }

    /// `count:u64le bytes`, so that field boundaries are part of the hash.
    mutating func lengthPrefixed(_ c: some Collection<UInt8>) {
        var n = UInt64(c.count)
        for _ in 0..<8 {
            byte(UInt8(truncatingIfNeeded: n))
            n >>= 8
        }
        bytes(c)
    }

    mutating func finish() -> UInt64 {
        let b = (UInt64(truncatingIfNeeded: length) << 56) | tail
        compress(b)
        v2 ^= 0xFF
        for _ in 0..<4 { round() }
        return v0 ^ v1 ^ v2 ^ v3
    }
}
