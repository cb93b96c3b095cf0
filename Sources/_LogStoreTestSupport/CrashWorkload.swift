public import LogStoreEngine

/// The contents of a store as a crash test sees them: item type -> key -> value bytes.
/// Types with no records are absent.
public typealias CrashModelState = [String: [RecordKey: [UInt8]]]

/// Self-checking record values for crash tests (Docs/Testing.md, "Oracle").
///
/// Every value names the transaction that wrote it and carries a checksum that also covers the
/// record's type and key, so a value that is torn, stale, or read from the wrong slot is caught
/// on its own, before the comparison with the model:
///
///     value := txn:u64le payloadLength:u32le payload crc:u32le
///     crc   := CRC-32C of (type utf8 ++ key bytes ++ every value byte before crc)
///
/// Pure functions; callable from any thread.
public enum CrashWorkloadValue {
    /// The item type of the per-transaction marker records (`txn/<n>`).
    public static let markerType = "txn"

    /// The key of transaction `n`'s marker: `n` as 8 big-endian bytes (so key order is txn order).
    public static func markerKey(_ n: UInt64) -> RecordKey {
        RecordKey((0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * UInt64($0))) })
    }

    /// The transaction number of a marker key, or nil if `key` is not 8 bytes.
    public static func transactionNumber(ofMarkerKey key: RecordKey) -> UInt64? {
        let b = key.bytes
        guard b.count == 8 else { return nil }
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Encodes a value written by transaction `txn` for record (`type`, `key`).
    public static func encode(txn: UInt64, type: String, key: RecordKey, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + payload.count)
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: txn >> (8 * UInt64(i)))) }
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: UInt32(payload.count) >> (8 * UInt32(i)))) }
        out.append(contentsOf: payload)
        let crc = checksum(type: type, key: key, body: out[...])
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i)))) }
        return out
    }

    /// The number of the transaction that wrote `value` for (`type`, `key`), or nil if the value
    /// is malformed or its checksum does not match (torn, garbage, or from another record).
    public static func decode(_ value: [UInt8], type: String, key: RecordKey) -> UInt64? {
        guard value.count >= 16 else { return nil }
        let txn = value[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let length = value[8..<12].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard Int(length) == value.count - 16 else { return nil }
        let stored = value[(value.count - 4)...].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard checksum(type: type, key: key, body: value[0..<(value.count - 4)]) == stored else { return nil }
        return txn
    }

    static func checksum(type: String, key: RecordKey, body: ArraySlice<UInt8>) -> UInt32 {
        var crc = Array(type.utf8).withUnsafeBytes { CRC32C.update(0, $0) }
        crc = key.withUnsafeBytes { CRC32C.update(crc, $0) }
        crc = body.withUnsafeBytes { CRC32C.update(crc, $0) }
        return crc
    }
}

/// One step of a crash-test workload, as the interpreter runs it.
public enum CrashWorkloadStep: Sendable, Equatable {
    /// One transaction through a `LogEngine.write { }` body, applying the operations in order.
    case write([RecordOperation])
    /// One transaction through `LogEngine.commit(_:)`.
    case commit([RecordOperation])
    /// Close the store cleanly and open it again.
    case reopen
    /// `LogEngine.flush()`: makes every commit so far durable (used when durability is not
    /// `.synchronous`).
    case flush

    /// A short human-readable summary, for failure reports.
    public var summary: String {
        switch self {
        case .reopen: return "reopen"
        case .flush: return "flush"
        case .write(let ops): return "write " + Self.summarize(ops)
        case .commit(let ops): return "commit " + Self.summarize(ops)
        }
    }

    static func summarize(_ ops: [RecordOperation]) -> String {
        var puts = 0
        var deletes = 0
        var bytes = 0
        var clears: [String] = []
        var marker = ""
        for op in ops {
            switch op {
            case .put(let t, let k, let v):
                if t == CrashWorkloadValue.markerType, let n = CrashWorkloadValue.transactionNumber(ofMarkerKey: k) {
                    marker = "txn \(n): "
                } else {
                    puts += 1
                    bytes += v.count
                }
            case .delete: deletes += 1
            case .deleteAll(let t): clears.append(t)
            }
        }
        return marker + "\(puts) puts (\(bytes) B), \(deletes) deletes"
            + (clears.isEmpty ? "" : ", deleteAll \(clears.joined(separator: ","))")
    }
}

/// Generates random crash-test workloads: single- and multi-item transactions (puts of new and
/// existing keys, deletes, occasional delete-alls) and clean reopens. Every transaction also
/// writes its marker record `txn/<n>` whose value lists the transaction's operations.
///
/// A value type; deterministic given the random generator passed in. Use from one thread.
public struct CrashWorkloadGenerator: Sendable {
    /// The item types the workload writes (besides the marker type).
    public var itemTypes = ["A", "B", "C"]
    /// How many distinct keys each type draws from (small, so overwrites and deletes hit).
    public var keysPerType = 40
    /// Probability that a step is a clean reopen instead of a transaction.
    public var reopenProbability = 0.06
    /// Probability that a transaction goes through `commit(_:)` rather than a `write` body.
    public var commitProbability = 0.3
    /// Probability that a transaction contains a delete-all of one type.
    public var deleteAllProbability = 0.03
    /// Probability that a step is a flush (only used when the store's durability is not
    /// `.synchronous`, where a flush is what makes commits durable).
    public var flushProbability = 0.12

