/// An entry of at most 24 bytes (a number or a date and an integer id: `price`, `createdAt`) in
/// three big-endian words: 32 bytes a slot instead of ``IndexEntry``'s 64, compared as
/// ``IndexEntry`` compares the same bytes.
package struct IndexEntry24: Comparable, Hashable, Sendable {
    var w0: UInt64, w1: UInt64, w2: UInt64
    var n: UInt8

    /// The most bytes it holds.
    static let capacity = 24

    /// `entry` in this form, or nil if it is longer than 24 bytes.
    @inline(__always)
    init?(_ entry: IndexEntry) {
        guard case .inline(let w, let n) = entry.storage, n <= 24 else { return nil }
        w0 = w.w0
        w1 = w.w1
        w2 = w.w2
        self.n = n
    }

    /// The first 24 bytes of `entry`, which is longer.
    init(truncating entry: IndexEntry) {
        self =
            entry.withUnsafeBytes { raw in IndexEntry24(IndexEntry(UnsafeRawBufferPointer(rebasing: raw.prefix(24)))) }
            ?? IndexEntry24(w0: 0, w1: 0, w2: 0, n: 0)
    }

    private init(w0: UInt64, w1: UInt64, w2: UInt64, n: UInt8) {
        self.w0 = w0
        self.w1 = w1
        self.w2 = w2
        self.n = n
    }

    /// The entry.
    @inline(__always)
    var entry: IndexEntry { IndexEntry(words: .init(w0: w0, w1: w1, w2: w2, w3: 0, w4: 0, w5: 0, w6: 0), count: n) }

    @inline(__always)
    package static func < (a: IndexEntry24, b: IndexEntry24) -> Bool {
        if a.w0 != b.w0 { return a.w0 < b.w0 }
        if a.w1 != b.w1 { return a.w1 < b.w1 }
        if a.w2 != b.w2 { return a.w2 < b.w2 }
        return a.n < b.n
    }
}

