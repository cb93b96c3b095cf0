import Foundation
public import LogStore
public import LogStoreEngine

// The DataStore-level crash workload (Docs/Testing.md, "Crash recovery"): the engine-level
// model of `CrashWorkload.swift` (record operations on types A, B, C plus one marker record per
// transaction, self-checking values) carried through the `DataStore` API, with child stores.

// MARK: Items

/// The item types of the DataStore crash workload: each names one item type of
/// ``DataStoreCrashRecord``. Pure type-level functions; callable from any thread.
public protocol DataStoreCrashRecordKind: Sendable {
    /// The item type name (the type name of the engine-level model: "A", "B", "C" or "txn").
    static var itemType: String { get }
    /// The model's record key of the item with `id`.
    static func key(forID id: Int64) -> RecordKey
    /// The item id of the model's record key, or nil if the key is not one of this kind's.
    static func id(forKey key: RecordKey) -> Int64?
}

extension DataStoreCrashRecordKind {
    /// Item keys: 4 big-endian bytes (``CrashWorkloadGenerator/itemKey(_:)``).
    public static func key(forID id: Int64) -> RecordKey { CrashWorkloadGenerator.itemKey(Int(id)) }

    /// The id of a 4-byte item key, or nil.
    public static func id(forKey key: RecordKey) -> Int64? {
        let b = key.bytes
        guard b.count == 4 else { return nil }
        return Int64(b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }

    // Accessor plumbing, generic over the Swift item type this kind stands for.

    static func insert(_ accessor: any DataStoreReadWriteAccessor, key: RecordKey, value: [UInt8]) throws {
        try accessor.insert(DataStoreCrashRecord<Self>(id: try checkedID(key), bytes: value))
    }

    static func delete(_ accessor: any DataStoreReadWriteAccessor, key: RecordKey) throws {
        try accessor.deleteItem(ofType: DataStoreCrashRecord<Self>.self, id: try checkedID(key))
    }

    static func deleteAll(_ accessor: any DataStoreReadWriteAccessor) throws {
        try accessor.deleteAllItems(ofType: DataStoreCrashRecord<Self>.self)
    }

    /// Every item of this kind as the model sees it, cross-checked three ways: the request,
    /// `countItems` and point reads (of a deterministic sample of the items: the first, the last
    /// and about one in six) must agree.
    static func observe(_ accessor: any DataStoreReadAccessor) throws -> [RecordKey: [UInt8]] {
        let items = try accessor.items(forRequest: DataStoreRequest(itemType: DataStoreCrashRecord<Self>.self))
        let count = try accessor.countItems(forRequest: DataStoreRequest(itemType: DataStoreCrashRecord<Self>.self))
        guard count == items.count else {
            throw CrashOracleViolation("\(itemType): items(forRequest:) returns \(items.count) items but countItems says \(count).")
        }
        var out: [RecordKey: [UInt8]] = [:]
        for (i, item) in items.enumerated() {
            guard let bytes = item.bytes else {
                throw CrashOracleViolation("\(itemType)/\(item.id): the stored value is not base64 (\(item.value.prefix(40))).")
            }
            let sampled = i == 0 || i == items.count - 1 || item.id % 6 == 0
            guard try !sampled || accessor.item(ofType: DataStoreCrashRecord<Self>.self, id: item.id) == item else {
                throw CrashOracleViolation("\(itemType)/\(item.id): a point read differs from the request's result.")
            }
            if sampled {
                var byValue = DataStoreRequest(itemType: DataStoreCrashRecord<Self>.self)
                let wanted = item.value
                byValue.predicate = #Predicate { $0.value == wanted }
                let found = try accessor.items(forRequest: byValue)
                guard found.contains(item), found.allSatisfy({ $0.value == wanted }) else {
                    throw CrashOracleViolation(
                        "\(itemType)/\(item.id): a query through the value index returns \(found.map(\.id)) instead of it.")
                }
            }
            let key = Self.key(forID: item.id)
            guard out.updateValue(bytes, forKey: key) == nil else {
                throw CrashOracleViolation("\(itemType)/\(item.id): returned twice by one request.")
            }
        }
        return out
    }

    static func checkedID(_ key: RecordKey) throws -> Int64 {
        guard let id = id(forKey: key) else {
            throw LogStoreError(.invalidArgument, "The crash workload produced a \(itemType) key \(key) that maps to no item id.")
        }
        return id
    }
}

/// Item type "A" of the crash workload.
public enum DataStoreCrashKindA: DataStoreCrashRecordKind {
    /// "A".
    public static var itemType: String { "A" }
}

/// Item type "B" of the crash workload.
public enum DataStoreCrashKindB: DataStoreCrashRecordKind {
    /// "B".
    public static var itemType: String { "B" }
}

/// Item type "C" of the crash workload.
public enum DataStoreCrashKindC: DataStoreCrashRecordKind {
    /// "C".
    public static var itemType: String { "C" }
}

/// The per-transaction marker items (``CrashWorkloadValue/markerType``); the id is the
/// transaction number.
public enum DataStoreCrashKindMarker: DataStoreCrashRecordKind {
    /// ``CrashWorkloadValue/markerType``.
    public static var itemType: String { CrashWorkloadValue.markerType }

