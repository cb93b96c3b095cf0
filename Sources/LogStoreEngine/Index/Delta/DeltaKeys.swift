/// A key representation a ``DeltaTree`` stores inline in its nodes: plain bytes, no references,
/// ordered as the key bytes it stands for are (unsigned, lexicographic, a prefix first), so that
/// copying a node is copying its memory.
///
/// ``Key8`` (integer ids), ``ShortKey`` (up to 16 bytes), ``IndexEntry24`` and ``InlineEntry``
/// (secondary entries up to 24 and 56 bytes) hold their bytes; ``LongKey`` holds a pointer into
/// its tree's ``KeyHeap``, for keys of any length.
package protocol DeltaKey: BitwiseCopyable, Comparable, Sendable {
    /// Whether stored keys live in the tree's ``KeyHeap``.
    static var usesHeap: Bool { get }
    /// A key to store, its bytes copied (into `heap` when ``usesHeap``); nil if they do not fit.
    init?(storing bytes: UnsafeRawBufferPointer, heap: KeyHeap?)
    /// A key to search with, which may read `bytes` in place (valid only while they are); nil if
    /// no key of this representation has these bytes.
    init?(probe bytes: UnsafeRawBufferPointer)
    /// Calls `body` with the key's bytes (valid only inside it).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension DeltaKey {
    /// How the key compares with `bytes`: negative, zero or positive.
    @inline(__always)
    func compare(_ bytes: UnsafeRawBufferPointer) -> Int { withBytes { RunKeys.compare($0, bytes) } }
}

extension Key8: DeltaKey {
    package static var usesHeap: Bool { false }

    @inline(__always)
    package init?(storing bytes: UnsafeRawBufferPointer, heap: KeyHeap?) { self.init(probe: bytes) }

    @inline(__always)
    package init?(probe bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 8 else { return nil }
        self.init(word: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
    }

    @inline(__always)
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: word.bigEndian) { try body($0) }
    }
}

/// A key of at most 16 bytes as two big-endian words and a length (UUIDs, short string ids).
package struct ShortKey: DeltaKey {
    var high: UInt64
    var low: UInt64
    var count: UInt8

    package static var usesHeap: Bool { false }

    @inline(__always)
    package init?(storing bytes: UnsafeRawBufferPointer, heap: KeyHeap?) { self.init(probe: bytes) }

    @inline(__always)
    package init?(probe bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= 16 else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        if let base = bytes.baseAddress {
            withUnsafeMutableBytes(of: &words) { $0.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
        }
        high = UInt64(bigEndian: words.0)
        low = UInt64(bigEndian: words.1)
        count = UInt8(bytes.count)
    }

    @inline(__always)
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(count)])) }
    }

    @inline(__always)
    package static func < (a: ShortKey, b: ShortKey) -> Bool {
        if a.high != b.high { return a.high < b.high }
        if a.low != b.low { return a.low < b.low }
        return a.count < b.count
    }
}

extension IndexEntry24: DeltaKey {
    package static var usesHeap: Bool { false }

    @inline(__always)
    package init?(storing bytes: UnsafeRawBufferPointer, heap: KeyHeap?) { self.init(probe: bytes) }

    @inline(__always)
    package init?(probe bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= IndexEntry24.capacity else { return nil }
        self.init(IndexEntry(bytes))
    }

    @inline(__always)
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: (w0.bigEndian, w1.bigEndian, w2.bigEndian)) {
            try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(n)]))
        }
    }
}

/// A secondary entry of at most 56 bytes as seven big-endian words and a length: ``IndexEntry``'s
/// inline form, with no enum around it.
package struct InlineEntry: DeltaKey {
    var words: IndexEntry.Words
    var count: UInt8

    package static var usesHeap: Bool { false }

    @inline(__always)
    package init?(storing bytes: UnsafeRawBufferPointer, heap: KeyHeap?) { self.init(probe: bytes) }

    @inline(__always)
    package init?(probe bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= IndexEntry.inlineCapacity, case .inline(let w, let n) = IndexEntry(bytes).storage else { return nil }
        words = w
        count = n
    }

    @inline(__always)
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try IndexEntry(words: words, count: count).withUnsafeBytes(body)
    }

    @inline(__always)
    package static func < (a: InlineEntry, b: InlineEntry) -> Bool {
        let x = a.words
        let y = b.words
        if x.w0 != y.w0 { return x.w0 < y.w0 }
        if x.w1 != y.w1 { return x.w1 < y.w1 }
        if x.w2 != y.w2 { return x.w2 < y.w2 }
        if x.w3 != y.w3 { return x.w3 < y.w3 }
        if x.w4 != y.w4 { return x.w4 < y.w4 }
        if x.w5 != y.w5 { return x.w5 < y.w5 }
        if x.w6 != y.w6 { return x.w6 < y.w6 }
        return a.count < b.count
    }

    @inline(__always)
    package static func == (a: InlineEntry, b: InlineEntry) -> Bool { a.words == b.words && a.count == b.count }
}

