import LogStoreEngine

/// Observes a request with a limit, an offset or an attribute filter/sort: it keeps the window
/// it delivered and runs the request again (the public path, so the planner serves it) only
/// when a commit can change the window:
///
/// - a changed key whose item neither matched the predicate before nor matches after is skipped;
/// - so is one whose item matches before and after with the same value (same encoded bytes);
/// - a key in the window, or any match while the window is not full, or a request without limit,
///   re-runs;
/// - in a full window, a match re-runs only if it sorts before the window's last result, or, with
///   an offset, if its old item sorted before the window's first (the window shifts).
///
/// Old items are the window's own (a key outside the window had no old place in it, except before
/// its first result with an offset: then the window re-runs), new ones come from the new snapshot.
/// No snapshot is held between commits: a snapshot can be costly to hold (PostgreSQL's is an open
/// transaction on a connection). Requests that filter or sort by stored attribute re-run on any change of
/// their type (their order is read from bytes, not items). After a re-run the element is built
/// only if the window's ids or items differ from the delivered ones.
struct WindowCore<Item: DataStoreItem>: ObservationCore {
    let request: DataStoreRequest<Item>
    let matcher: RequestMatcher<Item>
    private(set) var sequence: UInt64 = 0
    var started = false
    /// The window now, and the keys in it.
    var window: [ResultEntry<Item>] = []
    var inWindow = Set<RecordKey>()
    /// The window the consumer took last (nil before the first element).
    var delivered: [ResultEntry<Item>]? = nil
    /// Keys whose item may differ from the delivered one; `touchedAll` after a delete-all or reset.
    var touched = Set<RecordKey>()
    var touchedAll = false

    var itemType: String { Item.itemType }

    init(_ request: DataStoreRequest<Item>) {
        self.request = request
        matcher = RequestMatcher(request)
    }

    mutating func start(at snapshot: any DataStoreSnapshot) throws {
        try run(snapshot)
        started = true
        sequence = snapshot.sequence
    }

    mutating func run(_ snapshot: any DataStoreSnapshot) throws {
        let items = try snapshot.read { try $0.items(forRequest: request) }
        window = try items.map { matcher.entry(try ItemKey.make($0.id), $0) }
        inWindow = Set(window.map(\.key))
    }

    mutating func advance(_ commits: [CommitChanges], to new: any DataStoreSnapshot) throws {
        let (keys, all) = touchedKeys(commits, type: itemType)
        touched.formUnion(keys)
        if all { touchedAll = true }
        if started {
            let rerun = try all || mayChange(keys, new: new)
            if rerun { try run(new) }
        }
        sequence = new.sequence
    }

    /// Whether a change of `keys` between the window's state and `new` can change the window (the
    /// rules above).
    func mayChange(_ keys: Set<RecordKey>, new: any DataStoreSnapshot) throws -> Bool {
        if keys.isEmpty || request.limit == 0 { return false }
        if matcher.readsAttributes { return true }
        // With an offset, a key outside the window may have sorted before it: not known without
        // its old item, so the window runs again.
        if request.offset > 0 && keys.contains(where: { !inWindow.contains($0) }) { return true }
        var before: [RecordKey: ResultEntry<Item>] = [:]
        for e in window where keys.contains(e.key) { before[e.key] = e }
        let after = try new.items(Item.self, keys: keys)
        let full = request.limit.map { window.count >= $0 } ?? false
        for key in keys {
            let o = before[key]
            let n = try after[key].flatMap { try matcher.matches($0) ? matcher.entry(key, $0) : nil }
            if o == nil && n == nil { continue }
            if let o, let n, ItemValues.same(o.item, n.item) { continue }
            if inWindow.contains(key) { return true }
            guard full, let first = window.first, let last = window.last else { return true }
            if let n, n < last { return true }
            if let o, request.offset > 0, o < first { return true }
        }
        return false
    }

    /// Ids of the delivered and current windows, and the ids in both whose item changed.
    func changes(from old: [ResultEntry<Item>]) -> (old: [Item.ID], new: [Item.ID], updated: [(RecordKey, Item.ID)]) {
        var oldItems: [RecordKey: Item] = [:]
        for e in old where touchedAll || touched.contains(e.key) { oldItems[e.key] = e.item }
        var updated: [(RecordKey, Item.ID)] = []
        for e in window {
            if let o = oldItems[e.key], !ItemValues.same(o, e.item) { updated.append((e.key, e.item.id)) }
        }
        return (old.map(\.item.id), window.map(\.item.id), updated)
    }

    var hasCandidate: Bool {
        guard let delivered else { return true }
        if !touchedAll && touched.isEmpty { return false }
        let c = changes(from: delivered)
        return c.old != c.new || !c.updated.isEmpty
    }

    mutating func takeCandidate(token: DataStoreChangeToken) -> ObservedResults<Item> {
        let initial = delivered == nil
        let c = changes(from: delivered ?? [])
        let changed = Set(c.updated.map(\.1))
        let difference = ResultDiff.make(from: c.old, to: c.new, changed: changed) ?? ResultDiff.replacing(c.old, with: c.new)
        delivered = window
        touched = []
        touchedAll = false
        return ObservedResults(
            items: ObservedItems(storage: .array(window.map(\.item))), difference: difference,
            updatedIDs: c.updated.sorted { $0.0 < $1.0 }.map(\.1), sequence: sequence, token: token, isInitial: initial)
    }
}
