extension DeltaValue {
    /// Whether the entry removes its key from the layers below.
    @inline(__always)
    var isTombstone: Bool { change & RunChange.tombstone != 0 }
}

/// What a delta value reads from a run entry's payload.
package protocol LayeredValue: DeltaValue {
    /// The entry of a run payload: a base run's entry is present (change 0); a delta run's
    /// carries its change byte.
    static func run(payload: UnsafeRawPointer, isDelta: Bool) -> Self
    /// Writes the entry as a run payload at `p` (``RunKind/payloadSize`` bytes).
    func writePayload(isDelta: Bool, to p: UnsafeMutableRawPointer)
    /// The entry with another change byte.
    func with(change: UInt8) -> Self
    /// Whether an entry carries more than its presence (a location): a replacement of a base
    /// entry is then a change of its own, else no change at all.
    static var carriesPayload: Bool { get }
}

extension PrimaryDelta: LayeredValue {
    /// See ``LayeredValue/carriesPayload``: a location.
    package static var carriesPayload: Bool { true }

    @inline(__always)
    package static func run(payload: UnsafeRawPointer, isDelta: Bool) -> PrimaryDelta {
        isDelta
            ? PrimaryDelta(location: RunLocationCoding.read(payload + 1), change: payload.load(as: UInt8.self))
            : PrimaryDelta(location: RunLocationCoding.read(payload), change: 0)
    }
}

extension SecondaryDelta: LayeredValue {
    /// See ``LayeredValue/carriesPayload``: an entry is its key.
    package static var carriesPayload: Bool { false }

    @inline(__always)
    package static func run(payload: UnsafeRawPointer, isDelta: Bool) -> SecondaryDelta {
        SecondaryDelta(change: isDelta ? payload.load(as: UInt8.self) : 0)
    }
}

