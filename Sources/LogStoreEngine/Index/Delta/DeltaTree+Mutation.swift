#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension DeltaTree {
    // MARK: Versions

    /// Makes the tree's version its own to change: kept when this tree is its only holder and no
    /// version was derived from it; otherwise a new version of the same history (sharing every
    /// node until changed), or, when the history already went on from this version, a copy of
    /// the whole tree in a history of its own.
    @inline(__always)
    mutating func prepareToWrite() {
        if isKnownUniquelyReferenced(&version) && !version.frozen.load(ordering: .acquiring) { return }
        let old = version
        if old.frozen.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            version = Version(
                arena: old.arena, root: old.root, height: old.height, count: old.count, net: old.net, heap: old.heap,
                liveKeyBytes: old.liveKeyBytes)
        } else {
            self = copied()
        }
    }

    /// `n` if it was made in this version; else a copy made now, `n` retired.
    @inline(__always)
    func writable(_ n: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        let v = version.number
        let born = L.born(n)
        if born == v { return n }
        let bytes = L.bytes(n)
        let copy = version.arena.allocate(bytes)
        copy.copyMemory(from: n, byteCount: bytes)
        copy.storeBytes(of: v, as: UInt64.self)
        version.retired.append(.init(node: n, born: born, died: v, bytes: bytes))
        return copy
    }

    /// `n` if it was made in this version; else a new node of its kind whose entries the caller
    /// writes whole (nothing is copied), `n` retired.
    @inline(__always)
    func replacement(for n: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        let v = version.number
        if L.born(n) == v { return n }
        let fresh = L.make(leaf: L.isLeaf(n), version: v, arena: version.arena)
        retire(n)
        return fresh
    }

    /// Retires a node this version no longer reaches.
    func retire(_ n: UnsafeMutableRawPointer) {
        version.retired.append(.init(node: n, born: L.born(n), died: version.number, bytes: L.bytes(n)))
    }

    /// Hands this version's retired nodes to the arena once there are a few.
    func flushRetired(force: Bool = false) {
        guard version.retired.count >= (force ? 1 : 32) else { return }
        version.arena.retire(version.retired)
        version.retired.removeAll(keepingCapacity: true)
    }

    // MARK: Changing entries

    /// Calls `body` with the entry under `key` (nil if none) and stores what `body` leaves (nil
    /// removes the entry). Returns `body`'s result, rethrows its error (nothing changed then).
    /// O(log n); copies the nodes on the path that an older version can see.
    @discardableResult
    package mutating func update<R>(_ key: K, _ body: (inout V?) throws -> R) rethrows -> R {
        let old = find(key)
        var new = old
        let result = try body(&new)
        if old == nil && new == nil { return result }
        if let o = old, let n = new, Self.same(o, n) { return result }
        prepareToWrite()
        apply(key, old: old, new: new)
        return result
    }

    /// Stores `value` under `key`; returns the entry it replaces.
    @discardableResult
    package mutating func set(_ value: V, for key: K) -> V? {
        update(key) { v in
            defer { v = value }
            return v
        }
    }

    /// Removes the entry under `key`; returns it.
    @discardableResult
    package mutating func remove(_ key: K) -> V? {
        update(key) { v in
            defer { v = nil }
            return v
        }
    }

    static func same(_ a: V, _ b: V) -> Bool {
        withUnsafeBytes(of: a) { x in withUnsafeBytes(of: b) { y in x.elementsEqual(y) } }
    }

    /// Applies one change, `old` → `new` (not both nil), under `key`.
    private mutating func apply(_ key: K, old: V?, new: V?) {
        let dc = (new == nil ? 0 : 1) - (old == nil ? 0 : 1)
        let dn = (new?.contribution ?? 0) - (old?.contribution ?? 0)
        var stored = key
        if K.usesHeap {
            let length = key.withBytes { $0.count }
            if old == nil, let k = key.withBytes({ K(storing: $0, heap: version.heap) }) {
                stored = k
                version.liveKeyBytes += length
            } else if new == nil {
                version.liveKeyBytes -= length
            }
        }
        if let root = version.root {
            let out = mutate(root, key: stored, new: new, dc: dc, dn: dn)
            if let node = out.node {
                version.root = node
                if let (fence, right) = out.split {
                    let top = L.make(leaf: false, version: version.number, arena: version.arena)
                    let (lc, ln) = L.aggregates(node)
                    let (rc, rn) = L.aggregates(right)
                    L.setKey(top, 0, fence)
                    L.setChild(top, 0, node)
                    L.setAggregates(top, 0, count: lc, net: ln)
                    L.setKey(top, 1, fence)
                    L.setChild(top, 1, right)
                    L.setAggregates(top, 1, count: rc, net: rn)
                    L.setCount(top, 2)
                    version.root = top
                    version.height += 1
                }
            } else {
                version.root = nil
                version.height = 0
            }
            // An inner root with one child gives way to it.
            while let r = version.root, !L.isLeaf(r), L.count(r) == 1 {
                version.root = L.child(r, 0)
                version.height -= 1
                retire(r)
            }
        } else if let new {
            let leaf = L.make(leaf: true, version: version.number, arena: version.arena)
            L.setKey(leaf, 0, stored)
            L.setValue(leaf, 0, new)
            L.setCount(leaf, 1)
            version.root = leaf
            version.height = 1
        }
        version.count += dc
        version.net += dn
        flushRetired()
        if K.usesHeap, let heap = version.heap, heap.storedBytes > 2 * version.liveKeyBytes + (1 << 20) {
            // Mostly dead key bytes: a fresh history holds only the live ones.
            self = copied()
        }
    }

    private struct Outcome {
        /// The subtree's node now, or nil when it lost its last entry.
        var node: UnsafeMutableRawPointer?
        /// When it split: the right half and the key that separates it.
        var split: (K, UnsafeMutableRawPointer)?
    }

    /// Changes the subtree at `n0` (`new` nil removes `key`, which is there).
    private func mutate(_ n0: UnsafeMutableRawPointer, key: K, new: V?, dc: Int, dn: Int) -> Outcome {
        let n = writable(n0)
        let count = L.count(n)
        if L.isLeaf(n) {
            let i = L.lowerBound(n, .key(key))
            let present = i < count && L.key(n, i) == key
            guard let new else {
                guard present else { return Outcome(node: n) }
                Self.shift(n, leaf: true, from: i + 1, to: i, count: count - i - 1)
                L.setCount(n, count - 1)
                if count == 1 {
                    retire(n)
                    return Outcome(node: nil)
                }
                return Outcome(node: n)
            }
            if present {
                L.setValue(n, i, new)
                return Outcome(node: n)
            }
            Self.shift(n, leaf: true, from: i, to: i + 1, count: count - i)
            L.setKey(n, i, key)
            L.setValue(n, i, new)
            L.setCount(n, count + 1)
            return Outcome(node: n, split: count + 1 > L.fanout ? split(n) : nil)
        }
        let c = L.childIndex(n, .key(key))
        let out = mutate(L.child(n, c), key: key, new: new, dc: dc, dn: dn)
        guard let child = out.node else {
            Self.shift(n, leaf: false, from: c + 1, to: c, count: count - c - 1)
            L.setCount(n, count - 1)
            if count == 1 {
                retire(n)
                return Outcome(node: nil)
            }
            return Outcome(node: n)
        }
        L.setChild(n, c, child)
        guard let (fence, right) = out.split else {
            L.setAggregates(n, c, count: L.childCount(n, c) + dc, net: L.childNet(n, c) + dn)
            return Outcome(node: n)
        }
        let (lc, ln) = L.aggregates(child)
        let (rc, rn) = L.aggregates(right)
        L.setAggregates(n, c, count: lc, net: ln)
        Self.shift(n, leaf: false, from: c + 1, to: c + 2, count: count - c - 1)
        L.setKey(n, c + 1, fence)
        L.setChild(n, c + 1, right)
        L.setAggregates(n, c + 1, count: rc, net: rn)
        L.setCount(n, count + 1)
        return Outcome(node: n, split: count + 1 > L.fanout ? split(n) : nil)
    }

    /// Moves `count` entries of `n` from index `from` to index `to` (overlapping ranges allowed).
    private static func shift(_ n: UnsafeMutableRawPointer, leaf: Bool, from: Int, to: Int, count: Int) {
        guard count > 0 else { return }
        let ks = MemoryLayout<K>.stride
        memmove(n + L.keys + to * ks, n + L.keys + from * ks, count * ks)
        if leaf {
            let vs = MemoryLayout<V>.stride
            memmove(n + L.values + to * vs, n + L.values + from * vs, count * vs)
        } else {
            memmove(n + L.children + to * 8, n + L.children + from * 8, count * 8)
            memmove(n + L.counts + to * 8, n + L.counts + from * 8, count * 8)
            memmove(n + L.nets + to * 8, n + L.nets + from * 8, count * 8)
        }
    }

    /// Splits the over-full node `n` in two halves; returns the right half's first key (a leaf)
    /// or fence (an inner node) and the right half.
    private func split(_ n: UnsafeMutableRawPointer) -> (K, UnsafeMutableRawPointer) {
        let leaf = L.isLeaf(n)
        let count = L.count(n)
        let mid = count / 2
        let right = L.make(leaf: leaf, version: version.number, arena: version.arena)
        let moved = count - mid
        let ks = MemoryLayout<K>.stride
        memcpy(right + L.keys, n + L.keys + mid * ks, moved * ks)
        if leaf {
            let vs = MemoryLayout<V>.stride
            memcpy(right + L.values, n + L.values + mid * vs, moved * vs)
        } else {
            memcpy(right + L.children, n + L.children + mid * 8, moved * 8)
            memcpy(right + L.counts, n + L.counts + mid * 8, moved * 8)
            memcpy(right + L.nets, n + L.nets + mid * 8, moved * 8)
        }
        L.setCount(right, moved)
        L.setCount(n, mid)
        return (L.key(right, 0), right)
    }

    // MARK: Whole trees

    /// A tree built bottom-up from entries given in ascending key order by `fill` (each key a
    /// stored key: ``Builder/append(bytes:_:)`` makes one). O(n). Returns nil if `fill` gives
    /// keys out of order.
    package static func build(arena: NodeArena = .shared, _ fill: (inout Builder) throws -> Void) rethrows -> DeltaTree? {
        let version = Version(arena: arena, root: nil, height: 0, count: 0, net: 0, heap: K.usesHeap ? KeyHeap() : nil, liveKeyBytes: 0)
        var builder = Builder(version: version)
        try fill(&builder)
        guard builder.finish() else { return nil }
        return DeltaTree(version: version)
    }

    /// Fills a new tree bottom-up (``build(arena:_:)``): full leaves, then inner levels.
    package struct Builder {
        let version: Version
        private var leaf: UnsafeMutableRawPointer? = nil
        private var level: [(K, UnsafeMutableRawPointer, Int, Int)] = []
        private var last: K? = nil
        private var ordered = true

        init(version: Version) { self.version = version }

        /// Appends an entry whose key's bytes are `bytes` (copied in); false if they do not fit
        /// the key representation.
        @discardableResult
        package mutating func append(bytes: UnsafeRawBufferPointer, _ value: V) -> Bool {
            guard let k = K(storing: bytes, heap: version.heap) else { return false }
            if K.usesHeap { version.liveKeyBytes += bytes.count }
            append(k, value)
            return true
        }

        /// Appends an entry; `key` must be a stored key (not a probe of borrowed bytes).
        package mutating func append(_ key: K, _ value: V) {
            if let last, !(last < key) { ordered = false }
            last = key
            if leaf == nil || L.count(leaf.unsafelyUnwrapped) == L.fanout { closeLeaf() }
            let n = leaf.unsafelyUnwrapped
            let c = L.count(n)
            L.setKey(n, c, key)
            L.setValue(n, c, value)
            L.setCount(n, c + 1)
            version.count += 1
            version.net += value.contribution
        }

        private mutating func closeLeaf() {
            if let leaf {
                let (c, s) = L.aggregates(leaf)
                level.append((L.key(leaf, 0), leaf, c, s))
            }
            leaf = L.make(leaf: true, version: version.number, arena: version.arena)
        }

        /// Links the levels; false if the keys were out of order (the tree is then empty and its
        /// nodes retired).
        mutating func finish() -> Bool {
            if let leaf, L.count(leaf) > 0 {
                let (c, s) = L.aggregates(leaf)
                level.append((L.key(leaf, 0), leaf, c, s))
            } else if let leaf {
                version.arena.retire([.init(node: leaf, born: version.number, died: version.number, bytes: L.leafBytes)])
            }
            leaf = nil
            var height = level.isEmpty ? 0 : 1
            while level.count > 1 {
                var next: [(K, UnsafeMutableRawPointer, Int, Int)] = []
                var i = 0
                while i < level.count {
                    let n = L.make(leaf: false, version: version.number, arena: version.arena)
                    let end = min(level.count, i + L.fanout)
                    var c = 0
                    var s = 0
                    for j in i..<end {
                        let e = level[j]
                        L.setKey(n, j - i, e.0)
                        L.setChild(n, j - i, e.1)
                        L.setAggregates(n, j - i, count: e.2, net: e.3)
                        c += e.2
                        s += e.3
                    }
                    L.setCount(n, end - i)
                    next.append((level[i].0, n, c, s))
                    i = end
                }
                level = next
                height += 1
            }
            version.root = level.first?.1
            version.height = height
            if !ordered {
                // The version's deinit retires what it reaches.
                return false
            }
            return true
        }
    }

    /// A copy of the whole tree in a history of its own (fresh nodes, and a fresh key heap that
    /// holds only the keys the tree has now).
    func copied() -> DeltaTree {
        let source = self
        return withExtendedLifetime(source.version) {
            DeltaTree.build(arena: version.arena) { b in
                source.forEach { k, v in
                    if K.usesHeap {
                        k.withBytes { _ = b.append(bytes: $0, v) }
                    } else {
                        b.append(k, v)
                    }
                    return true
                }
            } ?? DeltaTree(arena: version.arena)
        }
    }
}
