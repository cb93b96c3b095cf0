/// A position in a ``DeltaTree``, moving forward or backward entry by entry. Holds the tree's
/// version (so its nodes stay alive) and the path from the root. One thread at a time.
package final class DeltaCursor<K: DeltaKey, V: DeltaValue> {
    typealias L = DeltaLayout<K, V>
    private let version: DeltaTree<K, V>.Version
    private var nodes: [UnsafeMutableRawPointer] = []
    private var indexes: [Int] = []
    /// Whether the cursor is on an entry.
    package private(set) var isValid = false
    private var leaf: UnsafeMutableRawPointer? = nil
    private var index = 0

    /// A cursor over `tree` (not positioned: call a seek).
    package init(_ tree: DeltaTree<K, V>) {
        version = tree.version
        nodes.reserveCapacity(max(1, tree.version.height))
        indexes.reserveCapacity(max(1, tree.version.height))
    }

    /// The current entry's key.
    @inline(__always)
    package var key: K { L.key(leaf.unsafelyUnwrapped, index) }

    /// The current entry's value.
    @inline(__always)
    package var value: V { L.value(leaf.unsafelyUnwrapped, index) }

    /// Descends choosing children with `choose` and the leaf index with `leafIndex` (which may be
    /// −1 or the leaf's count: off its ends).
    private func descend(_ choose: (UnsafeMutableRawPointer) -> Int, leafIndex: (UnsafeMutableRawPointer) -> Int) {
        nodes.removeAll(keepingCapacity: true)
        indexes.removeAll(keepingCapacity: true)
        isValid = false
        guard var n = version.root else { return }
        while !L.isLeaf(n) {
            let c = choose(n)
            nodes.append(n)
            indexes.append(c)
            n = L.child(n, c)
        }
        nodes.append(n)
        indexes.append(leafIndex(n))
    }

    /// Moves to the first entry `>= probe` (the first entry if nil).
    package func seek(atLeast probe: DeltaProbe<K>?) {
        withExtendedLifetime(version) {
            if let probe {
                descend({ L.childIndex($0, probe) }, leafIndex: { L.lowerBound($0, probe) })
            } else {
                descend({ _ in 0 }, leafIndex: { _ in 0 })
            }
            settleForward()
        }
    }

    /// Moves to the last entry `< probe` (the last entry if nil).
    package func seek(below probe: DeltaProbe<K>?) {
        withExtendedLifetime(version) {
            if let probe {
                // The child that holds the last key below the probe: the last whose fence is below it.
                descend(
                    { n in
                        var lo = 1
                        var hi = L.count(n)
                        while lo < hi {
                            let mid = (lo + hi) &>> 1
                            if probe.isAbove(L.key(n, mid)) { lo = mid &+ 1 } else { hi = mid }
                        }
                        return lo - 1
                    }, leafIndex: { L.lowerBound($0, probe) - 1 })
            } else {
                descend({ L.count($0) - 1 }, leafIndex: { L.count($0) - 1 })
            }
            settleBackward()
        }
    }

    /// Moves to the entry at `offset` in key order (counting every entry), or off the end.
    package func seek(offset: Int) {
        withExtendedLifetime(version) {
            guard offset >= 0, offset < version.count else {
                nodes.removeAll(keepingCapacity: true)
                indexes.removeAll(keepingCapacity: true)
                isValid = false
                return
            }
            var rest = offset
            descend(
                { n in
                    var c = 0
                    while c + 1 < L.count(n), rest >= L.childCount(n, c) {
                        rest -= L.childCount(n, c)
                        c += 1
                    }
                    return c
                }, leafIndex: { _ in rest })
            settleForward()
        }
    }

    private func settleForward() {
        guard let n = nodes.last, let i = indexes.last else { return }
        if i < L.count(n) {
            land()
            return
        }
        var d = nodes.count - 2
        while d >= 0 {
            if indexes[d] + 1 < L.count(nodes[d]) {
                indexes[d] += 1
                var child = L.child(nodes[d], indexes[d])
                for depth in (d + 1)..<nodes.count {
                    nodes[depth] = child
                    indexes[depth] = 0
                    if !L.isLeaf(child) { child = L.child(child, 0) }
                }
                land()
                return
            }
            d -= 1
        }
        isValid = false
    }

    private func settleBackward() {
        guard let i = indexes.last else { return }
        if i >= 0 {
            land()
            return
        }
        var d = nodes.count - 2
        while d >= 0 {
            if indexes[d] > 0 {
                indexes[d] -= 1
                var child = L.child(nodes[d], indexes[d])
                for depth in (d + 1)..<nodes.count {
                    nodes[depth] = child
                    indexes[depth] = L.count(child) - 1
                    if !L.isLeaf(child) { child = L.child(child, L.count(child) - 1) }
                }
                land()
                return
            }
            d -= 1
        }
        isValid = false
    }

    private func land() {
        leaf = nodes[nodes.count - 1]
        index = indexes[indexes.count - 1]
        isValid = true
    }

    /// Moves to the next entry; returns whether there is one.
    @discardableResult
    package func next() -> Bool {
        guard isValid else { return false }
        return withExtendedLifetime(version) {
            index += 1
            indexes[indexes.count - 1] = index
            if index < L.count(leaf.unsafelyUnwrapped) { return true }
            settleForward()
            return isValid
        }
    }

    /// Moves to the previous entry; returns whether there is one.
    @discardableResult
    package func previous() -> Bool {
        guard isValid else { return false }
        return withExtendedLifetime(version) {
            index -= 1
            indexes[indexes.count - 1] = index
            if index >= 0 { return true }
            settleBackward()
            return isValid
        }
    }
}
