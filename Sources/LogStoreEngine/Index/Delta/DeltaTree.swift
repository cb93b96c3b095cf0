import Synchronization

/// The payload of a delta-tree entry: what it does to the layers below it (``RunChange``).
package protocol DeltaValue: BitwiseCopyable, Sendable {
    /// The change byte: a tombstone (−1), a new key (+1) or a replacement (0).
    var change: UInt8 { get }
}

extension DeltaValue {
    /// +1, −1 or 0 (``RunChange/contribution(_:)``).
    @inline(__always)
    var contribution: Int { RunChange.contribution(change) ?? 0 }
}

/// A primary index's delta entry: a location (the record's newest version) or a tombstone.
package struct PrimaryDelta: DeltaValue {
    var w0: UInt64
    var w1: UInt64
    var w2: UInt64
    package var change: UInt8

    /// An entry holding `location` with `change` (a tombstone's location is ignored).
    @inline(__always)
    package init(location: RecordLocation, change: UInt8) {
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &words) { if let base = $0.baseAddress { RunLocationCoding.write(location, to: base) } }
        (w0, w1, w2) = words
        self.change = change
    }

    /// The location (meaningless for a tombstone).
    @inline(__always)
    package var location: RecordLocation {
        withUnsafeBytes(of: (w0, w1, w2)) { RunLocationCoding.read($0.baseAddress.unsafelyUnwrapped) }
    }

    /// Whether the entry removes its key.
    @inline(__always)
    package var isTombstone: Bool { change & RunChange.tombstone != 0 }
}

/// A secondary index's delta entry: the entry inserted (+1) or removed (−1, a tombstone).
package struct SecondaryDelta: DeltaValue {
    package var change: UInt8

    /// An entry with `change`.
    @inline(__always)
    package init(change: UInt8) { self.change = change }
}

/// Where a search in a delta tree starts or stops: one of its keys, or any bytes (which may not
/// fit its key representation, and are then compared as bytes).
package enum DeltaProbe<K: DeltaKey> {
    case key(K)
    case bytes(UnsafeRawBufferPointer)

    /// The probe for `bytes` (a key when they fit; valid only while `bytes` is).
    @inline(__always)
    package init(_ bytes: UnsafeRawBufferPointer) {
        if let k = K(probe: bytes) { self = .key(k) } else { self = .bytes(bytes) }
    }

    /// Whether `k` sorts before the probe.
    @inline(__always)
    func isAbove(_ k: K) -> Bool {
        switch self {
        case .key(let p): return k < p
        case .bytes(let b): return k.compare(b) < 0
        }
    }

    /// Whether `k` sorts before or at the probe.
    @inline(__always)
    func isAtLeast(_ k: K) -> Bool {
        switch self {
        case .key(let p): return !(p < k)
        case .bytes(let b): return k.compare(b) <= 0
        }
    }
}

/// The layout of a delta tree's nodes in memory. A node is one block from ``NodeArena``:
///
///     header := born:u64 count:i32 isLeaf:u8 pad:3
///     leaf   := header key{slots} value{slots}
///     inner  := header fence{slots} child:pointer{slots} count:i64{slots} net:i64{slots}
///
/// `slots` is ``fanout`` + 1 (a node holds one entry too many for an instant before it splits).
/// In an inner node, `fence[i]` is at most every key of child `i` and above every key of child
/// `i − 1` (`fence[0]` is not searched), and `count[i]`/`net[i]` are child `i`'s number of
/// entries and sum of contributions.
enum DeltaLayout<K: DeltaKey, V: DeltaValue> {
    /// Most entries of a node: as many as keep both node shapes within about 1 KiB (a copy per
    /// level on each commit's path, and blocks the allocator recycles quickly), 8 at least.
    static var fanout: Int {
        let leafSlot = MemoryLayout<K>.stride + MemoryLayout<V>.stride
        let innerSlot = MemoryLayout<K>.stride + 24
        return min(32, max(8, (1024 - 16) / max(leafSlot, innerSlot) - 1))
    }
    static var slots: Int { fanout + 1 }
    static var keys: Int { 16 }
    static var values: Int { keys + slots * MemoryLayout<K>.stride }
    static var children: Int { keys + slots * MemoryLayout<K>.stride }
    static var counts: Int { children + slots * 8 }
    static var nets: Int { counts + slots * 8 }
    static var leafBytes: Int { (values + slots * MemoryLayout<V>.stride + 15) & ~15 }
    static var innerBytes: Int { nets + slots * 8 }

