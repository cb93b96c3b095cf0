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

/// The entries of one secondary index: a ``LayeredIndex`` of entry bytes (base run, delta run,
/// and a ``DeltaTree`` of the changes since), whose tree holds entries in the narrowest form that
/// fits them all, as the primary index's ``TypeIndex`` does for keys: up to 24 bytes (one number
/// or date and an integer id) in 32-byte slots, up to 56 in 64, any other length in a key heap.
/// The tree is widened, once, by the first entry that does not fit. Every operation takes and
/// gives ``IndexEntry``s, in the same byte order whatever the form. Reads that reach a run throw
/// `.corruption` for a damaged page.
package enum SecondaryEntries: Sendable {
    case narrow(LayeredIndex<IndexEntry24, SecondaryDelta>)
    case wide(LayeredIndex<InlineEntry, SecondaryDelta>)
    case long(LayeredIndex<LongKey, SecondaryDelta>)

    /// No entries.
    package init() { self = .narrow(LayeredIndex()) }

    /// The entries of `base` (a secondary base run) and `deltaRun` (a secondary delta run over
    /// it), with no changes since.
    package init(base: MappedRun?, deltaRun: MappedRun?) { self = .narrow(LayeredIndex(base: base, deltaRun: deltaRun)) }

    /// The entries `keys`, which must ascend strictly (else nil); built bottom-up in O(n).
    package init?(sortedKeys keys: [IndexEntry]) {
        func build<K: DeltaKey>(_: K.Type) -> LayeredIndex<K, SecondaryDelta>? {
            DeltaTree<K, SecondaryDelta>.build(
                arena: .shared,
                { b in
                    for e in keys { e.withUnsafeBytes { _ = b.append(bytes: $0, SecondaryDelta(change: RunChange.newKey)) } }
                }
            ).map { LayeredIndex(tree: $0) }
        }
        let longest = keys.reduce(0) { max($0, $1.count) }
        if longest <= IndexEntry24.capacity {
            guard let l = build(IndexEntry24.self) else { return nil }
            self = .narrow(l)
        } else if longest <= IndexEntry.inlineCapacity {
            guard let l = build(InlineEntry.self) else { return nil }
            self = .wide(l)
        } else {
            guard let l = build(LongKey.self) else { return nil }
            self = .long(l)
        }
    }

    /// The narrow entries `keys`, which must ascend strictly (else nil); built bottom-up in O(n).
    package init?(sortedNarrow keys: [IndexEntry24]) {
        guard
            let t = DeltaTree<IndexEntry24, SecondaryDelta>.build(
                arena: .shared,
                { b in
                    for k in keys { b.append(k, SecondaryDelta(change: RunChange.newKey)) }
                })
        else { return nil }
        self = .narrow(LayeredIndex(tree: t))
    }

    /// The entries of `tree` (tests and tools build trees of entries directly).
    package init(_ tree: OrderedTree<IndexEntry, IndexEntryMark>) { self = SecondaryEntries(sortedKeys: tree.keys) ?? SecondaryEntries() }

    /// The number of entries. O(1).
    package var count: Int {
        switch self {
        case .narrow(let l): return l.count
        case .wide(let l): return l.count
        case .long(let l): return l.count
        }
    }

    /// Whether `entry` is one of the entries.
    package func contains(_ entry: IndexEntry) throws -> Bool {
        try entry.withUnsafeBytes { b in
            switch self {
            case .narrow(let l): return try l.find(b) != nil
            case .wide(let l): return try l.find(b) != nil
            case .long(let l): return try l.find(b) != nil
            }
        }
    }

    /// How many entries are smaller than `entry`. O(log n) per layer.
    package func rank(of entry: IndexEntry) throws -> Int {
        try entry.withUnsafeBytes { b in
            switch self {
            case .narrow(let l): return try l.rank(b)
            case .wide(let l): return try l.rank(b)
            case .long(let l): return try l.rank(b)
            }
        }
    }

    /// Calls `body` with the entries from the first `>= start` (all if nil) in order, until it
    /// returns false.
    package func forEach(from start: IndexEntry? = nil, _ body: (IndexEntry) throws -> Bool) throws {
        try walk(start, reverse: false, body)
    }

    /// Calls `body` with the entries below `end` (all if nil) in descending order, until it
    /// returns false.
    package func forEachReversed(below end: IndexEntry? = nil, _ body: (IndexEntry) throws -> Bool) throws {
        try walk(end, reverse: true, body)
    }

    private func walk(_ bound: IndexEntry?, reverse: Bool, _ body: (IndexEntry) throws -> Bool) throws {
        func run<K>(_ l: LayeredIndex<K, SecondaryDelta>) throws {
            if let bound {
                try bound.withUnsafeBytes { b in try l.forEach(from: b, reverse: reverse) { e, _ in try body(IndexEntry(e)) } }
            } else {
                try l.forEach(from: nil, reverse: reverse) { e, _ in try body(IndexEntry(e)) }
            }
        }
        switch self {
        case .narrow(let l): try run(l)
        case .wide(let l): try run(l)
        case .long(let l): try run(l)
        }
    }

    /// Held by the enum while its tree is out being changed, so that the tree is uniquely
    /// referenced and changed in place.
    private static let placeholder = SecondaryEntries()

    /// Removes the entries of `removing` that are here, then adds those of `inserting`, widening
    /// the tree first (once) if one of them does not fit its form.
    package mutating func apply(removing: [IndexEntry], inserting: [IndexEntry]) throws {
        let longest = inserting.reduce(0) { max($0, $1.count) }
        widen(toHold: longest)
        func change<K>(_ l: inout LayeredIndex<K, SecondaryDelta>) throws {
            if try l.merge(removing: removing, inserting: inserting) { return }
            for e in removing {
                try e.withUnsafeBytes { b in
                    if let k = K(probe: b) { try l.remove(b, key: k) }
                }
            }
            for e in inserting {
                try e.withUnsafeBytes { b in
                    if let k = K(probe: b) { try l.insert(b, key: k) }
                }
            }
        }
        // A removed entry too long for the tree's form is not in the tree; a run may hold it.
        for e in removing where e.count > longest {
            if try contains(e) { widen(toHold: e.count) }
        }
        switch self {
        case .narrow(var l):
            self = Self.placeholder
            defer { self = .narrow(l) }
            try change(&l)
        case .wide(var l):
            self = Self.placeholder
            defer { self = .wide(l) }
            try change(&l)
        case .long(var l):
            self = Self.placeholder
            defer { self = .long(l) }
            try change(&l)
        }
    }

    /// Converts the tree to a form that holds entries of `length` bytes, keeping the runs.
    private mutating func widen(toHold length: Int) {
        switch self {
        case .narrow(let l) where length > IndexEntry24.capacity:
            self = length <= IndexEntry.inlineCapacity ? .wide(l.converted()) : .long(l.converted())
        case .wide(let l) where length > IndexEntry.inlineCapacity:
            self = .long(l.converted())
        default: break
        }
    }

    /// Adds `entry`.
    package mutating func insert(_ entry: IndexEntry) throws { try apply(removing: [], inserting: [entry]) }

    /// Removes `entry` if it is one of the entries.
    package mutating func remove(_ entry: IndexEntry) throws { try apply(removing: [entry], inserting: []) }

    /// The entries in order.
    package func keys() throws -> [IndexEntry] {
        var out: [IndexEntry] = []
        out.reserveCapacity(count)
        try forEach { e in
            out.append(e)
            return true
        }
        return out
    }

    /// The form's bytes per entry slot in the tree (for memory estimates).
    package var slotBytes: Int {
        switch self {
        case .narrow: return MemoryLayout<IndexEntry24>.stride + 1
        case .wide: return MemoryLayout<InlineEntry>.stride + 1
        case .long: return MemoryLayout<LongKey>.stride + 1
        }
    }

    /// The runs under the tree.
    package var runs: (base: MappedRun?, delta: MappedRun?) {
        switch self {
        case .narrow(let l): return (l.base, l.deltaRun)
        case .wide(let l): return (l.base, l.deltaRun)
        case .long(let l): return (l.base, l.deltaRun)
        }
    }

    /// Entries in the tree (changes since the runs, tombstones included).
    package var treeCount: Int {
        switch self {
        case .narrow(let l): return l.tree.count
        case .wide(let l): return l.tree.count
        case .long(let l): return l.tree.count
        }
    }

    /// Calls `body` with every entry of the tree (entry bytes, change) in order.
    package func forEachChange(_ body: (UnsafeRawBufferPointer, SecondaryDelta) throws -> Bool) rethrows {
        switch self {
        case .narrow(let l): try l.tree.forEach { k, v in try k.withBytes { try body($0, v) } }
        case .wide(let l): try l.tree.forEach { k, v in try k.withBytes { try body($0, v) } }
        case .long(let l): try l.tree.forEach { k, v in try k.withBytes { try body($0, v) } }
        }
    }
}

