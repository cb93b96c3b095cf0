import LogStoreCommandSupport
import LogStoreEngine

/// Copies the records of a snapshot into a new store: what `salvage` and `compact --into` do.
///
/// Records go in batches (at most `batchBytes` of values or `batchRecords` records per
/// transaction), type by type, in file order. Sequence numbers are not preserved: the new store
/// numbers its own transactions from 1. Runs on the calling thread.
struct StoreCopier {
    struct Result {
        var records = 0
        var valueBytes: UInt64 = 0
        var transactions = 0
        var types: [String: Int] = [:]
    }

    var batchBytes = 4 << 20
    var batchRecords = 10_000

    /// Batches of at most a quarter segment, so the copy fills segments evenly (a transaction
    /// never spans two segments).
    init(segmentSize: Int = LogEngineOptions().segmentSize) {
        batchBytes = max(4 << 10, min(4 << 20, segmentSize / 4))
    }

    /// Options for the new store: limits at their maximum so that every record of the source
    /// fits; no fsync per batch (`flush()` makes the whole copy durable at the end).
    static func targetOptions(segmentSize: Int?) -> LogEngineOptions {
        var o = LogEngineOptions()
        if let segmentSize { o.segmentSize = segmentSize }
        o.durability = .none
        o.maxItemSize = 256 << 20
        o.maxKeySize = 64 << 10
        o.maxTypeNameSize = 64 << 10
        o.cacheSize = 0
        return o
    }

    /// Copies every record of `snapshot` into a new store at `target` (missing or empty), created
    /// with `encryption` and segments of `segmentSize` (default 64 MiB), and closes it (its
    /// checkpoint written). Throws what opening, copying or closing throws; the new store is left
    /// as far as it got.
    static func copy(
        _ snapshot: EngineSnapshot, intoNewStoreAt target: String, segmentSize: Int?, encryption: StoreEncryption, progress: ProgressLine
    ) throws -> Result {
        let copy = try StoreAccess.openEngine(target, options: targetOptions(segmentSize: segmentSize), encryption: encryption)
        do {
            let result = try StoreCopier(segmentSize: segmentSize ?? LogEngineOptions().segmentSize).copy(
                snapshot, into: copy, progress: progress)
            try copy.close()
            return result
        } catch {
            try? copy.close()
            throw error
        }
    }

    /// Copies every record of `snapshot` into `target`, then flushes it. Throws what reading the
    /// snapshot or committing to `target` throws.
    func copy(_ snapshot: EngineSnapshot, into target: LogEngine, progress: ProgressLine) throws -> Result {
        var result = Result()
        let total = UInt64(snapshot.totalCount)
        var batch: [RecordOperation] = []
        var batchValueBytes = 0
        func commit() throws {
            guard !batch.isEmpty else { return }
            try target.commit(batch)
            result.transactions += 1
            batch.removeAll(keepingCapacity: true)
            batchValueBytes = 0
            progress.update("copying", done: UInt64(result.records), total: total, unit: .records)
        }
        for type in snapshot.itemTypes.sorted() {
            try snapshot.forEach(ofType: type) { key, value in
                batch.append(.put(type: type, key: key, value: Array(value)))
                batchValueBytes += value.count
                result.records += 1
                result.valueBytes += UInt64(value.count)
                result.types[type, default: 0] += 1
                if batch.count >= batchRecords || batchValueBytes >= batchBytes { try commit() }
                return true
            }
        }
        try commit()
        try target.flush()
        progress.update("copying", done: total, total: total, unit: .records)
        return result
    }
}
