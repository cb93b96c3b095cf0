public import LogStoreEngine

extension LogDataStore {
    /// What recovery did when ``setup()`` opened the store: whether the store was created, how
    /// many transactions and bytes were replayed, the torn tail cut off (`RecoveryReport.truncatedTail`),
    /// damaged bytes a `.salvage` open dropped (`RecoveryReport.dropped`), and whether a
    /// checkpoint was used or why not (`RecoveryReport.checkpointRejectedReason`).
    ///
    /// Set by a successful ``setup()`` of a directory or in-memory store and kept until
    /// ``tearDown()``; nil before `setup()`, after `tearDown()`, and always for a child store
    /// (a child's `setup()` recovers nothing: its parent did). A later `setup()` replaces it with
    /// the report of that open. A value: it does not change after it is returned. Any thread.
    public var recoveryReport: RecoveryReport? {
        state.withLock { $0.backend }?.recoveryReport
    }
}
