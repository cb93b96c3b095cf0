import Foundation
import LogStoreEngine

/// Moves every item of every type (or of chosen types) from one `DataStore` to another, of any
/// backends, and proves the copy equal: the way an app switches from SQLite to LogStore or back
/// (the "Choosing and Switching Backends" article).
///
/// ```swift
/// let migrator = BackendMigrator(from: sqliteStore, to: logStore)
/// let (copy, check) = try migrator.migrate(resume: true)   // copy, verify, finish
/// guard check.isEqual else { ... keep the old store ... }
/// ```
///
/// Rules:
/// 1. **One snapshot.** A copy reads the source in one read block: one consistent state, however
///    long it takes and whatever the app writes meanwhile. (A resumed copy reads a new snapshot:
///    items the source changed in between are caught by ``verify()``, or by a catch-up from the
///    source's change log where the source offers one; see "Catching up".)
/// 2. **Bounded memory.** Items go in batches of at most ``batchSize`` items and ``batchBytes``
///    bytes, each one destination transaction; items are copied as their canonical attribute
///    bytes, never decoded.
/// 3. **Resumable and idempotent.** Each batch commits together with a cursor (the last key
///    copied, kept in the destination under the reserved item type `logstore.migration`), so a
///    crash or a `kill -9` at any moment leaves the destination at a batch boundary, and
///    `copy(resume: true)` continues after it. Copying an item twice writes the same bytes. The
///    last batch marks the cursor done (so a copy killed just after its last batch resumes to
///    nothing left to copy); ``finish()`` removes it, once the copy is verified.
/// 4. **Verified.** ``verify()`` compares both stores type by type from fresh snapshots: counts,
///    an order-independent digest of each side (``BackendMigrationDigest``), and a walk of both in key
///    order that names every missing, extra and differing item.
/// 5. **Types.** ``types`` if given; otherwise every type the source lists (`itemTypeNames()`),
///    which LogStore and SQLite stores can; a backend that cannot list them needs ``types``.
/// 6. **The history goes with the data.** A new copy first writes the source's history (which
///    migrations its data has been through, `StoreHistory`) into a destination that has none, so
///    the destination's `setup()` with the same registered ``DataStoreMigrations`` skips those
///    steps rather than running them again on data they already changed. A destination with a
///    history of its own keeps it. ``verify()`` compares items, not histories.
///
/// Runs on the calling thread and blocks; its progress handler is called on that thread too.
/// Throws `LogStoreError`s of both stores, `.invalidArgument` for a destination that already holds
/// items of the types (copy into an empty store, or resume), `.unsupported` for a backend without
/// record-level access, `CancellationError` when ``isCancelled`` says so.
///
/// ### Catching up
/// A copy records the source's change token (``DataStore/changeToken()``) taken just before its
/// snapshot, so the app may keep writing to the source while it copies. ``catchUp()`` then applies
/// to the destination what the source changed after that token (``DataStore/changes(since:)``),
/// as often as needed; the switch is: stop writing to the source, ``catchUp()`` once more,
/// ``verify()``, ``finish()``, and point the app at the destination. Change tracking lives as long
/// as the source stays open (its tombstones are in memory): a catch-up after the source was
/// reopened throws `.historyTruncated`, and a source without change tracking throws
/// `.unsupported` — then stop the writes and copy again into an empty destination.
/// `logstore-migrate` holds both stores' locks, so nothing writes to the source while it copies.
public struct BackendMigrator: Sendable {
    /// The store items are read from.
    public let source: any DataStore
    /// The store items are written to.
    public let destination: any DataStore
    /// The item types to copy; nil: every type the source lists.
    public var types: [String]?
    /// The most items per destination transaction (default 2,000).
    public var batchSize = 2_000
    /// The most bytes of item encodings per destination transaction (default 4 MiB; an item
    /// larger than this goes alone).
    public var batchBytes = 4 << 20
    /// What the source is, recorded in the cursor; a resume from another source is refused.
    /// Default: empty (not checked).
    public var sourceDescription = ""
    /// Called after every batch (and at the start and end of each type) with where the copy or
    /// the verification stands. On the migrator's thread.
    public var progress: (@Sendable (BackendMigrationProgress) -> Void)?
    /// How many missing, extra and differing ids a verification lists per type (default 100; the
    /// counts are always complete).
    public var reportLimit = 100
    /// Asked after every committed batch; when it returns true the copy stops there and throws
    /// `CancellationError` (resume it later). Default: never.
    public var isCancelled: (@Sendable () -> Bool)?

