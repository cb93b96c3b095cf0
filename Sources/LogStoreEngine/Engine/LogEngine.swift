import Foundation
import Logging
import Synchronization

/// The storage engine: one store directory, its write-ahead log and its in-memory indexes.
///
/// - Opening (``open(directory:fileSystem:options:)``) takes the store's lock, recovers the log and
///   builds the indexes. It blocks the calling thread.
/// - Readers take ``snapshot()``s: O(1), never blocked by writers.
/// - Writers run ``write(_:)``: bodies run one at a time on the caller's thread, commit as one
///   atomic transaction, and return once the commit is durable under the store's ``Durability``.
/// - ``close()`` flushes and releases the lock. Snapshots taken before stay readable.
///
/// All methods may be called from any thread.
public final class LogEngine: Sendable {
    /// The store directory.
    public let directory: String
    /// The file system the engine does all its I/O through.
    public let fileSystem: any FileSystem
    /// The options the store was opened with.
    public let options: LogEngineOptions
    /// What opening the store found and did.
    public let recoveryReport: RecoveryReport
    /// The store key's cipher, which seals what the store writes (chosen by the key check at
    /// open); nil for a store in the clear.
    package let storeCipher: (any StoreCipher)?

    let lock: any FileSystemLock
    let cache: FrameCache
    let writer = WriterLock()
    /// Everything that changes as the store is used, under one lock so that a checkpoint or a
    /// compaction captures the log position and the views together.
    let state: Protected<EngineState>
    /// Appended and synced sequence numbers, and who runs the next `fdatasync`.
    let group: GroupCommit
    /// The file side of the log: appends, roll-overs, manifests.
    let log: LogWriter
    /// Compaction: its lock, its back-off and the algorithm.
    let compactor = Compactor()
    /// Checkpoint writing.
    let checkpointer = Checkpointer()
    let logger: Logger?
    /// Background compaction and checkpoints; `close()` waits for them.
    let background = BackgroundWork()
    /// Writes that failed with `.diskFull` since the last one that succeeded.
    let diskFull = Protected(0)
    /// The committing writer's LZ4 state (used under the writer lock).
    let compressor = LZ4.Compressor()
    /// A lower bound of the published state's sequence number (``EngineViews/published``), kept
    /// after each publication under `state`'s lock and read without it: a committer whose sync
    /// covered its commit skips the lock when another committer already published past it (16
    /// writers sharing one fdatasync otherwise took it one after another to publish the same
    /// state). Never ahead of the published state; may lag behind it.
    let publishedAtLeast = Atomic<UInt64>(0)

    struct EngineState: Sendable {
        /// What readers see and what writers start from (``EngineViews``).
        var views: EngineViews
        /// The manifest, the tail and where the next append goes (``LogState``).
        var log: LogState
        /// The newest checkpoint on disk (loaded at open or written since), if any.
        var lastCheckpoint: CheckpointMark?
        /// While a compaction copies: the index changes appended since the state it copies, so
        /// the switch can replay them onto the re-pointed copy instead of re-pointing the head
        /// under the writer lock. Set and cleared under the writer lock.
        var compactionJournal: IndexJournal?
        /// While a checkpoint writes its runs: the index changes appended since the state it
        /// writes, so that its runs can take the place of the head's trees. Set and cleared by
        /// the checkpointer.
        var checkpointJournal: IndexJournal?
        /// Set once by ``LogEngine/poison(_:)``: every later write throws it.
        var poisoned: LogStoreError?
        var closed = false
        /// When the last transaction was appended (background recompression waits for quiet).
        var lastCommit = ContinuousClock.now
        /// Told of every commit once readers can see it (``LogEngine/setPublicationObserver(_:)``).
        var publicationObserver: (@Sendable (PublicationEvent) -> Void)?

        /// Hands the commits readers can now see to the publication observer. Called after every
        /// change of `views` that may move `published`; O(1) without an observer or new commits.
        mutating func announcePublished() {
            guard let observer = publicationObserver else { return }
            let visible = views.takeVisibleChanges()
            if !visible.isEmpty { observer(.published(visible)) }
        }
    }

