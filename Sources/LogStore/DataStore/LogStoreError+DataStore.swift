public import LogStoreEngine

/// The error codes of the DataStore layer: child stores, merges and change tracking. Their raw values are stable
/// (they appear in logs and in the CLI's `--json` output).
extension LogStoreError.Code {
    /// `merge(_:)` was given a store that is not a child of this store.
    public static let notAChild = LogStoreError.Code("notAChild")
    /// `merge(_:policy: .failOnConflict)` found items changed on both sides; see
    /// `LogStoreError.conflicts`.
    public static let mergeConflict = LogStoreError.Code("mergeConflict")
    /// A child store's parent was torn down; the child can no longer be used.
    public static let parentClosed = LogStoreError.Code("parentClosed")
    /// `changes(since:)` was given a token older than the history the store keeps (tombstones
    /// dropped by ``ChangeHistoryRetention``, or a token from before the store was opened), a
    /// token of another store, or of a state a crash took back. Resynchronize fully, then continue
    /// from the token of the state you read.
    public static let historyTruncated = LogStoreError.Code("historyTruncated")
}

extension LogStoreError.Code {
    /// The store does not offer what was asked (for example record-level access, which
    /// `DataStoreMigrator` needs, on a backend that does not implement it).
    public static let unsupported = LogStoreError.Code("unsupported")
}

/// The error codes of migrations (``DataStoreMigrations``), thrown by `setup()`.
extension LogStoreError.Code {
    /// The store has applied migrations this build does not register: it was written by a newer
    /// version of the app. Refused unless ``DataStoreMigrations/allowsUnknownMigrations`` is set.
    public static let unknownMigrations = LogStoreError.Code("unknownMigrations")
    /// A migration step threw: it was rolled back (nothing of it, nor of the steps after it,
    /// was committed). `LogStoreError.migration` names it; `underlyingError` is its error.
    public static let migrationFailed = LogStoreError.Code("migrationFailed")
    /// The registered migrations do not extend what the store has applied: one was registered
    /// before a migration the store has applied but never ran itself (it was inserted, renamed or
    /// reordered). Migrations can only be appended. (An empty or repeated name is
    /// `.invalidArgument`.)
    public static let migrationHistoryMismatch = LogStoreError.Code("migrationHistoryMismatch")
}
