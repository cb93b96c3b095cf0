/// The payload of a secondary-index entry: nothing (the entry's bytes say everything).
package struct IndexEntryMark: Sendable, Equatable {
    package init() {}
}

/// One secondary index of one type: its definition and its entries (``IndexKeyEncoding``), in a
/// persistent ordered tree like the primary index, so snapshots of it are O(1) too.
package struct SecondaryIndex: Sendable {
    package var definition: IndexDefinition
    package var entries: SecondaryEntries

    package init(definition: IndexDefinition, entries: SecondaryEntries = SecondaryEntries()) {
        self.definition = definition
        self.entries = entries
    }

    /// An index whose entries are `entries` (tests and tools that build trees of entries).
    package init(definition: IndexDefinition, entries: OrderedTree<IndexEntry, IndexEntryMark>) {
        self.init(definition: definition, entries: SecondaryEntries(entries))
    }
}

/// What one commit does to the secondary indexes, worked out before the commit is appended (so
/// that a unique-index violation refuses it while nothing is written yet), applied after.
package struct SecondaryChanges: Sendable {
    /// Types whose entries are all dropped first (a delete-all).
    var cleared: Set<String> = []
    /// Per type and index name: entries to remove, then entries to insert.
    var removals: [String: [String: [IndexEntry]]] = [:]
    var insertions: [String: [String: [IndexEntry]]] = [:]

    var isEmpty: Bool { cleared.isEmpty && removals.isEmpty && insertions.isEmpty }
}

extension IndexState {
    /// The secondary indexes of `type` (empty when it has none).
    package func secondaryIndexes(ofType type: String) -> [String: SecondaryIndex] { secondary[type] ?? [:] }

    /// Whether any type has a secondary index.
    var hasSecondaryIndexes: Bool { !secondary.isEmpty }

    /// The entries `definition` gives the record `key` stored as `value`.
    static func entry(_ definition: IndexDefinition, key: RecordKey, value: ArraySlice<UInt8>) throws -> IndexEntry {
        try entry(IndexKeyEncoding.paths(of: definition), key: key, value: value)
    }

    /// ``entry(_:key:value:)`` with the definition's attribute paths as bytes
    /// (``IndexKeyEncoding/paths(of:)``, made once per batch of records, not once per record).
    static func entry(_ paths: [[[UInt8]]], key: RecordKey, value: ArraySlice<UInt8>) throws -> IndexEntry {
        let values = value.withUnsafeBytes { IndexKeyEncoding.values(ofPaths: paths, in: $0) }
        return IndexKeyEncoding.entry(values, key: key)
    }

    /// The secondary-index changes of `operations` applied, in order, to this state. Operations
    /// may touch a key more than once (``LogEngine/commit(_:)`` takes any list) or delete a type
    /// after writing to it: they are first reduced to each key's final state, a delete-all
    /// dropping the type's earlier changes, and only then compared with what this state holds.
    /// Old values are read with `readOld`, new ones taken from the operations. Throws
    /// `.uniqueConstraintViolation` when a unique index would hold two records with equal values,
    /// and `.corruption` for a stored value that cannot be read.
    package func secondaryChanges(
        for operations: [RecordOperation], readOld: (RecordLocation) throws -> ArraySlice<UInt8>
    ) throws -> SecondaryChanges {
        var changes = SecondaryChanges()
        guard hasSecondaryIndexes else { return changes }
        try addSecondaryChanges(of: operations, readOld: readOld, to: &changes)
        try checkUnique(changes)
        return changes
    }

    /// Adds the secondary-index changes of `operations` to `changes`, which holds those of the
    /// operations before them in the same commit (a large commit works them out chunk by chunk, in
    /// the change set's order: a type's delete-all before its other operations, each key in one
    /// chunk). Within `operations` a key touched twice, or written and then cleared, counts with
    /// its final state only. Does not check unique indexes: call ``checkUnique(_:)`` on the
    /// whole. Throws `.corruption` for a stored value that cannot be read.
    package func addSecondaryChanges(
        of operations: [RecordOperation], readOld: (RecordLocation) throws -> ArraySlice<UInt8>, to changes: inout SecondaryChanges
    ) throws {
        guard hasSecondaryIndexes else { return }
        for (type, keys) in finalValues(of: operations, clearing: &changes.cleared) {
            guard let indexes = secondary[type] else { continue }
            let cleared = changes.cleared.contains(type)
            // Per index: its paths as bytes (once), and what it loses and gains.
            var work = indexes.map {
                (name: $0.key, paths: IndexKeyEncoding.paths(of: $0.value.definition), removed: [IndexEntry](), inserted: [IndexEntry]())
            }
            for (key, value) in keys {
                // After a delete-all nothing of the type is left to replace.
                let old: ArraySlice<UInt8>? = cleared ? nil : try location(type, key).map(readOld)
                for i in work.indices {
                    let before = try old.map { try Self.entry(work[i].paths, key: key, value: $0) }
                    let after = try value.map { try Self.entry(work[i].paths, key: key, value: $0) }
                    if before == after { continue }
                    if let before { work[i].removed.append(before) }
                    if let after { work[i].inserted.append(after) }
                }
            }
            for w in work {
                // Sorted, so that ``apply(_:)`` walks each tree once, left to right; merged into
                // what earlier chunks of the same commit found.
                if !w.removed.isEmpty {
                    Self.mergeSorted(w.removed.sorted(), into: &changes.removals[type, default: [:]][w.name, default: []])
                }
                if !w.inserted.isEmpty {
                    Self.mergeSorted(w.inserted.sorted(), into: &changes.insertions[type, default: [:]][w.name, default: []])
                }
            }
        }
    }

