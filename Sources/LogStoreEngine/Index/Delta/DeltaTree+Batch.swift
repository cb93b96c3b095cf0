extension DeltaTree {
    // MARK: Batches

    /// Changes the entries of `keys` in one walk of the tree: for each `keys[i]` (ascending
    /// strictly, each a stored key of a form without a key heap), `decide(i, current)` gives the
    /// entry to leave there (nil: none) from the one there now. Every node the batch reaches is
    /// visited once, left to right, and copied at most once; a leaf or inner node that overflows
    /// splits into as many nodes as it needs, and new levels grow on top of the root. The result
    /// equals calling ``update(_:_:)`` for each key in order. O(b log n) for `b` keys, fewer node
    /// visits when keys share leaves. Returns false, changing nothing, when the keys do not ascend
    /// or the form keeps keys in a heap (the caller then changes entries one by one).
    @discardableResult
    package mutating func merge(_ keys: [K], _ decide: (Int, V?) -> V?) -> Bool {
        guard !K.usesHeap else { return false }
        guard !keys.isEmpty else { return true }
        for i in 1..<keys.count where !(keys[i - 1] < keys[i]) { return false }
        prepareToWrite()
        withoutActuallyEscaping(decide) { decide in
            var context = BatchContext(tree: self, keys: keys, decide: decide)
            defer { context.release() }
            if let root = version.root {
                let (replaced, changed) = context.merge(root, keys.startIndex..<keys.endIndex)
                if changed { install(replaced, context: context) }
            } else {
                install(context.fill(leafWith: keys.startIndex..<keys.endIndex), context: context)
            }
        }
        return true
    }

    /// Makes `replaced` (the nodes that take the root's place) the tree, growing levels on top
    /// while there is more than one, and adds the merge's totals.
    private mutating func install(_ replaced: [BatchNode], context: BatchContext) {
        var level = replaced
        var height = replaced.isEmpty ? 0 : max(version.height, 1)
        while level.count > 1 {
            level = context.chunk(innerFrom: level)
            height += 1
        }
        version.root = level.first?.node
        version.height = height
        // An inner root with one child gives way to it.
        while let r = version.root, !L.isLeaf(r), L.count(r) == 1 {
            version.root = L.child(r, 0)
            version.height -= 1
            retire(r)
        }
        version.count += context.dc
        version.net += context.dn
        flushRetired()
    }

    /// A node a merge leaves in place of one it visited: its first key (fence) and aggregates.
    struct BatchNode {
        var fence: K
        var node: UnsafeMutableRawPointer
        var count: Int
        var net: Int
    }

    /// The state of one ``merge(_:_:)``: the keys, the decisions, scratch space and the totals.
    struct BatchContext {
        let tree: DeltaTree
        let keys: [K]
        let decide: (Int, V?) -> V?
        var dc = 0
        var dn = 0
        /// Scratch for a leaf's merged entries (its own plus the batch's).
        let scratchKeys: UnsafeMutableBufferPointer<K>
        let scratchValues: UnsafeMutableBufferPointer<V>

        init(tree: DeltaTree, keys: [K], decide: @escaping (Int, V?) -> V?) {
            self.tree = tree
            self.keys = keys
            self.decide = decide
            scratchKeys = .allocate(capacity: L.slots + keys.count)
            scratchValues = .allocate(capacity: L.slots + keys.count)
        }

        func release() {
            scratchKeys.deallocate()
            scratchValues.deallocate()
        }

        /// Merges `keys[range]` into the subtree at `n`; the nodes that take its place (none when
        /// it lost every entry) and whether anything changed (if not, the list is empty and `n`
        /// stays).
        mutating func merge(_ n: UnsafeMutableRawPointer, _ range: Range<Int>) -> ([BatchNode], Bool) {
            L.isLeaf(n) ? mergeLeaf(n, range) : mergeInner(n, range)
        }

        /// A new leaf sequence holding what `decide` keeps of `keys[range]` (an empty tree).
        mutating func fill(leafWith range: Range<Int>) -> [BatchNode] {
            var m = 0
            for i in range {
                guard let v = decide(i, nil) else { continue }
                scratchKeys[m] = keys[i]
                scratchValues[m] = v
                m += 1
                dc += 1
                dn += v.contribution
            }
            return chunkLeaves(m, reusing: nil)
        }

        private mutating func mergeLeaf(_ n: UnsafeMutableRawPointer, _ range: Range<Int>) -> ([BatchNode], Bool) {
            let count = L.count(n)
            var m = 0
            var j = 0
            var changed = false
            for i in range {
                let k = keys[i]
                while j < count && L.key(n, j) < k {
                    scratchKeys[m] = L.key(n, j)
                    scratchValues[m] = L.value(n, j)
                    m += 1
                    j += 1
                }
                let current: V? = j < count && L.key(n, j) == k ? L.value(n, j) : nil
                if current != nil { j += 1 }
                let new = decide(i, current)
                if let c = current, let v = new, DeltaTree.same(c, v) {
                    scratchKeys[m] = k
                    scratchValues[m] = c
                    m += 1
                    continue
                }
                if current == nil && new == nil { continue }
                changed = true
                dc += (new == nil ? 0 : 1) - (current == nil ? 0 : 1)
                dn += (new?.contribution ?? 0) - (current?.contribution ?? 0)
                if let v = new {
                    scratchKeys[m] = k
                    scratchValues[m] = v
                    m += 1
                }
            }
            guard changed else { return ([], false) }
            while j < count {
                scratchKeys[m] = L.key(n, j)
                scratchValues[m] = L.value(n, j)
                m += 1
                j += 1
            }
            return (chunkLeaves(m, reusing: n), true)
        }

        /// Writes the `m` scratch entries into leaves (``pieces(_:leaf:reusing:fill:)``).
        private func chunkLeaves(_ m: Int, reusing original: UnsafeMutableRawPointer?) -> [BatchNode] {
            guard m > 0 else {
                if let original { tree.retire(original) }
                return []
            }
            return pieces(m, leaf: true, reusing: original) { node, range in
                var net = 0
                for e in range {
                    L.setKey(node, e - range.lowerBound, scratchKeys[e])
                    L.setValue(node, e - range.lowerBound, scratchValues[e])
                    net += scratchValues[e].contribution
                }
                return BatchNode(fence: scratchKeys[range.lowerBound], node: node, count: range.count, net: net)
            }
        }

        /// Splits `m` items into nodes of at most ``DeltaLayout/fanout``, as even as they can be,
        /// and has `fill` write each node's items (their range); the first node takes the place
        /// of `original` when given (``DeltaTree/replacement(for:)``), the others are new.
        private func pieces(
            _ m: Int, leaf: Bool, reusing original: UnsafeMutableRawPointer?,
            fill: (UnsafeMutableRawPointer, Range<Int>) -> BatchNode
        ) -> [BatchNode] {
            let count = (m + L.fanout - 1) / L.fanout
            var out: [BatchNode] = []
            out.reserveCapacity(count)
            var start = 0
            for p in 0..<count {
                let end = m * (p + 1) / count
                let node: UnsafeMutableRawPointer
                if p == 0, let original {
                    node = tree.replacement(for: original)
                } else {
                    node = L.make(leaf: leaf, version: tree.version.number, arena: tree.version.arena)
                }
                let piece = fill(node, start..<end)
                L.setCount(node, end - start)
                out.append(piece)
                start = end
            }
            return out
        }

        /// Merges into the children of inner node `n` the keys that fall in each: a child that
        /// stays one node is set in place (in `n` made writable once); when a child splits or
        /// goes, the node's child list is rebuilt and written into as many nodes as it needs.
        private mutating func mergeInner(_ n: UnsafeMutableRawPointer, _ range: Range<Int>) -> ([BatchNode], Bool) {
            let count = L.count(n)
            var written: UnsafeMutableRawPointer? = nil
            var rebuilt: [BatchNode]? = nil
            var copiedUpTo = 0
            var i = range.lowerBound
            var c = 0
            while i < range.upperBound {
                c = max(c, L.childIndex(n, .key(keys[i])))
                let end = c + 1 < count ? upperBound(below: L.key(n, c + 1), from: i, to: range.upperBound) : range.upperBound
                let (replaced, changed) = merge(L.child(n, c), i..<end)
                i = end
                guard changed else {
                    c += 1
                    continue
                }
                if rebuilt == nil && replaced.count == 1 {
                    let w = written ?? tree.writable(n)
                    written = w
                    L.setChild(w, c, replaced[0].node)
                    L.setAggregates(w, c, count: replaced[0].count, net: replaced[0].net)
                } else {
                    let source = written ?? n
                    var list = rebuilt ?? []
                    list.reserveCapacity(count + replaced.count)
                    for j in copiedUpTo..<c { list.append(Self.entry(source, j)) }
                    for (r, var node) in replaced.enumerated() {
                        // The first keeps the child's fence (at most every key below it).
                        if r == 0 { node.fence = L.key(source, c) }
                        list.append(node)
                    }
                    rebuilt = list
                    copiedUpTo = c + 1
                }
                c += 1
            }
            let node = written ?? n
            guard var list = rebuilt else {
                guard written != nil else { return ([], false) }
                let (total, net) = L.aggregates(node)
                return ([BatchNode(fence: L.key(node, 0), node: node, count: total, net: net)], true)
            }
            for j in copiedUpTo..<count { list.append(Self.entry(node, j)) }
            guard !list.isEmpty else {
                tree.retire(node)
                return ([], true)
            }
            return (chunk(inner: list, reusing: node), true)
        }

        /// Child `j` of inner node `n` as a ``BatchNode``.
        private static func entry(_ n: UnsafeMutableRawPointer, _ j: Int) -> BatchNode {
            BatchNode(fence: L.key(n, j), node: L.child(n, j), count: L.childCount(n, j), net: L.childNet(n, j))
        }

        /// The first index in `from..<to` whose key is at least `fence`.
        private func upperBound(below fence: K, from: Int, to: Int) -> Int {
            var lo = from
            var hi = to
            while lo < hi {
                let mid = (lo + hi) &>> 1
                if keys[mid] < fence { lo = mid &+ 1 } else { hi = mid }
            }
            return lo
        }

        /// Inner nodes over `level` (no node reused): the levels a merge grows on top of the root.
        func chunk(innerFrom level: [BatchNode]) -> [BatchNode] { chunk(inner: level, reusing: nil) }

        /// Writes `children` into inner nodes (``pieces(_:leaf:reusing:fill:)``).
        private func chunk(inner children: [BatchNode], reusing original: UnsafeMutableRawPointer?) -> [BatchNode] {
            pieces(children.count, leaf: false, reusing: original) { node, range in
                var total = 0
                var net = 0
                for e in range {
                    let child = children[e]
                    L.setKey(node, e - range.lowerBound, child.fence)
                    L.setChild(node, e - range.lowerBound, child.node)
                    L.setAggregates(node, e - range.lowerBound, count: child.count, net: child.net)
                    total += child.count
                    net += child.net
                }
                return BatchNode(fence: children[range.lowerBound].fence, node: node, count: total, net: net)
            }
        }
    }
}