    /// ``CrashWorkloadValue/markerKey(_:)`` of the id.
    public static func key(forID id: Int64) -> RecordKey { CrashWorkloadValue.markerKey(UInt64(bitPattern: id)) }

    /// The transaction number of an 8-byte marker key, or nil.
    public static func id(forKey key: RecordKey) -> Int64? {
        CrashWorkloadValue.transactionNumber(ofMarkerKey: key).map { Int64(bitPattern: $0) }
    }
}

/// An item of the DataStore crash workload: an id and the model's value bytes (a
/// ``CrashWorkloadValue``: the writing transaction's number, a payload and a checksum over type,
/// key and value), stored base64-encoded so that any attribute coding round-trips it.
/// A value type; safe to pass between threads.
public struct DataStoreCrashRecord<Kind: DataStoreCrashRecordKind>: DataStoreItem, Equatable {
    /// The kind's item type name.
    public static var itemType: String { Kind.itemType }
    /// The id (key index, or transaction number for markers).
    public var id: Int64
    /// The value bytes, base64.
    public var value: String

    /// An item holding `bytes`.
    public init(id: Int64, bytes: [UInt8]) {
        self.id = id
        value = Data(bytes).base64EncodedString()
    }

    /// The value bytes, or nil if `value` is not base64.
    public var bytes: [UInt8]? { Data(base64Encoded: value).map { [UInt8]($0) } }

    /// An index on the value: the oracle checks that it equals a rebuild from the items after
    /// every recovery, and answers a point query through it for a sample of items.
    public static var indexes: [DataStoreIndex<Self>] { [.init(\.value)] }
}

/// Maps the model's item type names to the workload's item kinds. Pure; callable from any thread.
public enum DataStoreCrashTypes {
    /// Every kind the workload writes, markers last.
    public static let all: [any DataStoreCrashRecordKind.Type] = [
        DataStoreCrashKindA.self, DataStoreCrashKindB.self, DataStoreCrashKindC.self, DataStoreCrashKindMarker.self,
    ]

    /// The item types of ordinary items (what ``CrashWorkloadGenerator/itemTypes`` must be).
    public static let itemTypes = ["A", "B", "C"]

    /// The kind whose item type is `type`. Throws `.invalidArgument` for any other type name.
    public static func kind(_ type: String) throws -> any DataStoreCrashRecordKind.Type {
        guard let k = all.first(where: { $0.itemType == type }) else {
            throw LogStoreError(.invalidArgument, "The crash workload has no item type \(type).")
        }
        return k
    }

