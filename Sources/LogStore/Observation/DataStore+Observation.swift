// Change tracking on every DataStore, written once over the store's change feed
// (DataStore.changeFeed()).

extension DataStore {
    /// The token of the newest committed state: pass it to ``changes(since:)`` later. O(1), any
    /// thread. Throws `.notOpen` if the store is not set up.
    public func changeToken() throws -> DataStoreChangeToken { try changeFeed().currentToken() }

    /// What changed after `token`, up to the newest committed state: per item type, the ids
    /// inserted or replaced and the ids deleted (``DataStoreChanges``), and the token to pass next
    /// time. Inserted and replaced ids come from the store's index (each entry knows the sequence
    /// of the commit that wrote it: O(items of the types written since the token)); deleted ids
    /// from the tombstones kept per ``ChangeHistoryRetention``.
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