/// One index as layers (Docs/Design.md, "Reads over layers"): an immutable base run, at most one
/// delta run on top of it (the changes written at a close since the base), and an in-memory
/// ``DeltaTree`` of the changes since the runs. An upper layer's entry hides a lower layer's for
/// the same key; a tombstone hides it without taking its place. Each delta entry's contribution
/// (+1, −1, 0) is worked out against the layers below when it is written, so the count is the
/// base's plus the delta layers' net counts, and ranks add up the same way.
///
/// A value type; copies share the runs (immutable) and the tree's version. Reads of runs throw
/// `.corruption` for a damaged page.
package struct LayeredIndex<K: DeltaKey, V: LayeredValue>: Sendable {
    /// The base run, if any.
    package var base: MappedRun?
    /// Changes to the base, if any (only on top of a base).
    package var deltaRun: MappedRun?
    /// Changes since the runs.
    package var tree: DeltaTree<K, V>

    /// An index of `tree` over the runs.
    package init(base: MappedRun? = nil, deltaRun: MappedRun? = nil, tree: DeltaTree<K, V> = DeltaTree()) {
        self.base = base
        self.deltaRun = deltaRun
        self.tree = tree
    }

    /// Whether the base's entries count (a delta run that clears hides them).
    @inline(__always)
    var visibleBase: MappedRun? {
        guard let base, !(deltaRun?.header.clears ?? false) else { return nil }
        return base
    }

    /// Whether any run lies below the tree.
    @inline(__always)
    package var hasRuns: Bool { base != nil || deltaRun != nil }

    /// The number of visible entries. O(1).
    package var count: Int { (visibleBase?.entryCount ?? 0) + (deltaRun?.netCount ?? 0) + tree.net }

    // MARK: Lookups

    /// The visible entry of the key with `bytes`, or nil (absent or removed).
    @inline(__always)
    package func find(_ bytes: UnsafeRawBufferPointer) throws -> V? {
        if let e = tree.find(bytes: bytes) { return e.isTombstone ? nil : e }
        guard hasRuns else { return nil }
        return try findBelowTree(bytes)
    }

    /// The visible entry of the runs alone.
    func findBelowTree(_ bytes: UnsafeRawBufferPointer) throws -> V? { try Self.find(bytes, base: base, deltaRun: deltaRun) }

    /// The visible entry of the runs `base` and `deltaRun` (without a tree: a writer asks this
    /// while it holds its tree uniquely).
    static func find(_ bytes: UnsafeRawBufferPointer, base: MappedRun?, deltaRun: MappedRun?) throws -> V? {
        if let d = deltaRun, let p = try d.find(bytes) {
            let v = V.run(payload: p, isDelta: true)
            return v.isTombstone ? nil : v
        }
        if let b = base, !(deltaRun?.header.clears ?? false), let p = try b.find(bytes) { return V.run(payload: p, isDelta: false) }
        return nil
    }

    /// How many visible keys sort before `bytes`. O(log n) per layer.
    package func rank(_ bytes: UnsafeRawBufferPointer) throws -> Int {
        var r = tree.below(DeltaProbe(bytes)).net
        if let d = deltaRun { r += try d.rank(of: bytes) }
        if let b = visibleBase { r += try b.rank(of: bytes) }
        return r
    }

    // MARK: Iteration

    /// Calls `body` with every visible entry (key bytes, valid only inside the call, and entry)
    /// in key order from the first `>= start` (all if nil), descending below `start` with
    /// `reverse`, until it returns false.
    package func forEach(from start: UnsafeRawBufferPointer?, reverse: Bool = false, _ body: (UnsafeRawBufferPointer, V) throws -> Bool)
        throws
    {
        if !hasRuns && !reverse {
            // The tree alone holds only present entries: walk it directly.
            if let start {
                try tree.forEach(from: DeltaProbe(start)) { k, v in try k.withBytes { try body($0, v) } }
            } else {
                try tree.forEach { k, v in try k.withBytes { try body($0, v) } }
            }
            return
        }
        let c = try LayeredCursor(self, from: start, reverse: reverse)
        while c.isValid {
            if try !body(c.key, c.value) { return }
            try c.next()
        }
    }

    /// ``forEach(from:reverse:_:)`` from the entry at `offset` in key order. Starts in O(log² n):
    /// a binary search over the base's entries by their rank in the merged view.
    package func forEach(fromOffset offset: Int, _ body: (UnsafeRawBufferPointer, V) throws -> Bool) throws {
        let offset = max(0, offset)
        guard offset < count else { return }
        guard let b = visibleBase else {
            // No base: the tree holds only present entries.
            let c = DeltaCursor(tree)
            c.seek(offset: offset)
            while c.isValid {
                if try !c.key.withBytes({ try body($0, c.value) }) { return }
                c.next()
            }
            return
        }
        // The last base entry whose merged rank is at most `offset`.
        var lo = 0
        var hi = b.entryCount
        var startRank = 0
        var startKey: [UInt8]? = nil
        while lo < hi {
            let mid = (lo + hi) >> 1
            let cursor = try b.cursor(atOffset: mid)
            guard cursor.isValid else { break }
            let key = Array(cursor.key)
            let r = try key.withUnsafeBytes { try rank($0) }
            if r <= offset {
                lo = mid + 1
                startRank = r
                startKey = key
            } else {
                hi = mid
            }
        }
        var skip = offset - startRank
        let c = try LayeredCursor(self, from: nil, reverse: false, startingAt: startKey)
        while c.isValid {
            if skip > 0 {
                skip -= 1
            } else if try !body(c.key, c.value) {
                return
            }
            try c.next()
        }
    }

    /// Every visible entry, in order (tests, tools).
    package func entries() throws -> [([UInt8], V)] {
        var out: [([UInt8], V)] = []
        try forEach(from: nil) { k, v in
            out.append((Array(k), v))
            return true
        }
        return out
    }
}

