public import LogStoreEngine

/// The error codes of the DataStore layer: items, child stores, merges and change tracking. Their
/// raw values are stable (they appear in logs and in the CLI's `--json` output).
extension LogStoreError.Code {
    /// An item could not be encoded into attributes (`underlyingError` is a ``CodingFailure``).
    public static let encodingFailed = LogStoreError.Code("encodingFailed")
    /// A stored record could not be decoded as the requested Swift type (`underlyingError` is a
    /// ``CodingFailure``).
    public static let decodingFailed = LogStoreError.Code("decodingFailed")
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
    /// `BackendMigrator` needs, on a backend that does not implement it).
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

extension LogStoreError {
    /// One item changed on both sides of a merge: what a `.mergeConflict` error lists in
    /// ``LogStoreError/conflicts``.
    public struct Conflict: Hashable, Sendable, CustomStringConvertible {
        /// The item type (entity) name.
        public var itemType: String
        /// The item's id, as text (UTF-8 when printable, else hex).
        public var id: String
        /// Creates a conflict description.
        public init(itemType: String, id: String) {
            self.itemType = itemType
            self.id = id
        }
        /// `itemType/id`.
        public var description: String { "\(itemType)/\(id)" }
    }

    /// What the DataStore layer attaches to its errors (``LogStoreError/details``).
    struct DataStoreDetails: Sendable {
        var conflicts: [Conflict] = []
        var migration: String? = nil
    }

    /// This error with `details` replaced by the DataStore layer's `conflicts` and `migration`.
    func with(conflicts: [Conflict] = [], migration: String? = nil) -> LogStoreError {
        var e = self
        e.details = DataStoreDetails(conflicts: conflicts, migration: migration)
        return e
    }

    /// For a `.mergeConflict` error: the items changed both in the child and in the parent since
    /// the child's base. Empty for every other error. A value; any thread.
    public var conflicts: [Conflict] { (details as? DataStoreDetails)?.conflicts ?? [] }

    /// For a `.migrationFailed` error: the name of the failing migration step; nil otherwise. A
    /// value; any thread.
    public var migration: String? { (details as? DataStoreDetails)?.migration }
}
