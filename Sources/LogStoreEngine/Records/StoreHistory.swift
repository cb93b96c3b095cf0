public import Foundation

/// A store's history: what changed its schema, kept in the store itself as records of the reserved
/// item type ``itemType`` (`logstore.history`), one record per event, committed in the same
/// transaction as the change it records (Docs/FileFormat.md, section 7b).
///
/// Events are the migrations the DataStore layer ran (``Kind/migration``), the secondary-index
/// declarations that changed (``Kind/indexes``), and the development-only erase of a store whose
/// migrations changed (``Kind/erase``). Apps never see these records: requests are by Swift type,
/// and `itemTypeNames()` leaves out every type named with the ``reservedPrefix``. Tools read them
/// with ``entries(in:)`` (an engine snapshot) or from the DataStore layer's record-level access.
///
/// Record key: the event's ordinal (1, 2, 3, ...) as 8 bytes big-endian, so key order is the
/// order events happened in. Record value: one attribute map (section 8),
///
///     entry := map {
///         "kind": string                  -- "migration" | "indexes" | "erase"; others: unknown
///         "name": string                  -- the migration's name; the item type (indexes);
///                                         -- "" (erase)
///         "at": date                      -- when it was committed (the writer's clock)
///         "durationMs"?: int              -- how long the step ran
///         "changes"?: int                 -- records the step put or deleted
///         "indexes"?: array of map { "name": string, "definition": string, "hash": int,
///                                    "entries"?: int }
///                                         -- indexes: the type's declared indexes after the event
///                                         -- (hash: IndexDefinition.definitionHash's bits;
///                                         -- entries: of each index built by it)
///         "dropped"?: array of string     -- indexes: indexes no longer declared
///         "reason"?: string               -- erase: why
///     }
///
/// Readers ignore keys they do not know, so later versions may add some; a record that is not
/// such a map is reported as `.corruption`. Pure values; any thread.
public enum StoreHistory {
    /// The reserved item type of the history's records.
    public static let itemType = "logstore.history"
    /// The prefix of item types reserved for LogStore's own records (this history, the data
    /// migrator's cursor `logstore.migration`): apps cannot write or request items of such types,
    /// and `itemTypeNames()` does not list them.
    public static let reservedPrefix = "logstore."

    /// Whether `type` is reserved for LogStore's own records.
    public static func isReserved(_ type: String) -> Bool { type.hasPrefix(reservedPrefix) }

    /// What an event was.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The stable name stored in the record.
        public let rawValue: String
        /// A kind from its stored name (an unknown one stays as it is).
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The stored name.
        public var description: String { rawValue }

