/// The index of one item type: key → location, in key order.
///
/// An ``OrderedTree`` whose keys take the narrowest representation that holds every key of the
/// type: ``Key8`` when all keys are 8 bytes (integer ids), ``Key16`` when all are 16 (UUIDs), else
/// ``RecordKey``. An entry is then 8 + 32, 16 + 32 or 24 + 32 bytes. The first key decides; a key
/// that does not fit converts the index to ``RecordKey`` once (O(n)), and it stays so.
///
/// The representation never shows: every method takes and yields ``RecordKey``s, and each
/// representation orders keys as their bytes order (``IndexKey``). A value type with O(1) copies
/// (the trees are persistent); a copy is never affected by later changes to the original.
package struct TypeIndex: Sendable {
    enum Storage: Sendable {
        /// No entries (also the placeholder while a tree is mutated, so that it stays unique).
        case empty
        case key8(OrderedTree<Key8, RecordLocation>)
        case key16(OrderedTree<Key16, RecordLocation>)
        case bytes(OrderedTree<RecordKey, RecordLocation>)
    }

    var storage: Storage

    /// An empty index.
    package init() { storage = .empty }

    /// An index of `elements`, which must be sorted by key with no key twice (checked: nil
    /// otherwise). Built bottom-up in O(n) (``OrderedTree/init(sortedElements:)``), in the
    /// narrowest representation that holds every key.
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
    /// nil). O(n), bottom-up (a checkpoint's entries).
    package init?(sortedKeys keys: [Key8], locations: [RecordLocation]) {
        guard let t = OrderedTree(sortedKeys: keys, values: locations) else { return nil }
        storage = t.isEmpty ? .empty : .key8(t)
    }

    /// The same for 16-byte keys.
    package init?(sortedKeys keys: [Key16], locations: [RecordLocation]) {
        guard let t = OrderedTree(sortedKeys: keys, values: locations) else { return nil }
        storage = t.isEmpty ? .empty : .key16(t)
    }

    /// The same for keys of any length, in the narrowest representation that holds them all.
    package init?(sortedKeys keys: [RecordKey], locations: [RecordLocation]) {
        let narrow8 = keys.first?.count == 8 ? keys.compactMap(Key8.init) : []
        if !keys.isEmpty && narrow8.count == keys.count {
            self.init(sortedKeys: narrow8, locations: locations)
            return
        }
        let narrow16 = keys.first?.count == 16 ? keys.compactMap(Key16.init) : []
        if !keys.isEmpty && narrow16.count == keys.count {
            self.init(sortedKeys: narrow16, locations: locations)
            return
        }
        guard let t = OrderedTree(sortedKeys: keys, values: locations) else { return nil }
        self.init(storage: t.isEmpty ? .empty : .bytes(t))
    }

    private init(storage: Storage) { self.storage = storage }

    /// The number of entries. O(1).
    package var count: Int {
        switch storage {
        case .empty: return 0
        case .key8(let t): return t.count
        case .key16(let t): return t.count
        case .bytes(let t): return t.count
        }
    }

    /// Whether the index has no entry. O(1).
    package var isEmpty: Bool { count == 0 }

    /// The location stored under `key`, or nil. O(log n).
    package subscript(key: RecordKey) -> RecordLocation? {
        switch storage {
        case .empty: return nil
        case .key8(let t): return Key8(key).flatMap { t[$0] }
        case .key16(let t): return Key16(key).flatMap { t[$0] }
        case .bytes(let t): return t[key]
        }
    }

    /// Stores `location` under `key`; returns the location it replaces, or nil if the key is new.
    /// O(log n); O(n) once if `key` does not fit the representation (see the type's comment).
    @discardableResult
    package mutating func updateValue(_ location: RecordLocation, forKey key: RecordKey) -> RecordLocation? {
        switch storage {
        case .empty:
            if let k = Key8(key) {
                storage = .key8(OrderedTree(root: .init(leafKeys: [k], values: [location])))
            } else if let k = Key16(key) {
                storage = .key16(OrderedTree(root: .init(leafKeys: [k], values: [location])))
            } else {
                storage = .bytes(OrderedTree(root: .init(leafKeys: [key], values: [location])))
            }
            return nil
        case .key8(var t):
            if let k = Key8(key) {
                storage = .empty
                defer { storage = .key8(t) }
                return t.updateValue(location, forKey: k)
            }
        case .key16(var t):
            if let k = Key16(key) {
                storage = .empty
                defer { storage = .key16(t) }
                return t.updateValue(location, forKey: k)
            }
        case .bytes(var t):
            storage = .empty
            defer { storage = .bytes(t) }
            return t.updateValue(location, forKey: key)
        }
        // A key of another length: every key becomes a RecordKey.
        storage = .bytes(anyKeys)
        return updateValue(location, forKey: key)
    }

    /// Removes `key`; returns its location, or nil if it was not there. O(log n).
    @discardableResult
    package mutating func removeValue(forKey key: RecordKey) -> RecordLocation? {
        switch storage {
        case .empty:
            return nil
        case .key8(var t):
            return Self.remove(key, from: &t, leaving: &storage, Storage.key8)
        case .key16(var t):
            return Self.remove(key, from: &t, leaving: &storage, Storage.key16)
        case .bytes(var t):
            return Self.remove(key, from: &t, leaving: &storage, Storage.bytes)
        }
    }

    /// Removes `key` from `tree`, a copy of the tree `storage` holds: `storage` lets go of it first
    /// (so the tree is unique and changes in place), then holds the result, or `.empty`.
    private static func remove<K: IndexKey>(
        _ key: RecordKey, from tree: inout OrderedTree<K, RecordLocation>, leaving storage: inout Storage,
        _ wrap: (OrderedTree<K, RecordLocation>) -> Storage
    ) -> RecordLocation? {
        guard let k = K(key) else { return nil }
        storage = .empty
        let old = tree.removeValue(forKey: k)
        if !tree.isEmpty { storage = wrap(tree) }
        return old
    }

    /// Every entry as a tree of ``RecordKey``s (a conversion: O(n)).
    private var anyKeys: OrderedTree<RecordKey, RecordLocation> {
        switch storage {
        case .empty: return OrderedTree()
        case .key8(let t): return OrderedTree(sortedElements: t.lazy.map { ($0.key.recordKey, $0.value) }) ?? OrderedTree()
        case .key16(let t): return OrderedTree(sortedElements: t.lazy.map { ($0.key.recordKey, $0.value) }) ?? OrderedTree()
        case .bytes(let t): return t
        }
    }

    // MARK: Order

    /// Calls `body` with every entry in key order, from the first key `>= start` (every entry if
    /// nil), until it returns false. O(log n) to start, then O(1) per entry.
    package func forEach(from start: RecordKey? = nil, _ body: (RecordKey, RecordLocation) throws -> Bool) rethrows {
        switch storage {
        case .empty: return
        case .key8(let t): try Self.forEach(t, width: 8, from: start, body)
        case .key16(let t): try Self.forEach(t, width: 16, from: start, body)
        case .bytes(let t): try t.forEach(from: start, body)
        }
    }

    /// Calls `body` with every entry in key order from the one at `offset`, until it returns
    /// false. O(log n) to start (whole subtrees are skipped by their counts).
    package func forEach(fromOffset offset: Int, _ body: (RecordKey, RecordLocation) throws -> Bool) rethrows {
        switch storage {
        case .empty: return
        case .key8(let t): try t.forEach(fromOffset: offset) { k, v in try body(k.recordKey, v) }
        case .key16(let t): try t.forEach(fromOffset: offset) { k, v in try body(k.recordKey, v) }
        case .bytes(let t): try t.forEach(fromOffset: offset, body)
        }
    }

    /// How many keys are smaller than `key`. O(log n).
    package func rank(of key: RecordKey) -> Int {
        switch storage {
        case .empty: return 0
        case .key8(let t): return Self.rank(t, key, width: 8)
        case .key16(let t): return Self.rank(t, key, width: 16)
        case .bytes(let t): return t.rank(of: key)
        }
    }

    /// The keys in order.
    package var keys: [RecordKey] { map(\.key) }

    /// Checks the tree's invariants (``OrderedTree/validate()``) and that the representation fits
    /// every key; returns what is wrong, or nil. O(n).
    package func validate() -> String? {
        switch storage {
        case .empty: return nil
        case .key8(let t): return t.isEmpty ? "an empty tree kept" : t.validate()
        case .key16(let t): return t.isEmpty ? "an empty tree kept" : t.validate()
        case .bytes(let t): return t.isEmpty ? "an empty tree kept" : t.validate()
        }
    }

    /// `forEach(from:)` of a tree whose keys are not ``RecordKey``s: a start key that does not fit
    /// the representation starts at the first key after it in byte order.
    private static func forEach<K: IndexKey>(
        _ t: OrderedTree<K, RecordLocation>, width: Int, from start: RecordKey?, _ body: (RecordKey, RecordLocation) throws -> Bool
    ) rethrows {
        guard let start else { return try t.forEach { k, v in try body(k.recordKey, v) } }
        try t.forEach(fromOffset: rank(t, start, width: width)) { k, v in try body(k.recordKey, v) }
    }

    /// How many keys of `t`, all `width` bytes long, are smaller than `key`, for any `key`.
    private static func rank<K: IndexKey>(_ t: OrderedTree<K, RecordLocation>, _ key: RecordKey, width: Int) -> Int {
        if let k = K(key) { return t.rank(of: k) }
        // A key of another length never ties with one of `width` bytes: compare with `key`'s
        // first `width` bytes, or `key` padded with zeros.
        var padded = key.bytes
        if padded.count > width {
            padded.removeLast(padded.count - width)
            guard let k = K(RecordKey(padded)) else { return 0 }
            // `key` is longer than its prefix: every key up to and including the prefix is smaller.
            return t.rank(of: k) + (t[k] == nil ? 0 : 1)
        }
        padded.append(contentsOf: repeatElement(0, count: width - padded.count))
        guard let k = K(RecordKey(padded)) else { return 0 }
        // `key` is a proper prefix of `padded` (or equal bytes but shorter): smaller than it.
        return t.rank(of: k)
    }
}

