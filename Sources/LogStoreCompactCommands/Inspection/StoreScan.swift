import LogStoreCommandSupport
public import LogStoreEngine

/// What ``StoreScanner`` found in a store directory: files, manifest, per-segment and per-type
/// figures, live/dead bytes, and every ``StoreIssue``.
///
/// A value type built on the calling thread by ``StoreScanner/scan(progress:)``; it describes the
/// files as they were during the scan and stays valid (and unchanged) for as long as you keep it.
/// It also holds an independent index of the log (type → key → location), which
/// ``compareIndex(with:checkValues:)`` compares with an engine's.
public struct StoreScan: Sendable {
    /// A file of the store directory.
    public struct File: Sendable, Hashable {
        /// What a file is for, judged by its name.
        public enum Role: String, Sendable, Hashable {
            /// `MANIFEST`.
            case manifest
            /// `NNNNNN.log`.
            case segment
            /// `LOCK` (empty; only its `flock` matters).
            case lock
            /// `*.tmp`: left by an interrupted manifest rewrite.
            case temporary
            /// A checkpoint file (name contains `checkpoint` or ends in `.ckpt`).
            case checkpoint
            /// `NNNNNN.run`: an index run a format 4 checkpoint names (or left by an interrupted
            /// checkpoint, which the next open removes).
            case run
            /// Anything else (not LogStore's).
            case other
        }
        /// The file name (no directory).
        public var name: String
        /// The file's size in bytes.
        public var size: UInt64
        /// What the name says the file is.
        public var role: Role
        /// For a segment: its number.
        public var segmentNumber: UInt32?
        /// For a segment: whether the manifest lists it (an unlisted one is a stray).
        public var listed: Bool
    }

    /// The decoded `MANIFEST`.
    public struct Manifest: Sendable, Hashable {
        /// Format version it was written with.
        public var version: UInt16
        /// Incremented on every rewrite (roll-over, compaction).
        public var generation: UInt64
        /// The number the next new segment gets.
        public var nextSegment: UInt32
        /// Live segments in replay order.
        public var segments: [UInt32]
        /// Format version 2: the store's id (32 hex digits); nil for version 1.
        public var storeId: String? = nil
    }

    /// One scanned segment.
    public struct Segment: Sendable, Hashable {
        /// Segment number.
        public var number: UInt32
        /// Absolute path.
        public var path: String
        /// File size in bytes (0 if missing).
        public var fileSize: UInt64
        /// From the header; nil when the header is bad or the file is missing.
        public var baseSequence: UInt64?
        /// Valid frames.
        public var frames = 0
        /// Committed transactions replayed into the index.
        public var transactions = 0
        /// Sequence numbers of the first and last replayed transaction.
        public var firstSequence: UInt64?
        /// See ``firstSequence``.
        public var lastSequence: UInt64?
        /// Sum of valid frames' stored (on-disk) payload bytes.
        public var storedPayloadBytes: UInt64 = 0
        /// Sum of valid frames' raw (decompressed) payload bytes.
        public var rawPayloadBytes: UInt64 = 0
        /// Estimated on-disk bytes of the records still live in this segment.
        public var liveBytes: UInt64 = 0
        /// Live records whose value is stored in this segment.
        public var liveRecords = 0
        /// Whether damage was found in it.
        public var damaged = false
    }

    /// Figures for one item type.
    public struct TypeSummary: Sendable, Hashable {
        /// Records of this type in the final state.
        public var liveRecords = 0
        /// Sum of their value lengths.
        public var liveValueBytes: UInt64 = 0
        /// Estimated on-disk bytes of their records (each record's share of its frame).
        public var liveBytes: UInt64 = 0
        /// Put records of this type in the log (live or not).
        public var puts = 0
        /// Delete records (tombstones) of this type in the log.
        public var deletes = 0
        /// Delete-all records of this type in the log.
        public var deleteAlls = 0
        /// All zero.
        public init() {}
    }

    /// The store directory.
    public var directory: String
    /// Every file in the directory, sorted by name.
    public var files: [File] = []
    /// The manifest, or nil when missing or damaged (then segments are taken in file-number order).
    public var manifest: Manifest?
    /// The segments replayed, in replay order.
    public var segments: [Segment] = []
    /// Everything wrong or noteworthy, in the order found.
    public var issues: [StoreIssue] = []
    /// Per item type; only types that appear in the log.
    public var types: [String: TypeSummary] = [:]
    /// First and last sequence number replayed (nil / 0 for an empty log).
    public var firstSequence: UInt64?
    /// See ``firstSequence``.
    public var lastSequence: UInt64 = 0
    /// Valid frames, replayed transactions, records and decoded values.
    public var frames = 0
    /// See ``frames``.
    public var transactions = 0
    /// See ``frames``.
    public var records = 0
    /// See ``frames``. Values that failed to decode are issues of kind `.value`.
    public var valuesDecoded = 0
    /// Valid transactions that follow damage in their segment: `open` refuses the store and a
    /// salvage drops them (the engine stops reading a segment at its first damaged frame).
    public var transactionsAfterDamage = 0
    /// Bytes of the listed segments' files.
    public var segmentBytes: UInt64 = 0
    /// Estimated on-disk bytes of live records (each record's share of its frame's stored payload).
    public var liveBytes: UInt64 = 0
    /// Raw (uncompressed, encoded record) bytes of live records.
    public var liveRawBytes: UInt64 = 0
    /// Segment and frame headers of valid data.
    public var overheadBytes: UInt64 = 0
    /// Zeros after the tail's last transaction: space preallocated for the next commits (left by
    /// a store that is open or was not closed cleanly; closing cuts them). Not dead bytes.
    public var preallocatedBytes: UInt64 = 0
    /// Stored and raw payload bytes of every valid frame.
    public var storedPayloadBytes: UInt64 = 0
    /// See ``storedPayloadBytes``.
    public var rawPayloadBytes: UInt64 = 0