        /// A migration step ran (and committed with this record).
        public static let migration = Kind("migration")
        /// The secondary indexes declared for an item type changed and were built or dropped.
        public static let indexes = Kind("indexes")
        /// The store was erased because its migrations changed (a development-only option).
        public static let erase = Kind("erase")
    }

    /// One declared secondary index, as an ``Kind/indexes`` event records it.
    public struct IndexRecord: Hashable, Sendable {
        /// The index's name.
        public var name: String
        /// Its description (``IndexDefinition/description``).
        public var definition: String
        /// ``IndexDefinition/definitionHash``.
        public var hash: UInt64
        /// Entries, when the event built it; nil when it was kept as it was.
        public var entries: Int?

        /// An index record.
        public init(name: String, definition: String, hash: UInt64, entries: Int? = nil) {
            self.name = name
            self.definition = definition
            self.hash = hash
            self.entries = entries
        }

        /// The record of `definition`, built with `entries` entries (nil: kept as it was).
        public init(_ definition: IndexDefinition, entries: Int? = nil) {
            self.init(name: definition.name, definition: definition.description, hash: definition.definitionHash, entries: entries)
        }
    }

    /// One event.
    public struct Entry: Hashable, Sendable {
        /// Its position in the history, from 1.
        public var ordinal: UInt64
        /// What happened.
        public var kind: Kind
        /// The migration's name, the item type of an index change, or "" for an erase.
        public var name: String
        /// When it was committed.
        public var at: Date
        /// How long a migration step ran, in milliseconds.
        public var durationMs: Int?
        /// How many records a migration step put or deleted.
        public var changes: Int?
        /// ``Kind/indexes``: the declared indexes after the change.
        public var indexes: [IndexRecord]?
        /// ``Kind/indexes``: the indexes no longer declared.
        public var dropped: [String]?
        /// ``Kind/erase``: why.
        public var reason: String?

        /// An event.
        public init(
            ordinal: UInt64, kind: Kind, name: String, at: Date, durationMs: Int? = nil, changes: Int? = nil,
            indexes: [IndexRecord]? = nil, dropped: [String]? = nil, reason: String? = nil
        ) {
            self.ordinal = ordinal
            self.kind = kind
            self.name = name
            self.at = at
            self.durationMs = durationMs
            self.changes = changes
            self.indexes = indexes
            self.dropped = dropped
            self.reason = reason
        }

        /// The record key: ``StoreHistory/key(ordinal:)``.
        public var key: RecordKey { StoreHistory.key(ordinal: ordinal) }

        /// The record value (the `entry` grammar above).
        public var encoded: [UInt8] {
            var m: [String: AttributeValue] = ["kind": .string(kind.rawValue), "name": .string(name), "at": .date(at)]
            if let durationMs { m["durationMs"] = .int(Int64(durationMs)) }
            if let changes { m["changes"] = .int(Int64(changes)) }
            if let indexes {
                m["indexes"] = .array(
                    indexes.map { i in
                        var im: [String: AttributeValue] = [
                            "name": .string(i.name), "definition": .string(i.definition), "hash": .int(Int64(bitPattern: i.hash)),
                        ]
                        if let e = i.entries { im["entries"] = .int(Int64(e)) }
                        return .map(im)
                    })
            }
            if let dropped { m["dropped"] = .array(dropped.map { .string($0) }) }
            if let reason { m["reason"] = .string(reason) }
            return AttributeValue.map(m).encoded()
        }

        /// Decodes the record `key` with value `bytes`. Throws `.corruption` naming what is wrong
        /// when the key is not 8 bytes or the value is not an entry map.
        public init(key: RecordKey, value bytes: some Collection<UInt8>) throws {
            guard let ordinal = StoreHistory.ordinal(of: key) else {
                throw StoreHistory.damaged("a key of \(key.count) bytes (an ordinal has 8)")
            }
            let value = try Array(bytes).withUnsafeBytes { try AttributeValue.decode($0) }
            guard case .map(let m) = value, case .string(let kind)? = m["kind"], case .string(let name)? = m["name"],
                case .date(let at)? = m["at"]
            else { throw StoreHistory.damaged("entry \(ordinal) is not a map with kind, name and at") }
            func int(_ k: String) throws -> Int? {
                switch m[k] {
                case nil: return nil
                case .int(let i)?: return Int(i)
                default: throw StoreHistory.damaged("entry \(ordinal): \(k) is not an integer")
                }
            }
            func strings(_ v: AttributeValue?) throws -> [String]? {
                guard let v else { return nil }
                guard case .array(let a) = v else { throw StoreHistory.damaged("entry \(ordinal): a list is not an array") }
                return try a.map { e -> String in
                    guard case .string(let s) = e else { throw StoreHistory.damaged("entry \(ordinal): a list holds a non-string") }
                    return s
                }
            }
            var indexes: [IndexRecord]? = nil
            if let v = m["indexes"] {
                guard case .array(let a) = v else { throw StoreHistory.damaged("entry \(ordinal): indexes is not an array") }
                indexes = try a.map { e -> IndexRecord in
                    guard case .map(let im) = e, case .string(let n)? = im["name"], case .string(let d)? = im["definition"],
                        case .int(let h)? = im["hash"]
                    else { throw StoreHistory.damaged("entry \(ordinal): an index is not a map with name, definition and hash") }
                    var entries: Int? = nil
                    if case .int(let c)? = im["entries"] { entries = Int(c) }
                    return IndexRecord(name: n, definition: d, hash: UInt64(bitPattern: h), entries: entries)
                }
            }
            var reason: String? = nil
            if case .string(let r)? = m["reason"] { reason = r }
            self.init(
                ordinal: ordinal, kind: Kind(kind), name: name, at: at, durationMs: try int("durationMs"),
                changes: try int("changes"), indexes: indexes, dropped: try strings(m["dropped"]), reason: reason)
        }
    }

    /// The key of event `ordinal`: 8 bytes big-endian.
    public static func key(ordinal: UInt64) -> RecordKey {
        RecordKey((0..<8).map { UInt8(truncatingIfNeeded: ordinal >> (56 - 8 * $0)) })
    }

    /// The ordinal of an event key, or nil if `key` is not 8 bytes.
    public static func ordinal(of key: RecordKey) -> UInt64? {
        let b = key.bytes
        guard b.count == 8 else { return nil }
        return b.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// Every event of the store `reader` reads, in order. Throws `.corruption` for a damaged
    /// record. Runs on the calling thread; reads every history record once.
    public static func entries(in reader: some RecordReader) throws -> [Entry] {
        var out: [Entry] = []
        try reader.forEach(ofType: itemType) { k, v in
            out.append(try Entry(key: k, value: v))
            return true
        }
        return out.sorted { $0.ordinal < $1.ordinal }
    }

    static func damaged(_ what: String) -> LogStoreError {
        LogStoreError(
            .corruption,
            "The store's history (item type \(itemType)) holds a record LogStore cannot read: \(what). It was not written by LogStore; remove that record with record-level access, or restore the store from a backup."
        )
    }
}
