extension OrderedTree {
    /// Calls `body` with every element whose key is `< end` (every element if nil) in descending
    /// key order, until it returns false. O(log n) to find the start, then O(1) per element.
    /// (Secondary-index scans for descending sorts.)
    package func forEachReversed(below end: Key? = nil, _ body: (Key, Value) throws -> Bool) rethrows {
        _ = try Self.visitReversed(root, below: end, body)
    }

    static func visitReversed(_ node: Node, below end: Key?, _ body: (Key, Value) throws -> Bool) rethrows -> Bool {
        if node.isLeaf {
            var i = (end.map { node.lowerBound($0) } ?? node.keys.count) - 1
            while i >= 0 {
                if try !body(node.keys[i], node.values[i]) { return false }
                i -= 1
            }
            return true
        }
        // The child that would hold `end` is the last one that can hold keys below it.
        let last = end.map { Swift.min(node.childIndex(for: $0), node.children.count - 1) } ?? node.children.count - 1
        var c = last
        while c >= 0 {
            if try !visitReversed(node.children[c], below: c == last ? end : nil, body) { return false }
            c -= 1
        }
        return true
    }
}