    /// When set, every item payload is this many bytes (drawn uniformly) instead of the default
    /// mostly-small mix; large sizes make segment roll-overs frequent.
    public var payloadSizes: ClosedRange<Int>? = nil

    /// The default mix.
    public init() {}

    /// `count` steps for a fresh store, generated against a scratch oracle that assumes every
    /// step succeeds (for replaying the same workload many times, e.g. once per crash point).
    public func steps(_ count: Int, flushes: Bool = false, rng: inout SplitMix64) -> [CrashWorkloadStep] {
        var oracle = CrashOracle()
        var out: [CrashWorkloadStep] = []
        for _ in 0..<count {
            let step = nextStep(oracle: oracle, flushes: flushes, rng: &rng)
            switch step {
            case .write(let ops), .commit(let ops): oracle.acknowledge(oracle.begin(ops))
            case .reopen, .flush: break
            }
            out.append(step)
        }
        return out
    }

    /// The next step, for a store whose latest state (after every attempted transaction) is
    /// `oracle.headState` and whose next transaction is `oracle.lastAttempted + 1`. Flush steps
    /// are generated only when `flushes` is true.
    public func nextStep(oracle: CrashOracle, flushes: Bool = false, rng: inout SplitMix64) -> CrashWorkloadStep {
        if rng.chance(reopenProbability) { return .reopen }
        if flushes && rng.chance(flushProbability) { return .flush }
        let ops = transaction(number: oracle.lastAttempted + 1, state: oracle.headState, rng: &rng)
        return rng.chance(commitProbability) ? .commit(ops) : .write(ops)
    }

    /// The operations of transaction `number`, given the state it starts from.
    public func transaction(number: UInt64, state: CrashModelState, rng: inout SplitMix64) -> [RecordOperation] {
        let count: Int
        switch rng.int(in: 0..<10) {
        case 0..<6: count = rng.int(in: 0...3)
        case 6..<9: count = rng.int(in: 4...12)
        default: count = rng.int(in: 20...60)
        }
        var ops: [RecordOperation] = []
        for _ in 0..<count {
            let type = itemTypes[rng.int(in: 0..<itemTypes.count)]
            if rng.chance(0.7) {
                let key = Self.itemKey(rng.int(in: 0..<keysPerType))
                ops.append(
                    .put(type: type, key: key, value: CrashWorkloadValue.encode(txn: number, type: type, key: key, payload: payload(&rng))))
            } else if let records = state[type], rng.chance(0.8),
                case let existing = (0..<keysPerType).map(Self.itemKey).filter({ records[$0] != nil }), !existing.isEmpty
            {
                ops.append(.delete(type: type, key: existing[rng.int(in: 0..<existing.count)]))
            } else {
                ops.append(.delete(type: type, key: Self.itemKey(rng.int(in: 0..<keysPerType))))
            }
        }
        if rng.chance(deleteAllProbability) {
            ops.insert(.deleteAll(type: itemTypes[rng.int(in: 0..<itemTypes.count)]), at: rng.int(in: 0...ops.count))
        }
        // The marker: lists the operations so a reader can tell which transaction it is.
        var digest: UInt32 = 0
        for op in ops {
            var w: [UInt8] = []
            switch op {
            case .put(let t, let k, let v): w = [1] + Array(t.utf8) + k.bytes + v
            case .delete(let t, let k): w = [2] + Array(t.utf8) + k.bytes
            case .deleteAll(let t): w = [3] + Array(t.utf8)
            }
            digest = w.withUnsafeBytes { CRC32C.update(digest, $0) }
        }
        let markerKey = CrashWorkloadValue.markerKey(number)
        var summary: [UInt8] = []
        for v in [UInt32(ops.count), digest] { for i in 0..<4 { summary.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
        let marker = RecordOperation.put(
            type: CrashWorkloadValue.markerType, key: markerKey,
            value: CrashWorkloadValue.encode(txn: number, type: CrashWorkloadValue.markerType, key: markerKey, payload: summary))
        ops.insert(marker, at: rng.int(in: 0...ops.count))
        return ops
    }

    /// The key of item `i`: 4 big-endian bytes.
    public static func itemKey(_ i: Int) -> RecordKey {
        RecordKey([
            UInt8(truncatingIfNeeded: i >> 24), UInt8(truncatingIfNeeded: i >> 16), UInt8(truncatingIfNeeded: i >> 8),
            UInt8(truncatingIfNeeded: i),
        ])
    }

    /// A payload: mostly small, sometimes larger than a frame; random or compressible.
    func payload(_ rng: inout SplitMix64) -> [UInt8] {
        let length: Int
        if let sizes = payloadSizes {
            length = rng.int(in: sizes)
        } else {
            switch rng.int(in: 0..<20) {
            case 0..<14: length = rng.int(in: 0...120)
            case 14..<19: length = rng.int(in: 121...1_500)
            default: length = rng.int(in: 1_501...6_000)
            }
        }
        if rng.chance(0.5) { return rng.bytes(length) }
        let pattern = rng.bytes(rng.int(in: 1...8))
        return (0..<length).map { pattern[$0 % pattern.count] }
    }
}