    /// Each touched key's final value (nil: deleted), per indexed type; the types a delete-all
    /// clears are added to `cleared`. A commit's usual shape (each type's operations together,
    /// keys ascending, no delete-all) is taken as it is; any other list is reduced through a map.
    private func finalValues(
        of operations: [RecordOperation], clearing cleared: inout Set<String>
    ) -> [(type: String, keys: [(key: RecordKey, value: ArraySlice<UInt8>?)])] {
        var groups: [(type: String, keys: [(key: RecordKey, value: ArraySlice<UInt8>?)])] = []
        var done: Set<String> = []
        var simple = true
        scan: for op in operations {
            let (t, k, v): (String, RecordKey, ArraySlice<UInt8>?)
            switch op {
            case .deleteAll:
                simple = false
                break scan
            case .delete(let type, let key): (t, k, v) = (type, key, nil)
            case .put(let type, let key, let value): (t, k, v) = (type, key, value[...])
            }
            guard secondary[t] != nil else { continue }
            if let last = groups.last, last.type == t {
                guard let previous = last.keys.last, previous.key < k else {
                    simple = false
                    break scan
                }
                groups[groups.count - 1].keys.append((k, v))
            } else {
                if let last = groups.last { done.insert(last.type) }
                guard !done.contains(t) else {
                    simple = false
                    break scan
                }
                groups.append((t, [(k, v)]))
            }
        }
        if simple { return groups }
        var final: [String: [RecordKey: ArraySlice<UInt8>?]] = [:]
        for op in operations {
            switch op {
            case .deleteAll(let t):
                guard secondary[t] != nil else { continue }
                cleared.insert(t)
                final[t] = [:]
            case .delete(let t, let k):
                guard secondary[t] != nil else { continue }
                final[t, default: [:]][k] = .some(nil)
            case .put(let t, let k, let v):
                guard secondary[t] != nil else { continue }
                final[t, default: [:]][k] = .some(v[...])
            }
        }
        return final.map { (type: $0.key, keys: $0.value.map { (key: $0.key, value: $0.value) }) }
    }

    /// Merges sorted `more` into sorted `entries` (linear; `entries` is usually empty).
    static func mergeSorted(_ more: [IndexEntry], into entries: inout [IndexEntry]) {
        if entries.isEmpty {
            entries = more
            return
        }
        var out: [IndexEntry] = []
        out.reserveCapacity(entries.count + more.count)
        var i = 0
        var j = 0
        while i < entries.count && j < more.count {
            if more[j] < entries[i] {
                out.append(more[j])
                j += 1
            } else {
                out.append(entries[i])
                i += 1
            }
        }
        out.append(contentsOf: entries[i...])
        out.append(contentsOf: more[j...])
        entries = out
    }

    /// Refuses changes that would leave two entries of a unique index with equal values.
    package func checkUnique(_ changes: SecondaryChanges) throws {
        for (type, byName) in changes.insertions {
            for (name, inserted) in byName {
                guard let index = secondary[type]?[name], index.definition.unique else { continue }
                let n = index.definition.attributes.count
                let removed = Set(changes.removals[type]?[name] ?? [])
                let cleared = changes.cleared.contains(type)
                var seen: [[UInt8]: IndexEntry] = [:]
                for entry in inserted {
                    let (prefix, hasNull) = entry.withUnsafeBytes { raw -> ([UInt8]?, Bool) in
                        (
                            IndexKeyEncoding.prefixLength(ofEntry: raw, componentCount: n).map { Array(raw[..<$0]) },
                            IndexKeyEncoding.hasNull(raw, componentCount: n)
                        )
                    }
                    guard let prefix, !hasNull else { continue }
                    if let other = seen[prefix] {
                        throw Self.uniqueViolation(type, index.definition, entry, other, n)
                    }
                    seen[prefix] = entry
                    guard !cleared else { continue }
                    var clash: IndexEntry? = nil
                    try index.entries.forEach(from: IndexEntry(prefix)) { existing in
                        let starts = existing.withUnsafeBytes { $0.starts(with: prefix) }
                        guard starts else { return false }
                        if !removed.contains(existing) {
                            clash = existing
                            return false
                        }
                        return true
                    }
                    if let clash { throw Self.uniqueViolation(type, index.definition, entry, clash, n) }
                }
            }
        }
    }

