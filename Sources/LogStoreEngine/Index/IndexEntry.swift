/// One secondary-index entry: the bytes ``IndexKeyEncoding`` gives a record (its indexed values,
/// then its key), compared byte-wise (unsigned, lexicographic, a prefix first) like
/// ``RecordKey``.
///
/// Entries of up to ``inlineCapacity`` bytes (two numbers and a short string, or a number and a
/// name, with an integer or UUID id) are held inline, in seven big-endian words: no heap buffer
/// per entry, a comparison is a few integer comparisons with no pointer to follow, and copying a
/// tree leaf (``OrderedTree``'s path copying) retains nothing. Longer entries keep their bytes in
/// a heap array. A ``RecordKey`` inlines only 16 bytes, which no entry with a string fits: held
/// as one, an index over 1M records would cost a heap array (32-byte header, malloc overhead) per
/// entry, and inserting into it a cache miss per comparison (Docs/Performance.md, "Measured choices").
public struct IndexEntry: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Seven words of an inline entry, each its 8 bytes read as a big-endian integer (zero past
    /// the entry's end), so that comparing words in order compares the bytes.
    struct Words: Hashable, Sendable {
        var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64, w4: UInt64, w5: UInt64, w6: UInt64
    }

    enum Storage: Hashable, Sendable {
        case inline(Words, UInt8)
        case heap([UInt8])
    }

    let storage: Storage

    /// The most bytes an entry holds inline.
    public static let inlineCapacity = 56

    /// The entry of `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= Self.inlineCapacity else {
            storage = .heap(Array(bytes))
            return
        }
        var w = Words(w0: 0, w1: 0, w2: 0, w3: 0, w4: 0, w5: 0, w6: 0)
        if let base = bytes.baseAddress {
            withUnsafeMutableBytes(of: &w) { $0.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
        }
        w = Words(
            w0: UInt64(bigEndian: w.w0), w1: UInt64(bigEndian: w.w1), w2: UInt64(bigEndian: w.w2), w3: UInt64(bigEndian: w.w3),
            w4: UInt64(bigEndian: w.w4), w5: UInt64(bigEndian: w.w5), w6: UInt64(bigEndian: w.w6))
        storage = .inline(w, UInt8(bytes.count))
    }

    /// An inline entry of `count` (<= 56) bytes, from its words.
    @inline(__always)
    init(words: Words, count: UInt8) { storage = .inline(words, count) }

    /// The entry of `bytes`.
    public init(_ bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { IndexEntry($0) }
    }

    /// Calls `body` with the entry's bytes. The buffer is valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .inline(let w, let n):
            var memory = Words(
                w0: w.w0.bigEndian, w1: w.w1.bigEndian, w2: w.w2.bigEndian, w3: w.w3.bigEndian, w4: w.w4.bigEndian, w5: w.w5.bigEndian,
                w6: w.w6.bigEndian)
            return try Swift.withUnsafeBytes(of: &memory) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(n)])) }
        case .heap(let bytes):
            return try bytes.withUnsafeBytes(body)
        }
    }

    /// The entry's bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The number of bytes in the entry.
    public var count: Int {
        switch storage {
        case .inline(_, let n): return Int(n)
        case .heap(let b): return b.count
        }
    }

    /// Whether the entry's bytes are held inline (for memory estimates).
    public var isInline: Bool {
        if case .inline = storage { return true }
        return false
    }

    /// Byte-wise lexicographic order; a prefix sorts first.
    public static func < (lhs: IndexEntry, rhs: IndexEntry) -> Bool {
        if case .inline(let a, let an) = lhs.storage, case .inline(let b, let bn) = rhs.storage {
            // Zero padding ties with zero bytes: then the shorter entry (a prefix) comes first.
            if a.w0 != b.w0 { return a.w0 < b.w0 }
            if a.w1 != b.w1 { return a.w1 < b.w1 }
            if a.w2 != b.w2 { return a.w2 < b.w2 }
            if a.w3 != b.w3 { return a.w3 < b.w3 }
            if a.w4 != b.w4 { return a.w4 < b.w4 }
            if a.w5 != b.w5 { return a.w5 < b.w5 }
            if a.w6 != b.w6 { return a.w6 < b.w6 }
            return an < bn
        }
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in a.lexicographicallyPrecedes(b) } }
    }

    /// The entry in hex.
    public var description: String {
        withUnsafeBytes { $0.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }
    }
}
