package import HashTreeCollections

/// Changes layered over a ``RecordReader``: what a write transaction has done that its base does
/// not show yet. The DataStore layer's child stores keep their changes in one too, with values
/// moved out of memory to a file of their own (``ExternalValues``).
///
/// `Storage` picks the maps: ``FlatChangeStorage`` (Swift's hash `Dictionary` and `Set`)
/// for a write transaction, which nobody snapshots, so inserts are cheap; ``PersistentChangeStorage``
/// (hash tries) for a child store, whose views are snapshots taken while it keeps changing: a copy
/// is O(1) and later writes never copy more than their own path. Not thread-safe while mutated.
///
/// A put hides the base's record of the same key, which `shadowed` notes. With
/// ``ChangeSetStorage/defersBaseLookups`` (write transactions) a put does not look its key up in
/// the base: it only notes the key in `unchecked`, and the first read that needs the base's
/// hidden keys (count, iteration, keys) looks them up then (``resolveShadowed(base:)``), so a body
/// that only writes (a bulk load) never searches the base index.
///
/// Invariants (checked by `_checkInvariants()` under `LOGSTORE_CHECK_INVARIANTS`):
/// - `shadowed` holds only keys present in the base, and is empty when `cleared`;
/// - every base key a put hides is in `shadowed` or in `unchecked`;
/// - visible count = (cleared ? 0 : base.count − |hidden base keys|) + puts.count.
package struct ChangeSet<Storage: ChangeSetStorage>: Sendable {
    /// A value held by the change set (see ``ChangeValue``).
    package typealias Value = ChangeValue
    package struct TypeChanges: Sendable {
        /// Every base record of the type is hidden (a delete-all happened).
        package var cleared = false
        /// New or replaced values.
        package var puts = Storage.Puts()
        /// Base keys hidden by a delete or a put.
        package var shadowed = Storage.Shadowed()
        /// Keys put without looking them up in the base yet (``ChangeSetStorage/defersBaseLookups``):
        /// those the base holds are hidden base keys not yet in `shadowed`.
        var unchecked: [RecordKey] = []
        /// The largest key ever put (an upper bound of `puts`' keys: deletes leave it). A walk in
        /// key order that writes behind itself (a migration) learns from it that no put lies
        /// ahead without looking at every put.
        package var maxPutKey: RecordKey? = nil
        /// How many keys of `shadowed` have no put: the deletes a commit writes. Kept by `put` and
        /// `delete`, so that a commit that rewrites a million records (and so shadows a million)
        /// need not look each of them up in `puts` to learn there is no delete among them.
        package fileprivate(set) var deletes = 0
        init(cleared: Bool = false) { self.cleared = cleared }

        /// The base keys hidden so far, with `unchecked` looked up (without noting them).
        func hiddenCount(_ type: String, base: any RecordReader) throws -> Int {
            if unchecked.isEmpty || cleared { return shadowed.count }
            var more = Set<RecordKey>()
            for k in unchecked where try !shadowed.contains(k) && base.contains(type: type, key: k) { more.insert(k) }
            return shadowed.count + more.count
        }

        /// Whether base key `k` is hidden (by a delete, or by a put, checked or not).
        func hides(_ k: RecordKey) -> Bool { shadowed.contains(k) || (!unchecked.isEmpty && puts[k] != nil) }

        /// The keys of `shadowed` without a put (the deletes), unsorted; found without a lookup
        /// when there are none. (Keys puts left unchecked are puts, or were deleted, which looked
        /// them up: none is a delete without being in `shadowed`.)
        package var deletedKeys: [RecordKey] { deletes == 0 ? [] : shadowed.filter { puts[$0] == nil } }
    }
    /// Per type. A plain dictionary: a store has few types, so copying it is cheap either way.
    package private(set) var types: [String: TypeChanges] = [:]
    /// Bytes of values held in memory.
    package private(set) var valueBytes = 0
    /// Where `.external` values live, once ``moveValues(to:)`` was called.
    package private(set) var externalValues: (any ExternalValues)? = nil

    /// An empty change set.
    package init() {}

    /// The bytes of `v`. Throws `.corruption` if an external value is damaged or missing.
    package func read(_ v: Value) throws -> ArraySlice<UInt8> {
        switch v {
        case .inline(let b): return b[...]
        case .external(let offset, let length):
            guard let externalValues else {
                throw LogStoreError(.corruption, "A change set refers to a value stored outside memory, but has no store for such values.")
            }
            return try externalValues.read(offset: offset, length: length)[...]
        }
    }

    static func size(_ v: Value) -> Int {
        if case .inline(let b) = v { return b.count }
        return 0
    }

    package var isEmpty: Bool { types.isEmpty }

    package func count(_ type: String, base: any RecordReader) throws -> Int {
        guard let c = types[type] else { return try base.count(ofType: type) }
        return try (c.cleared ? 0 : base.count(ofType: type) - c.hiddenCount(type, base: base)) + c.puts.count
    }

    /// Looks up in the base the keys puts left unchecked, noting those it holds in `shadowed`, so
    /// later counts and iterations do not look them up again. Reads stay correct without it. A
    /// failing base lookup (a database read) leaves the change set as it was.
    package mutating func resolveShadowed(base: any RecordReader) throws {
        for type in types.keys {
            guard let c = types[type], !c.unchecked.isEmpty else { continue }
            let found = c.cleared ? [] : try c.unchecked.filter { try base.contains(type: type, key: $0) }
            modify(type) { c in
                for k in found { c.shadowed.insert(k) }
                c.unchecked = []
            }
        }
    }

    /// Runs `body` on the changes of `type` in place (created if missing): one dictionary access,
    /// and no copy of the maps (the dictionary yields its storage uniquely).
    @inline(__always)
    private mutating func modify<R>(_ type: String, _ body: (inout TypeChanges) -> R) -> R {
        body(&types[type, default: TypeChanges()])
    }

    package func contains(_ type: String, _ key: RecordKey, base: any RecordReader) throws -> Bool {
        guard let c = types[type] else { return try base.contains(type: type, key: key) }
        if c.puts[key] != nil { return true }
        return try !c.cleared && !c.shadowed.contains(key) && base.contains(type: type, key: key)
    }

    package func value(_ type: String, _ key: RecordKey, base: any RecordReader) throws -> ArraySlice<UInt8>? {
        guard let c = types[type] else { return try base.value(type: type, key: key) }
        if let v = c.puts[key] { return try read(v) }
        if c.cleared || c.shadowed.contains(key) { return nil }
        return try base.value(type: type, key: key)
    }

    /// Puts `value` under (`type`, `key`). A failing base lookup (a database read) throws and
    /// changes nothing.
    package mutating func put(_ type: String, _ key: RecordKey, _ value: [UInt8], base: any RecordReader) throws {
        // The base is asked before anything changes, so that a failure leaves no half-made put.
        let inBase = Storage.defersBaseLookups || types[type]?.cleared == true ? false : try base.contains(type: type, key: key)
        // In place (`modify`): mutating a copy that the dictionary still holds would copy
        // `puts`/`shadowed` on every call (quadratic transactions).
        let replaced = modify(type) { c -> Int in
            // A key shadowed before without a put was a delete; this put replaces it.
            let wasDelete = c.deletes > 0 && c.puts[key] == nil && c.shadowed.contains(key)
            if !c.cleared {
                if Storage.defersBaseLookups {
                    c.unchecked.append(key)
                } else if inBase {
                    c.shadowed.insert(key)
                }
            }
            if wasDelete { c.deletes -= 1 }
            if c.maxPutKey.map({ key > $0 }) ?? true { c.maxPutKey = key }
            return c.puts.updateValue(.inline(value), forKey: key).map(Self.size) ?? 0
        }
        valueBytes += value.count - replaced
    }

    /// Deletes (`type`, `key`); returns whether it existed. A failing base lookup (a database
    /// read) throws and changes nothing.
    @discardableResult
    package mutating func delete(_ type: String, _ key: RecordKey, base: any RecordReader) throws -> Bool {
        let inBase = types[type]?.cleared == true ? false : try base.contains(type: type, key: key)
        let (existed, removed) = modify(type) { c -> (Bool, Int) in
            var existed = false
            var removed = 0
            let old = c.puts.removeValue(forKey: key)
            if let old {
                removed = Self.size(old)
                existed = true
            }
            if !c.cleared && inBase {
                // A new delete: of a base key not shadowed yet, or of one a put had shadowed.
                if c.shadowed.insert(key).inserted {
                    existed = true
                    c.deletes += 1
                } else if old != nil {
                    c.deletes += 1
                }
            }
            return (existed, removed)
        }
        valueBytes -= removed
        return existed
    }

    @discardableResult
    package mutating func deleteAll(_ type: String, base: any RecordReader) throws -> Int {
        let n = try count(type, base: base)
        var c = types[type] ?? TypeChanges()
        for v in c.puts.values { valueBytes -= Self.size(v) }
        c = TypeChanges(cleared: true)
        types[type] = c
        return n
    }

    package func forEach(_ type: String, base: any RecordReader, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        guard let c = types[type] else { return try base.forEach(ofType: type, body) }
        var stopped = false
        if !c.cleared {
            try base.forEach(ofType: type) { k, v in
                if c.hides(k) { return true }
                if try !body(k, v) {
                    stopped = true
                    return false
                }
                return true
            }
        }
        if stopped { return }
        for (k, v) in c.puts where try !body(k, try read(v)) { return }
    }

    package func keys(_ type: String, base: any RecordReader) throws -> [RecordKey] {
        guard let c = types[type] else { return try base.keys(ofType: type) }
        var out: [RecordKey] = []
        if !c.cleared { out = try base.keys(ofType: type).filter { !c.hides($0) } }
        out.append(contentsOf: c.puts.keys)
        return out
    }

    package func itemTypes(base: any RecordReader) throws -> [String] {
        var set = Set(try base.itemTypes)
        for (t, _) in types { set.insert(t) }
        return try set.filter { try count($0, base: base) > 0 }.sorted()
    }

    /// The log operations that turn the base into base+overlay: per type (sorted), a delete-all if
    /// cleared, then deletes, then puts, each in key order (deterministic output). In-memory values
    /// are handed over without a copy (arrays share their storage).
    package func operations() throws -> [RecordOperation] {
        var ops: [RecordOperation] = []
        try forEachOperation { ops.append($0) }
        return ops
    }

    /// Calls `body` with the operations of ``operations()``, in the same order, one at a time:
    /// values moved to the external store are read only when their operation comes, so a caller
    /// that does not keep them holds one at a time. Throws `.corruption` for a damaged external
    /// value, or `body`'s error.
    package func forEachOperation(_ body: (RecordOperation) throws -> Void) throws {
        for type in types.keys.sorted() {
            guard let c = types[type] else { continue }
            if c.cleared { try body(.deleteAll(type: type)) }
            for k in c.deletedKeys.sorted() { try body(.delete(type: type, key: k)) }
            // Sorted with their values: no hash lookup per key (a million random ones for a
            // migration's commit).
            for (k, v) in c.puts.sorted(by: { $0.key < $1.key }) {
                if case .inline(let bytes) = v {
                    try body(.put(type: type, key: k, value: bytes))
                } else {
                    try body(.put(type: type, key: k, value: Array(try read(v))))
                }
            }
        }
    }

    /// Checks `deletes` against its definition (tests).
    package func _deletesAreCounted() -> Bool {
        types.values.allSatisfy { c in c.deletes == c.shadowed.filter { c.puts[$0] == nil }.count }
    }

    /// Applies log operations made against the view base+self. Throws what the base's lookups
    /// throw (a database read); the change set may then hold part of `ops`: apply to a copy when
    /// that matters.
    package mutating func apply(_ ops: [RecordOperation], base: any RecordReader) throws {
        for op in ops {
            switch op {
            case .put(let t, let k, let v): try put(t, k, v, base: base)
            case .delete(let t, let k): try delete(t, k, base: base)
            case .deleteAll(let t): try deleteAll(t, base: base)
            }
        }
    }

    /// Moves every in-memory value to `store` (appending), leaving references; later reads go
    /// through `store`. Pass the same store on every call (values moved earlier are read from the
    /// newest one). Values are appended per type in key order, the order a commit reads them back
    /// (``forEachOperation(_:)``): a transaction that writes in key order (a migration's walk)
    /// gets a spill file in key order, read back sequentially (in hash order, every read was a
    /// seek). Throws what `store.append` throws; values moved until then are read from `store`,
    /// the others stay in memory (either way the change set holds the same changes).
    package mutating func moveValues(to store: any ExternalValues) throws {
        externalValues = store
        for t in Array(types.keys) {
            // Taken out, so that the puts are uniquely referenced and change in place (a copy of
            // a million-entry dictionary per spill, otherwise).
            guard var c = types.removeValue(forKey: t) else { continue }
            defer { types[t] = c }
            var inline: [(key: RecordKey, bytes: [UInt8])] = []
            for (k, v) in c.puts {
                if case .inline(let bytes) = v { inline.append((k, bytes)) }
            }
            inline.sort { $0.key < $1.key }
            // Appended in batches of about 1 MiB: one write each.
            var batch = 0..<0
            var batchBytes = 0
            func flush() throws {
                guard !batch.isEmpty else { return }
                let at = try store.append(contentsOf: inline[batch].map(\.bytes))
                for (i, a) in zip(batch, at) {
                    c.puts[inline[i].key] = .external(offset: a.offset, length: a.length)
                    valueBytes -= inline[i].bytes.count
                }
                batch = batch.upperBound..<batch.upperBound
                batchBytes = 0
            }
            for i in inline.indices {
                batch = batch.lowerBound..<(i + 1)
                batchBytes += inline[i].bytes.count
                if batchBytes >= 1 << 20 { try flush() }
            }
            try flush()
        }
    }
}