    @inline(__always) static func born(_ n: UnsafeRawPointer) -> UInt64 { n.load(as: UInt64.self) }
    @inline(__always) static func count(_ n: UnsafeRawPointer) -> Int { Int(n.load(fromByteOffset: 8, as: Int32.self)) }
    @inline(__always) static func setCount(_ n: UnsafeMutableRawPointer, _ c: Int) {
        n.storeBytes(of: Int32(c), toByteOffset: 8, as: Int32.self)
    }
    @inline(__always) static func isLeaf(_ n: UnsafeRawPointer) -> Bool { n.load(fromByteOffset: 12, as: UInt8.self) != 0 }
    @inline(__always) static func bytes(_ n: UnsafeRawPointer) -> Int { isLeaf(n) ? leafBytes : innerBytes }

    @inline(__always) static func key(_ n: UnsafeRawPointer, _ i: Int) -> K {
        n.load(fromByteOffset: keys + i * MemoryLayout<K>.stride, as: K.self)
    }
    @inline(__always) static func setKey(_ n: UnsafeMutableRawPointer, _ i: Int, _ k: K) {
        n.storeBytes(of: k, toByteOffset: keys + i * MemoryLayout<K>.stride, as: K.self)
    }
    @inline(__always) static func value(_ n: UnsafeRawPointer, _ i: Int) -> V {
        n.load(fromByteOffset: values + i * MemoryLayout<V>.stride, as: V.self)
    }
    @inline(__always) static func setValue(_ n: UnsafeMutableRawPointer, _ i: Int, _ v: V) {
        n.storeBytes(of: v, toByteOffset: values + i * MemoryLayout<V>.stride, as: V.self)
    }
    @inline(__always) static func child(_ n: UnsafeRawPointer, _ i: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(bitPattern: n.load(fromByteOffset: children + i * 8, as: UInt.self)).unsafelyUnwrapped
    }
    @inline(__always) static func setChild(_ n: UnsafeMutableRawPointer, _ i: Int, _ c: UnsafeMutableRawPointer) {
        n.storeBytes(of: UInt(bitPattern: c), toByteOffset: children + i * 8, as: UInt.self)
    }
    @inline(__always) static func childCount(_ n: UnsafeRawPointer, _ i: Int) -> Int {
        n.load(fromByteOffset: counts + i * 8, as: Int.self)
    }
    @inline(__always) static func childNet(_ n: UnsafeRawPointer, _ i: Int) -> Int { n.load(fromByteOffset: nets + i * 8, as: Int.self) }
    @inline(__always) static func setAggregates(_ n: UnsafeMutableRawPointer, _ i: Int, count: Int, net: Int) {
        n.storeBytes(of: count, toByteOffset: counts + i * 8, as: Int.self)
        n.storeBytes(of: net, toByteOffset: nets + i * 8, as: Int.self)
    }

    /// A new empty node born at `version`.
    static func make(leaf: Bool, version: UInt64, arena: NodeArena) -> UnsafeMutableRawPointer {
        let n = arena.allocate(leaf ? leafBytes : innerBytes)
        n.storeBytes(of: version, as: UInt64.self)
        n.storeBytes(of: Int32(0), toByteOffset: 8, as: Int32.self)
        n.storeBytes(of: UInt8(leaf ? 1 : 0), toByteOffset: 12, as: UInt8.self)
        return n
    }

    /// The first entry of leaf `n` whose key is `>= probe` (`strict`: `> probe`).
    @inline(__always)
    static func lowerBound(_ n: UnsafeRawPointer, _ probe: DeltaProbe<K>, strict: Bool = false) -> Int {
        var lo = 0
        var hi = count(n)
        while lo < hi {
            let mid = (lo + hi) &>> 1
            let k = key(n, mid)
            if strict ? probe.isAtLeast(k) : probe.isAbove(k) { lo = mid &+ 1 } else { hi = mid }
        }
        return lo
    }

    /// The child of inner node `n` that holds `probe`: the last whose fence is at most it.
    @inline(__always)
    static func childIndex(_ n: UnsafeRawPointer, _ probe: DeltaProbe<K>) -> Int {
        var lo = 1
        var hi = count(n)
        while lo < hi {
            let mid = (lo + hi) &>> 1
            if probe.isAtLeast(key(n, mid)) { lo = mid &+ 1 } else { hi = mid }
        }
        return lo - 1
    }

