/// A persistent, ordered map: a B+tree whose nodes are shared between copies and copied on write,
/// path by path. The type indexes and the secondary indexes are built on it.
///
/// - Copying a tree is O(1): a snapshot that holds a copy never sees later writes, and readers of
///   a copy never wait for a writer of another copy.
/// - Lookup, insert, update and remove are O(log n); a mutation of a tree whose nodes are not
///   shared changes them in place, one that shares them copies only the nodes on the path it
///   changes (at most ``OrderedTree/maxFanout`` entries each).
/// - Every node knows how many elements its subtree holds, so ``rank(of:)`` (how many keys are
///   smaller), ``element(at:)`` and iteration from an offset skip whole subtrees: O(log n).
/// - Iteration is in key order, from the first key, from a key (``forEach(from:_:)``) or from an
///   offset (``forEach(fromOffset:_:)``), and stops early when the body returns false.
/// - ``init(sortedElements:)`` builds a tree bottom-up from sorted input in O(n) (a checkpoint's
///   sorted entries, a compaction's sorted runs).
///
/// Invariants (``validate()``; checked after every mutation under `LOGSTORE_CHECK_INVARIANTS`):
/// keys strictly ascend across the leaves; an internal node with children c0...ck holds k
/// separator keys, `keys[i-1] <= every key of c_i < keys[i]`; every leaf is at the same depth;
/// every node but the root holds at least ``minFanout`` entries; each node's `count` is the number
/// of elements below it.
///
/// A value type; `Sendable` when its keys and values are. Not thread-safe while mutated (like
/// `Array`): mutate a copy from one thread at a time; copies may be read from any thread.
package struct OrderedTree<Key: Comparable & Sendable, Value: Sendable>: Sendable {
    /// Most entries of a node (keys of a leaf, children of an internal node).
    package static var maxFanout: Int { 64 }
    /// Fewest entries of a node other than the root.
    package static var minFanout: Int { maxFanout / 2 }

    var root: Node

    /// An empty tree.
    package init() { root = Node(leafKeys: [], values: []) }

    /// The number of elements. O(1).
    package var count: Int { root.count }

    /// Whether the tree holds no element. O(1).
    package var isEmpty: Bool { root.count == 0 }

    // MARK: Lookup

    /// The value stored under `key`, or nil. O(log n).
    package subscript(key: Key) -> Value? {
        // The hot path of every point read: walk down without retaining each node (the tree
        // holds them all while `root` lives).
        withExtendedLifetime(root) {
            var node = Unmanaged.passUnretained(root)
            while let child = node._withUnsafeGuaranteedRef({ $0.child(for: key) }) { node = child }
            return node._withUnsafeGuaranteedRef { leaf in
                leaf.keys.withUnsafeBufferPointer { keys in
                    let i = Node.lowerBound(key, in: keys)
                    return i < keys.count && keys[i] == key ? leaf.values[i] : nil
                }
            }
        }
    }

    /// How many keys are smaller than `key` (the offset `key` has, or would have). O(log n).
    package func rank(of key: Key) -> Int {
        var node = root
        var rank = 0
        while !node.isLeaf {
            let c = node.childIndex(for: key)
            for j in 0..<c { rank += node.children[j].count }
            node = node.children[c]
        }
        return rank + node.lowerBound(key)
    }

    /// The element at `offset` in key order (0 ..< count), or nil outside. O(log n).
    package func element(at offset: Int) -> (key: Key, value: Value)? {
        guard offset >= 0, offset < count else { return nil }
        var node = root
        var rest = offset
        while !node.isLeaf {
            var c = 0
            while rest >= node.children[c].count {
                rest -= node.children[c].count
                c += 1
            }
            node = node.children[c]
        }
        return (node.keys[rest], node.values[rest])
    }

    /// The number of keys in `lower..<upper`. O(log n).
    package func count(from lower: Key, below upper: Key) -> Int {
        guard lower < upper else { return 0 }
        return rank(of: upper) - rank(of: lower)
    }

    // MARK: Iteration

    /// Calls `body` with every element in key order, from the first key `>= start` (every
    /// element if nil), until it returns false. O(log n) to find the start, then O(1) per element.
    package func forEach(from start: Key? = nil, _ body: (Key, Value) throws -> Bool) rethrows {
        _ = try Self.visit(root, from: start, body)
    }

    /// Calls `body` with every element in key order from the one at `offset`, until it returns
    /// false. Whole subtrees before `offset` are skipped by their counts: O(log n) to start.
    package func forEach(fromOffset offset: Int, _ body: (Key, Value) throws -> Bool) rethrows {
        _ = try Self.visit(root, skipping: Swift.max(0, offset), body)
    }

    /// The keys in order.
    package var keys: [Key] {
        var out: [Key] = []
        out.reserveCapacity(count)
        forEach { k, _ in
            out.append(k)
            return true
        }
        return out
    }

    static func visit(_ node: Node, from start: Key?, _ body: (Key, Value) throws -> Bool) rethrows -> Bool {
        if node.isLeaf {
            var i = start.map { node.lowerBound($0) } ?? 0
            while i < node.keys.count {
                if try !body(node.keys[i], node.values[i]) { return false }
                i += 1
            }
            return true
        }
        let first = start.map { node.childIndex(for: $0) } ?? 0
        for c in first..<node.children.count {
            // Only the first child visited can hold keys below `start`.
            if try !visit(node.children[c], from: c == first ? start : nil, body) { return false }
        }
        return true
    }

    static func visit(_ node: Node, skipping: Int, _ body: (Key, Value) throws -> Bool) rethrows -> Bool {
        if node.isLeaf {
            var i = skipping
            while i < node.keys.count {
                if try !body(node.keys[i], node.values[i]) { return false }
                i += 1
            }
            return true
        }
        var rest = skipping
        for child in node.children {
            if rest >= child.count {
                rest -= child.count
                continue
            }
            if try !visit(child, skipping: rest, body) { return false }
            rest = 0
        }
        return true
    }
}

extension OrderedTree: Equatable where Value: Equatable {
    /// Same keys with the same values, in the same order. O(n).
    package static func == (lhs: OrderedTree, rhs: OrderedTree) -> Bool {
        if lhs.root === rhs.root { return true }
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension OrderedTree: Sequence {
    /// Iterates the elements in key order. The iterator holds the tree it came from: later writes
    /// to the tree it was made from do not affect it.
    package struct Iterator: IteratorProtocol {
        var stack: [(node: Node, index: Int)]

        /// The next element in key order, or nil.
        package mutating func next() -> (key: Key, value: Value)? {
            while let top = stack.last {
                if top.node.isLeaf {
                    if top.index < top.node.keys.count {
                        stack[stack.count - 1].index += 1
                        return (top.node.keys[top.index], top.node.values[top.index])
                    }
                    stack.removeLast()
                } else if top.index < top.node.children.count {
                    stack[stack.count - 1].index += 1
                    stack.append((top.node.children[top.index], 0))
                } else {
                    stack.removeLast()
                }
            }
            return nil
        }
    }

    /// An iterator from the first key.
    package func makeIterator() -> Iterator { Iterator(stack: [(root, 0)]) }

    /// See `Sequence.underestimatedCount`: the exact count.
    package var underestimatedCount: Int { count }
}