    init(
        directory: String, fileSystem: any FileSystem, options: LogEngineOptions, lock: any FileSystemLock,
        recovered: Recovered
    ) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.options = options
        self.lock = lock
        self.logger = options.logger
        self.recoveryReport = recovered.report
        self.storeCipher = recovered.cipher
        self.cache = FrameCache(capacity: options.cacheSize)
        let state = Protected(
            EngineState(
                views: EngineViews(ViewState(index: recovered.index, segments: recovered.segments)),
                log: LogState(
                    manifest: recovered.manifest, tail: recovered.tail, tailOffset: recovered.tailOffset,
                    segmentInfo: recovered.segmentInfo, bytesSinceCheckpoint: recovered.bytesAfterCheckpoint),
                lastCheckpoint: recovered.checkpoint))
        self.state = state
        checkpointer.adopt(runs: recovered.runs, nextRun: recovered.nextRun)
        for (number, segment) in recovered.segments where segment !== recovered.tail {
            if let length = recovered.segmentInfo[number]?.length { segment.seal(length: length) }
        }
        recovered.tail.reserveMapping(length: UInt64(options.segmentSize))
        let group = GroupCommit(
            sequence: recovered.index.sequence,
            sync: {
                let (tail, offset) = state.withLock { ($0.log.tail, $0.log.tailOffset) }
                try tail.file.sync()
                state.withLock { $0.log.synced(tail, through: offset) }
            })
        self.group = group
        var log = LogWriter(directory: directory, fileSystem: fileSystem)
        if options.preallocationSize > 0 && options.durability != .none && options.recovery == .strict {
            let preallocator = Preallocator(
                directory: directory, fileSystem: fileSystem, ahead: options.preallocationSize, segmentSize: options.segmentSize,
                background: options.preallocatesInBackground,
                onSyncFailure: { error, path in
                    Self.poison(
                        LogStoreError(
                            .storePoisoned, "fdatasync of the tail failed while preallocating it; reopen the store.", path: path,
                            underlying: error),
                        state: state, group: group)
                })
            log.preallocator = preallocator
        }
        self.log = log
        log.preallocator?.start(
            tail: recovered.tail, appendEnd: recovered.tailOffset, fileSize: (try? recovered.tail.file.size()) ?? recovered.tailOffset)
        if options.durability == .buffered { scheduleBackgroundSync() }
        scheduleCompactionCheck()
    }

    deinit {
        try? close()
    }

    // MARK: Reading

    /// The latest published (durable) state. O(1); never blocks on writers.
    /// Throws `.notOpen` after ``close()``.
    public func snapshot() throws -> EngineSnapshot {
        let view = try state.withLock { s -> ViewState in
            if s.closed { throw Self.closedError() }
            return s.views.published
        }
        return EngineSnapshot(index: view.index, segments: view.segments, cache: cache)
    }

    static func closedError() -> LogStoreError {
        LogStoreError(.notOpen, "The engine is closed. Open the store again (LogEngine.open) before using it.")
    }

    // MARK: Publication

    /// Installs `observer` (nil removes it): from now on it is called, under the engine's state
    /// lock (so in sequence order, and before any snapshot that includes them can be taken), with
    /// the ``CommitChanges`` of every commit when readers can see it, and once if the store is
    /// poisoned. It must return quickly and never call back into the engine. Returns the sequence
    /// of the published state at installation: every later commit is announced. Install it right
    /// after opening, before the first write (commits appended but not yet published when it is
    /// installed are never announced). Any thread.
    package func setPublicationObserver(_ observer: (@Sendable (PublicationEvent) -> Void)?) -> UInt64 {
        state.withLock { s in
            s.publicationObserver = observer
            return s.views.published.index.sequence
        }
    }

    /// The store's identity (MANIFEST's store id, 32 hex digits), or nil for a format-version-1
    /// store, which has none. Any thread.
    package var storeIdentifier: String? { state.withLock { $0.log.manifest.storeId?.description } }

    // MARK: Writing

    /// Whether the calling thread is inside a write body of this engine (where starting another
    /// write, `flush()` or `close()` would wait for itself). Any thread.
    public var isWritingOnCurrentThread: Bool { writer.heldByCurrentThread }

    /// Runs `body` as one write transaction and commits what it changed.
    ///
    /// The body runs on the calling thread, serialized with every other write. If it throws,
    /// nothing is committed and its error is rethrown unchanged. Otherwise the changes are
    /// appended as one transaction and `write` returns once they are durable under
    /// ``LogEngineOptions/durability`` (sharing one `fdatasync` with concurrent writers).
    ///
    /// Throws `.reentrantWrite` if called from inside another write body on the same thread,
    /// `.notOpen` after close, `.storePoisoned` after a failed sync, `.diskFull` and other I/O
    /// errors from the append (in which case nothing of this transaction is committed).
    @discardableResult
    public func write<T>(_ body: (EngineTransaction) throws -> T) throws -> T {
        let (result, seq) = try writeWithoutWaiting(body)
        if let seq { try waitDurable(seq) }
        return result
    }

    /// Like ``write(_:)`` but returns before durability: `onDurable` is called on some thread
    /// when the commit is durable (or with the error). Used by asynchronous DataStore writes so that
    /// a queue of writes shares syncs.
    @discardableResult
    public func write<T>(
        _ body: (EngineTransaction) throws -> T,
        onDurable: @escaping @Sendable ((any Error)?) -> Void
    ) throws -> T {
        let (result, seq) = try writeWithoutWaiting(body)
        if let seq, options.durability == .synchronous {
            group.notifyDurable(seq) { [weak self] error in
                if let self { self.didSync(seq, error) }
                onDurable(error)
            }
        } else {
            onDurable(nil)
        }
        return result
    }

    /// Runs a write body and appends its changes; returns the sequence to wait for, if any.
    func writeWithoutWaiting<T>(_ body: (EngineTransaction) throws -> T) throws -> (T, UInt64?) {
        try writer.acquire()
        defer { writer.release() }
        let head = try state.withLock { s -> ViewState in
            try Self.checkWritable(s)
            return s.views.head
        }
        let base = EngineSnapshot(index: head.index, segments: head.segments, cache: cache)
        let txn = EngineTransaction(
            snapshot: base, limits: options.limits, spillDirectory: (directory, fileSystem), spillCipher: options.encryption.cipher)
        defer { txn.isValid = false }
        let result = try body(txn)
        txn.isValid = false
        // A transaction without changes still comes after the commits appended before it: its
        // caller waits for them (durable and visible), so that a read after any write sees every
        // write issued before it, empty or not (DataStore rules 7 and 8).
        guard txn.hasChanges else { return (result, head.index.sequence) }
        // A transaction whose values outgrew memory is committed in chunks read from its spill file.
        let seq = txn.hasSpilled ? try appendLargeLocked(txn.changes) : try appendLocked(try txn.operationsToCommit())
        return (result, seq)
    }

    /// Commits `operations` as one transaction (a write without a body). Returns its sequence
    /// number once durable.
    @discardableResult
    public func commit(_ operations: [RecordOperation]) throws -> UInt64 {
        for op in operations {
            switch op {
            case .put(let t, let k, let v): try options.limits.validate(type: t, key: k, valueSize: v.count)
            case .delete(let t, let k): try options.limits.validate(type: t, key: k, valueSize: 0)
            case .deleteAll(let t): try options.limits.validate(type: t, key: RecordKey([]), valueSize: 0)
            }
        }
        let seq: UInt64? = try {
            try writer.acquire()
            defer { writer.release() }
            try checkWritable()
            return operations.isEmpty ? nil : try appendLocked(operations)
        }()
        guard let seq else { return state.withLock { $0.views.head.index.sequence } }
        try waitDurable(seq)
        return seq
    }

    /// Waits until commit `seq` is durable (in `.synchronous` mode) and publishes it.
    func waitDurable(_ seq: UInt64) throws {
        if options.durability == .synchronous { try syncThrough(seq) }
    }

    /// Makes commits up to `seq` durable (running or joining one `fdatasync`), then publishes
    /// what that sync covered: the thread that committed decides when its commit becomes visible.
    /// Poisons the store if the sync failed.
    func syncThrough(_ seq: UInt64) throws {
        let synced: UInt64
        do {
            synced = try group.waitDurable(seq)
        } catch {
            didSync(seq, error)
            throw error
        }
        didSync(synced, nil)
    }

    /// What a finished sync means: publish up to `seq`, or poison the store if it failed.
    func didSync(_ seq: UInt64, _ error: (any Error)?) {
        guard let error else {
            if publishedAtLeast.load(ordering: .acquiring) >= seq { return }
            state.withLock { s in
                s.views.publish(upTo: seq)
                s.announcePublished()
                publishedAtLeast.store(s.views.published.index.sequence, ordering: .releasing)
            }
            return
        }
        if let e = error as? LogStoreError, e.code == .storePoisoned { poison(e) }
    }

    /// Makes every commit so far durable (`fdatasync`), whatever the durability mode.
    /// Throws `.storePoisoned` if the sync fails.
    public func flush() throws {
        let closed = state.withLock { $0.closed }
        if closed { throw Self.closedError() }
        try syncThrough(group.lastAppended)
    }

    /// Marks the store unusable: every later write, compaction and checkpoint throws the first
    /// error poisoned with, commits waiting for a sync fail with it, and none of them is
    /// published. Used whenever the engine can no longer tell what is on disk (a failed
    /// `fdatasync`, a torn append it could not undo, a manifest that may or may not be in place).
    /// Returns the error in force, for the caller to throw. Any thread; idempotent.
    @discardableResult
    func poison(_ error: LogStoreError) -> LogStoreError {
        Self.poison(error, state: state, group: group)
    }

    /// ``poison(_:)`` for work that holds the engine's parts but not the engine (the preallocator).
    @discardableResult
    static func poison(_ error: LogStoreError, state: Protected<EngineState>, group: GroupCommit) -> LogStoreError {
        let first = state.withLock { s -> LogStoreError in
            if s.poisoned == nil {
                s.poisoned = error
                s.views.dropPending()
                s.publicationObserver?(.poisoned(error))
            }
            return s.poisoned ?? error
        }
        group.fail(first)
        return first
    }

    /// Throws if the store is closed or poisoned.
    func checkWritable() throws {
        try state.withLock { try Self.checkWritable($0) }
    }

    static func checkWritable(_ s: EngineState) throws {
        if s.closed { throw closedError() }
        if let p = s.poisoned { throw p }
    }

    /// Appends one transaction. Caller holds the writer lock. Notes a full disk, and says in the
    /// log when a write succeeds again after one. `defining`: item types to give an id (a define
    /// record) in the transaction even if none of `ops` names them.
    func appendLocked(_ ops: [RecordOperation], defining types: [String] = []) throws -> UInt64 {
        try notingDiskFull { try appendLockedOnce(ops, defining: types) }
    }

    /// Runs an append, noting a full disk in the log (once) and when writes succeed again.
    func notingDiskFull(_ append: () throws -> UInt64) throws -> UInt64 {
        do {
            let seq = try append()
            if let failures = diskFull.withLock({ f -> Int? in
                defer { f = 0 }
                return f > 0 ? f : nil
            }) {
                logger?.notice(
                    "disk space is available again; writes resumed", metadata: ["store": "\(directory)", "failedWrites": "\(failures)"])
            }
            return seq
        } catch let e as LogStoreError where e.code == .diskFull {
            let first = diskFull.withLock { f -> Bool in
                f += 1
                return f == 1
            }
            if first {
                logger?.warning(
                    "the disk is full; writes fail until space is freed (nothing committed is lost)", metadata: ["store": "\(directory)"])
            }
            throw e
        }
    }

    func appendLockedOnce(_ ops: [RecordOperation], defining types: [String] = []) throws -> UInt64 {
        let (start, observed) = state.withLock {
            (($0.views.head, $0.log.tail, $0.log.tailOffset, $0.log.syncedThroughForFrames), $0.publicationObserver != nil)
        }
        var (head, tail, offset, synced) = start
        let seq = try Self.sequence(after: head, tail: tail)
        // Secondary-index changes first: a unique-index violation refuses the commit while
        // nothing is written yet.
        let secondaryChanges = try secondaryChanges(for: ops, on: head)
        var encoded = try TransactionEncoder.encode(
            ops, sequence: seq, meta: head.index.meta, options: options, syncedThrough: synced, defining: types, compressor: compressor)
        // Locations address segments with 32-bit offsets; segments stay below 2 GiB because a
        // transaction is at most 1 GiB and a segment rolls over at most at 1 GiB.
        guard encoded.bytes.count <= LogFrame.maxPayload else {
            throw LogStoreError(
                .itemTooLarge,
                "The transaction encodes to \(encoded.bytes.count) bytes; one transaction may hold at most 1 GiB. Split it into several writes (or merge a very large child store in parts)."
            )
        }
        var rolledOver = false
        if offset > UInt64(tail.headerSize), offset + UInt64(encoded.bytes.count) > UInt64(options.segmentSize) {
            try rollOverLocked(nextSequence: seq)
            (head, tail, offset, synced) = state.withLock { ($0.views.head, $0.log.tail, $0.log.tailOffset, $0.log.syncedThroughForFrames) }
            // The frames claim how far the new segment is durable: encode them again.
            encoded = try TransactionEncoder.encode(
                ops, sequence: seq, meta: head.index.meta, options: options, syncedThrough: synced, defining: types,
                compressor: compressor)
            rolledOver = true
        }
        do {
            try log.append(encoded.bytes, to: tail, at: offset)
        } catch {
            switch error {
            case .notWritten(let e):
                throw e
            case .torn(let e, let undo):
                poison(
                    LogStoreError(
                        .storePoisoned, "A failed append could not be undone; reopen the store (recovery will cut the torn tail).",
                        path: tail.path, underlying: undo))
                throw e
            }
        }
        // Index the new records, as one batch.
        var index = head.index
        let journaling = state.withLock { $0.compactionJournal != nil || $0.checkpointJournal != nil }
        var changes: [IndexJournal.Change] = []
        var dead = DeadBytes()
        index.meta = encoded.meta
        do {
            try Self.index(
                ops, placements: &encoded.placements, rawBytes: encoded.rawBytes, at: offset, in: tail, sequence: seq, into: &index,
                dead: &dead,
                journaling: journaling, journal: &changes)
            try index.apply(secondaryChanges)
            if journaling && !secondaryChanges.isEmpty { changes.append(.secondary(secondaryChanges)) }
        } catch {
            // The commit is in the log but not in the index: only a reopen can tell them apart.
            throw poison(Self.indexDamaged(error))
        }
        // What the commit changed, for the publication observer (a delete-all's keys are read
        // from the type's tree before the commit, only if someone asks).
        let committed = observed ? CommitChanges(sequence: seq, operations: ops, keysBefore: Self.keysBefore(head.index)) : nil
        finishAppend(
            head: head, index: index, sequence: seq, bytes: encoded.bytes.count, rawBytes: encoded.rawBytes,
            refs: encoded.refs, pending: encoded.pendingBytes, dead: dead,
            journal: journaling ? changes : nil, committed: committed, tail: tail, end: offset + UInt64(encoded.bytes.count),
            rolledOver: rolledOver)
        return seq
    }

    /// The sequence number of the transaction appended after `head`. Throws `.corruption` when
    /// `head` already has the largest one (only a damaged or foreign log gets there: a store
    /// makes one transaction at a time).
    static func sequence(after head: ViewState, tail: SegmentFile) throws -> UInt64 {
        guard head.index.sequence < UInt64.max else {
            throw LogStoreError(
                .corruption,
                "The log's last transaction has sequence number \(head.index.sequence), the largest there is, so no transaction can follow it. Run `logstore-compact salvage` to copy the data into a new store.",
                path: tail.path)
        }
        return head.index.sequence + 1
    }

    /// Puts the records of `ops`, written in frames at `offset` of `tail` (their placements
    /// relative to that offset), into `index` as one batch per type, counts what they replace in
    /// `dead` (and their deletes, the part of their `rawBytes` that is not puts), and notes each
    /// change in `journal` when a compaction is copying (`journaling`).
    static func index(
        _ ops: [RecordOperation], placements: inout [RecordLocation], rawBytes: UInt64, at offset: UInt64, in tail: SegmentFile,
        sequence seq: UInt64, into index: inout IndexState, dead: inout DeadBytes, journaling: Bool,
        journal: inout [IndexJournal.Change]
    ) throws {
        var putBytes: UInt64 = 0
        for i in ops.indices {
            if case .put = ops[i] {
                placements[i].segment = tail.number
                placements[i].offset += UInt32(offset)
                placements[i].sequence = seq
                putBytes += UInt64(placements[i].length)
            }
        }
        if rawBytes > putBytes { dead.add(Int(rawBytes - putBytes), in: tail.number) }
        try index.apply(ops, placements: placements, dead: &dead)
        if journaling {
            for i in ops.indices {
                switch ops[i] {
                case .put(let t, let k, _): journal.append(.put(t, k, placements[i]))
                case .delete(let t, let k): journal.append(.delete(t, k))
                case .deleteAll(let t): journal.append(.deleteAll(t))
                }
            }
        }
    }

    /// `.storePoisoned` for an index run found damaged after a commit was appended (the commit
    /// is durable in the log; the next open rebuilds the index from it).
    static func indexDamaged(_ error: any Error) -> LogStoreError {
        LogStoreError(.storePoisoned, "An index file was found damaged while a commit was indexed; reopen the store.", underlying: error)
    }

    /// For ``CommitChanges``: the keys a delete-all of a type removes, read from `before` (the
    /// state the commit started from) only when someone asks.
    static func keysBefore(_ before: IndexState) -> (String) -> CommitChanges.ClearedKeys {
        { t in
            let tree = before.types[t]
            // A damaged index run leaves its keys out of the list (reads report the damage).
            return CommitChanges.ClearedKeys(count: tree?.count ?? 0, keys: { (try? tree?.keys()) ?? [] })
        }
    }

    /// Makes an appended transaction the head: installs `index` (which holds its records), hands
    /// `committed` to the publication observer, counts its `bytes`, notes its index changes in the
    /// compaction journal, counts the records it made `dead`, tells the preallocator the tail now
    /// ends at `end`, and schedules what the append makes due. Caller holds the writer lock.
    func finishAppend(
        head: ViewState, index: IndexState, sequence seq: UInt64, bytes: Int, rawBytes: UInt64, refs: DefineRefs, pending: UInt64,
        dead: DeadBytes, journal: [IndexJournal.Change]?, committed: CommitChanges?, tail: SegmentFile, end: UInt64, rolledOver: Bool
    ) {
        var head = head
        var index = index
        index.sequence = seq
        index._checkInvariants()
        head.index = index
        let visibleNow = options.durability != .synchronous
        let checkpointEvery = UInt64(options.checkpointInterval)
        let checkpointDue = state.withLock { s -> Bool in
            s.views.append(head, visibleNow: visibleNow, changes: committed)
            s.announcePublished()
            if let journal {
                s.compactionJournal?.record(journal)
                s.checkpointJournal?.record(journal)
            }
            s.log.appended(bytes: bytes, rawBytes: rawBytes, refs: refs, pending: pending, dead: dead)
            s.lastCommit = .now
            return checkpointEvery > 0 && s.log.bytesSinceCheckpoint >= checkpointEvery
        }
        group.noteAppended(seq)
        log.preallocator?.appended(to: tail, through: end)
        if rolledOver { scheduleCompactionCheck() }
        if checkpointDue { scheduleCheckpoint() }
    }

    /// Seals the tail segment and starts a new one (``LogWriter/rollOver(from:sealAt:to:replacing:baseSequence:)``),
    /// then makes it the tail of the log state and of every view. Caller holds the writer lock.
    func rollOverLocked(nextSequence: UInt64) throws {
        // Only a damaged or foreign MANIFEST gets here (no store makes 4 billion segments).
        let limits = state.withLock { ($0.log.manifest.nextSegment, $0.log.manifest.generation) }
        guard limits.0 < UInt32.max, limits.1 < UInt64.max else {
            throw LogStoreError(
                .corruption,
                "MANIFEST's next segment number (\(limits.0)) or generation (\(limits.1)) is at its limit, so no new segment can be added. Run `logstore-compact salvage` to copy the data into a new store.",
                path: _joinPath(directory, LogStoreFormat.manifestFileName))
        }
        // Compaction reserves segment numbers without the writer lock: take the number and the
        // manifest in one step so neither side hands out a number twice.
        let (tail, sealAt, previous, next) = state.withLock { s -> (SegmentFile, UInt64, ManifestFile, ManifestFile) in
            let previous = s.log.manifest
            var next = previous
            // The tail is sealed at its append offset (its exact file size: a failed append is cut
            // off again, or the store is poisoned) after the log's last transaction so far.
            next.sealed[s.log.tail.number] = ManifestFile.Sealed(length: s.log.tailOffset, lastSequence: s.views.head.index.sequence)
            next.segments.append(s.log.reserveSegmentNumber())
            next.nextSegment = s.log.manifest.nextSegment
            next.generation += 1
            return (s.log.tail, s.log.tailOffset, previous, next)
        }
        let number = next.segments[next.segments.count - 1]
        let segment: SegmentFile
        do {
            segment = try log.rollOver(from: tail, sealAt: sealAt, to: next, replacing: previous, baseSequence: nextSequence)
        } catch {
            switch error {
            case .sealFailed(let e):
                state.withLock { $0.log.giveBack(number) }
                throw poison(
                    LogStoreError(.storePoisoned, "fdatasync of a full segment failed; reopen the store.", path: tail.path, underlying: e))
            case .notInstalled(let e):
                state.withLock { $0.log.giveBack(number) }
                throw e
            case .mayBeInstalled(let e):
                // The manifest on disk may name the new segment while this engine would keep
                // appending to the old one: refuse writes until a reopen reads what is there.
                throw poison(
                    LogStoreError(
                        .storePoisoned, "A segment roll-over failed after the new MANIFEST was written; reopen the store.",
                        path: _joinPath(directory, LogStoreFormat.manifestFileName), underlying: e))
            }
        }
        state.withLock { s in
            s.log.rolledOver(to: segment, manifest: next)
            s.views.install(segment: segment)
        }
        if let sealed = next.sealed[tail.number] { tail.seal(length: sealed.length) }
        segment.reserveMapping(length: UInt64(options.segmentSize))
        logger?.debug("rolled over to segment \(number)", metadata: ["store": "\(directory)"])
    }

    // MARK: Closing

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Flushes (unless durability is `.none`), writes a checkpoint (if
    /// ``LogEngineOptions/checkpointOnClose``), releases the lock and refuses further use.
    /// Waits for a write in progress and for background compaction (which stops early) to finish.
    /// Idempotent. Snapshots already taken stay readable. A failed checkpoint is logged, not
    /// thrown (the log alone is complete), unless making the log durable for it failed
    /// (`.storePoisoned`).
    public func close() throws {
        if writer.heldByCurrentThread {
            throw LogStoreError(.reentrantWrite, "close() was called from inside a write block of the same store.")
        }
        // Background work must end before the lock is released: it writes files in the directory.
        background.closeAndWait()
        try writer.acquire()
        defer { writer.release() }
        let already = state.withLock { s -> Bool in
            defer { s.closed = true }
            return s.closed
        }
        if already { return }
        var firstError: (any Error)? = nil
        let poisoned = state.withLock { $0.poisoned }
        if options.durability != .none && poisoned == nil && group.pendingSync {
            do { try syncThrough(group.lastAppended) } catch { firstError = error }
        }
        if options.checkpointOnClose && firstError == nil && state.withLock({ $0.poisoned }) == nil {
            do { try checkpointer.write(self, closing: true) } catch let e as LogStoreError where e.code == .storePoisoned {
                firstError = e
            } catch {
                logger?.warning(
                    "checkpoint on close failed; the next open replays the whole log",
                    metadata: ["store": "\(directory)", "error": "\(error)"])
            }
        }
        // A closed store keeps no preallocated space: its tail ends where its log does.
        log.preallocator?.close()
        if options.recovery == .strict && state.withLock({ $0.poisoned }) == nil {
            let (tail, offset) = state.withLock { ($0.log.tail, $0.log.tailOffset) }
            do { try log.cut(tail, to: offset) } catch {
                logger?.warning(
                    "could not cut the preallocated space off the tail at close; the next open reuses it",
                    metadata: ["store": "\(directory)", "error": "\(error)"])
            }
        }
        group.fail(Self.closedError())
        cache.removeAll()
        lock.unlock()
        if let firstError { throw firstError }
    }

    func scheduleBackgroundSync() {
        let interval = options.syncInterval
        let nanos = max(1_000_000, interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanos))) { [weak self] in
            guard let self, !self.isClosed else { return }
            if self.group.pendingSync { try? self.syncThrough(self.group.lastAppended) }
            self.scheduleBackgroundSync()
        }
    }

    // MARK: Introspection

    /// The segment numbers in replay order, and the generation of the manifest.
    public var manifestInfo: (generation: UInt64, segments: [UInt32]) {
        state.withLock { ($0.log.manifest.generation, $0.log.manifest.segments) }
    }
}
