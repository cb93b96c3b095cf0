public import LogStoreEngine

/// The error codes of the DataStore layer: child stores and merges. Their raw values are stable
/// (they appear in logs and in the CLI's `--json` output).
extension LogStoreError.Code {
    /// `merge(_:)` was given a store that is not a child of this store.
    public static let notAChild = LogStoreError.Code("notAChild")
    /// `merge(_:policy: .failOnConflict)` found items changed on both sides; see
    /// `LogStoreError.conflicts`.
    public static let mergeConflict = LogStoreError.Code("mergeConflict")
    /// A child store's parent was torn down; the child can no longer be used.
    public static let parentClosed = LogStoreError.Code("parentClosed")
}

extension LogStoreError.Code {
    /// The store does not offer what was asked (for example record-level access, which
    /// `DataStoreMigrator` needs, on a backend that does not implement it).
    public static let unsupported = LogStoreError.Code("unsupported")
}