    var index: [String: [RecordKey: ScanEntry]] = [:]
    /// ``index`` as of the checkpoint's sequence (nil without a valid checkpoint, or when the
    /// log does not reach it).
    var indexAtCheckpoint: [String: [RecordKey: ScanEntry]]? = nil

    /// Creates an empty scan of `directory` (``StoreScanner`` fills it in).
    public init(directory: String) { self.directory = directory }

    /// Bytes of listed segments that compaction could reclaim: overwritten and deleted records,
    /// tombstones, torn tails and damaged ranges (`segmentBytes - liveBytes - overheadBytes -
    /// preallocatedBytes`).
    public var deadBytes: UInt64 {
        let kept = liveBytes + overheadBytes + preallocatedBytes
        return segmentBytes > kept ? segmentBytes - kept : 0
    }

    /// Bytes of segment files the manifest does not list (left by an interrupted operation).
    public var strayBytes: UInt64 {
        files.filter { $0.role == .segment && !$0.listed }.reduce(0) { $0 + $1.size }
    }

    /// Bytes of every file in the directory.
    public var totalBytes: UInt64 { files.reduce(0) { $0 + $1.size } }

    /// Live records of every type.
    public var liveRecords: Int { types.values.reduce(0) { $0 + $1.liveRecords } }

    /// Raw / stored payload bytes (2.0 means LZ4 halved the log); nil for an empty log.
    public var compressionRatio: Double? {
        storedPayloadBytes == 0 ? nil : Double(rawPayloadBytes) / Double(storedPayloadBytes)
    }

    /// Whether any issue is damage (not just a warning).
    public var hasDamage: Bool { issues.contains { $0.severity == .damage } }

    /// What a valid `CHECKPOINT` says: the sequence it covers, the manifest generation it was taken
    /// at, and when it was written (milliseconds since 1970). Nil when there is none or it is damaged.
    public var checkpoint: (sequence: UInt64, generation: UInt64, createdAtMillis: UInt64)?
    /// The secondary indexes a valid `CHECKPOINT` holds (as of its sequence): per type, each
    /// index's definition, entries and estimated memory once loaded.
    public var checkpointIndexes: [SecondaryIndexSummary] = []

    /// Checkpoint files present (by name; see ``File/Role/checkpoint``).
    public var checkpointFiles: [File] { files.filter { $0.role == .checkpoint } }

    /// Bytes of the checkpoint and the run files.
    public var checkpointBytes: UInt64 { files.filter { $0.role == .checkpoint || $0.role == .run }.reduce(0) { $0 + $1.size } }

    /// An estimate of the run files a checkpoint of the live records takes (4 KiB pages): per
    /// type a header page, leaves of keys and 24-byte locations, and inner pages; per secondary
    /// index the valid checkpoint lists, the same over its entry bytes. Pure; an estimate.
    public func estimatedRunBytes() -> UInt64 {
        let page = 4096
        let usable = page - 32
        func runBytes(entries: Int, bytes: Int) -> UInt64 {
            guard entries > 0 else { return 0 }
            let leaves = (bytes + usable - 1) / usable
            let inner = max(1, (leaves + 100) / 101)
            return UInt64((1 + leaves + (leaves > 1 ? inner : 0)) * page)
        }
        var total: UInt64 = 0
        for (_, entries) in index {
            let fixed = entries.keys.allSatisfy { $0.count == 8 || $0.count == 16 }
            let keyBytes = entries.keys.reduce(0) { $0 + $1.count + (fixed ? 0 : 3) }
            total += runBytes(entries: entries.count, bytes: keyBytes + entries.count * 24)
        }
        for summary in checkpointIndexes {
            total += runBytes(entries: summary.entries, bytes: summary.entryBytes + 3 * summary.entries)
        }
        return total
    }

    /// An estimate of the segment bytes after a full compaction that rewrites only the live
    /// records: segment headers, live records at the log's current compression ratio, and a frame
    /// header per `maxFramePayload` raw bytes. Pure; an estimate, not a promise.
    public func estimatedCompactedSegmentBytes(
        segmentSize: Int = LogEngineOptions().segmentSize, maxFramePayload: Int = LogEngineOptions().maxFramePayload
    ) -> UInt64 {
        let frames = max(1, (liveRawBytes + UInt64(maxFramePayload) - 1) / UInt64(max(1, maxFramePayload)))
        let body = liveBytes + frames * UInt64(LogFrame.headerSizeV2)
        let segments = max(1, (body + UInt64(segmentSize) - 1) / UInt64(max(1, segmentSize)))
        return body + segments * UInt64(SegmentHeader.sizeV2)
    }

    /// The live keys of `type` with where the log says each is stored, sorted by key.
    public func liveLocations(ofType type: String) -> [(key: RecordKey, location: RecordLocation)] {
        guard let d = index[type] else { return [] }
        return d.map { ($0.key, $0.value.location) }.sorted { $0.key < $1.key }
    }
}

/// What the scanner remembers about one live record.
struct ScanEntry: Sendable {
    var location: RecordLocation
    /// CRC-32C of the value bytes (to compare with what the engine reads back).
    var valueCRC: UInt32
    /// Encoded record size in the raw payload.
    var rawSize: Int
    /// The record's share of its frame's stored bytes.
    var storedShare: Double
}
