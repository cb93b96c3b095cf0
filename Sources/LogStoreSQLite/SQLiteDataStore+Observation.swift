public import LogStore
import LogStoreEngine

extension SQLiteDataStore {
    /// See `DataStore.changeFeed()`. The SQLite store does not publish its commits to a change
    /// feed yet, so observation (`observe`, `observeItem`, `observeCount`) and `changes(since:)`
    /// throw `.unsupported` on it (`.notOpen` when it is not set up). Any thread.
    public func changeFeed() throws -> DataStoreChangeFeed {
        _ = try currentSession()
        throw LogStoreError(.unsupported, "SQLiteDataStore does not publish its commits to a change feed yet, so it cannot be observed. Observe a LogDataStore or a PostgresDataStore, or read again after your writes.", path: path)
    }
}
