public import Logging

/// When a committed write reaches the disk.
public enum Durability: Sendable, Hashable {
    /// A commit returns only after `fdatasync`. Concurrent commits share one `fdatasync`
    /// (group commit). The default.
    case synchronous
    /// A commit returns once written to the operating system; LogStore calls `fdatasync` every
    /// ``LogEngineOptions/syncInterval``, on `flush()` and on close. A power loss may lose the last
    /// interval's commits (never part of a commit); a process crash loses nothing.
    case buffered
    /// No `fdatasync` at all (what the in-memory store uses). A power loss may lose any commit
    /// not yet written back by the OS, but never leaves part of one.
    case none
}

/// What opening a store does with damage it finds.
public enum RecoveryMode: Sendable, Hashable {
    /// A torn tail of the last segment (an interrupted write) is cut off and reported; any other
    /// damage fails `open` with a `.corruption` error naming the file and offset. The default.
    case strict
    /// Keep every valid transaction, skip damaged ones, and report what was dropped in
    /// ``RecoveryReport/dropped``. Used by `logstore-compact salvage`.
    case salvage
}

/// Options of a ``LogEngine``: durability, the log's shape, compression, limits, caches,
/// recovery, compaction and checkpoints. A value type: copy and change it before opening an
/// engine. (A `LogDataStore` takes these inside its `LogStoreOptions`, with the DataStore layer's
/// own options beside them.)
public struct LogEngineOptions: Sendable {
    /// When commits are durable. Default ``Durability/synchronous``.
    public var durability: Durability = .synchronous
    /// For ``Durability/buffered``: the longest time a commit waits for `fdatasync`. Default 100 ms.
    public var syncInterval: Duration = .milliseconds(100)
    /// A segment file rolls over to a new one once it exceeds this many bytes. Default 64 MiB;
    /// at least 64 KiB, at most 1 GiB.
    public var segmentSize: Int = 64 << 20
    /// Records are grouped into frames of at most this many bytes (a record larger than this gets
    /// a frame of its own). In format 4 a frame is only the unit of the commit protocol: a read
    /// checks and decodes one record, never a frame. Default 8 KiB.
    public var maxFramePayload: Int = 8 << 10
    /// Whether values are LZ4-compressed, each alone (against its item type's dictionary once the
    /// recompression pass has trained one), when that makes them smaller. Default true.
    public var compression: Bool = true
    /// With ``compression``: whether write transactions compress values as they commit, or store
    /// them raw and leave them for the recompression pass (``recompress()``, and in the background
    /// when the store is idle) to compress with their type's dictionary. Default false.
    ///
    /// False keeps compression off the commit path: LZ4 on each value costs a writer more CPU
    /// than the rest of its work on text-heavy items, and a record stored raw is read in place.
    /// The price is a larger log until the recompression pass runs. True compresses at commit
    /// time with the type's current dictionary (fast LZ4), or without one before it has one.
    public var compressOnWrite: Bool = false
    /// With ``compression``: how hard the recompression pass compresses. 0: LZ4's fast mode;
    /// 1 to 12: LZ4HC at that level (same format and decompression speed, smaller records, slower
    /// to compress). Default 3 (Docs/Performance.md). Values outside 0...12 are clamped.
    public var recompressionLevel: Int = 3
    /// Whether the store recompresses in the background (on a utility-QoS queue): once sealed
    /// segments hold at least ``compactionMinimumDeadBytes`` of values stored raw and the
    /// store has had no commit for ``recompressionIdleDelay``, the
    /// recompression pass (``LogEngine/recompress(includingTail:)``) compresses them with their
    /// types' dictionaries, training them as needed. Default true.
    public var autoRecompression: Bool = true
    /// How long the store must have had no commit before background recompression runs.
    /// Default 5 s.
    public var recompressionIdleDelay: Duration = .seconds(5)
    /// A type gets a dictionary once it has at least this many bytes of live values in the
    /// recompression pass's segments (smaller types are not worth a define of up to 64 KiB).
    package var dictionaryTrainingMinimumBytes = 256 << 10
    /// Values smaller than this are compressed only with a dictionary (alone they do not
    /// compress). Default 256 bytes.
    public var compressionThreshold: Int = 256
    /// The largest encoded item (record value) accepted; a larger one throws `.itemTooLarge`.
    /// Default 16 MiB.
    public var maxItemSize: Int = 16 << 20
    /// The largest key (encoded id) accepted; a larger one throws `.keyTooLarge`. Default 1 KiB.
    public var maxKeySize: Int = 1 << 10
    /// The longest item type name, in UTF-8 bytes. Default 255.
    public var maxTypeNameSize: Int = 255
    /// Bytes of decompressed frames of version 1 and 2 segments (a store upgraded from format 3,
    /// until compaction rewrites them) kept in memory for reads. Default 32 MiB.
    public var cacheSize: Int = 32 << 20
    /// What open does with damage. Default ``RecoveryMode/strict``.
    public var recovery: RecoveryMode = .strict
    /// A write transaction keeps the values it writes in memory up to this many bytes, then
    /// moves them to a temporary file in the store's directory (`txn-<uuid>.tmp`, removed when the
    /// transaction ends) and commits in chunks, so that a transaction of millions of records (a
    /// migration) holds at most this much of its values in memory at once (Docs/Migrations.md, "Large
    /// transactions"). 0 keeps every value in memory. Default 32 MiB.
    public var transactionSpillThreshold: Int = 32 << 20
    /// Whether the store is encrypted at rest, and with which key (``StoreEncryption``; the
    /// `LogStoreEncryption` product makes one from a 256-bit key). Checked at open before any file
    /// changes: `.wrongKey` for a missing or wrong key, `.notEncrypted` for a key given to a store
    /// that is not encrypted. A new store is created encrypted when it is set (the
    /// "Encrypting a Store" article). Default ``StoreEncryption/none``.
    public var encryption: StoreEncryption = .none
    /// Where the store reports recovery, compaction and I/O failures. Default: none.
    public var logger: Logger? = nil
    /// Whether the store compacts itself in the background (on a utility-QoS queue, without
    /// blocking readers or writers) once the dead bytes of its sealed segments reach
    /// ``compactionThreshold`` of the store's size and at least ``compactionMinimumDeadBytes``.
    /// Checked after every segment roll-over and at open. Default true.
    public var autoCompaction: Bool = true
    /// The share of the store's bytes that must be dead (overwritten or deleted records in sealed
    /// segments) before background compaction runs. Between 0 (exclusive) and 1. Default 0.6.
    public var compactionThreshold: Double = 0.6
    /// Background compaction never runs for fewer dead bytes than this. Default 16 MiB.
    public var compactionMinimumDeadBytes: Int = 16 << 20
    /// Whether `close()` writes a checkpoint of the indexes, so the next open replays nothing.
    /// Default true.
    public var checkpointOnClose: Bool = true
    /// A checkpoint is also written in the background after this many bytes of log were appended
    /// since the last one, bounding the replay after a crash. 0 disables it. Default 64 MiB.
    public var checkpointInterval: Int = 64 << 20

