/// The index of one item type: key → location, in key order.
///
/// A ``LayeredIndex``: the base run and delta run of the last checkpoint (mapped, searched in
/// place) under a ``DeltaTree`` of the changes since. The tree holds its keys in the narrowest
/// representation that fits every key it holds: ``Key8`` when all are 8 bytes (integer ids),
/// ``ShortKey`` up to 16 (UUIDs, short strings), else ``LongKey``. A key that does not fit
/// converts the tree once (O(tree size)), and it stays so; runs store bytes and never convert.
///
/// The representation never shows: every method takes and yields ``RecordKey``s, in byte order.
/// A value type with O(1) copies; a copy is never affected by later changes to the original.
/// Reads that reach a run throw `.corruption` for a damaged page.
package struct TypeIndex: Sendable {
    enum Storage: Sendable {
        case key8(LayeredIndex<Key8, PrimaryDelta>)
        case short(LayeredIndex<ShortKey, PrimaryDelta>)
        case long(LayeredIndex<LongKey, PrimaryDelta>)
    }

    var storage: Storage

    /// Held while a tree is out being changed, so that the tree is uniquely referenced and
    /// changed in place (never changed itself: it is always shared).
    private static let placeholder = Storage.key8(LayeredIndex())

    /// An empty index.
    package init() { storage = .key8(LayeredIndex()) }

    private init(storage: Storage) { self.storage = storage }

    /// An index of `base` (a primary base run) and `deltaRun` (a primary delta run over it), with
    /// no changes since. The tree's representation follows the base's key layout.
    package init(base: MappedRun?, deltaRun: MappedRun?) {
        switch base?.header.layout {
        case .fixed8?, nil: storage = .key8(LayeredIndex(base: base, deltaRun: deltaRun))
        case .fixed16?: storage = .short(LayeredIndex(base: base, deltaRun: deltaRun))
        case .variable?: storage = .short(LayeredIndex(base: base, deltaRun: deltaRun))
        }
    }

    /// An index of `elements`, which must be sorted by key with no key twice (checked: nil
    /// otherwise). Built bottom-up in O(n), in the narrowest representation that holds every key.
    package init?<S: Sequence>(sortedElements elements: S) where S.Element == (RecordKey, RecordLocation) {
        var keys: [RecordKey] = []
        var locations: [RecordLocation] = []
        for (k, l) in elements {
            keys.append(k)
            locations.append(l)
        }
        self.init(sortedKeys: keys, locations: locations)
    }

    /// An index of `keys[i]` → `locations[i]` of 8-byte keys; keys must ascend strictly (else
    /// nil). O(n), bottom-up.
    package init?(sortedKeys keys: [Key8], locations: [RecordLocation]) {
        guard keys.count == locations.count,
            let t = DeltaTree<Key8, PrimaryDelta>.build(
                arena: .shared,
                { b in
                    for i in keys.indices { b.append(keys[i], PrimaryDelta(location: locations[i], change: RunChange.newKey)) }
                })
        else { return nil }
        storage = .key8(LayeredIndex(tree: t))
    }

    /// The same for 16-byte keys.
    package init?(sortedKeys keys: [Key16], locations: [RecordLocation]) {
        self.init(sortedKeys: keys.map(\.recordKey), locations: locations)
    }

    /// The same for keys of any length, in the narrowest representation that holds them all.
    package init?(sortedKeys keys: [RecordKey], locations: [RecordLocation]) {
        guard keys.count == locations.count else { return nil }
        if !keys.isEmpty, keys.allSatisfy({ $0.count == 8 }) {
            self.init(sortedKeys: keys.compactMap(Key8.init), locations: locations)
            return
        }
        if keys.allSatisfy({ $0.count <= 16 }) {
            guard let l = Self.build(keys, locations, ShortKey.self) else { return nil }
            self.init(storage: .short(l))
        } else {
            guard let l = Self.build(keys, locations, LongKey.self) else { return nil }
            self.init(storage: .long(l))
        }
    }

    /// A tree-only index of `keys[i]` → `locations[i]` in representation `K`; nil if the keys do
    /// not ascend.
    private static func build<K: DeltaKey>(_ keys: [RecordKey], _ locations: [RecordLocation], _: K.Type) -> LayeredIndex<K, PrimaryDelta>?
    {
        DeltaTree<K, PrimaryDelta>.build(
            arena: .shared,
            { b in
                for i in keys.indices {
                    keys[i].withUnsafeBytes { _ = b.append(bytes: $0, PrimaryDelta(location: locations[i], change: RunChange.newKey)) }
                }
            }
        ).map { LayeredIndex(tree: $0) }
    }

    /// The number of entries. O(1).
    package var count: Int {
        switch storage {
        case .key8(let l): return l.count
        case .short(let l): return l.count
        case .long(let l): return l.count
        }
    }

    /// Whether the index has no entry.
    package var isEmpty: Bool { count == 0 }

    /// The location stored under `key`, or nil. O(log n) per layer.
    @inline(__always)
    package func location(_ key: RecordKey) throws -> RecordLocation? {
        try key.withUnsafeBytes { b in
            switch storage {
            case .key8(let l): return try l.find(b)?.location
            case .short(let l): return try l.find(b)?.location
            case .long(let l): return try l.find(b)?.location
            }
        }
    }

    /// Stores `location` under `key`; returns the location it replaces, or nil if the key is new.
    /// O(log n); converts the tree once if `key` does not fit its representation.
    @discardableResult
    package mutating func updateValue(_ location: RecordLocation, forKey key: RecordKey) throws -> RecordLocation? {
        try key.withUnsafeBytes { b in
            while true {
                switch storage {
                case .key8(var l):
                    guard let k = Key8(probe: b) else { break }
                    storage = Self.placeholder
                    defer { storage = .key8(l) }
                    return try l.set(location, for: b, key: k)
                case .short(var l):
                    guard let k = ShortKey(probe: b) else { break }
                    storage = Self.placeholder
                    defer { storage = .short(l) }
                    return try l.set(location, for: b, key: k)
                case .long(var l):
                    guard let k = LongKey(probe: b) else { break }
                    storage = Self.placeholder
                    defer { storage = .long(l) }
                    return try l.set(location, for: b, key: k)
                }
                widen(for: b.count)
            }
        }
    }

    /// Removes `key`; returns its location, or nil if it was not there. O(log n).
    @discardableResult
    package mutating func removeValue(forKey key: RecordKey) throws -> RecordLocation? {
        try key.withUnsafeBytes { b in
            while true {
                switch storage {
                case .key8(var l):
                    guard let k = Key8(probe: b) else { break }
                    storage = Self.placeholder
                    defer { storage = .key8(l) }
                    return try l.remove(b, key: k)
                case .short(var l):
                    guard let k = ShortKey(probe: b) else { break }
                    storage = Self.placeholder
                    defer { storage = .short(l) }
                    return try l.remove(b, key: k)
                case .long(var l):
                    guard let k = LongKey(probe: b) else { break }
                    storage = Self.placeholder
                    defer { storage = .long(l) }
                    return try l.remove(b, key: k)
                }
                // A key the tree cannot hold is not in it; the runs may still hold it.
                if try location(key) == nil { return nil }
                widen(for: b.count)
            }
        }
    }

    /// Converts the tree to a representation that holds keys of `length` bytes, keeping the runs.
    private mutating func widen(for length: Int) {
        switch storage {
        case .key8(let l):
            if length <= 16 { storage = .short(l.converted()) } else { storage = .long(l.converted()) }
        case .short(let l): storage = .long(l.converted())
        case .long: break
        }
    }

    // MARK: Order

    /// Calls `body` with every entry in key order, from the first key `>= start` (every entry if
    /// nil), until it returns false. O(log n) to start, then O(1) per entry.
    package func forEach(from start: RecordKey? = nil, _ body: (RecordKey, RecordLocation) throws -> Bool) throws {
        func walk<K>(_ l: LayeredIndex<K, PrimaryDelta>) throws {
            if let start {
                try start.withUnsafeBytes { s in try l.forEach(from: s) { k, v in try body(RecordKey(k), v.location) } }
            } else {
                try l.forEach(from: nil) { k, v in try body(RecordKey(k), v.location) }
            }
        }
        switch storage {
        case .key8(let l): try walk(l)
        case .short(let l): try walk(l)
        case .long(let l): try walk(l)
        }
    }

    /// Calls `body` with every entry in key order from the one at `offset`, until it returns
    /// false.
    package func forEach(fromOffset offset: Int, _ body: (RecordKey, RecordLocation) throws -> Bool) throws {
        switch storage {
        case .key8(let l): try l.forEach(fromOffset: offset) { k, v in try body(RecordKey(k), v.location) }
        case .short(let l): try l.forEach(fromOffset: offset) { k, v in try body(RecordKey(k), v.location) }
        case .long(let l): try l.forEach(fromOffset: offset) { k, v in try body(RecordKey(k), v.location) }
        }
    }

    /// How many keys are smaller than `key`. O(log n) per layer.
    package func rank(of key: RecordKey) throws -> Int {
        try key.withUnsafeBytes { b in
            switch storage {
            case .key8(let l): return try l.rank(b)
            case .short(let l): return try l.rank(b)
            case .long(let l): return try l.rank(b)
            }
        }
    }

    /// Every entry, in key order.
    package func elements() throws -> [(key: RecordKey, value: RecordLocation)] {
        var out: [(key: RecordKey, value: RecordLocation)] = []
        out.reserveCapacity(count)
        try forEach { k, v in
            out.append((k, v))
            return true
        }
        return out
    }

    /// The keys in order.
    package func keys() throws -> [RecordKey] { try elements().map(\.key) }

    /// Checks the tree's invariants (``DeltaTree/validate()``); returns what is wrong, or nil.
    package func validate() -> String? {
        switch storage {
        case .key8(let l): return l.tree.validate()
        case .short(let l): return l.tree.validate()
        case .long(let l): return l.tree.validate()
        }
    }

    // MARK: Layers

    /// The runs under the tree.
    package var runs: (base: MappedRun?, delta: MappedRun?) {
        switch storage {
        case .key8(let l): return (l.base, l.deltaRun)
        case .short(let l): return (l.base, l.deltaRun)
        case .long(let l): return (l.base, l.deltaRun)
        }
    }

    /// Entries in the tree (changes since the runs, tombstones included).
    package var treeCount: Int {
        switch storage {
        case .key8(let l): return l.tree.count
        case .short(let l): return l.tree.count
        case .long(let l): return l.tree.count
        }
    }

    /// Calls `body` with every entry of the tree (key bytes, entry) in key order.
    package func forEachChange(_ body: (UnsafeRawBufferPointer, PrimaryDelta) throws -> Bool) rethrows {
        switch storage {
        case .key8(let l): try l.tree.forEach { k, v in try k.withBytes { try body($0, v) } }
        case .short(let l): try l.tree.forEach { k, v in try k.withBytes { try body($0, v) } }
        case .long(let l): try l.tree.forEach { k, v in try k.withBytes { try body($0, v) } }
        }
    }
}

