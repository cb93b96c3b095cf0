import LogStoreEngine

/// Observes one item: reads it again only when a commit wrote or deleted its key (or deleted every
/// item of its type, or reset), and yields an element only when its value differs from the one
/// the consumer took (by `==` for `Equatable` items, by encoded bytes otherwise).
struct ItemCore<Item: DataStoreItem>: ObservationCore {
    let id: Item.ID
    private(set) var sequence: UInt64 = 0
    var key: RecordKey? = nil
    var current: Item? = nil
    /// What the consumer took last.
    var delivered: Delivered = .nothingYet

    /// What an item observation last handed its consumer.
    enum Delivered {
        /// No element yet: the first one is due whatever the item holds.
        case nothingYet
        /// An element saying the item does not exist.
        case absent
        /// An element holding this value of the item.
        case item(Item)
    }

    var itemType: String { Item.itemType }

    init(id: Item.ID) { self.id = id }

    mutating func start(at snapshot: any DataStoreSnapshot) throws {
        key = try ItemKey.make(id)
        current = try snapshot.read { try $0.item(ofType: Item.self, id: id) }
        sequence = snapshot.sequence
    }

    mutating func advance(_ commits: [CommitChanges], to snapshot: any DataStoreSnapshot) throws {
        let touched = commits.contains { c in
            guard !c.isReset else { return true }
            guard let t = c.types[itemType], let key else { return false }
            return t.cleared != nil || t.touches(key)
        }
        if touched { current = try snapshot.read { try $0.item(ofType: Item.self, id: id) } }
        sequence = snapshot.sequence
    }

    var hasCandidate: Bool {
        switch (delivered, current) {
        case (.nothingYet, _): return true
        case (.absent, nil): return false
        case (.item(let a), let b?): return !ItemValues.same(a, b)
        default: return true
        }
    }

    mutating func takeCandidate(token: DataStoreChangeToken) -> ObservedItem<Item> {
        let initial: Bool
        if case .nothingYet = delivered { initial = true } else { initial = false }
        delivered = current.map { .item($0) } ?? .absent
        return ObservedItem(item: current, sequence: sequence, token: token, isInitial: initial)
    }
}

/// Observes a request's count (predicate and attribute filter; offset and limit ignored, like
/// `countItems(forRequest:)`). Without a predicate or filter the count comes from the index after
/// every commit of the type (O(1)); with a predicate, each changed key's old and new items are
/// checked and the count adjusted (O(changed keys)), unless a delete-all or reset or a large
/// commit makes counting again cheaper; with an attribute filter it counts again.
struct CountCore<Item: DataStoreItem>: ObservationCore {
    let request: DataStoreRequest<Item>
    let matcher: RequestMatcher<Item>
    private(set) var sequence: UInt64 = 0
    var snapshot: (any DataStoreSnapshot)? = nil
    var count = 0
    var delivered: Int? = nil

    var itemType: String { Item.itemType }

    init(_ request: DataStoreRequest<Item>) {
        self.request = request
        matcher = RequestMatcher(request)
    }

    func recount(_ snapshot: any DataStoreSnapshot) throws -> Int {
        try snapshot.read { try $0.countItems(forRequest: request) }
    }

    mutating func start(at snapshot: any DataStoreSnapshot) throws {
        count = try recount(snapshot)
        self.snapshot = snapshot
        sequence = snapshot.sequence
    }

    mutating func advance(_ commits: [CommitChanges], to new: any DataStoreSnapshot) throws {
        defer {
            snapshot = new
            sequence = new.sequence
        }
        let (keys, all) = touchedKeys(commits, type: itemType)
        guard let old = snapshot, !keys.isEmpty || all else { return }
        if request.predicate == nil || matcher.readsAttributes || all || keys.count > max(64, count / 4) {
            count = try recount(new)
            return
        }
        let before = try old.items(Item.self, keys: keys)
        let after = try new.items(Item.self, keys: keys)
        for key in keys {
            let was = try before[key].map(matcher.matches) ?? false
            let now = try after[key].map(matcher.matches) ?? false
            if was != now { count += now ? 1 : -1 }
        }
    }

    var hasCandidate: Bool { delivered != count }

    mutating func takeCandidate(token: DataStoreChangeToken) -> ObservedCount {
        let initial = delivered == nil
        delivered = count
        return ObservedCount(count: count, sequence: sequence, token: token, isInitial: initial)
    }
}