    /// How many bytes of the tail segment LogStore keeps written (with zeros) and synced ahead of
    /// where the next commit goes, so that a durable commit overwrites allocated blocks and its
    /// `fdatasync` flushes data only, instead of also committing the file's new size (a second
    /// I/O per commit). Written in the background; the zeros are cut off again when a segment is
    /// sealed and on close, and recovery reads them as free space (Docs/Design.md,
    /// "Preallocation"). Also fills a spare file for the next segment. Not used with
    /// ``Durability/none`` (no commit waits for a sync). Default 4 MiB; 0 turns it off.
    public var preallocationSize: Int = 4 << 20
    /// Whether preallocation runs on a background queue (the default) or at once on the
    /// committing thread, which makes a crash harness's run depend on its seed alone.
    package var preallocatesInBackground = true

    /// The defaults: synchronous durability, compression on, 64 MiB segments, 16 MiB items.
    public init() {}

    /// The size limits writes are checked against (``maxItemSize``, ``maxKeySize``,
    /// ``maxTypeNameSize``) and the value bytes a transaction keeps in memory
    /// (``transactionSpillThreshold``).
    public var limits: RecordLimits {
        RecordLimits(
            maxItemSize: maxItemSize, maxKeySize: maxKeySize, maxTypeNameSize: maxTypeNameSize,
            transactionSpillThreshold: transactionSpillThreshold)
    }

