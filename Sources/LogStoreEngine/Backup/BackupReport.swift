/// How ``LogEngine/backup(to:fileSystem:verification:progress:)`` checks the copy before it
/// declares the backup complete. Stronger checks cost more: see Docs/Performance.md, "Backup
/// bandwidth".
public enum BackupVerification: String, Sendable, Hashable, CaseIterable {
    /// Every byte copied is read back from the backup and compared with the store's; MANIFEST
    /// and CHECKPOINT are read back and compared with what was written. The default: it proves
    /// the files hold what was meant, at the cost of reading them (from the page cache, mostly).
    case readBack
    /// As ``readBack``, then the backup is opened from its checkpoint and its sequence number,
    /// item types, every record's location and its secondary indexes are compared with the
    /// snapshot's: the backup opens as the store it is meant to be. Costs an open (about the
    /// time of opening the store from a checkpoint).
    case open
    /// As ``readBack``, then the backup is opened by replaying its whole log before its checkpoint
    /// is written: every frame's checksum and every transaction is checked (as
    /// `logstore-compact verify` does), its secondary indexes are built again from its records,
    /// and everything is compared with the snapshot. Costs a full replay (CPU bound).
    case replay
}

/// Where a backup is, for a progress display. Values; any thread.
public struct BackupProgress: Sendable, Hashable {
    /// What a backup does, in order.
    public enum Phase: String, Sendable, Hashable {
        /// Copying segment files (``BackupProgress/bytesDone`` of ``BackupProgress/bytesTotal``).
        case copying
        /// Reading the copies back and opening the backup.
        case verifying
        /// The backup is complete.
        case done
    }

    /// The current phase.
    public var phase: Phase
    /// Bytes copied (or, while verifying, read back) so far.
    public var bytesDone: UInt64
    /// Bytes the backup copies (segments reused by an incremental backup are not counted).
    public var bytesTotal: UInt64
    /// Segment files handled so far.
    public var segmentsDone: Int
    /// Segment files of the snapshot.
    public var segmentsTotal: Int

    /// A progress value.
    public init(phase: Phase, bytesDone: UInt64, bytesTotal: UInt64, segmentsDone: Int, segmentsTotal: Int) {
        self.phase = phase
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
        self.segmentsDone = segmentsDone
        self.segmentsTotal = segmentsTotal
    }
}

/// What a backup copied and checked. A value; any thread.
public struct BackupReport: Sendable, Hashable {
    /// The backup directory.
    public var directory: String
    /// The last transaction the backup holds: the store's committed state at the moment the
    /// backup started.
    public var sequence: UInt64
    /// Records of the snapshot.
    public var records: Int
    /// Segment files of the backup.
    public var segments: Int
    /// Segment files copied or extended now (all of them, unless an incremental backup reused
    /// some).
    public var segmentsCopied: Int
    /// Segment files already in the destination and kept as they were (incremental backup).
    public var segmentsReused: Int
    /// Bytes copied.
    public var bytesCopied: UInt64
    /// Bytes of the backup's segment files.
    public var bytes: UInt64
    /// How it was verified.
    public var verification: BackupVerification
    /// How long the backup took.
    public var duration: Duration

    /// A report.
    public init(
        directory: String, sequence: UInt64, records: Int, segments: Int, segmentsCopied: Int, segmentsReused: Int,
        bytesCopied: UInt64, bytes: UInt64, verification: BackupVerification, duration: Duration
    ) {
        self.directory = directory
        self.sequence = sequence
        self.records = records
        self.segments = segments
        self.segmentsCopied = segmentsCopied
        self.segmentsReused = segmentsReused
        self.bytesCopied = bytesCopied
        self.bytes = bytes
        self.verification = verification
        self.duration = duration
    }
}