    /// Applies model operations, in order, through a DataStore write accessor.
    /// Throws what the accessor throws, or `.invalidArgument` for an unknown type or key.
    public static func apply(_ operations: [RecordOperation], to accessor: any DataStoreReadWriteAccessor) throws {
        for op in operations {
            switch op {
            case .put(let t, let k, let v): try kind(t).insert(accessor, key: k, value: v)
            case .delete(let t, let k): try kind(t).delete(accessor, key: k)
            case .deleteAll(let t): try kind(t).deleteAll(accessor)
            }
        }
    }

    /// The whole visible state of a store (or child store) as the model sees it. Runs one `read`
    /// block. Throws the store's errors, or a ``CrashOracleViolation`` if the store holds a type
    /// the workload never writes or its read paths disagree (see ``DataStoreCrashRecordKind``).
    /// `engine`: the store's engine, when it has one, whose secondary indexes are checked against
    /// a rebuild too.
    public static func observe(_ store: any DataStore, engine: LogEngine? = nil) throws -> CrashModelState {
        if let engine {
            let problems = try engine.snapshot().secondaryIndexProblems()
            if !problems.isEmpty {
                throw CrashOracleViolation("Secondary indexes differ from a rebuild from the items: " + problems.joined(separator: "; "))
            }
        }
        return try store.read { accessor in
            let known = Set(all.map { $0.itemType })
            let unknown = try accessor.itemTypeNames().filter { !known.contains($0) }
            if !unknown.isEmpty {
                throw CrashOracleViolation("The store holds item types the workload never wrote: \(unknown.joined(separator: ", ")).")
            }
            var state: CrashModelState = [:]
            for kind in all {
                let records = try kind.observe(accessor)
                if !records.isEmpty { state[kind.itemType] = records }
            }
            return state
        }
    }

    /// A digest of a model state (independent of dictionary order), to check that two processes
    /// start from the same state.
    public static func digest(_ state: CrashModelState) -> String {
        var crc: UInt32 = 0
        var records = 0
        for type in state.keys.sorted() {
            crc = Array(type.utf8).withUnsafeBytes { CRC32C.update(crc, $0) }
            let recs = state[type] ?? [:]
            for key in recs.keys.sorted() {
                crc = key.withUnsafeBytes { CRC32C.update(crc, $0) }
                crc = (recs[key] ?? []).withUnsafeBytes { CRC32C.update(crc, $0) }
                records += 1
            }
        }
        return "\(records)-" + String(crc, radix: 16)
    }
}

// MARK: Steps and model

/// One step of the DataStore crash workload.
public enum DataStoreCrashStep: Sendable, Equatable {
    /// One parent transaction through `writeSync` (the operations include its marker).
    case write([RecordOperation])
    /// One parent transaction through `writeAsync`, waited for (acknowledged by its completion).
    case writeAsync([RecordOperation])
    /// A `writeSync` whose block applies the operations and then throws: nothing may commit.
    case abortedWrite([RecordOperation])
    /// `makeChildDataStore()` (only when there is no child).
    case makeChild
    /// A `writeSync` in the child (operations without a marker; nothing durable).
    case childWrite([RecordOperation])
    /// The marker written into the child, then `parent.merge(child)`: one parent transaction.
    case merge
    /// The child is torn down without a merge: its changes must never show.
    case discardChild
    /// The store and, if any, its child are read and compared with the model.
    case verify
    /// `tearDown()`, a new `LogDataStore` on the same location, `setup()`, compare with the model.
    case reopen
    /// `LogEngine.compact(includingTail:)` on the store's engine (which also writes a
    /// checkpoint). Changes no contents.
    case compact(includingTail: Bool)
    /// `LogEngine.recompress(includingTail:)`: a compaction that also trains dictionaries and
    /// recompresses records (and writes a checkpoint). Changes no contents.
    case recompress(includingTail: Bool)
    /// `tearDown()`, then a new store object with the migration ``DataStoreCrashMigration`` of
    /// the next transaction over the item type registered, and `setup()`: the migration is one
    /// parent transaction (its operations: ``DataStoreCrashModel/migrationOperations(type:)``).
    case migrate(String)