    /// A migrator from `source` to `destination` (two different, set-up stores).
    public init(from source: any DataStore, to destination: any DataStore) {
        self.source = source
        self.destination = destination
    }

    /// The reserved item type of the cursor (never copied, never compared).
    public static var cursorItemType: String { BackendMigrationCursor.itemType }

    /// The types to work on: ``types``, or those the source lists (without the cursor's, and
    /// without any reserved type a third-party backend might list: the history has rule 6).
    func resolveTypes(_ a: any DataStoreReadAccessor) throws -> [String] {
        let listed = try types ?? a.itemTypeNames().filter { !StoreHistory.isReserved($0) }
        return listed.filter { $0 != BackendMigrationCursor.itemType }
    }

    /// The cursor of a copy in the destination (interrupted, or complete and not finished yet),
    /// or nil. Throws the destination's errors, `.corruption` for a damaged cursor.
    public func pendingCopy() throws -> (types: [String], source: String, copied: Int, isComplete: Bool)? {
        try destination.read { a in
            guard let bytes = try a.record(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key) else { return nil }
            let c = try BackendMigrationCursor(decoding: bytes)
            return (c.types, c.source, c.copied.reduce(0, +), c.index == c.types.count)
        }
    }

    /// Removes the cursor of a complete copy from the destination (call it once ``verify()``
    /// said equal), leaving only the items. Throws `.invalidArgument` if the destination holds an
    /// unfinished copy (resume it first); does nothing when there is no cursor.
    public func finish() throws {
        try destination.writeSync { w in
            guard let bytes = try w.record(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key) else { return }
            let c = try BackendMigrationCursor(decoding: bytes)
            guard c.index == c.types.count else {
                throw LogStoreError(
                    .invalidArgument,
                    "The destination's copy is not complete (\(c.copied.reduce(0, +)) items so far). Resume it before finishing.")
            }
            try w.deleteRecord(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key)
        }
    }

    /// ``copy(resume:)``, then ``verify()``, then ``finish()`` when the stores are equal. Returns
    /// the copy's and the verification's reports; throws what they throw.
    public func migrate(resume: Bool = false) throws -> (copy: BackendMigrationCopyReport, verification: BackendMigrationVerification) {
        let copy = try copy(resume: resume)
        let verification = try verify()
        if verification.isEqual { try finish() }
        return (copy, verification)
    }

