// Observation and change tracking on every DataStore, written once over the store's change feed
// (DataStore.changeFeed()): the "Observing Changes" article has the delivery rules.

extension DataStore {
    /// A live query: the results of `request` now, then again after every commit that changes
    /// them, each element with the difference from the previous one.
    ///
    /// ```swift
    /// var open = DataStoreRequest(itemType: Restaurant.self)
    /// open.predicate = #Predicate { $0.isOpen }
    /// open.sortDescriptors = [SortDescriptor(\.name)]
    /// for try await results in store.observe(open) {
    ///     print(results.items.map(\.name), results.difference)
    /// }
    /// ```
    ///
    /// Nothing happens until iteration starts; each iteration is its own observation. The first
    /// element is fetched at a snapshot off the caller's thread; later elements follow the commits
    /// after that snapshot, none missed, and only those that change the results (membership,
    /// order or an item's value) produce one. Commits arriving while the consumer is busy
    /// coalesce into one element. A request without limit, offset or attribute filter/sort is
    /// maintained incrementally (a commit costs O(changed items × log results)); others run the
    /// request again when a commit can change their window. Any thread; see
    /// ``DataStoreObservation`` for how iteration ends and what it throws.
    public func observe<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) -> DataStoreObservation<ObservedResults<Item>> {
        DataStoreObservation { [self] in
            if request.limit == nil && request.offset == 0 && request.attributeFilter == nil && request.attributeSort == nil {
                return ObservationRuntime(ResultSetCore(request), store: self)
            }
            return ObservationRuntime(WindowCore(request), store: self)
        }
    }

    /// One item, live: the item of `type` with `id` now (nil if none), then again after every
    /// commit that changes it (inserted, replaced with a different value, deleted). Same rules as
    /// ``observe(_:)``. Any thread.
    public func observeItem<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) -> DataStoreObservation<ObservedItem<Item>> {
        DataStoreObservation { [self] in ObservationRuntime(ItemCore<Item>(id: id), store: self) }
    }

    /// A live count: what `countItems(forRequest:)` returns now, then again after every commit that
    /// changes it. Same rules as ``observe(_:)``. Any thread.
    public func observeCount<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) -> DataStoreObservation<ObservedCount> {
        DataStoreObservation { [self] in ObservationRuntime(CountCore(request), store: self) }
    }

    /// The token of the newest committed state: pass it to ``changes(since:)`` later. O(1), any
    /// thread. Throws `.notOpen` if the store is not set up.
    public func changeToken() throws -> DataStoreChangeToken { try changeFeed().currentToken() }

    /// What changed after `token`, up to the newest committed state: per item type, the ids
    /// inserted or replaced and the ids deleted (``DataStoreChanges``), and the token to pass next
    /// time. Inserted and replaced ids come from the store's index (each entry knows the sequence
    /// of the commit that wrote it: O(items of the types written since the token)); deleted ids
    /// from the tombstones kept per `ChangeHistoryRetention`.
    ///
    /// Runs on the calling thread over one snapshot. Throws `.historyTruncated` when the store
    /// cannot answer exactly (the token is older than the tombstones kept, from before the store
    /// was opened with commits since, of another store, or of a state a crash took back): then
    /// read everything again and continue from ``changeToken()`` taken before that read. Throws
    /// `.notOpen` if the store is not set up.
    public func changes(since token: DataStoreChangeToken) throws -> DataStoreChanges {
        try changeFeed().changes(since: token)
    }
}