    /// The step's name, for event logs and phase reports.
    public var name: String {
        switch self {
        case .write: return "write"
        case .writeAsync: return "writeAsync"
        case .abortedWrite: return "abortedWrite"
        case .makeChild: return "makeChild"
        case .childWrite: return "childWrite"
        case .merge: return "merge"
        case .discardChild: return "discardChild"
        case .verify: return "verify"
        case .reopen: return "reopen"
        case .compact: return "compact"
        case .recompress: return "recompress"
        case .migrate: return "migrate"
        }
    }

    /// A short human-readable summary, for failure reports.
    public var summary: String {
        switch self {
        case .write(let ops), .writeAsync(let ops), .abortedWrite(let ops), .childWrite(let ops):
            return name + " " + String(CrashWorkloadStep.write(ops).summary.dropFirst("write ".count))
        case .migrate(let type): return "migrate \(type)"
        default: return name
        }
    }
}

/// What a DataStore crash workload has done, as far as the workload knows: the parent's state
/// after every *attempted* transaction, the number of the last one, and the child store's base
/// and current view. The generator draws steps from it; the interpreter keeps it in step; a
/// process that did not run the steps (the kill -9 driver) replays them on a copy to learn what
/// each transaction wrote.
///
/// A value type; use from one thread.
public struct DataStoreCrashModel: Sendable, Equatable {
    /// A child store's model.
    public struct Child: Sendable, Equatable {
        /// The parent state the child sits on (at its creation or last merge).
        public var base: CrashModelState
        /// What the child shows: its base plus its writes.
        public var state: CrashModelState
        /// Writes made in the child since its base.
        public var writes: Int
    }

    /// The parent's state after every attempted transaction.
    public var parent: CrashModelState
    /// The number of the last attempted parent transaction (its marker is `txn/<n>`).
    public var lastTransaction: UInt64
    /// The open child store, if any.
    public var child: Child?

    /// A model of a store showing `parent` after transactions `1...lastTransaction`, with no child.
    public init(parent: CrashModelState = [:], lastTransaction: UInt64 = 0) {
        self.parent = parent
        self.lastTransaction = lastTransaction
    }

    /// The marker record the merge as transaction `lastTransaction + 1` writes into the child.
    public func mergeMarker() -> (key: RecordKey, value: [UInt8]) {
        let n = lastTransaction + 1
        let key = CrashWorkloadValue.markerKey(n)
        var payload = Array("merge".utf8)
        let writes = UInt32(truncatingIfNeeded: child?.writes ?? 0)
        for i in 0..<4 { payload.append(UInt8(truncatingIfNeeded: writes >> (8 * UInt32(i)))) }
        return (key, CrashWorkloadValue.encode(txn: n, type: CrashWorkloadValue.markerType, key: key, payload: payload))
    }

    /// The operations of the parent transaction a merge commits now: the child's view (with the
    /// merge marker) against its base, as put/delete per differing item, in (type, key) order
    /// (`MergePolicy.childWins`; what the child did not change keeps the parent's version).
    /// Nil when there is no child.
    public func mergeOperations() -> [RecordOperation]? {
        guard let child else { return nil }
        let marker = mergeMarker()
        var final = child.state
        final[CrashWorkloadValue.markerType, default: [:]][marker.key] = marker.value
        var ops: [RecordOperation] = []
        for type in Set(child.base.keys).union(final.keys).sorted() {
            let b = child.base[type] ?? [:]
            let f = final[type] ?? [:]
            for key in Set(b.keys).union(f.keys).sorted() where b[key] != f[key] {
                if let v = f[key] { ops.append(.put(type: type, key: key, value: v)) } else { ops.append(.delete(type: type, key: key)) }
            }
        }
        return ops
    }

