import HashTreeCollections

/// Changes layered over a ``RecordReader``: what a write transaction (and a child store) has
/// done that its base does not show yet.
///
/// Invariants (checked by `_checkInvariants()` under `LOGSTORE_CHECK_INVARIANTS`):
/// - `shadowed` holds only keys present in the base, and is empty when `cleared`;
/// - a key is in at most one of `puts` and (`shadowed` minus `puts`);
/// - visible count = (cleared ? 0 : base.count − shadowed.count) + puts.count.
struct Overlay: Sendable {
    /// A value held by the overlay: in memory, or in the overlay's spill file.
    enum Value: Sendable {
        case inline([UInt8])
        case spilled(offset: UInt64, length: UInt32)
    }
    struct TypeChanges: Sendable {
        /// Every base record of the type is hidden (a delete-all happened).
        var cleared = false
        /// New or replaced values.
        var puts: TreeDictionary<RecordKey, Value> = [:]
        /// Base keys hidden by a delete or a put.
        var shadowed: TreeSet<RecordKey> = []
    }
    /// Persistent maps: copying an overlay (to snapshot a child store) is O(1).
    var types: TreeDictionary<String, TypeChanges> = [:]
    /// Bytes of values held in memory.
    var valueBytes = 0
    /// Where spilled values live (child stores only).
    var spill: SpillFile? = nil

    func read(_ v: Value) throws -> ArraySlice<UInt8> {
        switch v {
        case .inline(let b): return b[...]
        case .spilled(let offset, let length):
            guard let spill else { throw LogStoreError(.corruption, "A spilled child-store value has no spill file.") }
            return try spill.read(offset: offset, length: length)[...]
        }
    }

    static func size(_ v: Value) -> Int {
        if case .inline(let b) = v { return b.count }
        return 0
    }

    var isEmpty: Bool { types.isEmpty }

    func count(_ type: String, base: any RecordReader) -> Int {
        guard let c = types[type] else { return base.count(ofType: type) }
        return (c.cleared ? 0 : base.count(ofType: type) - c.shadowed.count) + c.puts.count
    }

    func contains(_ type: String, _ key: RecordKey, base: any RecordReader) -> Bool {
        guard let c = types[type] else { return base.contains(type: type, key: key) }
        if c.puts[key] != nil { return true }
        return !c.cleared && !c.shadowed.contains(key) && base.contains(type: type, key: key)
    }

    func value(_ type: String, _ key: RecordKey, base: any RecordReader) throws -> ArraySlice<UInt8>? {
        guard let c = types[type] else { return try base.value(type: type, key: key) }
        if let v = c.puts[key] { return try read(v) }
        if c.cleared || c.shadowed.contains(key) { return nil }
        return try base.value(type: type, key: key)
    }

    mutating func put(_ type: String, _ key: RecordKey, _ value: [UInt8], base: any RecordReader) {
        // Take the changes out so they are uniquely referenced: mutating a copy that the dictionary
        // still holds would copy `puts`/`shadowed` on every call (quadratic transactions).
        var c = types.removeValue(forKey: type) ?? TypeChanges()
        if !c.cleared && base.contains(type: type, key: key) { c.shadowed.insert(key) }
        if let old = c.puts.updateValue(.inline(value), forKey: key) { valueBytes -= Self.size(old) }
        valueBytes += value.count
        types[type] = c
    }

    @discardableResult
    mutating func delete(_ type: String, _ key: RecordKey, base: any RecordReader) -> Bool {
        var c = types.removeValue(forKey: type) ?? TypeChanges()  // unique, see put
        var existed = false
        if let old = c.puts.removeValue(forKey: key) {
            valueBytes -= Self.size(old)
            existed = true
        }
        if !c.cleared && base.contains(type: type, key: key) {
            if !c.shadowed.contains(key) { existed = true }
            c.shadowed.insert(key)
        }
        types[type] = c
        return existed
    }

    @discardableResult
    mutating func deleteAll(_ type: String, base: any RecordReader) -> Int {
        let n = count(type, base: base)
        var c = types[type] ?? TypeChanges()
        for v in c.puts.values { valueBytes -= Self.size(v) }
        c = TypeChanges(cleared: true)
        types[type] = c
        return n
    }

    func forEach(_ type: String, base: any RecordReader, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        guard let c = types[type] else { return try base.forEach(ofType: type, body) }
        var stopped = false
        if !c.cleared {
            try base.forEach(ofType: type) { k, v in
                if c.shadowed.contains(k) { return true }
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

    func keys(_ type: String, base: any RecordReader) -> [RecordKey] {
        guard let c = types[type] else { return base.keys(ofType: type) }
        var out: [RecordKey] = []
        if !c.cleared { out = base.keys(ofType: type).filter { !c.shadowed.contains($0) } }
        out.append(contentsOf: c.puts.keys)
        return out
    }

    func itemTypes(base: any RecordReader) -> [String] {
        var set = Set(base.itemTypes)
        for (t, _) in types { set.insert(t) }
        return set.filter { count($0, base: base) > 0 }.sorted()
    }

    /// The log operations that turn the base into base+overlay: per type (sorted), a delete-all if
    /// cleared, then deletes, then puts, each in key order (deterministic output).
    func operations() throws -> [RecordOperation] {
        var ops: [RecordOperation] = []
        for type in types.keys.sorted() {
            guard let c = types[type] else { continue }
            if c.cleared { ops.append(.deleteAll(type: type)) }
            for k in c.shadowed.sorted() where c.puts[k] == nil { ops.append(.delete(type: type, key: k)) }
            for k in c.puts.keys.sorted() {
                if let v = c.puts[k] { ops.append(.put(type: type, key: k, value: Array(try read(v)))) }
            }
        }
        return ops
    }

    /// Applies log operations made against the view base+self.
    mutating func apply(_ ops: [RecordOperation], base: any RecordReader) {
        for op in ops {
            switch op {
            case .put(let t, let k, let v): put(t, k, v, base: base)
            case .delete(let t, let k): delete(t, k, base: base)
            case .deleteAll(let t): deleteAll(t, base: base)
            }
        }
    }

    /// Moves every in-memory value to `spill` (appending), leaving references.
    mutating func spillValues(to file: SpillFile) throws {
        spill = file
        var newTypes = types
        for (t, c) in types {
            var nc = c
            for (k, v) in c.puts {
                if case .inline(let bytes) = v {
                    let (offset, length) = try file.append(bytes)
                    nc.puts[k] = .spilled(offset: offset, length: length)
                }
            }
            newTypes[t] = nc
        }
        types = newTypes
        valueBytes = 0
    }
}