    func validated() throws -> LogEngineOptions {
        var o = self
        guard (64 << 10)...(1 << 30) ~= o.segmentSize else {
            throw LogStoreError(.invalidArgument, "segmentSize must be between 64 KiB and 1 GiB (got \(o.segmentSize)).")
        }
        guard o.maxItemSize > 0, o.maxItemSize <= (256 << 20) else {
            throw LogStoreError(.invalidArgument, "maxItemSize must be between 1 byte and 256 MiB (got \(o.maxItemSize)).")
        }
        guard o.maxKeySize > 0, o.maxKeySize <= (64 << 10) else {
            throw LogStoreError(.invalidArgument, "maxKeySize must be between 1 byte and 64 KiB (got \(o.maxKeySize)).")
        }
        guard o.compactionThreshold > 0, o.compactionThreshold <= 1 else {
            throw LogStoreError(.invalidArgument, "compactionThreshold must be in (0, 1] (got \(o.compactionThreshold)).")
        }
        o.compactionMinimumDeadBytes = max(0, o.compactionMinimumDeadBytes)
        o.checkpointInterval = max(0, o.checkpointInterval)
        o.maxFramePayload = min(max(o.maxFramePayload, 512), 1 << 20)
        o.cacheSize = max(0, o.cacheSize)
        o.recompressionLevel = min(max(o.recompressionLevel, 0), 12)
        o.preallocationSize = max(0, o.preallocationSize)
        o.transactionSpillThreshold = max(0, o.transactionSpillThreshold)
        return o
    }
}

/// The limits every write is checked against, whatever store it goes to: the engine, a child
/// store, or another backend that keeps the DataStore contract's limits. A value type.
public struct RecordLimits: Sendable, Hashable {
    /// The largest encoded item (record value) accepted; a larger one throws `.itemTooLarge`.
    public var maxItemSize: Int
    /// The largest key (encoded id) accepted; a larger one throws `.keyTooLarge`.
    public var maxKeySize: Int
    /// The longest item type name, in UTF-8 bytes; a longer one throws `.keyTooLarge`.
    public var maxTypeNameSize: Int
    /// The value bytes a write transaction keeps in memory before it moves them to a file (where
    /// the transaction has one to move them to); 0 keeps every value in memory.
    public var transactionSpillThreshold: Int

    /// Limits from their parts; the defaults are ``LogEngineOptions``' (16 MiB items, 1 KiB keys,
    /// 255-byte type names, 32 MiB of values in memory).
    public init(
        maxItemSize: Int = 16 << 20, maxKeySize: Int = 1 << 10, maxTypeNameSize: Int = 255, transactionSpillThreshold: Int = 32 << 20
    ) {
        self.maxItemSize = maxItemSize
        self.maxKeySize = maxKeySize
        self.maxTypeNameSize = maxTypeNameSize
        self.transactionSpillThreshold = transactionSpillThreshold
    }
}

extension RecordLimits {
    /// Checks one record against the limits: its item type name (not empty, at most
    /// ``maxTypeNameSize`` bytes), its key (``maxKeySize``) and its value's size
    /// (``maxItemSize``). Throws `.invalidArgument`, `.keyTooLarge` or `.itemTooLarge`; the
    /// messages give sizes and limits, never the data.
    public func validate(type: String, key: RecordKey, valueSize: Int) throws {
        let typeBytes = type.utf8.count
        guard typeBytes > 0 else { throw LogStoreError(.invalidArgument, "An item type name must not be empty.") }
        guard typeBytes <= maxTypeNameSize else {
            throw LogStoreError(
                .keyTooLarge, "An item type name is \(typeBytes) bytes; the limit is \(maxTypeNameSize) (the maxTypeNameSize option).")
        }
        guard key.count <= maxKeySize else {
            throw LogStoreError(
                .keyTooLarge, "The key of a \(type) is \(key.count) bytes; the limit is \(maxKeySize) (the maxKeySize option).")
        }
        guard valueSize <= maxItemSize else {
            throw LogStoreError(
                .itemTooLarge,
                "A \(type) encodes to \(valueSize) bytes; the limit is \(maxItemSize) (the maxItemSize option). Store large blobs outside the store, or raise the limit."
            )
        }
    }
}
