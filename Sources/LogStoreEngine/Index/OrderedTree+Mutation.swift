extension OrderedTree {
    // MARK: Insert and update

    /// Stores `value` under `key`; returns the value it replaces, or nil if the key is new.
    /// O(log n); copies the nodes on the path that are shared with another tree.
    @discardableResult
    package mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        let (old, split) = Self.insert(into: &root, key, value)
        if let (separator, right) = split {
            root = Node(separators: [separator], children: [root, right])
        }
        _checkInvariants()
        return old
    }

    /// Makes `node` safe to write: copies it if another tree (or iterator) can see it.
    @inline(__always)
    static func makeUnique(_ node: inout Node) {
        if !isKnownUniquelyReferenced(&node) { node = node.copy() }
    }

    /// Inserts into the subtree at `node`; returns the replaced value and, if `node` overflowed, the
    /// separator and new right sibling its parent must take.
    static func insert(into node: inout Node, _ key: Key, _ value: Value) -> (Value?, (Key, Node)?) {
        makeUnique(&node)
        if node.isLeaf {
            let i = node.lowerBound(key)
            if i < node.keys.count && node.keys[i] == key {
                let old = node.values[i]
                node.values[i] = value
                return (old, nil)
            }
            node.keys.insert(key, at: i)
            node.values.insert(value, at: i)
            node.count += 1
            return (nil, splitIfNeeded(node))
        }
        let c = node.childIndex(for: key)
        let (old, split) = insert(into: &node.children[c], key, value)
        if old == nil { node.count += 1 }
        if let (separator, right) = split {
            node.keys.insert(separator, at: c)
            node.children.insert(right, at: c + 1)
        }
        return (old, splitIfNeeded(node))
    }

    /// Splits a node with more than `maxFanout` entries in two halves; returns the separator and
    /// the right half.
    static func splitIfNeeded(_ node: Node) -> (Key, Node)? {
        guard node.fanout > maxFanout else { return nil }
        let mid = node.fanout / 2
        if node.isLeaf {
            let right = Node(leafKeys: Array(node.keys[mid...]), values: Array(node.values[mid...]))
            node.keys.removeSubrange(mid...)
            node.values.removeSubrange(mid...)
            node.count = node.keys.count
            return (right.keys[0], right)
        }
        // Children mid... go right; the separator between the halves moves up.
        let separator = node.keys[mid - 1]
        let right = Node(separators: Array(node.keys[mid...]), children: Array(node.children[mid...]))
        node.keys.removeSubrange((mid - 1)...)
        node.children.removeSubrange(mid...)
        node.count -= right.count
        return (separator, right)
    }

    // MARK: Remove

    /// Removes `key`; returns its value, or nil if it was not there. O(log n).
    @discardableResult
    package mutating func removeValue(forKey key: Key) -> Value? {
        guard let old = Self.remove(from: &root, key) else { return nil }
        if !root.isLeaf && root.children.count == 1 { root = root.children[0] }
        _checkInvariants()
        return old
    }

    /// Removes `key` from the subtree at `node`; rebalances any child left with fewer than
    /// `minFanout` entries by borrowing from a sibling or merging with one.
    static func remove(from node: inout Node, _ key: Key) -> Value? {
        // Look first: a key that is not there changes nothing (and copies nothing).
        if node.isLeaf {
            let i = node.lowerBound(key)
            guard i < node.keys.count && node.keys[i] == key else { return nil }
            makeUnique(&node)
            node.keys.remove(at: i)
            node.count -= 1
            return node.values.remove(at: i)
        }
        let c = node.childIndex(for: key)
        guard contains(node.children[c], key) else { return nil }
        makeUnique(&node)
        let old = remove(from: &node.children[c], key)
        node.count -= 1
        if node.children[c].fanout < minFanout { rebalance(node, child: c) }
        return old
    }

    static func contains(_ node: Node, _ key: Key) -> Bool {
        var n = node
        while !n.isLeaf { n = n.children[n.childIndex(for: key)] }
        let i = n.lowerBound(key)
        return i < n.keys.count && n.keys[i] == key
    }

    /// Child `c` of `parent` (unique) has too few entries: take one from a sibling that can spare
    /// one, else merge it with a sibling.
    static func rebalance(_ parent: Node, child c: Int) {
        if c > 0 && parent.children[c - 1].fanout > minFanout {
            makeUnique(&parent.children[c - 1])
            makeUnique(&parent.children[c])
            let left = parent.children[c - 1]
            let node = parent.children[c]
            if node.isLeaf {
                node.keys.insert(left.keys.removeLast(), at: 0)
                node.values.insert(left.values.removeLast(), at: 0)
                left.count -= 1
                node.count += 1
                parent.keys[c - 1] = node.keys[0]
            } else {
                let moved = left.children.removeLast()
                node.children.insert(moved, at: 0)
                node.keys.insert(parent.keys[c - 1], at: 0)
                parent.keys[c - 1] = left.keys.removeLast()
                left.count -= moved.count
                node.count += moved.count
            }
        } else if c + 1 < parent.children.count && parent.children[c + 1].fanout > minFanout {
            makeUnique(&parent.children[c + 1])
            makeUnique(&parent.children[c])
            let right = parent.children[c + 1]
            let node = parent.children[c]
            if node.isLeaf {
                node.keys.append(right.keys.removeFirst())
                node.values.append(right.values.removeFirst())
                right.count -= 1
                node.count += 1
                parent.keys[c] = right.keys[0]
            } else {
                let moved = right.children.removeFirst()
                node.children.append(moved)
                node.keys.append(parent.keys[c])
                parent.keys[c] = right.keys.removeFirst()
                right.count -= moved.count
                node.count += moved.count
            }
        } else {
            // Merge with a neighbour: the left one into it, or it into the right one.
            let l = c > 0 ? c - 1 : c
            guard l + 1 < parent.children.count else { return }
            makeUnique(&parent.children[l])
            let left = parent.children[l]
            let right = parent.children[l + 1]
            if left.isLeaf {
                left.keys.append(contentsOf: right.keys)
                left.values.append(contentsOf: right.values)
            } else {
                left.keys.append(parent.keys[l])
                left.keys.append(contentsOf: right.keys)
                left.children.append(contentsOf: right.children)
            }
            left.count += right.count
            parent.keys.remove(at: l)
            parent.children.remove(at: l + 1)
        }
    }

    // MARK: Bulk build

    /// A tree of `elements`, which must be sorted by key with no key twice (checked: returns nil
    /// otherwise). Built bottom-up in O(n), every node full but the last of each level (which is
    /// evened out with its neighbour to stay at least half full).
    package init?<S: Sequence>(sortedElements elements: S) where S.Element == (Key, Value) {
        var keys: [Key] = []
        var values: [Value] = []
        keys.reserveCapacity(elements.underestimatedCount)
        values.reserveCapacity(elements.underestimatedCount)
        for (k, v) in elements {
            keys.append(k)
            values.append(v)
        }
        self.init(sortedKeys: keys, values: values)
    }

    /// A tree of `keys[i]` → `values[i]`; `keys` must ascend strictly (checked: returns nil
    /// otherwise) and the arrays be equally long (else nil). Built bottom-up in O(n) like
    /// ``init(sortedElements:)``, from the arrays without visiting the elements one by one again.
    package init?(sortedKeys keys: [Key], values: [Value]) {
        guard keys.count == values.count else { return nil }
        let ascending = keys.withUnsafeBufferPointer { k -> Bool in
            var i = 1
            while i < k.count {
                if !(k[i - 1] < k[i]) { return false }
                i += 1
            }
            return true
        }
        guard ascending else { return nil }
        guard !keys.isEmpty else {
            self.init()
            return
        }
        var level: [Node] = Self.chunks(keys.count).map { r in Node(leafKeys: Array(keys[r]), values: Array(values[r])) }
        while level.count > 1 {
            level = Self.chunks(level.count).map { r in
                let children = Array(level[r])
                return Node(separators: children.dropFirst().compactMap(\.firstKey), children: children)
            }
        }
        self.init(root: level[0])
        _checkInvariants()
    }

    init(root: Node) { self.root = root }

    /// Splits `n` entries into runs of `maxFanout`, the last two evened out so none is below
    /// `minFanout` (unless `n` itself is).
    static func chunks(_ n: Int) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var start = 0
        while n - start > 2 * maxFanout {
            out.append(start..<(start + maxFanout))
            start += maxFanout
        }
        let rest = n - start
        if rest > maxFanout {
            out.append(start..<(start + rest / 2))
            out.append((start + rest / 2)..<n)
        } else {
            out.append(start..<n)
        }
        return out
    }

    // MARK: Invariants

    /// Checks every invariant (type comment); returns what is wrong, or nil. O(n).
    package func validate() -> String? {
        var previous: Key? = nil
        var leafDepth: Int? = nil
        func check(_ node: Node, depth: Int, lower: Key?, upper: Key?, isRoot: Bool) -> String? {
            if !isRoot && node.fanout < Self.minFanout { return "a node with \(node.fanout) entries, below \(Self.minFanout)" }
            if node.fanout > Self.maxFanout { return "a node with \(node.fanout) entries, above \(Self.maxFanout)" }
            if node.isLeaf {
                if let d = leafDepth, d != depth { return "leaves at depths \(d) and \(depth)" }
                leafDepth = depth
                if node.count != node.keys.count || node.values.count != node.keys.count {
                    return "a leaf's count or values disagree with its keys"
                }
                for k in node.keys {
                    if let p = previous, !(p < k) { return "keys out of order" }
                    if let lower, k < lower { return "a key below its separator" }
                    if let upper, !(k < upper) { return "a key at or above its separator" }
                    previous = k
                }
                return nil
            }
            if node.keys.count != node.children.count - 1 {
                return "an internal node with \(node.keys.count) separators for \(node.children.count) children"
            }
            var total = 0
            for (i, child) in node.children.enumerated() {
                let lo = i == 0 ? lower : node.keys[i - 1]
                let hi = i == node.keys.count ? upper : node.keys[i]
                if let problem = check(child, depth: depth + 1, lower: lo, upper: hi, isRoot: false) { return problem }
                total += child.count
            }
            return total == node.count ? nil : "an internal node counts \(node.count) elements, its children \(total)"
        }
        return check(root, depth: 0, lower: nil, upper: nil, isRoot: true)
    }

    /// ``validate()`` as a precondition, only under `LOGSTORE_CHECK_INVARIANTS`.
    func _checkInvariants() {
        #if LOGSTORE_CHECK_INVARIANTS
            if let problem = validate() { preconditionFailure("OrderedTree: \(problem)") }
        #endif
    }
}