extension LayeredIndex where V == PrimaryDelta {
    /// Stores `location` under the key with `bytes` (`key` is the same key in the tree's
    /// representation); returns the location it replaces.
    @inline(__always)
    mutating func set(_ location: RecordLocation, for bytes: UnsafeRawBufferPointer, key: K) throws -> RecordLocation? {
        if !hasRuns {
            // No layer below: every entry is a new key.
            return tree.set(PrimaryDelta(location: location, change: RunChange.newKey), for: key)?.location
        }
        let (base, deltaRun) = (self.base, self.deltaRun)
        return try tree.update(key) { v in
            if let e = v {
                v = PrimaryDelta(location: location, change: e.isTombstone ? 0 : e.change)
                return e.isTombstone ? nil : e.location
            }
            let below = try Self.find(bytes, base: base, deltaRun: deltaRun)
            v = PrimaryDelta(location: location, change: below == nil ? RunChange.newKey : 0)
            return below?.location
        }
    }

    /// Removes the key with `bytes`; returns its location.
    mutating func remove(_ bytes: UnsafeRawBufferPointer, key: K) throws -> RecordLocation? {
        let (base, deltaRun) = (self.base, self.deltaRun)
        return try tree.update(key) { v in
            if let e = v {
                if e.isTombstone { return nil }
                v = e.change == RunChange.newKey ? nil : PrimaryDelta(location: e.location, change: RunChange.tombstone)
                return e.location
            }
            guard let below = try Self.find(bytes, base: base, deltaRun: deltaRun) else { return nil }
            v = PrimaryDelta(location: below.location, change: RunChange.tombstone)
            return below.location
        }
    }
}

extension LayeredIndex {
    /// The same layers with the tree in another key representation (which must hold every key
    /// of the tree).
    func converted<N: DeltaKey>() -> LayeredIndex<N, V> {
        let source = tree
        let t =
            DeltaTree<N, V>.build(
                arena: .shared,
                { b in
                    source.forEach { k, v in
                        k.withBytes { _ = b.append(bytes: $0, v) }
                        return true
                    }
                }) ?? DeltaTree()
        return LayeredIndex<N, V>(base: base, deltaRun: deltaRun, tree: t)
    }
}

extension TypeIndex: Equatable {
    /// Same keys with the same locations, in the same order, whatever the layers. O(n). A damaged
    /// run makes them unequal.
    package static func == (lhs: TypeIndex, rhs: TypeIndex) -> Bool {
        guard lhs.count == rhs.count, let a = try? lhs.elements(), let b = try? rhs.elements() else { return false }
        return a.elementsEqual(b) { $0.key == $1.key && $0.value == $1.value }
    }
}