/// The entries of one secondary index, in the narrowest form that holds them all, as the primary
/// index's ``TypeIndex`` does for keys: entries of up to 24 bytes (one number or date and an
/// integer id) in 32-byte slots, any other in ``IndexEntry``'s 64 (or a heap array past 56
/// bytes). An index starts narrow and is widened, once, by the first entry that does not fit.
/// Every operation takes and gives ``IndexEntry``s, in the same byte order whatever the form.
package enum SecondaryEntries: Sendable, Equatable {
    case narrow(OrderedTree<IndexEntry24, IndexEntryMark>)
    case wide(OrderedTree<IndexEntry, IndexEntryMark>)

    /// No entries.
    package init() { self = .narrow(OrderedTree()) }

    /// The entries `keys`, which must ascend strictly (else nil); built bottom-up in O(n).
    package init?(sortedKeys keys: [IndexEntry]) {
        var narrow: [IndexEntry24] = []
        narrow.reserveCapacity(keys.count)
        for k in keys {
            guard let n = IndexEntry24(k) else {
                guard let t = OrderedTree(sortedKeys: keys, values: Array(repeating: IndexEntryMark(), count: keys.count)) else {
                    return nil
                }
                self = .wide(t)
                return
            }
            narrow.append(n)
        }
        self.init(sortedNarrow: narrow)
    }

    /// The narrow entries `keys`, which must ascend strictly (else nil); built bottom-up in O(n).
    package init?(sortedNarrow keys: [IndexEntry24]) {
        guard let t = OrderedTree(sortedKeys: keys, values: Array(repeating: IndexEntryMark(), count: keys.count)) else { return nil }
        self = .narrow(t)
    }

    /// A wide tree, as it is (tests and tools build trees of entries directly).
    package init(_ tree: OrderedTree<IndexEntry, IndexEntryMark>) { self = .wide(tree) }

    /// The number of entries.
    package var count: Int {
        switch self {
        case .narrow(let t): return t.count
        case .wide(let t): return t.count
        }
    }

    /// Whether `entry` is one of the entries.
    package func contains(_ entry: IndexEntry) -> Bool {
        switch self {
        case .narrow(let t): return IndexEntry24(entry).map { t[$0] != nil } ?? false
        case .wide(let t): return t[entry] != nil
        }
    }

    /// How many entries are smaller than `entry`. O(log n).
    package func rank(of entry: IndexEntry) -> Int {
        switch self {
        case .wide(let t): return t.rank(of: entry)
        case .narrow(let t):
            if let k = IndexEntry24(entry) { return t.rank(of: k) }
            // Longer than any entry here: every entry up to and including its first 24 bytes
            // is smaller, and no entry lies between those bytes and it.
            let prefix = IndexEntry24(truncating: entry)
            return t.rank(of: prefix) + (t[prefix] == nil ? 0 : 1)
        }
    }

    /// Calls `body` with the entries from the first `>= start` (all if nil) in order, until it
    /// returns false.
    package func forEach(from start: IndexEntry? = nil, _ body: (IndexEntry) throws -> Bool) rethrows {
        switch self {
        case .wide(let t): try t.forEach(from: start) { e, _ in try body(e) }
        case .narrow(let t):
            guard let start else { return try t.forEach { e, _ in try body(e.entry) } }
            if let k = IndexEntry24(start) { return try t.forEach(from: k) { e, _ in try body(e.entry) } }
            try t.forEach(fromOffset: rank(of: start)) { e, _ in try body(e.entry) }
        }
    }

    /// Calls `body` with the entries below `end` (all if nil) in descending order, until it
    /// returns false.
    package func forEachReversed(below end: IndexEntry? = nil, _ body: (IndexEntry) throws -> Bool) rethrows {
        switch self {
        case .wide(let t): try t.forEachReversed(below: end) { e, _ in try body(e) }
        case .narrow(let t):
            guard let end else { return try t.forEachReversed { e, _ in try body(e.entry) } }
            if let k = IndexEntry24(end) { return try t.forEachReversed(below: k) { e, _ in try body(e.entry) } }
            // Below a longer entry: its first 24 bytes (if an entry), then everything below them.
            let prefix = IndexEntry24(truncating: end)
            if t[prefix] != nil, try !body(prefix.entry) { return }
            try t.forEachReversed(below: prefix) { e, _ in try body(e.entry) }
        }
    }

    /// Held by the enum while its tree is out being changed, so that the tree is uniquely
    /// referenced and changed in place.
    private static let placeholder = SecondaryEntries.narrow(OrderedTree())

    /// Removes the entries of `removing` that are here, then adds those of `inserting`, widening
    /// the tree first (once) if one of them does not fit the narrow form.
    package mutating func apply(removing: [IndexEntry], inserting: [IndexEntry]) {
        switch self {
        case .wide(var t):
            self = Self.placeholder
            for e in removing { t.removeValue(forKey: e) }
            for e in inserting { t.updateValue(IndexEntryMark(), forKey: e) }
            self = .wide(t)
        case .narrow(var t):
            guard inserting.allSatisfy({ IndexEntry24($0) != nil }) else {
                let all = t.keys.map(\.entry)
                self = .wide(OrderedTree(sortedKeys: all, values: Array(repeating: IndexEntryMark(), count: all.count)) ?? OrderedTree())
                return apply(removing: removing, inserting: inserting)
            }
            self = Self.placeholder
            for e in removing { if let k = IndexEntry24(e) { t.removeValue(forKey: k) } }
            for e in inserting { if let k = IndexEntry24(e) { t.updateValue(IndexEntryMark(), forKey: k) } }
            self = .narrow(t)
        }
    }

    /// Adds `entry`.
    package mutating func insert(_ entry: IndexEntry) { apply(removing: [], inserting: [entry]) }

    /// Removes `entry` if it is one of the entries.
    package mutating func remove(_ entry: IndexEntry) { apply(removing: [entry], inserting: []) }

    /// ``insert(_:)``, with the signature of ``OrderedTree/updateValue(_:forKey:)``.
    package mutating func updateValue(_ mark: IndexEntryMark, forKey entry: IndexEntry) { insert(entry) }

    /// ``remove(_:)``, with the signature of ``OrderedTree/removeValue(forKey:)``.
    package mutating func removeValue(forKey entry: IndexEntry) { remove(entry) }

    /// The entries in order.
    package var keys: [IndexEntry] {
        var out: [IndexEntry] = []
        out.reserveCapacity(count)
        forEach { e in
            out.append(e)
            return true
        }
        return out
    }

    /// The form's bytes per entry slot (for memory estimates).
    package var slotBytes: Int {
        switch self {
        case .narrow: return MemoryLayout<IndexEntry24>.stride
        case .wide: return MemoryLayout<IndexEntry>.stride
        }
    }

    /// Equal entries, whatever the forms.
    package static func == (a: SecondaryEntries, b: SecondaryEntries) -> Bool {
        switch (a, b) {
        case (.narrow(let x), .narrow(let y)): return x == y
        case (.wide(let x), .wide(let y)): return x == y
        default: return a.count == b.count && a.keys == b.keys
        }
    }
}