/// A merge of an index's layers in key order (or reversed): at equal keys the upper layer's
/// entry wins, and a tombstone hides the key. Its ``key`` is valid until it moves.
package final class LayeredCursor<K: DeltaKey, V: LayeredValue> {
    private let index: LayeredIndex<K, V>
    private let tree: DeltaCursor<K, V>
    private let delta: RunCursor?
    private let base: RunCursor?
    private let reverse: Bool
    private let keyBytes = ScratchBytes()
    private let treeKey = ScratchBytes()
    private var current: V? = nil
    /// Whether the cursor is on an entry.
    package private(set) var isValid = false
    /// The current entry.
    package var value: V { current.unsafelyUnwrapped }

    /// A cursor on the first visible entry `>= start` (all if nil), or with `reverse` on the last
    /// `< start`. `startingAt` (forward only) is a key to start at instead, given as an array.
    init(_ index: LayeredIndex<K, V>, from start: UnsafeRawBufferPointer?, reverse: Bool, startingAt: [UInt8]? = nil) throws {
        self.index = index
        self.reverse = reverse
        tree = DeltaCursor(index.tree)
        delta = try index.deltaRun.map { try RunCursor.positioned($0, start, reverse: reverse, startingAt: startingAt) }
        base = try index.visibleBase.map { try RunCursor.positioned($0, start, reverse: reverse, startingAt: startingAt) }
        if let startingAt {
            startingAt.withUnsafeBytes { tree.seek(atLeast: DeltaProbe($0)) }
        } else if let start {
            if reverse { tree.seek(below: DeltaProbe(start)) } else { tree.seek(atLeast: DeltaProbe(start)) }
        } else if reverse {
            tree.seek(below: nil)
        } else {
            tree.seek(atLeast: nil)
        }
        loadTreeKey()
        try settle()
    }

    /// The current key's bytes (valid until the cursor moves).
    package var key: UnsafeRawBufferPointer { keyBytes.bytes }

    private func loadTreeKey() {
        if tree.isValid { tree.key.withBytes { treeKey.set($0) } } else { treeKey.set(UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    /// How `a` compares with `b` in the walk's direction (negative: `a` comes first).
    @inline(__always)
    private func order(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let c = RunKeys.compare(a, b)
        return reverse ? -c : c
    }

    /// Moves to the next visible entry, starting from the layers' current positions.
    private func settle() throws {
        while true {
            // The first key among the layers, and the topmost layer that holds it.
            var first: UnsafeRawBufferPointer? = nil
            var winner: V? = nil
            var atTree = false
            var atDelta = false
            var atBase = false
            if tree.isValid {
                first = treeKey.bytes
                winner = tree.value
                atTree = true
            }
            if let d = delta, d.isValid {
                let c = first.map { order(d.key, $0) } ?? -1
                if c < 0 {
                    first = d.key
                    winner = V.run(payload: d.payload, isDelta: true)
                    atTree = false
                }
                if c <= 0 { atDelta = true }
            }
            if let b = base, b.isValid {
                let c = first.map { order(b.key, $0) } ?? -1
                if c < 0 {
                    first = b.key
                    winner = V.run(payload: b.payload, isDelta: false)
                    atTree = false
                    atDelta = false
                }
                if c <= 0 { atBase = true }
            }
            guard let first, let winner else {
                isValid = false
                return
            }
            keyBytes.set(first)
            // Step every layer past this key.
            if atTree {
                if reverse { tree.previous() } else { tree.next() }
                loadTreeKey()
            }
            if atDelta, let d = delta { _ = try reverse ? d.previous() : d.next() }
            if atBase, let b = base { _ = try reverse ? b.previous() : b.next() }
            if !winner.isTombstone {
                current = winner
                isValid = true
                return
            }
        }
    }

    /// Moves to the next visible entry in the walk's direction.
    package func next() throws {
        guard isValid else { return }
        try settle()
    }
}

extension RunCursor {
    /// A cursor of `run` on the first entry `>= start` (`startingAt` when given), or with
    /// `reverse` on the last `< start`.
    static func positioned(_ run: MappedRun, _ start: UnsafeRawBufferPointer?, reverse: Bool, startingAt: [UInt8]?) throws -> RunCursor {
        if let startingAt { return try startingAt.withUnsafeBytes { try run.cursor(from: $0) } }
        return reverse ? try run.cursor(below: start) : try run.cursor(from: start)
    }
}

/// A growable byte buffer whose bytes stay where they are until the next ``set(_:)``: the key a
/// cursor hands out.
final class ScratchBytes {
    private var storage: UnsafeMutableRawPointer
    private var capacity = 64
    private var count = 0

    init() { storage = .allocate(byteCount: 64, alignment: 8) }

    deinit { storage.deallocate() }

    /// The bytes (valid until the next ``set(_:)``).
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    /// Replaces the bytes with a copy of `source`.
    func set(_ source: UnsafeRawBufferPointer) {
        if source.count > capacity {
            storage.deallocate()
            capacity = max(source.count, capacity * 2)
            storage = .allocate(byteCount: capacity, alignment: 8)
        }
        if let b = source.baseAddress, source.count > 0 { storage.copyMemory(from: b, byteCount: source.count) }
        count = source.count
    }
}
