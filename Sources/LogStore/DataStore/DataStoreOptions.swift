public import LogStoreEngine
public import Logging

/// The options every store takes, whatever its backend: when commits are durable, the size
/// limits of the DataStore contract, child stores' memory, change tracking's history, and a
/// logger. `SQLiteDataStore` and `PostgresDataStore` take these; a `LogDataStore` takes them
/// inside ``LogStoreOptions``, beside its engine's own. A value type: copy and change it before
/// passing it to a store.
public struct DataStoreOptions: Sendable {
    /// When a committed write is durable. Default `Durability.synchronous`. On SQLite:
    /// `PRAGMA synchronous` `FULL`, `NORMAL`, `OFF`; on PostgreSQL, anything but `.synchronous`
    /// turns `synchronous_commit` off for the store's connections.
    public var durability: Durability = .synchronous
    /// The largest encoded item accepted; a larger one throws `.itemTooLarge`. Default 16 MiB.
    public var maxItemSize: Int = 16 << 20
    /// The largest key (encoded id) accepted; a larger one throws `.keyTooLarge`. Default 1 KiB.
    public var maxKeySize: Int = 1 << 10
    /// The longest item type name, in UTF-8 bytes. Default 255.
    public var maxTypeNameSize: Int = 255
    /// A child store keeps its changes in memory up to this many bytes, then moves them to a
    /// temporary file beside its root store. Default 8 MiB.
    public var childSpillThreshold: Int = 8 << 20
    /// How long deleted ids are remembered for `changes(since:)`. Default: a day, at most a
    /// million (``ChangeHistoryRetention``).
    public var changeHistory = ChangeHistoryRetention()
    /// Where the store reports migrations, recovery, and failures it works around. Default: none.
    public var logger: Logger? = nil

    /// The defaults: synchronous durability, 16 MiB items, 1 KiB keys, 8 MiB of child changes in
    /// memory, a day of deleted ids.
    public init() {}

    /// The limits every write is checked against.
    public var limits: RecordLimits {
        RecordLimits(maxItemSize: maxItemSize, maxKeySize: maxKeySize, maxTypeNameSize: maxTypeNameSize)
    }
}

/// The options of a ``LogDataStore``: its engine's (`LogEngineOptions`: durability, segments,
/// frames, compression, limits, caches, recovery, compaction, checkpoints, preallocation) and the
/// DataStore layer's own (``childSpillThreshold``, ``changeHistory``).
///
/// Every engine option reads and writes as if it were a property of this type
/// (`options.segmentSize = 8 << 20`), through ``subscript(dynamicMember:)``. A value type.
@dynamicMemberLookup
public struct LogStoreOptions: Sendable {
    /// The engine's options.
    public var engine = LogEngineOptions()
    /// See ``DataStoreOptions/childSpillThreshold``. Default 8 MiB.
    public var childSpillThreshold: Int = 8 << 20
    /// See ``DataStoreOptions/changeHistory``. Default: a day, at most a million.
    public var changeHistory = ChangeHistoryRetention()

    /// The defaults of both layers.
    public init() {}

    /// An engine option, as if it were a property of this type.
    public subscript<Value>(dynamicMember path: WritableKeyPath<LogEngineOptions, Value>) -> Value {
        get { engine[keyPath: path] }
        set { engine[keyPath: path] = newValue }
    }

    /// The options the DataStore layer applies (durability, limits and logger come from the
    /// engine's options).
    public var dataStore: DataStoreOptions {
        var o = DataStoreOptions()
        o.durability = engine.durability
        o.maxItemSize = engine.maxItemSize
        o.maxKeySize = engine.maxKeySize
        o.maxTypeNameSize = engine.maxTypeNameSize
        o.childSpillThreshold = childSpillThreshold
        o.changeHistory = changeHistory
        o.logger = engine.logger
        return o
    }
}
