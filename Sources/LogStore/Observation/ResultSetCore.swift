import HashTreeCollections
import LogStoreEngine

/// Observes a request without limit, offset or attribute filter/sort, incrementally: its results
/// live in a persistent ordered tree (``OrderedTree``, sorted by the request's order), each
/// changed key is read once at the new snapshot, checked against the predicate and moved in the
/// tree; the element's difference comes from the ranks of the changed entries. A commit costs
/// O(changed keys × log n), whatever the number n of results, and handing out an element is O(1)
/// (the tree is shared). A delete-all or reset runs the request again (O(n)).
struct ResultSetCore<Item: DataStoreItem>: ObservationCore {
    typealias Tree = OrderedTree<ResultEntry<Item>, Bool>
    typealias Members = TreeDictionary<RecordKey, ResultEntry<Item>>

    let request: DataStoreRequest<Item>
    let matcher: RequestMatcher<Item>
    private(set) var sequence: UInt64 = 0
    /// The results now, and each result's entry by key.
    var tree = Tree()
    var members = Members()
    /// What the consumer took last (nil before the first element).
    var delivered: (tree: Tree, members: Members)? = nil
    /// Keys whose entry may differ from the delivered one; `touchedAll` after a delete-all or reset.
    var touched = Set<RecordKey>()
    var touchedAll = false
    /// What differs from the delivered results, computed after each step (nil: nothing).
    var pending: Changes? = nil

    typealias Changes = (removed: [(offset: Int, id: Item.ID)], inserted: [(offset: Int, id: Item.ID)], updated: [(RecordKey, Item.ID)])

    var itemType: String { Item.itemType }

    init(_ request: DataStoreRequest<Item>) {
        self.request = request
        matcher = RequestMatcher(request)
    }

    mutating func start(at snapshot: any DataStoreSnapshot) throws {
        try load(snapshot)
    }

    /// Recomputes ``pending`` after a step.
    mutating func refresh() {
        guard let delivered, touchedAll || !touched.isEmpty else {
            pending = nil
            return
        }
        pending = changes(from: delivered)
    }

    /// Runs the request (the public path, so the planner serves it) and builds the tree from its
    /// sorted results.
    mutating func load(_ snapshot: any DataStoreSnapshot) throws {
        let items = try snapshot.read { try $0.items(forRequest: request) }
        var entries: [ResultEntry<Item>] = []
        entries.reserveCapacity(items.count)
        for item in items { entries.append(matcher.entry(try ItemKey.make(item.id), item)) }
        if let built = Tree(sortedElements: entries.lazy.map { ($0, true) }) {
            tree = built
        } else {
            // Not strictly ascending in our order (a sort descriptor whose comparison is not a
            // total order): insert one by one, which keeps the tree valid.
            tree = Tree()
            for e in entries { tree.updateValue(true, forKey: e) }
        }
        members = Members()
        for e in entries { members[e.key] = e }
        sequence = snapshot.sequence
    }

    mutating func advance(_ commits: [CommitChanges], to snapshot: any DataStoreSnapshot) throws {
        let (keys, all) = touchedKeys(commits, type: itemType)
        if all {
            try load(snapshot)
            touchedAll = true
            refresh()
            return
        }
        let now = try snapshot.items(Item.self, keys: keys)
        for key in keys {
            let old = members[key]
            let new = try now[key].flatMap { try matcher.matches($0) ? matcher.entry(key, $0) : nil }
            if old == nil && new == nil { continue }
            if let old, let new, ItemValues.same(old.item, new.item) { continue }
            if let old {
                tree.removeValue(forKey: old)
                members[key] = nil
            }
            if let new {
                tree.updateValue(true, forKey: new)
                members[key] = new
            }
            touched.insert(key)
        }
        sequence = snapshot.sequence
        refresh()
    }

    var hasCandidate: Bool { delivered == nil || pending != nil }

    /// What differs from `old`: removals, insertions (as ranks) and updated ids; nil if nothing.
    func changes(from old: (tree: Tree, members: Members)) -> Changes? {
        var keys = touched
        if touchedAll {
            keys = Set(old.members.keys).union(members.keys)
        }
        var removed: [(offset: Int, id: Item.ID)] = []
        var inserted: [(offset: Int, id: Item.ID)] = []
        var updated: [(RecordKey, Item.ID)] = []
        for key in keys {
            let o = old.members[key]
            let n = members[key]
            if let o, let n {
                if ItemValues.same(o.item, n.item) { continue }
                updated.append((key, n.item.id))
            }
            if let o { removed.append((old.tree.rank(of: o), o.item.id)) }
            if let n { inserted.append((tree.rank(of: n), n.item.id)) }
        }
        if removed.isEmpty && inserted.isEmpty { return nil }
        return (removed, inserted, updated)
    }

    mutating func takeCandidate(token: DataStoreChangeToken) -> ObservedResults<Item> {
        let initial = delivered == nil
        let difference: CollectionDifference<Item.ID>
        var updated: [Item.ID] = []
        if let delivered, let c = pending {
            difference =
                ResultDiff.make(removed: c.removed, inserted: c.inserted)
                ?? ResultDiff.replacing(delivered.tree.keys.map(\.item.id), with: tree.keys.map(\.item.id))
            updated = c.updated.sorted { $0.0 < $1.0 }.map(\.1)
        } else {
            difference = ResultDiff.insertions(tree.keys.map(\.item.id))
        }
        delivered = (tree, members)
        touched = []
        touchedAll = false
        pending = nil
        return ObservedResults(
            items: ObservedItems(storage: .tree(tree)), difference: difference, updatedIDs: updated,
            sequence: sequence, token: token, isInitial: initial)
    }
}