    static func uniqueViolation(_ type: String, _ definition: IndexDefinition, _ entry: IndexEntry, _ other: IndexEntry, _ n: Int)
        -> LogStoreError
    {
        let a = IndexKeyEncoding.recordKey(ofEntry: entry, componentCount: n).map(\.description) ?? "?"
        let b = IndexKeyEncoding.recordKey(ofEntry: other, componentCount: n).map(\.description) ?? "?"
        return LogStoreError(
            .uniqueConstraintViolation,
            "Records \(a) and \(b) of \(type) would have equal values in the unique index \(definition); the write was rolled back. Change one of them, or declare the index without `unique`."
        )
    }

    /// Applies changes from ``secondaryChanges(for:readOld:)``. Throws `.corruption` when a run
    /// it must consult is damaged (the state is then partly changed).
    package mutating func apply(_ changes: SecondaryChanges) throws {
        guard !changes.isEmpty else { return }
        for type in changes.cleared {
            guard var indexes = secondary[type] else { continue }
            for name in indexes.keys { indexes[name]?.entries = SecondaryEntries() }
            secondary[type] = indexes
        }
        for type in Set(changes.removals.keys).union(changes.insertions.keys) {
            guard var indexes = secondary.removeValue(forKey: type) else { continue }
            for name in Set((changes.removals[type] ?? [:]).keys).union((changes.insertions[type] ?? [:]).keys) {
                // Out of the dictionary while it changes: one lookup per index, not per entry.
                guard var index = indexes.removeValue(forKey: name) else { continue }
                try index.entries.apply(removing: changes.removals[type]?[name] ?? [], inserting: changes.insertions[type]?[name] ?? [])
                indexes[name] = index
            }
            secondary[type] = indexes
        }
    }

    /// The entries of `definition` for every record of `type` in this state, built bottom-up.
    /// Reads every record's value with `read`. Throws `.uniqueConstraintViolation` if the index
    /// is unique and two records break it, `.corruption` for an unreadable value.
    package func buildSecondaryIndex(
        _ definition: IndexDefinition, ofType type: String, read: (RecordLocation) throws -> ArraySlice<UInt8>
    ) throws -> SecondaryIndex {
        var entries: [IndexEntry] = []
        entries.reserveCapacity(count(type))
        if let tree = types[type] {
            // Read in file order, each frame's neighbours together.
            var locations = try tree.elements()
            locations.sort { ($0.value.logPosition, $0.value.legacy) < ($1.value.logPosition, $1.value.legacy) }
            let paths = IndexKeyEncoding.paths(of: definition)
            for (key, loc) in locations { entries.append(try Self.entry(paths, key: key, value: try read(loc))) }
        }
        entries.sort()
        if definition.unique {
            let n = definition.attributes.count
            var previous: (prefix: [UInt8], entry: IndexEntry)? = nil
            for e in entries {
                let (prefix, hasNull) = e.withUnsafeBytes { raw -> ([UInt8]?, Bool) in
                    (
                        IndexKeyEncoding.prefixLength(ofEntry: raw, componentCount: n).map { Array(raw[..<$0]) },
                        IndexKeyEncoding.hasNull(raw, componentCount: n)
                    )
                }
                guard let prefix, !hasNull else { continue }
                if let p = previous, p.prefix == prefix { throw Self.uniqueViolation(type, definition, e, p.entry, n) }
                previous = (prefix, e)
            }
        }
        return SecondaryIndex(definition: definition, entries: SecondaryEntries(sortedKeys: entries) ?? SecondaryEntries())
    }
}

/// What recovery replayed of indexed types after a checkpoint: the keys it touched, and the types
/// it deleted wholesale, so that their secondary entries can be brought up to date in one pass
/// when replay ends (``IndexState/catchUpSecondaryIndexes(from:read:)``).
package struct SecondaryReplayTouches: Sendable {
    var keys: [String: Set<RecordKey>] = [:]
    var cleared: Set<String> = []

    mutating func touch(_ type: String, _ key: RecordKey) {
        if !cleared.contains(type) { keys[type, default: []].insert(key) }
    }

    mutating func clear(_ type: String) {
        cleared.insert(type)
        keys[type] = nil
    }
}