extension TypeIndex: Sequence {
    /// Iterates the entries in key order; holds the tree it came from.
    package struct Iterator: IteratorProtocol {
        enum Base {
            case empty
            case key8(OrderedTree<Key8, RecordLocation>.Iterator)
            case key16(OrderedTree<Key16, RecordLocation>.Iterator)
            case bytes(OrderedTree<RecordKey, RecordLocation>.Iterator)
        }
        var base: Base

        /// The next entry in key order, or nil.
        package mutating func next() -> (key: RecordKey, value: RecordLocation)? {
            switch base {
            case .empty:
                return nil
            case .key8(var i):
                defer { base = .key8(i) }
                return i.next().map { ($0.key.recordKey, $0.value) }
            case .key16(var i):
                defer { base = .key16(i) }
                return i.next().map { ($0.key.recordKey, $0.value) }
            case .bytes(var i):
                defer { base = .bytes(i) }
                return i.next()
            }
        }
    }

    /// An iterator from the first key.
    package func makeIterator() -> Iterator {
        switch storage {
        case .empty: return Iterator(base: .empty)
        case .key8(let t): return Iterator(base: .key8(t.makeIterator()))
        case .key16(let t): return Iterator(base: .key16(t.makeIterator()))
        case .bytes(let t): return Iterator(base: .bytes(t.makeIterator()))
        }
    }

    /// See `Sequence.underestimatedCount`: the exact count.
    package var underestimatedCount: Int { count }
}

extension TypeIndex: Equatable {
    /// Same keys with the same locations, in the same order, whatever the representations. O(n).
    package static func == (lhs: TypeIndex, rhs: TypeIndex) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