    /// Copies the items (rules 1-3). With `resume`, continues an interrupted copy from the cursor
    /// in the destination (and starts a new one if there is none; a destination without a cursor
    /// that verifies equal, a copy finished just before it was killed, is done already); without,
    /// refuses a destination that holds a cursor or items of the types to copy. Returns what was copied; throws the
    /// stores' errors (a failed batch is not committed, so the copy can resume after it).
    @discardableResult
    public func copy(resume: Bool = false) throws -> BackendMigrationCopyReport {
        guard source !== destination else {
            throw LogStoreError(.invalidArgument, "The source and the destination of a migration are the same store.")
        }
        let start = ContinuousClock.now
        var resumed = false
        let existing = try destination.read { a in try a.record(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key) }
        var cursor: BackendMigrationCursor
        if let existing {
            guard resume else {
                throw LogStoreError(
                    .invalidArgument,
                    "The destination holds an interrupted migration. Resume it (copy(resume: true), logstore-migrate --resume), or start over with an empty destination."
                )
            }
            cursor = try BackendMigrationCursor(decoding: existing)
            guard sourceDescription.isEmpty || cursor.source.isEmpty || cursor.source == sourceDescription else {
                throw LogStoreError(
                    .invalidArgument,
                    "The destination's interrupted migration copies from \(cursor.source), not \(sourceDescription). Resume it from that source, or start over with an empty destination."
                )
            }
            resumed = true
        } else {
            let types = try source.read { try resolveTypes($0) }
            let occupied = try destination.read { a in try types.filter { try a.recordCount(ofType: $0) > 0 } }
            if !occupied.isEmpty {
                // A copy killed after `finish()` left no cursor: resuming it finds the items all
                // there, which a verification proves.
                if resume {
                    let check = try verify()
                    if check.isEqual {
                        let copied = check.types.filter { types.contains($0.itemType) }.map {
                            BackendMigrationCopyReport.TypeCopy(itemType: $0.itemType, items: $0.sourceCount, bytes: 0)
                        }
                        return BackendMigrationCopyReport(
                            types: copied, resumed: true, itemsThisRun: 0, duration: ContinuousClock.now - start)
                    }
                }
                throw LogStoreError(
                    .invalidArgument,
                    "The destination already holds items of \(occupied.joined(separator: ", "))\(resume ? ", and they are not a complete copy of the source" : ""). Copy into an empty store (a migration never merges into existing data), or delete those items first."
                )
            }
            cursor = BackendMigrationCursor(source: sourceDescription, types: types)
            // Before the snapshot: what a catch-up applies starts here (a change the snapshot
            // already holds is applied again, which writes the same bytes).
            cursor.token = try? source.changeToken()
            try copyHistory()
        }
        var itemsThisRun = 0
        try source.read { a in
            let totals = try cursor.types.map { try a.recordCount(ofType: $0) }
            let total = totals.reduce(0, +)
            func report(_ type: String) {
                progress?(
                    BackendMigrationProgress(
                        phase: .copying, itemType: type, items: cursor.copied.reduce(0, +),
                        totalItems: max(total, cursor.copied.reduce(0, +)),
                        bytes: cursor.bytes.reduce(0, +), elapsed: ContinuousClock.now - start, itemsThisRun: itemsThisRun))
            }
            while cursor.index < cursor.types.count {
                let type = cursor.types[cursor.index]
                report(type)
                var batch: [(RecordKey, [UInt8])] = []
                var batchSize = 0
                var exhausted = false
                while !exhausted {
                    batch.removeAll(keepingCapacity: true)
                    batchSize = 0
                    exhausted = true
                    try a.forEachRecord(ofType: type, after: cursor.after) { key, value in
                        batch.append((key, Array(value)))
                        batchSize += value.count
                        if batch.count >= self.batchSize || batchSize >= batchBytes {
                            exhausted = false
                            return false
                        }
                        return true
                    }
                    var next = cursor
                    if let last = batch.last { next.after = last.0 }
                    next.copied[next.index] += batch.count
                    next.bytes[next.index] += batchSize
                    if exhausted {
                        next.index += 1
                        next.after = nil
                    }
                    let done = next.index == next.types.count
                    let snapshot = next
                    let items = batch
                    try destination.writeSync { w in
                        for (key, value) in items { try w.putRecord(ofType: type, key: key, value: value) }
                        try w.putRecord(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key, value: snapshot.encoded)
                    }
                    cursor = next
                    itemsThisRun += batch.count
                    report(type)
                    if !done, isCancelled?() == true { throw CancellationError() }
                }
            }
        }
        let typeReports = cursor.types.indices.map {
            BackendMigrationCopyReport.TypeCopy(itemType: cursor.types[$0], items: cursor.copied[$0], bytes: cursor.bytes[$0])
        }
        return BackendMigrationCopyReport(
            types: typeReports, resumed: resumed, itemsThisRun: itemsThisRun, duration: ContinuousClock.now - start)
    }