extension IndexState {
    /// Brings the secondary indexes up to date after recovery replayed the log on top of `start`
    /// (the checkpoint's state, whose secondary entries were right for its records): for each
    /// touched key, the entry of its value in `start` is replaced by the entry of its value now;
    /// a type deleted wholesale is rebuilt from its records now. Reads values with `read`.
    /// Clears ``replayTouches``. Throws `.corruption` for an unreadable value.
    package mutating func catchUpSecondaryIndexes(from start: IndexState, read: (RecordLocation) throws -> ArraySlice<UInt8>) throws {
        guard let touches = replayTouches else { return }
        replayTouches = nil
        for type in touches.cleared {
            for (name, index) in secondaryIndexes(ofType: type) {
                let rebuilt = try buildSecondaryIndex(index.definition, ofType: type, read: read)
                secondary[type]?[name] = rebuilt
            }
        }
        for (type, keys) in touches.keys {
            for (name, index) in secondaryIndexes(ofType: type) {
                var tree = index.entries
                let paths = IndexKeyEncoding.paths(of: index.definition)
                for key in keys {
                    let before = try start.location(type, key).map { try Self.entry(paths, key: key, value: try read($0)) }
                    let after = try location(type, key).map { try Self.entry(paths, key: key, value: try read($0)) }
                    if before == after { continue }
                    if let before { try tree.remove(before) }
                    if let after { try tree.insert(after) }
                }
                secondary[type]?[name]?.entries = tree
            }
        }
    }
}

extension IndexState {
    /// Every difference between the secondary indexes and a rebuild of them from the records
    /// (one line per index that differs; empty when they agree): the oracle of the crash
    /// harnesses and of `logstore-compact verify`, since index entries are derived data and a
    /// rebuild is their truth. Reads every record of each indexed type once.
    package func secondaryIndexProblems(read: (RecordLocation) throws -> ArraySlice<UInt8>) throws -> [String] {
        var problems: [String] = []
        for type in secondary.keys.sorted() {
            for (name, index) in secondaryIndexes(ofType: type).sorted(by: { $0.key < $1.key }) {
                let rebuilt: SecondaryIndex
                do {
                    rebuilt = try buildSecondaryIndex(index.definition, ofType: type, read: read)
                } catch let e as LogStoreError where e.code == .uniqueConstraintViolation {
                    problems.append("\(type).\(name): the records break the unique index: \(e.message)")
                    continue
                }
                guard rebuilt.entries != index.entries else { continue }
                let have = Set(try index.entries.keys())
                let want = Set(try rebuilt.entries.keys())
                problems.append(
                    "\(type).\(name): \(index.entries.count) entries, a rebuild from the records has \(rebuilt.entries.count) (\(have.subtracting(want).count) extra, \(want.subtracting(have).count) missing)"
                )
            }
        }
        return problems
    }
}

extension EngineSnapshot {
    /// ``IndexState/secondaryIndexProblems(read:)`` for this snapshot.
    package func secondaryIndexProblems() throws -> [String] {
        try index.secondaryIndexProblems(read: { try read($0) })
    }
}

/// What a secondary index holds and costs in memory (for `logstore-compact stats` and
/// ``LogEngine`` statistics).
public struct SecondaryIndexSummary: Sendable, Equatable {
    /// The item type.
    public var type: String
    /// The index's definition, as text (`UNIQUE email(mail)`).
    public var definition: String
    /// Its entries (one per record of the type).
    public var entries: Int
    /// Bytes of its entries (indexed values, encoded, plus record keys).
    public var entryBytes: Int
    /// An estimate of its heap memory: a slot in a tree node for each entry changed since the
    /// last checkpoint (nodes about three quarters full). The checkpoint's runs are mapped
    /// files, not heap.
    public var estimatedMemoryBytes: Int
}

extension SecondaryIndex {
    /// ``SecondaryIndexSummary`` of this index of `type`. O(entries).
    package func summary(type: String) -> SecondaryIndexSummary {
        var bytes = 0
        // Entries of a damaged run are left out of the byte count (verify reports the damage).
        try? entries.forEach { entry in
            bytes += entry.count
            return true
        }
        // Only the changes since the last checkpoint are in memory (tree slots, nodes about
        // three quarters full); the runs are mapped, and paged in by the system on demand.
        let slots = entries.treeCount * entries.slotBytes * 4 / 3
        return SecondaryIndexSummary(
            type: type, definition: definition.description, entries: entries.count, entryBytes: bytes, estimatedMemoryBytes: slots)
    }
}

extension IndexState {
    /// Summaries of every secondary index, by type then name.
    package var secondarySummaries: [SecondaryIndexSummary] {
        secondary.keys.sorted().flatMap { type in
            secondaryIndexes(ofType: type).sorted { $0.key < $1.key }.map { $0.value.summary(type: type) }
        }
    }
}

extension EngineSnapshot {
    /// Summaries of this snapshot's secondary indexes (entries, bytes, estimated memory). O(entries).
    public var secondaryIndexSummaries: [SecondaryIndexSummary] { index.secondarySummaries }
}
