/// The key of a record: opaque bytes, compared byte-wise (unsigned, lexicographic).
///
/// Keys of up to 16 bytes (UUIDs, integers, short strings) are stored inline with no heap
/// allocation, which keeps the in-memory index small. The DataStore layer encodes ids so that
/// byte order is id order (Docs/FileFormat.md, "Keys").
public struct RecordKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    @usableFromInline
    enum Storage: Hashable, Sendable {
        case inline(UInt64, UInt64, UInt8)
        case heap([UInt8])
    }
    @usableFromInline let storage: Storage

    /// Maximum number of bytes kept inline.
    public static let inlineCapacity = 16

    /// Creates a key from bytes.
    public init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if bytes.count <= Self.inlineCapacity {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                var i = 0
                for b in bytes {
                    raw[i] = b
                    i += 1
                }
            }
            storage = .inline(words.0, words.1, UInt8(bytes.count))
        } else {
            storage = .heap(Array(bytes))
        }
    }

    /// Creates a key from bytes (what decoders read: the same key as ``init(_:)`` with a
    /// collection, without visiting the bytes one by one).
    public init(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= Self.inlineCapacity else {
            storage = .heap(Array(bytes))
            return
        }
        var words: (UInt64, UInt64) = (0, 0)
        if let base = bytes.baseAddress {
            withUnsafeMutableBytes(of: &words) { $0.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
        }
        storage = .inline(words.0, words.1, UInt8(bytes.count))
    }

    /// An inline key from its words in memory order (``Key8``, ``Key16``): `count` <= 16 bytes,
    /// the rest zero.
    @inline(__always)
    init(inlineWords a: UInt64, _ b: UInt64, count: UInt8) { storage = .inline(a, b, count) }

    /// Calls `body` with the key's bytes. The buffer is valid only inside `body`.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .inline(let a, let b, let n):
            var words = (a, b)
            return try Swift.withUnsafeBytes(of: &words) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(n)])) }
        case .heap(let bytes):
            return try bytes.withUnsafeBytes(body)
        }
    }

    /// The key's bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The number of bytes in the key.
    public var count: Int {
        switch storage {
        case .inline(_, _, let n): return Int(n)
        case .heap(let b): return b.count
        }
    }

    /// Byte-wise lexicographic order; a prefix sorts first.
    public static func < (lhs: RecordKey, rhs: RecordKey) -> Bool {
        // Inline keys: their bytes read as big-endian words compare as the bytes do (the index's
        // searches make this the hot comparison); the zero padding ties, so the length decides.
        if case .inline(let a0, let a1, let an) = lhs.storage, case .inline(let b0, let b1, let bn) = rhs.storage {
            let x0 = UInt64(bigEndian: a0)
            let y0 = UInt64(bigEndian: b0)
            if x0 != y0 { return x0 < y0 }
            let x1 = UInt64(bigEndian: a1)
            let y1 = UInt64(bigEndian: b1)
            if x1 != y1 { return x1 < y1 }
            return an < bn
        }
        return lhs.withUnsafeBytes { l in rhs.withUnsafeBytes { r in l.lexicographicallyPrecedes(r) } }
    }

    /// Hex of the bytes.
    public var description: String {
        withUnsafeBytes { $0.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined() }
    }
}