    /// Applies to the destination, in batches each committed with the cursor, every change the
    /// source made after the copy's token (see "Catching up"): each changed item is copied again
    /// as the source holds it now, or deleted if the source no longer has it; new item types are
    /// added when ``types`` is nil. Idempotent: a crash or kill between batches is repaired by
    /// calling it again. Call it after a complete ``copy(resume:)`` and before ``finish()``.
    /// Blocks the calling thread. Throws `.invalidArgument` when the destination holds no
    /// complete copy, `.unsupported` when the copy recorded no token, `.historyTruncated` when
    /// the source cannot say what changed (reopened, or history pruned: stop writes and copy
    /// again), and the stores' errors.
    @discardableResult
    public func catchUp() throws -> BackendMigrationCatchUpReport {
        let start = ContinuousClock.now
        guard let bytes = try destination.read({ try $0.record(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key) })
        else {
            throw LogStoreError(.invalidArgument, "The destination holds no copy to catch up. Catch up after copy() and before finish().")
        }
        var cursor = try BackendMigrationCursor(decoding: bytes)
        guard cursor.index == cursor.types.count else {
            throw LogStoreError(
                .invalidArgument,
                "The destination's copy is not complete (\(cursor.copied.reduce(0, +)) items so far). Resume it before catching up.")
        }
        guard let token = cursor.token else {
            throw LogStoreError(
                .unsupported,
                "The copy recorded no change token of the source (its backend tracks no changes). Stop writing to the source and copy again into an empty destination."
            )
        }
        let changes = try source.changes(since: token)
        var keys: [(type: String, key: RecordKey)] = []
        for type in changes.itemTypes where type != BackendMigrationCursor.itemType {
            if !cursor.types.contains(type) {
                guard types == nil else { continue }
                cursor.types.append(type)
                cursor.copied.append(0)
                cursor.bytes.append(0)
                cursor.index = cursor.types.count
            }
            for k in changes.insertedOrUpdatedKeys[type] ?? [] { keys.append((type, k)) }
            for k in changes.deletedKeys[type] ?? [] { keys.append((type, k)) }
        }
        var report = BackendMigrationCatchUpReport(token: changes.token, written: 0, deleted: 0, duration: .zero)
        var i = 0
        repeat {
            // Bounded like a copy's batches: at most batchSize items, and about batchBytes.
            let end = min(keys.count, i + batchSize)
            var slice = Array(keys[i..<end])
            var values: [[UInt8]?] = []
            try source.read { a in
                var size = 0
                for (n, k) in slice.enumerated() {
                    let v = try a.record(ofType: k.type, key: k.key)
                    values.append(v)
                    size += v?.count ?? 0
                    if size >= batchBytes && n + 1 < slice.count {
                        slice.removeLast(slice.count - n - 1)
                        break
                    }
                }
            }
            var next = cursor
            if i + slice.count == keys.count { next.token = changes.token }
            let encodedCursor = next.encoded
            var written = 0
            var deleted = 0
            try destination.writeSync { w in
                for (k, v) in zip(slice, values) {
                    if let v {
                        try w.putRecord(ofType: k.type, key: k.key, value: v)
                        written += 1
                    } else if try w.deleteRecord(ofType: k.type, key: k.key) {
                        deleted += 1
                    }
                }
                try w.putRecord(ofType: BackendMigrationCursor.itemType, key: BackendMigrationCursor.key, value: encodedCursor)
            }
            report.written += written
            report.deleted += deleted
            cursor = next
            i += slice.count
            progress?(
                BackendMigrationProgress(
                    phase: .copying, itemType: slice.last?.type ?? "", items: i, totalItems: keys.count, bytes: 0,
                    elapsed: ContinuousClock.now - start, itemsThisRun: i))
        } while i < keys.count
        report.duration = ContinuousClock.now - start
        return report
    }

    /// Copies the source's history (`StoreHistory`: the migrations its data has been through)
    /// into a destination that has none, in one transaction, so that the destination's `setup()`
    /// skips those steps instead of running them again on data they already changed (rule 6). A
    /// destination with a history of its own keeps it. Idempotent. Throws the stores' errors.
    func copyHistory() throws {
        let records = try source.read { a -> [(RecordKey, [UInt8])] in
            var out: [(RecordKey, [UInt8])] = []
            try a.forEachRecord(ofType: StoreHistory.itemType, after: nil) { key, value in
                out.append((key, Array(value)))
                return true
            }
            return out
        }
        guard !records.isEmpty else { return }
        try destination.writeSync { w in
            guard try w.recordCount(ofType: StoreHistory.itemType) == 0 else { return }
            for (key, value) in records { try w.putRecord(ofType: StoreHistory.itemType, key: key, value: value) }
        }
    }

    /// Compares the destination with the source (rule 4), type by type, each side from one
    /// snapshot: the types copied (``types``, or those the source lists) and any other type the
    /// destination holds (all of its items are then extra). Returns the findings; throws the
    /// stores' errors.
    public func verify() throws -> BackendMigrationVerification {
        let start = ContinuousClock.now
        var results: [BackendMigrationVerification.TypeResult] = []
        try source.read { s in
            try destination.read { d in
                var types = Set(try resolveTypes(s))
                if let listed = try? d.itemTypeNames() { types.formUnion(listed.filter { $0 != BackendMigrationCursor.itemType }) }
                let ordered = types.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                let total = try ordered.reduce(0) { $0 + (try s.recordCount(ofType: $1)) }
                var compared = 0
                var bytes = 0
                for type in ordered {
                    results.append(
                        try compare(type, s, d) { n, b in
                            compared += n
                            bytes += b
                            progress?(
                                BackendMigrationProgress(
                                    phase: .verifying, itemType: type, items: compared, totalItems: max(total, compared), bytes: bytes,
                                    elapsed: ContinuousClock.now - start, itemsThisRun: compared))
                        })
                }
            }
        }
        return BackendMigrationVerification(types: results, duration: ContinuousClock.now - start)
    }