extension SecondaryEntries: Equatable {
    /// Equal entries, whatever the forms and layers. A damaged run makes them unequal.
    package static func == (a: SecondaryEntries, b: SecondaryEntries) -> Bool {
        guard a.count == b.count, let x = try? a.keys(), let y = try? b.keys() else { return false }
        return x == y
    }
}

extension LayeredIndex where V == SecondaryDelta {
    /// Removes the entries of `removing` and adds those of `inserting` (each list ascending) in
    /// one merge of the tree (``DeltaTree/merge(_:_:)``), with the same result as removing and
    /// inserting them one by one. Entries that do not fit the tree's form are skipped, as the
    /// one-by-one path skips them. Returns false, having changed nothing, when the batch cannot
    /// be merged: a form with a key heap, lists out of order, or an entry in both lists.
    mutating func merge(removing: [IndexEntry], inserting: [IndexEntry]) throws -> Bool {
        guard !K.usesHeap, removing.count + inserting.count > 1 else { return false }
        var keys: [K] = []
        var inserts: [Bool] = []
        var inRuns: [Bool] = []
        keys.reserveCapacity(removing.count + inserting.count)
        inserts.reserveCapacity(removing.count + inserting.count)
        let runs = hasRuns
        let (base, deltaRun) = (self.base, self.deltaRun)
        var i = 0
        var j = 0
        while i < removing.count || j < inserting.count {
            let insert: Bool
            if i < removing.count && j < inserting.count {
                if removing[i] == inserting[j] { return false }
                insert = inserting[j] < removing[i]
            } else {
                insert = j < inserting.count
            }
            let e = insert ? inserting[j] : removing[i]
            if insert { j += 1 } else { i += 1 }
            let found: (K, Bool)? = try e.withUnsafeBytes { b in
                guard let k = K(probe: b) else { return nil }
                return (k, runs ? try Self.find(b, base: base, deltaRun: deltaRun) != nil : false)
            }
            guard let (k, below) = found else { continue }
            keys.append(k)
            inserts.append(insert)
            if runs { inRuns.append(below) }
        }
        let newKey = SecondaryDelta(change: RunChange.newKey)
        let tombstone = SecondaryDelta(change: RunChange.tombstone)
        return tree.merge(keys) { idx, current in
            if inserts[idx] {
                guard runs else { return newKey }
                if let e = current { return e.isTombstone ? nil : e }
                return inRuns[idx] ? nil : newKey
            }
            guard runs else { return nil }
            if let e = current { return e.isTombstone ? e : nil }
            return inRuns[idx] ? tombstone : nil
        }
    }

    /// Adds the entry with `bytes` (`key` in the tree's form).
    mutating func insert(_ bytes: UnsafeRawBufferPointer, key: K) throws {
        if !hasRuns {
            tree.set(SecondaryDelta(change: RunChange.newKey), for: key)
            return
        }
        let (base, deltaRun) = (self.base, self.deltaRun)
        try tree.update(key) { v in
            if let e = v {
                if e.isTombstone { v = nil }
                return
            }
            if try Self.find(bytes, base: base, deltaRun: deltaRun) != nil { return }
            v = SecondaryDelta(change: RunChange.newKey)
        }
    }

    /// Removes the entry with `bytes` if it is there.
    mutating func remove(_ bytes: UnsafeRawBufferPointer, key: K) throws {
        if !hasRuns {
            tree.remove(key)
            return
        }
        let (base, deltaRun) = (self.base, self.deltaRun)
        try tree.update(key) { v in
            if let e = v {
                if !e.isTombstone { v = nil }
                return
            }
            if try Self.find(bytes, base: base, deltaRun: deltaRun) != nil { v = SecondaryDelta(change: RunChange.tombstone) }
        }
    }
}