    /// The number of entries and summed contributions of the subtree at `n`.
    static func aggregates(_ n: UnsafeRawPointer) -> (count: Int, net: Int) {
        var c = 0
        var s = 0
        if isLeaf(n) {
            for i in 0..<count(n) { s += value(n, i).contribution }
            return (count(n), s)
        }
        for i in 0..<count(n) {
            c += childCount(n, i)
            s += childNet(n, i)
        }
        return (c, s)
    }
}

/// An ordered map from keys (``DeltaKey``) to delta entries (``DeltaValue``): the in-memory
/// layer of a layered index, holding what changed since its runs were written
/// (Docs/Design.md, "Tree nodes without reference counts").
///
/// A persistent B+tree like ``OrderedTree``, but its nodes are blocks of ``NodeArena`` memory
/// with no reference counts: a commit copies the nodes on its path (retaining nothing) and
/// changes in place the nodes it already copied in the same version. Every node records the
/// version it was made at; replaced nodes are retired and freed once no version that can reach
/// them is in use (``NodeArena``). Each inner node keeps, per child, the number of entries and
/// the sum of their contributions (+1 new key, −1 tombstone, 0 replacement), so counts, ranks
/// and net counts below a key take O(log n).
///
/// A value type: a copy never sees later changes to the original. Copies share one
/// ``Version`` object; the first change to a copy that is shared makes a new version (a new
/// history if the shared one already had a successor, by copying the whole tree: trees the
/// engine changes have one successor per version, so that only happens to copies kept by
/// tests and tools). Not thread-safe while changed; copies may be read from any thread.
package struct DeltaTree<K: DeltaKey, V: DeltaValue>: Sendable {
    typealias L = DeltaLayout<K, V>

    /// One version of a tree: its root and totals. Registered in the arena from init to deinit;
    /// while no version was derived from it (`frozen` unset), it owns the nodes it reaches and
    /// retires them when it goes away.
    ///
    /// `@unchecked Sendable`: the root and totals change only while one tree holds the object
    /// and no version was derived from it (checked before every change), and nodes reachable
    /// from a version that others can see are never written. `@exclusivity(unchecked)`: for the
    /// same reason no access to its fields can overlap a write to them, and the run-time check
    /// cost a commit about 300 instructions.
    package final class Version: @unchecked Sendable {
        let arena: NodeArena
        let number: UInt64
        @exclusivity(unchecked) var root: UnsafeMutableRawPointer?
        @exclusivity(unchecked) var height: Int
        @exclusivity(unchecked) var count: Int
        @exclusivity(unchecked) var net: Int
        /// The history's long-key bytes (``LongKey`` trees only).
        let heap: KeyHeap?
        /// Bytes of the keys the tree holds now (``LongKey`` trees: the heap's live part).
        @exclusivity(unchecked) var liveKeyBytes: Int
        /// Set once a version is derived from this one: it no longer owns its nodes.
        let frozen = Atomic<Bool>(false)
        /// Nodes replaced in this version, handed to the arena after each change.
        @exclusivity(unchecked) var retired: [NodeArena.Retired] = []

        init(arena: NodeArena, root: UnsafeMutableRawPointer?, height: Int, count: Int, net: Int, heap: KeyHeap?, liveKeyBytes: Int) {
            self.arena = arena
            number = arena.register()
            self.root = root
            self.height = height
            self.count = count
            self.net = net
            self.heap = heap
            self.liveKeyBytes = liveKeyBytes
        }

        deinit {
            var nodes = retired
            if !frozen.load(ordering: .acquiring), let root {
                // The last version of its history: nothing else will retire what it reaches.
                var stack = [root]
                while let n = stack.popLast() {
                    nodes.append(.init(node: n, born: L.born(n), died: number + 1, bytes: L.bytes(n)))
                    if !L.isLeaf(n) { for i in 0..<L.count(n) { stack.append(L.child(n, i)) } }
                }
            }
            arena.unregister(number, retiring: nodes)
        }
    }

    var version: Version

    /// An empty tree.
    package init(arena: NodeArena = .shared) {
        version = Version(arena: arena, root: nil, height: 0, count: 0, net: 0, heap: K.usesHeap ? KeyHeap() : nil, liveKeyBytes: 0)
    }

    init(version: Version) { self.version = version }

    /// The number of entries (tombstones included). O(1).
    package var count: Int { version.count }

    /// The sum of the entries' contributions: how many keys the tree adds to the layers below
    /// (negative when it removes more). O(1).
    package var net: Int { version.net }

    /// Whether the tree has no entry.
    package var isEmpty: Bool { version.count == 0 }

    // MARK: Reads

    /// The entry stored under `probe`, or nil. O(log n).
    @inline(__always)
    package func find(_ probe: K) -> V? {
        withExtendedLifetime(version) {
            guard var n = version.root else { return nil }
            let p = DeltaProbe<K>.key(probe)
            while !L.isLeaf(n) { n = L.child(n, L.childIndex(n, p)) }
            let i = L.lowerBound(n, p)
            return i < L.count(n) && L.key(n, i) == probe ? L.value(n, i) : nil
        }
    }

    /// The entry stored under the key with `bytes`, or nil.
    @inline(__always)
    package func find(bytes: UnsafeRawBufferPointer) -> V? {
        guard let k = K(probe: bytes) else { return nil }
        return find(k)
    }

    /// The number of entries whose key sorts before `probe`, and the sum of their contributions.
    /// O(log n) (plus a scan of one leaf for the sum).
    package func below(_ probe: DeltaProbe<K>) -> (count: Int, net: Int) {
        withExtendedLifetime(version) {
            guard var n = version.root else { return (0, 0) }
            var c = 0
            var s = 0
            while !L.isLeaf(n) {
                let ci = L.childIndex(n, probe)
                for j in 0..<ci {
                    c += L.childCount(n, j)
                    s += L.childNet(n, j)
                }
                n = L.child(n, ci)
            }
            let i = L.lowerBound(n, probe)
            for j in 0..<i { s += L.value(n, j).contribution }
            return (c + i, s)
        }
    }

    /// Calls `body` with every entry in key order from the first `>= start` (all if nil) until it
    /// returns false.
    package func forEach(from start: DeltaProbe<K>? = nil, _ body: (K, V) throws -> Bool) rethrows {
        try withExtendedLifetime(version) {
            guard let root = version.root else { return }
            _ = try Self.visit(root, from: start, body)
        }
    }

    private static func visit(_ n: UnsafeMutableRawPointer, from start: DeltaProbe<K>?, _ body: (K, V) throws -> Bool) rethrows -> Bool {
        if L.isLeaf(n) {
            var i = start.map { L.lowerBound(n, $0) } ?? 0
            while i < L.count(n) {
                if try !body(L.key(n, i), L.value(n, i)) { return false }
                i += 1
            }
            return true
        }
        let first = start.map { L.childIndex(n, $0) } ?? 0
        for c in first..<L.count(n) where try !visit(L.child(n, c), from: c == first ? start : nil, body) { return false }
        return true
    }

    /// Checks the tree's invariants: keys ascending, fences separating children, aggregates equal
    /// to the entries below, every leaf at one depth; returns what is wrong, or nil. O(n).
    package func validate() -> String? {
        withExtendedLifetime(version) {
            guard let root = version.root else { return version.count == 0 && version.height == 0 ? nil : "an empty tree with totals" }
            var previous: K? = nil
            func check(_ n: UnsafeMutableRawPointer, depth: Int, lower: K?, upper: K?) -> (Int, Int)? {
                guard L.born(n) <= version.number, L.count(n) >= 1, L.count(n) <= L.fanout else { return nil }
                if L.isLeaf(n) {
                    guard depth == version.height else { return nil }
                    for i in 0..<L.count(n) {
                        let k = L.key(n, i)
                        if let p = previous, !(p < k) { return nil }
                        if let lower, k < lower { return nil }
                        if let upper, !(k < upper) { return nil }
                        previous = k
                    }
                    return L.aggregates(n)
                }
                var c = 0
                var s = 0
                for i in 0..<L.count(n) {
                    let lo = i == 0 ? lower : L.key(n, i)
                    let hi = i + 1 < L.count(n) ? L.key(n, i + 1) : upper
                    guard let (cc, cs) = check(L.child(n, i), depth: depth + 1, lower: lo, upper: hi) else { return nil }
                    guard cc == L.childCount(n, i), cs == L.childNet(n, i) else { return nil }
                    c += cc
                    s += cs
                }
                return (c, s)
            }
            guard let (c, s) = check(root, depth: 1, lower: nil, upper: nil) else {
                return "a node out of order, too full, or with wrong aggregates"
            }
            return c == version.count && s == version.net ? nil : "tree totals differ from its entries"
        }
    }
}