    /// The operations of the migration of `type` as the next transaction (in key order: each
    /// record rewritten or deleted by ``DataStoreCrashMigration/transform(type:key:value:transaction:)``,
    /// then the marker).
    public func migrationOperations(type: String) -> [RecordOperation] {
        let n = lastTransaction + 1
        let records = parent[type] ?? [:]
        var ops: [RecordOperation] = []
        for key in records.keys.sorted() {
            if let new = DataStoreCrashMigration.transform(type: type, key: key, value: records[key] ?? [], transaction: n) {
                ops.append(.put(type: type, key: key, value: new))
            } else {
                ops.append(.delete(type: type, key: key))
            }
        }
        let marker = DataStoreCrashMigration.marker(n)
        ops.append(.put(type: CrashWorkloadValue.markerType, key: marker.key, value: marker.value))
        return ops
    }

    /// The operations of the parent transaction `step` commits (nil if it commits none).
    public func parentTransaction(_ step: DataStoreCrashStep) -> [RecordOperation]? {
        switch step {
        case .write(let ops), .writeAsync(let ops): return ops
        case .merge: return mergeOperations()
        case .migrate(let type): return migrationOperations(type: type)
        default: return nil
        }
    }

    /// Advances the model past `step` as if it succeeded.
    public mutating func apply(_ step: DataStoreCrashStep) {
        switch step {
        case .write(let ops), .writeAsync(let ops):
            CrashOracle.apply(ops, to: &parent)
            lastTransaction += 1
        case .merge:
            guard let ops = mergeOperations() else { return }
            CrashOracle.apply(ops, to: &parent)
            lastTransaction += 1
            child = Child(base: parent, state: parent, writes: 0)
        case .makeChild:
            child = Child(base: parent, state: parent, writes: 0)
        case .childWrite(let ops):
            guard var c = child else { return }
            CrashOracle.apply(ops, to: &c.state)
            c.writes += 1
            child = c
        case .migrate(let type):
            CrashOracle.apply(migrationOperations(type: type), to: &parent)
            lastTransaction += 1
            child = nil
        case .discardChild, .reopen:
            child = nil
        case .abortedWrite, .verify, .compact, .recompress:
            break
        }
    }
}

/// Generates DataStore crash workloads: parent transactions (sync, async, aborted), child stores
/// with writes, merges and discards, verification reads, clean reopens, and (when enabled)
/// compactions. Deterministic given the model and the random generator: two processes that start
/// from equal models and seeds draw the same steps. A value type; use from one thread.
public struct DataStoreCrashWorkloadGenerator: Sendable {
    /// How each transaction's operations are drawn (item types must be
    /// ``DataStoreCrashTypes/itemTypes``).
    public var transactions: CrashWorkloadGenerator
    /// Probability that a step is a clean reopen.
    public var reopenProbability = 0.03
    /// Probability that a step is a verification read.
    public var verifyProbability = 0.05
    /// Probability that a step is a compaction (of the tail too, or of the sealed segments only).
    public var compactProbability = 0.03
    /// Share of those compactions that are recompression passes.
    public var recompressShare = 0.5
    /// Probability that a parent transaction goes through `writeAsync`.
    public var asyncWriteProbability = 0.15
    /// Probability that a parent transaction's block throws instead of committing.
    public var abortedWriteProbability = 0.03
    /// Probability that a step with no child makes one.
    public var makeChildProbability = 0.12
    /// With a child: probability that a step writes in it.
    public var childWriteProbability = 0.5
    /// With a child: probability that a step merges it (a quarter of that while the child has
    /// no writes).
    public var mergeProbability = 0.25
    /// With a child: probability that a step discards it.
    public var discardChildProbability = 0.03
    /// Probability that a step is a migration of one of the item types that hold items (a
    /// reopen that applies it: ``DataStoreCrashStep/migrate(_:)``).
    public var migrateProbability = 0.02

    /// The default mix.
    public init() {
        var t = CrashWorkloadGenerator()
        t.itemTypes = DataStoreCrashTypes.itemTypes
        t.deleteAllProbability = 0.05
        transactions = t
    }