/// Where a ``ChangeSet`` keeps values moved out of memory (a child store's or a large
/// transaction's spill file). Implementations must be safe to read from any thread while one
/// writer appends.
package protocol ExternalValues: Sendable {
    /// Stores each of `values` (in one write where it can); returns where to read each back.
    func append(contentsOf values: [[UInt8]]) throws -> [(offset: UInt64, length: UInt32)]
    /// The bytes stored at `offset`. Throws `.corruption` if they do not check out.
    func read(offset: UInt64, length: UInt32) throws -> [UInt8]
}

/// A value held by a ``ChangeSet``: in memory, or in its ``ExternalValues`` store.
package enum ChangeValue: Sendable {
    case inline([UInt8])
    case external(offset: UInt64, length: UInt32)
}

/// The maps a ``ChangeSet`` keeps its changes in (the operations it uses, which Swift's
/// `Dictionary` and swift-collections' `TreeDictionary` both have).
package protocol ChangeMap<Key, Value>: Sequence where Element == (key: Key, value: Value) {
    associatedtype Key: Hashable
    associatedtype Value
    associatedtype Keys: Collection where Keys.Element == Key
    associatedtype Values: Collection where Values.Element == Value
    init()
    subscript(key: Key) -> Value? { get set }
    @discardableResult mutating func updateValue(_ value: Value, forKey key: Key) -> Value?
    @discardableResult mutating func removeValue(forKey key: Key) -> Value?
    var keys: Keys { get }
    var values: Values { get }
    var count: Int { get }
    var isEmpty: Bool { get }
}

