/// Changes layered over a ``RecordReader``: what a write transaction (and a child store) has
/// done that its base does not show yet.
///
/// Invariants (checked by `_checkInvariants()` under `LOGSTORE_CHECK_INVARIANTS`):
/// - `shadowed` holds only keys present in the base, and is empty when `cleared`;
/// - a key is in at most one of `puts` and (`shadowed` minus `puts`);
/// - visible count = (cleared ? 0 : base.count − shadowed.count) + puts.count.
struct _Overlay: Sendable {
    struct TypeChanges: Sendable {
        /// Every base record of the type is hidden (a delete-all happened).
        var cleared = false
        /// New or replaced values.
        var puts: [RecordKey: [UInt8]] = [:]
        /// Base keys hidden by a delete or a put.
        var shadowed: Set<RecordKey> = []
    }
    var types: [String: TypeChanges] = [:]
    /// Bytes of values held in memory.
    var valueBytes = 0

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
        if let v = c.puts[key] { return v[...] }
        if c.cleared || c.shadowed.contains(key) { return nil }
        return try base.value(type: type, key: key)
    }

    mutating func put(_ type: String, _ key: RecordKey, _ value: [UInt8], base: any RecordReader) {
        // Take the changes out so they are uniquely referenced: mutating a copy that the dictionary
        // still holds would copy `puts`/`shadowed` on every call (quadratic transactions).
        var c = types.removeValue(forKey: type) ?? TypeChanges()
        if !c.cleared && base.contains(type: type, key: key) { c.shadowed.insert(key) }
        if let old = c.puts.updateValue(value, forKey: key) { valueBytes -= old.count }
        valueBytes += value.count
        types[type] = c
    }

    @discardableResult
    mutating func delete(_ type: String, _ key: RecordKey, base: any RecordReader) -> Bool {
        var c = types.removeValue(forKey: type) ?? TypeChanges()  // unique, see put
        var existed = false
        if let old = c.puts.removeValue(forKey: key) {
            valueBytes -= old.count
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
        for v in c.puts.values { valueBytes -= v.count }
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
        for (k, v) in c.puts where try !body(k, v[...]) { return }
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
    func operations() -> [RecordOperation] {
        var ops: [RecordOperation] = []
        for type in types.keys.sorted() {
            guard let c = types[type] else { continue }
            if c.cleared { ops.append(.deleteAll(type: type)) }
            for k in c.shadowed.sorted() where c.puts[k] == nil { ops.append(.delete(type: type, key: k)) }
            for k in c.puts.keys.sorted() {
                if let v = c.puts[k] { ops.append(.put(type: type, key: k, value: v)) }
            }
        }
        return ops
    }
}