/// A key of any length: its first 8 bytes as a big-endian word (most comparisons end there), its
/// length, and a pointer to its bytes in the tree's ``KeyHeap`` (or, for a probe, in the caller's
/// buffer). `@unchecked Sendable`: the bytes it points to never change.
package struct LongKey: DeltaKey, @unchecked Sendable {
    var head: UInt64
    var length: Int
    var bytes: UnsafeRawPointer?

    package static var usesHeap: Bool { true }

    package init?(storing bytes: UnsafeRawBufferPointer, heap: KeyHeap?) {
        guard let heap else { return nil }
        self.init(head: bytes, at: heap.store(bytes), count: bytes.count)
    }

    @inline(__always)
    package init?(probe bytes: UnsafeRawBufferPointer) { self.init(head: bytes, at: bytes.baseAddress, count: bytes.count) }

    @inline(__always)
    private init(head source: UnsafeRawBufferPointer, at pointer: UnsafeRawPointer?, count: Int) {
        var word: UInt64 = 0
        if let base = source.baseAddress {
            withUnsafeMutableBytes(of: &word) { $0.baseAddress?.copyMemory(from: base, byteCount: min(8, source.count)) }
        }
        head = UInt64(bigEndian: word)
        length = count
        bytes = pointer
    }

    @inline(__always)
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: bytes, count: length))
    }

    @inline(__always)
    package static func < (a: LongKey, b: LongKey) -> Bool {
        if a.head != b.head { return a.head < b.head }
        return RunKeys.compare(
            UnsafeRawBufferPointer(start: a.bytes, count: a.length), UnsafeRawBufferPointer(start: b.bytes, count: b.length)) < 0
    }

    @inline(__always)
    package static func == (a: LongKey, b: LongKey) -> Bool {
        a.head == b.head && a.length == b.length
            && RunKeys.compare(
                UnsafeRawBufferPointer(start: a.bytes, count: a.length), UnsafeRawBufferPointer(start: b.bytes, count: b.length)) == 0
    }
}

/// The bytes of one delta tree history's ``LongKey``s: appended in chunks, never freed one by
/// one, all freed when the last version of the history goes away. A history whose heap holds
/// much more than its live keys is copied into a fresh one (``DeltaTree``'s compaction), so the
/// garbage stays bounded. Written only by the history's writer; `@unchecked Sendable`: bytes once
/// written never change.
package final class KeyHeap: @unchecked Sendable {
    private var chunks: [UnsafeMutableRawPointer] = []
    private var used = 0
    private var capacity = 0
    /// Bytes stored so far (live and dead keys).
    private(set) var storedBytes = 0
    private static let chunk = 64 << 10

    init() {}

    /// Copies `bytes` in; returns where they are (valid while the heap lives).
    func store(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return nil }
        storedBytes += bytes.count
        if bytes.count > Self.chunk / 4 {
            let own = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 8)
            own.copyMemory(from: source, byteCount: bytes.count)
            // Kept at the front: the bump chunk stays last.
            chunks.insert(own, at: 0)
            return UnsafeRawPointer(own)
        }
        if used + bytes.count > capacity || chunks.isEmpty {
            chunks.append(.allocate(byteCount: Self.chunk, alignment: 8))
            used = 0
            capacity = Self.chunk
        }
        let p = chunks[chunks.count - 1] + used
        p.copyMemory(from: source, byteCount: bytes.count)
        used += bytes.count
        return UnsafeRawPointer(p)
    }

    deinit { for c in chunks { c.deallocate() } }
}
