/// What opening a store found and did.
public struct RecoveryReport: Sendable, Equatable {
    /// One stretch of bytes that was not used.
    public struct Drop: Sendable, Equatable, CustomStringConvertible {
        /// The file.
        public var path: String
        /// Where the dropped bytes start.
        public var offset: UInt64
        /// How many bytes were dropped.
        public var bytes: UInt64
        /// Why.
        public var reason: String
        /// Creates a drop record.
        public init(path: String, offset: UInt64, bytes: UInt64, reason: String) {
            self.path = path
            self.offset = offset
            self.bytes = bytes
            self.reason = reason
        }
        /// `path@offset: N bytes (reason)`.
        public var description: String { "\(path)@\(offset): \(bytes) bytes dropped (\(reason))" }
    }
    /// Whether the store was created by this open.
    public var created = false
    /// Segments scanned.
    public var segmentsScanned = 0
    /// Transactions replayed.
    public var transactionsReplayed = 0
    /// Bytes read from the log during replay.
    public var bytesReplayed: UInt64 = 0
    /// The torn tail cut off the last segment (an interrupted write), if any.
    /// Transactions the torn tail held that are cut with it: never synced, so never acknowledged
    /// under `.synchronous` durability (`.buffered` and `.none` may lose them by design).
    public var transactionsCut = 0
    /// The store format the store had when this open upgraded it to the current one
    /// (``LogStoreFormat/storeFormat``): 1, or 3 for a store of format 2 or 3 (which share their
    /// MANIFEST and segment versions); nil if it needed no upgrade.
    public var upgradedFromVersion: UInt16? = nil
    public var truncatedTail: Drop?
    /// In ``RecoveryMode/salvage``: damaged ranges skipped.
    public var dropped: [Drop] = []
    /// Files left by an interrupted operation and removed (temporary files, orphan segments).
    public var removedFiles: [String] = []
    /// The sequence number of the last transaction recovered.
    public var lastSequence: UInt64 = 0
    /// Whether the indexes were loaded from the CHECKPOINT file, so that only the log written
    /// after it was replayed.
    public var checkpointUsed = false
    /// The sequence number the checkpoint covered, when one was used.
    public var checkpointSequence: UInt64? = nil
    /// Why a CHECKPOINT file was present but not used (damaged, written for a log that was
    /// compacted since, salvage mode...); the whole log was replayed instead. Nil when there was
    /// no checkpoint or it was used.
    public var checkpointRejectedReason: String? = nil

    /// Creates an empty report.
    public init() {}
}