extension Dictionary: ChangeMap {}
extension TreeDictionary: ChangeMap {}

/// The key sets a ``ChangeSet`` keeps shadowed keys in.
package protocol ChangeKeySet: Sequence, Sendable where Element == RecordKey {
    init()
    func contains(_ member: RecordKey) -> Bool
    @discardableResult mutating func insert(_ newMember: RecordKey) -> (inserted: Bool, memberAfterInsert: RecordKey)
    var count: Int { get }
}

extension Set: ChangeKeySet where Element == RecordKey {}
extension TreeSet: ChangeKeySet where Element == RecordKey {}

/// Which maps a ``ChangeSet`` uses.
package protocol ChangeSetStorage: Sendable {
    associatedtype Puts: ChangeMap<RecordKey, ChangeValue> & Sendable
    associatedtype Shadowed: ChangeKeySet
    /// Whether puts leave looking their keys up in the base to the first read that needs it (see
    /// ``ChangeSet``): for change sets nobody snapshots (a snapshot would copy the growing list).
    static var defersBaseLookups: Bool { get }
}

/// Hash maps: cheap inserts, O(n) to copy once shared. For write transactions.
package enum FlatChangeStorage: ChangeSetStorage {
    package typealias Puts = [RecordKey: ChangeValue]
    package typealias Shadowed = Set<RecordKey>
    package static var defersBaseLookups: Bool { true }
}

/// Persistent hash tries: O(1) copies, path-copying writes. For child stores, whose views are
/// snapshots.
package enum PersistentChangeStorage: ChangeSetStorage {
    package typealias Puts = TreeDictionary<RecordKey, ChangeValue>
    package typealias Shadowed = TreeSet<RecordKey>
    package static var defersBaseLookups: Bool { false }
}
