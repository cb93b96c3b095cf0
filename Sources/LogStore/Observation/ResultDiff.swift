/// The difference between two ordered results, from the entries that changed: O(c log c) for c
/// changed entries, whatever the size of the results (Swift's `difference(from:)` is
/// O((n + m) · d) and needs both whole collections).
///
/// Input: the positions, in the old collection, of every old entry that changed (removed, or
/// whose item changed), and in the new collection of every new entry that changed (inserted, or
/// changed). Every other entry is *stable*: the same item in both, so the stable entries keep
/// their relative order (both collections are sorted by one total order on items and keys).
///
/// An id on both sides stays in place (no removal, no insertion) when it sits between the same
/// stable entries before and after ("its gap": position minus the changed entries before it), and
/// among the ids staying in one gap their order is kept (a longest increasing subsequence). All
/// other changed entries are removed at their old offsets and inserted at their new ones, which
/// is a valid `CollectionDifference`: applying it keeps the stable and staying entries, in an
/// order both collections agree on.
enum ResultDiff {
    static func make<ID: Hashable>(removed: [(offset: Int, id: ID)], inserted: [(offset: Int, id: ID)]) -> CollectionDifference<ID>? {
        let old = removed.sorted { $0.offset < $1.offset }
        let new = inserted.sorted { $0.offset < $1.offset }
        // Gap of each changed entry: how many stable entries precede it.
        var oldPlace: [ID: (gap: Int, order: Int)] = [:]
        for (i, r) in old.enumerated() { oldPlace[r.id] = (r.offset - i, i) }
        var byGap: [Int: [(oldOrder: Int, newOrder: Int, id: ID)]] = [:]
        for (j, n) in new.enumerated() {
            guard let o = oldPlace[n.id], o.gap == n.offset - j else { continue }
            byGap[o.gap, default: []].append((o.order, j, n.id))
        }
        var staying = Set<ID>()
        for candidates in byGap.values {
            // Candidates come in new order; keep the longest run increasing in old order.
            for i in longestIncreasing(candidates.map(\.oldOrder)) { staying.insert(candidates[i].id) }
        }
        var changes: [CollectionDifference<ID>.Change] = []
        for r in old where !staying.contains(r.id) { changes.append(.remove(offset: r.offset, element: r.id, associatedWith: nil)) }
        for n in new where !staying.contains(n.id) { changes.append(.insert(offset: n.offset, element: n.id, associatedWith: nil)) }
        return CollectionDifference(changes)
    }

    /// Every id of `ids` inserted: the first element's difference. O(n) (Swift's
    /// `difference(from: [])` runs Myers' algorithm, O(n²) for n insertions).
    static func insertions<ID: Hashable>(_ ids: some Sequence<ID>) -> CollectionDifference<ID> {
        replacing([], with: ids)
    }

    /// Every old id removed and every new one inserted: always valid, O(n + m). The fallback if
    /// a difference built from changed entries were ever rejected (it is valid by construction).
    static func replacing<ID: Hashable>(_ old: some Sequence<ID>, with new: some Sequence<ID>) -> CollectionDifference<ID> {
        var changes: [CollectionDifference<ID>.Change] = []
        for (i, id) in old.enumerated() { changes.append(.remove(offset: i, element: id, associatedWith: nil)) }
        for (i, id) in new.enumerated() { changes.append(.insert(offset: i, element: id, associatedWith: nil)) }
        // Removals at distinct offsets of the old collection, insertions at distinct offsets of the
        // new one: the initializer's conditions hold.
        return CollectionDifference(changes) ?? [ID]().difference(from: [])
    }

    /// Indices of a longest strictly increasing subsequence of `values` (patience sorting).
    static func longestIncreasing(_ values: [Int]) -> [Int] {
        guard values.count > 1 else { return Array(values.indices) }
        var tails: [Int] = []  // index of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (i, v) in values.enumerated() {
            var lo = 0
            var hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if values[tails[mid]] < v { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[i] = tails[lo - 1] }
            if lo == tails.count { tails.append(i) } else { tails[lo] = i }
        }
        var out: [Int] = []
        var i = tails.last ?? -1
        while i >= 0 {
            out.append(i)
            i = previous[i]
        }
        return out.reversed()
    }

    /// The difference between two ordered id lists whose stable elements are those not in
    /// `changed` (ids whose item changed, or that are on one side only). O(n + m) with hashing.
    static func make<ID: Hashable>(from old: [ID], to new: [ID], changed: Set<ID>) -> CollectionDifference<ID>? {
        let inNew = Set(new)
        let inOld = Set(old)
        let removed = old.enumerated().filter { changed.contains($0.element) || !inNew.contains($0.element) }.map {
            (offset: $0.offset, id: $0.element)
        }
        let inserted = new.enumerated().filter { changed.contains($0.element) || !inOld.contains($0.element) }.map {
            (offset: $0.offset, id: $0.element)
        }
        return make(removed: removed, inserted: inserted)
    }
}
