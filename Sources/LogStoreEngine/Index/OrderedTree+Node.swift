extension OrderedTree {
    /// A node of the tree. Leaves hold keys and values; internal nodes hold children and the
    /// separator keys between them (`keys[i]` is at most the smallest key of `children[i + 1]` and
    /// greater than every key of `children[i]`).
    ///
    /// `@unchecked Sendable`: a node is mutated only through an `OrderedTree` that holds the only
    /// reference to it (`isKnownUniquelyReferenced`, checked before every write), so a node that
    /// two trees, or two threads, can see is never written: it is copied first.
    ///
    /// `@exclusivity(unchecked)`: for the same reason no access to a node's fields can overlap a
    /// write to them (the mutation code never reads a field while it modifies it), and the run-time
    /// check costs a lookup of a 1M-entry tree 10 calls and about 600 instructions, more than the
    /// search itself (Docs/Performance.md, "Measured choices").
    final class Node: @unchecked Sendable {
        @exclusivity(unchecked) var keys: [Key]
        /// Leaves only: `values[i]` belongs to `keys[i]`.
        @exclusivity(unchecked) var values: [Value]
        /// Internal nodes only.
        @exclusivity(unchecked) var children: [Node]
        /// Elements in this subtree.
        @exclusivity(unchecked) var count: Int
        let isLeaf: Bool

        init(leafKeys: [Key], values: [Value]) {
            keys = leafKeys
            self.values = values
            children = []
            count = leafKeys.count
            isLeaf = true
        }

        /// An internal node; its subtree count is summed from `children`.
        convenience init(separators: [Key], children: [Node]) {
            self.init(separators: separators, children: children, count: children.reduce(0) { $0 + $1.count })
        }

        /// An internal node whose subtree count is known (no visit of the children).
        init(separators: [Key], children: [Node], count: Int) {
            keys = separators
            values = []
            self.children = children
            self.count = count
            isLeaf = false
        }

        /// A copy that shares this node's children (path copying). Takes the subtree count as it
        /// is: summing the children's would touch every child, up to 64 cache misses per copied
        /// node on each commit's path.
        func copy() -> Node {
            isLeaf ? Node(leafKeys: keys, values: values) : Node(separators: keys, children: children, count: count)
        }

        /// Entries: keys of a leaf, children of an internal node.
        var fanout: Int { isLeaf ? keys.count : children.count }

        /// The first index whose key is `>= key` (leaves).
        func lowerBound(_ key: Key) -> Int { keys.withUnsafeBufferPointer { Self.lowerBound(key, in: $0) } }

        /// The child that holds `key` (internal nodes): the number of separators `<= key`.
        func childIndex(for key: Key) -> Int {
            keys.withUnsafeBufferPointer { keys in
                var lo = 0
                var hi = keys.count
                while lo < hi {
                    let mid = (lo + hi) &>> 1
                    if !(key < keys[mid]) { lo = mid &+ 1 } else { hi = mid }
                }
                return lo
            }
        }

        /// The child that holds `key`, not retained (it lives as long as this node), or nil in a leaf.
        @inline(__always)
        func child(for key: Key) -> Unmanaged<Node>? {
            guard !isLeaf else { return nil }
            let c = childIndex(for: key)
            return children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[c]) }
        }

        /// The first index of `keys` (sorted) whose key is `>= key`.
        @inline(__always)
        static func lowerBound(_ key: Key, in keys: UnsafeBufferPointer<Key>) -> Int {
            var lo = 0
            var hi = keys.count
            while lo < hi {
                let mid = (lo + hi) &>> 1
                if keys[mid] < key { lo = mid &+ 1 } else { hi = mid }
            }
            return lo
        }

        /// The smallest key in this subtree (nil if empty).
        var firstKey: Key? {
            var node = self
            while !node.isLeaf {
                guard let first = node.children.first else { return nil }
                node = first
            }
            return node.keys.first
        }
    }
}
