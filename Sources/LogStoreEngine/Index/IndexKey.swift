/// A key representation a per-type index (``TypeIndex``) can hold its keys in. Each orders its
/// values exactly as ``RecordKey`` orders the same bytes (Docs/FileFormat.md §9), so a type's
/// iteration order does not depend on the representation its index chose.
package protocol IndexKey: Comparable, Sendable {
    /// The key in this representation, or nil if its bytes do not fit it.
    init?(_ key: RecordKey)
    /// The key's bytes as a ``RecordKey``.
    var recordKey: RecordKey { get }
}

/// A key of exactly 8 bytes (integer ids, FileFormat.md §9) as one big-endian word: 8 bytes in
/// the index instead of ``RecordKey``'s 24, compared with one integer comparison (as LMDB's
/// `MDB_INTEGERKEY` databases do).
package struct Key8: IndexKey {
    /// The key's bytes read as a big-endian integer: its order is the bytes' order.
    package var word: UInt64

    /// The key whose bytes are `word` in big-endian order.
    @inline(__always)
    package init(word: UInt64) { self.word = word }

    @inline(__always)
    package init?(_ key: RecordKey) {
        guard case .inline(let a, _, 8) = key.storage else { return nil }
        word = UInt64(bigEndian: a)
    }

    package var recordKey: RecordKey { RecordKey(inlineWords: word.bigEndian, 0, count: 8) }

    @inline(__always)
    package static func < (a: Key8, b: Key8) -> Bool { a.word < b.word }
}

/// A key of exactly 16 bytes (UUID ids, FileFormat.md §9) as two big-endian words: 16 bytes in the
/// index instead of ``RecordKey``'s 24.
package struct Key16: IndexKey {
    /// The first and last 8 bytes, each read as a big-endian integer.
    package var high: UInt64
    package var low: UInt64

    /// The key whose bytes are `high` then `low`, each in big-endian order.
    @inline(__always)
    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    @inline(__always)
    package init?(_ key: RecordKey) {
        guard case .inline(let a, let b, 16) = key.storage else { return nil }
        high = UInt64(bigEndian: a)
        low = UInt64(bigEndian: b)
    }

    package var recordKey: RecordKey { RecordKey(inlineWords: high.bigEndian, low.bigEndian, count: 16) }

    @inline(__always)
    package static func < (a: Key16, b: Key16) -> Bool { a.high != b.high ? a.high < b.high : a.low < b.low }
}

extension RecordKey: IndexKey {
    /// Any key (the representation of a type whose keys are not all 8 or all 16 bytes long).
    package init?(_ key: RecordKey) { self = key }
    package var recordKey: RecordKey { self }
}