    /// Walks `type` on both sides in key order at once (a merge join: bounded memory), hashing
    /// each side and naming the differences.
    func compare(
        _ type: String, _ s: any DataStoreReadAccessor, _ d: any DataStoreReadAccessor,
        progress: (Int, Int) -> Void
    ) throws -> BackendMigrationVerification.TypeResult {
        var result = BackendMigrationVerification.TypeResult(
            itemType: type, sourceCount: 0, destinationCount: 0, sourceDigest: "", destinationDigest: "",
            missing: [], missingCount: 0, extra: [], extraCount: 0, differing: [], differingCount: 0)
        var sourceDigest = BackendMigrationDigest()
        var destinationDigest = BackendMigrationDigest()
        let step = 1_000
        var sourceAfter: RecordKey? = nil
        var destinationAfter: RecordKey? = nil
        var left: [(RecordKey, [UInt8])] = []
        var right: [(RecordKey, [UInt8])] = []
        var li = 0
        var ri = 0
        var leftDone = false
        var rightDone = false
        func refill(
            _ a: any DataStoreReadAccessor, _ after: inout RecordKey?, _ buffer: inout [(RecordKey, [UInt8])], _ i: inout Int,
            _ done: inout Bool
        ) throws {
            guard i >= buffer.count, !done else { return }
            buffer.removeAll(keepingCapacity: true)
            i = 0
            try a.forEachRecord(ofType: type, after: after) { k, v in
                buffer.append((k, Array(v)))
                return buffer.count < step
            }
            if buffer.count < step { done = true }
            after = buffer.last?.0 ?? after
        }
        /// An item's id for reports: its `id` attribute when it has a simple one, else its key.
        func name(_ key: RecordKey, _ value: [UInt8]) -> String {
            switch try? value.withUnsafeBytes({ try AttributeValue.lookupAttribute("id", in: $0) }) {
            case .string(let s)?: return s
            case .int(let i)?: return String(i)
            case .uuid(let u)?: return u.uuidString
            default: return ChildMerge.describeKey(key)
            }
        }
        var handled = 0
        var handledBytes = 0
        while true {
            try refill(s, &sourceAfter, &left, &li, &leftDone)
            try refill(d, &destinationAfter, &right, &ri, &rightDone)
            let l = li < left.count ? left[li] : nil
            let r = ri < right.count ? right[ri] : nil
            guard l != nil || r != nil else { break }
            if let l, r == nil || l.0 < r!.0 {
                result.missingCount += 1
                if result.missing.count < reportLimit { result.missing.append(name(l.0, l.1)) }
                sourceDigest.add(itemType: type, key: l.0, value: l.1)
                handledBytes += l.1.count
                li += 1
            } else if let r, l == nil || r.0 < l!.0 {
                result.extraCount += 1
                if result.extra.count < reportLimit { result.extra.append(name(r.0, r.1)) }
                destinationDigest.add(itemType: type, key: r.0, value: r.1)
                ri += 1
            } else if let l, let r {
                if l.1 != r.1 {
                    result.differingCount += 1
                    if result.differing.count < reportLimit { result.differing.append(name(l.0, l.1)) }
                }
                sourceDigest.add(itemType: type, key: l.0, value: l.1)
                destinationDigest.add(itemType: type, key: r.0, value: r.1)
                handledBytes += l.1.count
                li += 1
                ri += 1
            }
            handled += 1
            if handled % step == 0 {
                progress(step, handledBytes)
                handledBytes = 0
            }
        }
        progress(handled % step, handledBytes)
        result.sourceCount = sourceDigest.count
        result.destinationCount = destinationDigest.count
        result.sourceDigest = sourceDigest.description
        result.destinationDigest = destinationDigest.description
        return result
    }
}