    /// The next step for a store whose workload state is `model`.
    public func nextStep(model: DataStoreCrashModel, rng: inout SplitMix64) -> DataStoreCrashStep {
        if rng.chance(reopenProbability) { return .reopen }
        if rng.chance(migrateProbability) {
            let types = DataStoreCrashTypes.itemTypes.filter { !(model.parent[$0] ?? [:]).isEmpty }
            if !types.isEmpty { return .migrate(types[rng.int(in: 0..<types.count)]) }
        }
        // Mostly with the tail: the stores are small, often a single segment with nothing sealed.
        if rng.chance(compactProbability) {
            let tail = rng.chance(0.75)
            return rng.chance(recompressShare) ? .recompress(includingTail: tail) : .compact(includingTail: tail)
        }
        if rng.chance(verifyProbability) { return .verify }
        let next = model.lastTransaction + 1
        if let child = model.child {
            let x = Double.random(in: 0..<1, using: &rng)
            if x < childWriteProbability {
                let ops = transactions.transaction(number: next, state: child.state, rng: &rng)
                return .childWrite(
                    ops.filter { if case .put(CrashWorkloadValue.markerType, _, _) = $0 { return false } else { return true } })
            }
            // A merge of a child with no writes commits only its marker: make those rarer.
            let merge = child.writes == 0 ? mergeProbability / 4 : mergeProbability
            if x < childWriteProbability + merge { return .merge }
            if x < childWriteProbability + merge + discardChildProbability { return .discardChild }
        } else if rng.chance(makeChildProbability) {
            return .makeChild
        }
        let ops = transactions.transaction(number: next, state: model.parent, rng: &rng)
        if rng.chance(abortedWriteProbability) { return .abortedWrite(ops) }
        return rng.chance(asyncWriteProbability) ? .writeAsync(ops) : .write(ops)
    }
}

/// One parent transaction found by ``DataStoreCrashWorkloadGenerator/replay(seed:from:maxSteps:throughTransaction:oracle:)``.
public struct DataStoreCrashReplayedTransaction: Sendable, Equatable {
    /// The transaction number.
    public var number: UInt64
    /// How it is committed.
    public var kind: DataStoreCrashInterpreter.CommitKind

    /// A record of transaction `number`, committed by `kind`.
    public init(number: UInt64, kind: DataStoreCrashInterpreter.CommitKind) {
        self.number = number
        self.kind = kind
    }
}

extension DataStoreCrashWorkloadGenerator {
    /// Replays, without a store, the steps a run of at most `maxSteps` steps drawn with a
    /// `SplitMix64(seed:)` from `model` makes, and records every parent transaction up to number
    /// `last` in `oracle` as attempted (`oracle` must stand at `model`'s state and transaction).
    /// Returns the transactions recorded, in order. This is how the kill -9 driver learns what a
    /// worker process it killed had written. Pure; use from one thread.
    public func replay(
        seed: UInt64, from model: DataStoreCrashModel, maxSteps: Int, throughTransaction last: UInt64,
        oracle: inout CrashOracle
    ) -> [DataStoreCrashReplayedTransaction] {
        var rng = SplitMix64(seed: seed)
        var m = model
        var out: [DataStoreCrashReplayedTransaction] = []
        for _ in 0..<maxSteps {
            if m.lastTransaction >= last { break }
            let step = nextStep(model: m, rng: &rng)
            if let ops = m.parentTransaction(step) {
                oracle.begin(ops)
                let kind: DataStoreCrashInterpreter.CommitKind
                switch step {
                case .merge: kind = .merge
                case .writeAsync: kind = .writeAsync
                case .migrate: kind = .migrate
                default: kind = .write
                }
                out.append(DataStoreCrashReplayedTransaction(number: m.lastTransaction + 1, kind: kind))
            }
            m.apply(step)
        }
        return out
    }
}
