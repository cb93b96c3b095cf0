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
    public let options: LogStoreOptions
    /// What opening the store found and did.
    public let recoveryReport: RecoveryReport

    let lock: any FileSystemLock
    let cache: FrameCache
    let writer = WriterLock()
    let state: Protected<EngineState>
    let group: GroupCommit
    let logger: Logger?
    /// Background compaction and checkpoints; `close()` waits for them.
    let background = BackgroundWork()
    /// Serializes compactions (one at a time, background or `compact()`).
    let compactionLock = NSLock()
    /// Serializes checkpoint writes.
    let checkpointLock = NSLock()
    /// Most index changes a compaction journals while it copies (tests lower it).
    let journalLimit = Protected(IndexJournal.defaultLimit)
    /// Writes that failed with `.diskFull` since the last one that succeeded.
    let diskFull = Protected(0)
    /// When background compaction may run again after failing for lack of space.
    let compactionBackoff = Protected(DiskFullBackoff())

    struct EngineState: Sendable {
        /// What readers see: durable under the store's durability.
        var published: ViewState
        /// What the next write transaction starts from (includes appended, not yet synced commits).
        var head: ViewState
        /// Appended commits waiting for `fdatasync` before they are published (synchronous mode).
        var pending: [(UInt64, ViewState)] = []
        var manifest: ManifestFile
        var tail: SegmentFile
        var tailOffset: UInt64
        /// Per listed segment: valid length and raw payload bytes.
        var segmentInfo: [UInt32: SegmentInfo]
        /// Log bytes appended since the last checkpoint was captured.
        var bytesSinceCheckpoint: UInt64 = 0
        /// The newest checkpoint on disk (loaded at open or written since), if any.
        var lastCheckpoint: CheckpointMark?
        /// While a compaction copies: the index changes appended since the state it copies, so
        /// the switch can replay them onto the re-pointed copy instead of re-pointing the head
        /// under the writer lock. Set and cleared under the writer lock.
        var compactionJournal: IndexJournal?
        var poisoned: LogStoreError?
        var closed = false
    }

    struct ViewState: Sendable {
        var index: IndexState
        var segments: [UInt32: SegmentFile]
    }

    init(directory: String, fileSystem: any FileSystem, options: LogStoreOptions, lock: any FileSystemLock,
         recovered: Recovered) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.options = options
        self.lock = lock
        self.logger = options.logger
        self.recoveryReport = recovered.report
        let cache = FrameCache(capacity: options.cacheSize)
        self.cache = cache
        let view = ViewState(index: recovered.index, segments: recovered.segments)
        let state = Protected(EngineState(
            published: view, head: view, manifest: recovered.manifest, tail: recovered.tail,
            tailOffset: recovered.tailOffset, segmentInfo: recovered.segmentInfo,
            bytesSinceCheckpoint: recovered.bytesAfterCheckpoint, lastCheckpoint: recovered.checkpoint))
        self.state = state
        self.group = GroupCommit(
            sequence: recovered.index.sequence,
            sync: {
                let tail = state.withLock { $0.tail }
                try tail.file.sync()
            },
            didSync: { seq in
                state.withLock { s in
                    var last: ViewState? = nil
                    while let first = s.pending.first, first.0 <= seq {
                        last = first.1
                        s.pending.removeFirst()
                    }
                    if let last { s.published = last }
                }
            },
            didFail: { error in
                state.withLock { s in
                    if s.poisoned == nil { s.poisoned = error }
                    s.pending.removeAll()
                }
            })
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
            return s.published
        }
        return EngineSnapshot(index: view.index, segments: view.segments, cache: cache)
    }

    static func closedError() -> LogStoreError {
        LogStoreError(.notOpen, "The store is closed. Call setup() (or LogEngine.open) before using it.")
    }

    // MARK: Writing

    /// Runs `body` as one write transaction and commits what it changed.
    ///
    /// The body runs on the calling thread, serialized with every other write. If it throws,
    /// nothing is committed and its error is rethrown unchanged. Otherwise the changes are
    /// appended as one transaction and `write` returns once they are durable under
    /// ``LogStoreOptions/durability`` (sharing one `fdatasync` with concurrent writers).
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
    public func write<T>(_ body: (EngineTransaction) throws -> T,
                         onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T {
        let (result, seq) = try writeWithoutWaiting(body)
        if let seq, options.durability == .synchronous {
            group.notifyDurable(seq, onDurable)
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
            if s.closed { throw Self.closedError() }
            if let p = s.poisoned { throw p }
            return s.head
        }
        let base = EngineSnapshot(index: head.index, segments: head.segments, cache: cache)
        let txn = EngineTransaction(base: base, limits: options)
        defer { txn.isValid = false }
        let result = try body(txn)
        txn.isValid = false
        guard txn.hasChanges else { return (result, nil) }
        let seq = try appendLocked(try txn.overlay.operations())
        return (result, seq)
    }

    /// Commits `operations` as one transaction (a write without a body). Returns its sequence
    /// number once durable.
    @discardableResult
    public func commit(_ operations: [RecordOperation]) throws -> UInt64 {
        for op in operations {
            switch op {
            case .put(let t, let k, let v): try Self.validate(type: t, key: k, valueSize: v.count, options: options)
            case .delete(let t, let k): try Self.validate(type: t, key: k, valueSize: 0, options: options)
            case .deleteAll(let t): try Self.validate(type: t, key: RecordKey([]), valueSize: 0, options: options)
            }
        }
        let seq: UInt64? = try {
            try writer.acquire()
            defer { writer.release() }
            try state.withLock { s in
                if s.closed { throw Self.closedError() }
                if let p = s.poisoned { throw p }
            }
            return operations.isEmpty ? nil : try appendLocked(operations)
        }()
        guard let seq else { return state.withLock { $0.head.index.sequence } }
        try waitDurable(seq)
        return seq
    }

    func waitDurable(_ seq: UInt64) throws {
        if options.durability == .synchronous { try group.waitDurable(seq) }
    }

    /// Makes every commit so far durable (`fdatasync`), whatever the durability mode.
    /// Throws `.storePoisoned` if the sync fails.
    public func flush() throws {
        let closed = state.withLock { $0.closed }
        if closed { throw Self.closedError() }
        try group.waitDurable(group.lastAppended)
    }

    static func validate(type: String, key: RecordKey, valueSize: Int, options: LogStoreOptions) throws {
        let typeBytes = type.utf8.count
        guard typeBytes > 0 else { throw LogStoreError(.invalidArgument, "An item type name must not be empty.") }
        guard typeBytes <= options.maxTypeNameSize else {
            throw LogStoreError(.keyTooLarge, "The item type name is \(typeBytes) bytes; the limit is \(options.maxTypeNameSize) (LogStoreOptions.maxTypeNameSize).")
        }
        guard key.count <= options.maxKeySize else {
            throw LogStoreError(.keyTooLarge, "The key of a \(type) is \(key.count) bytes; the limit is \(options.maxKeySize) (LogStoreOptions.maxKeySize).")
        }
        guard valueSize <= options.maxItemSize else {
            throw LogStoreError(.itemTooLarge, "A \(type) encodes to \(valueSize) bytes; the limit is \(options.maxItemSize) (LogStoreOptions.maxItemSize). Store large blobs outside the store, or raise the limit.")
        }
    }

    /// Appends one transaction. Caller holds the writer lock. Notes a full disk, and says in the
    /// log when a write succeeds again after one.
    func appendLocked(_ ops: [RecordOperation]) throws -> UInt64 {
        do {
            let seq = try appendLockedOnce(ops)
            if let failures = diskFull.withLock({ f -> Int? in defer { f = 0 }; return f > 0 ? f : nil }) {
                logger?.notice("disk space is available again; writes resumed", metadata: ["store": "\(directory)", "failedWrites": "\(failures)"])
            }
            return seq
        } catch let e as LogStoreError where e.code == .diskFull {
            let first = diskFull.withLock { f -> Bool in
                f += 1
                return f == 1
            }
            if first { logger?.warning("the disk is full; writes fail until space is freed (nothing committed is lost)", metadata: ["store": "\(directory)"]) }
            throw e
        }
    }

    func appendLockedOnce(_ ops: [RecordOperation]) throws -> UInt64 {
        var (head, tail, offset) = state.withLock { ($0.head, $0.tail, $0.tailOffset) }
        // Only a damaged or foreign log gets here (a store makes one transaction at a time).
        guard head.index.sequence < UInt64.max else {
            throw LogStoreError(
                .corruption,
                "The log's last transaction has sequence number \(head.index.sequence), the largest there is, so no transaction can follow it. Run `logstore-compact salvage` to copy the data into a new store.",
                path: tail.path)
        }
        let seq = head.index.sequence + 1
        var encoded = TransactionEncoder.encode(ops, sequence: seq, options: options)
        // Locations address segments with 32-bit offsets; segments stay below 2 GiB because a
        // transaction is at most 1 GiB and a segment rolls over at most at 1 GiB.
        guard encoded.bytes.count <= LogFrame.maxPayload else {
            throw LogStoreError(.itemTooLarge, "The transaction encodes to \(encoded.bytes.count) bytes; one transaction may hold at most 1 GiB. Split it into several writes (or merge a very large child store in parts).")
        }
        var rolledOver = false
        if offset > UInt64(SegmentHeader.size), offset + UInt64(encoded.bytes.count) > UInt64(options.segmentSize) {
            try rollOverLocked(nextSequence: seq)
            (head, tail, offset) = state.withLock { ($0.head, $0.tail, $0.tailOffset) }
            rolledOver = true
        }
        do {
            try tail.file.write(encoded.bytes, at: offset)
        } catch {
            // Undo a partial append so the log never holds a torn frame we know about.
            do { try tail.file.truncate(to: offset) } catch {
                let p = LogStoreError(.storePoisoned, "A failed append could not be undone; reopen the store (recovery will cut the torn tail).", path: tail.path, underlying: error)
                state.withLock { $0.poisoned = p }
                group.fail(p)
            }
            throw error
        }
        // Index the new records.
        var index = head.index
        let journaling = state.withLock { $0.compactionJournal != nil }
        var changes: [IndexJournal.Change] = []
        for i in ops.indices {
            switch ops[i] {
            case .put(let t, let k, _):
                encoded.placements[i].segment = tail.number
                encoded.placements[i].frameOffset += UInt32(offset)
                encoded.placements[i].sequence = seq
                index.put(t, k, encoded.placements[i])
                if journaling { changes.append(.put(t, k, encoded.placements[i])) }
            case .delete(let t, let k):
                index.delete(t, k)
                if journaling { changes.append(.delete(t, k)) }
            case .deleteAll(let t):
                index.deleteAll(t)
                if journaling { changes.append(.deleteAll(t)) }
            }
        }
        index.sequence = seq
        index._checkInvariants()
        let newOffset = offset + UInt64(encoded.bytes.count)
        let durability = options.durability
        let checkpointEvery = UInt64(options.checkpointInterval)
        let checkpointDue = state.withLock { s -> Bool in
            s.head.index = index
            if journaling { s.compactionJournal?.record(changes) }
            s.tailOffset = newOffset
            s.segmentInfo[tail.number, default: SegmentInfo(length: 0, rawBytes: 0)].length = newOffset
            s.segmentInfo[tail.number, default: SegmentInfo(length: 0, rawBytes: 0)].rawBytes += encoded.rawBytes
            s.bytesSinceCheckpoint += UInt64(encoded.bytes.count)
            if durability == .synchronous {
                s.pending.append((seq, s.head))
            } else {
                s.published = s.head
            }
            return checkpointEvery > 0 && s.bytesSinceCheckpoint >= checkpointEvery
        }
        group.noteAppended(seq)
        if rolledOver { scheduleCompactionCheck() }
        if checkpointDue { scheduleCheckpoint() }
        return seq
    }

    /// Seals the tail segment (fsync) and starts a new one: the segment file with its header
    /// first (fsync, fsync dir), then the manifest listing it (write-temp, fsync, rename, fsync
    /// dir). A crash or a failure (a full disk) before the rename leaves an unlisted segment file
    /// that recovery removes, and the engine keeps appending to the segment the manifest on disk
    /// still names as the last one. (Manifest first would leave a failed roll-over appending to a
    /// segment that is no longer last on disk, where a later torn write reads as corruption.)
    func rollOverLocked(nextSequence: UInt64) throws {
        let tail = state.withLock { $0.tail }
        do {
            try tail.file.sync()
        } catch {
            let p = LogStoreError(.storePoisoned, "fdatasync of a full segment failed; reopen the store.", path: tail.path, underlying: error)
            state.withLock { $0.poisoned = p }
            group.fail(p)
            throw p
        }
        // Only a damaged or foreign MANIFEST gets here (no store makes 4 billion segments).
        let limits = state.withLock { ($0.manifest.nextSegment, $0.manifest.generation) }
        guard limits.0 < UInt32.max, limits.1 < UInt64.max else {
            throw LogStoreError(
                .corruption,
                "MANIFEST's next segment number (\(limits.0)) or generation (\(limits.1)) is at its limit, so no new segment can be added. Run `logstore-compact salvage` to copy the data into a new store.",
                path: _joinPath(directory, LogStoreFormat.manifestFileName))
        }
        // Compaction reserves segment numbers without the writer lock: take the number and the
        // manifest in one step so neither side hands out a number twice.
        var (next, manifest) = state.withLock { s -> (ManifestFile, ManifestFile) in
            let previous = s.manifest
            var m = s.manifest
            m.segments.append(m.nextSegment)
            m.nextSegment += 1
            s.manifest.nextSegment = m.nextSegment
            return (m, previous)
        }
        let number = next.segments[next.segments.count - 1]
        next.generation += 1
        let segment: SegmentFile
        do {
            segment = try Self.createSegment(number, baseSequence: nextSequence, directory: directory, fs: fileSystem)
        } catch {
            discardFailedSegment(number)
            throw error
        }
        do {
            try Self.writeManifest(next, directory: directory, fs: fileSystem)
        } catch {
            // If the rename happened (only the directory fsync failed), the manifest on disk names
            // the new segment but this engine would keep appending to the old one: refuse writes.
            let path = _joinPath(directory, LogStoreFormat.manifestFileName)
            let installed = (try? fileSystem.open(path, mode: .readOnly)).map { f in
                defer { try? f.close() }
                return (try? f.read(at: 0, count: 1 << 16)) ?? []
            } != manifest.encoded()
            if installed {
                let p = LogStoreError(.storePoisoned, "A segment roll-over failed after the new MANIFEST was written; reopen the store.", path: path, underlying: error)
                state.withLock { $0.poisoned = p }
                group.fail(p)
                throw p
            }
            try? segment.file.close()
            discardFailedSegment(number)
            throw error
        }
        state.withLock { s in
            next.nextSegment = max(next.nextSegment, s.manifest.nextSegment)
            s.manifest = next
            s.tail = segment
            s.tailOffset = UInt64(SegmentHeader.size)
            s.segmentInfo[number] = SegmentInfo(length: UInt64(SegmentHeader.size), rawBytes: 0)
            s.head.segments[number] = segment
            // The new segment holds nothing published yet, but readers of later states need it.
            for i in s.pending.indices { s.pending[i].1.segments[number] = segment }
            s.published.segments[number] = segment
        }
        logger?.debug("rolled over to segment \(number)", metadata: ["store": "\(directory)"])
    }

    /// Undoes the file side of a roll-over that failed before its manifest was installed (a full
    /// disk, typically): removes the new segment file and gives its number back if no later number
    /// was handed out, so failed attempts leave no empty segment files and burn no numbers. Best
    /// effort: a file that cannot be removed is unlisted, and the next open removes it.
    func discardFailedSegment(_ number: UInt32) {
        try? fileSystem.removeFile(atPath: _joinPath(directory, LogStoreFormat.segmentFileName(number)))
        try? fileSystem.syncDirectory(atPath: directory)
        state.withLock { s in
            if s.manifest.nextSegment == number &+ 1 { s.manifest.nextSegment = number }
        }
    }

    static func writeManifest(_ m: ManifestFile, directory: String, fs: any FileSystem) throws {
        let tmp = _joinPath(directory, LogStoreFormat.manifestFileName + ".tmp")
        let f = try fs.open(tmp, mode: .createOrTruncate)
        try f.write(m.encoded(), at: 0)
        try f.sync()
        try f.close()
        try fs.rename(from: tmp, to: _joinPath(directory, LogStoreFormat.manifestFileName))
        try fs.syncDirectory(atPath: directory)
    }

    static func createSegment(_ number: UInt32, baseSequence: UInt64, directory: String, fs: any FileSystem,
                              flags: UInt16 = 0) throws -> SegmentFile {
        let path = _joinPath(directory, LogStoreFormat.segmentFileName(number))
        let f = try fs.open(path, mode: .createOrTruncate)
        try f.write(SegmentHeader(flags: flags, segment: number, baseSequence: baseSequence).encoded(), at: 0)
        try f.sync()
        try fs.syncDirectory(atPath: directory)
        return SegmentFile(number: number, file: f, baseSequence: baseSequence, compacted: flags & SegmentHeader.flagCompacted != 0)
    }

    // MARK: Closing

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Flushes (unless durability is `.none`), writes a checkpoint (if
    /// ``LogStoreOptions/checkpointOnClose``), releases the lock and refuses further use.
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
            do { try group.waitDurable(group.lastAppended) } catch { firstError = error }
        }
        if options.checkpointOnClose && firstError == nil && state.withLock({ $0.poisoned }) == nil {
            do { try writeCheckpoint() } catch let e as LogStoreError where e.code == .storePoisoned {
                firstError = e
            } catch {
                logger?.warning("checkpoint on close failed; the next open replays the whole log", metadata: ["store": "\(directory)", "error": "\(error)"])
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
            if self.group.pendingSync { try? self.group.waitDurable(self.group.lastAppended) }
            self.scheduleBackgroundSync()
        }
    }

    // MARK: Introspection

    /// The segment numbers in replay order, and the generation of the manifest.
    public var manifestInfo: (generation: UInt64, segments: [UInt32]) {
        state.withLock { ($0.manifest.generation, $0.manifest.segments) }
    }
}

/// Encodes a transaction's operations into frames (see `LogFrame`), and where each put's value lands.
enum TransactionEncoder {
    struct Output {
        var bytes: [UInt8]
        /// Sum of the frames' raw (uncompressed) payload lengths.
        var rawBytes: UInt64 = 0
        /// Per operation (puts only meaningful): frame offset relative to `bytes`, frame stored
        /// length, value offset in the frame's raw payload, value length.
        var placements: [RecordLocation]
    }

    static func encode(_ ops: [RecordOperation], sequence: UInt64, options: LogStoreOptions) -> Output {
        var out: [UInt8] = []
        out.reserveCapacity(ops.reduce(0) { $0 + $1.encodedSizeBound } + LogFrame.headerSize * 2)
        var placements = [RecordLocation](repeating: RecordLocation(segment: 0, frameOffset: 0, frameLength: 0, valueOffset: 0, sequence: 0, valueLength: 0), count: ops.count)
        var frame = _ByteWriter(capacity: min(options.maxFramePayload, 64 << 10))
        var inFrame: [Int] = []
        var rawBytes: UInt64 = 0
        func flush(last: Bool) {
            let start = out.count
            rawBytes += UInt64(frame.count)
            let stored = LogFrame.append(
                into: &out, raw: frame.bytes, kind: last ? .commit : .data, sequence: sequence,
                compress: options.compression, threshold: options.compressionThreshold)
            for i in inFrame {
                placements[i].frameOffset = UInt32(start)
                placements[i].frameLength = UInt32(stored)
            }
            inFrame.removeAll(keepingCapacity: true)
            frame = _ByteWriter(capacity: min(options.maxFramePayload, 64 << 10))
        }
        for (i, op) in ops.enumerated() {
            if frame.count > 0 && frame.count + op.encodedSizeBound > options.maxFramePayload {
                flush(last: false)
            }
            if let at = op.encode(into: &frame), case .put(_, _, let v) = op {
                placements[i].valueOffset = UInt32(at)
                placements[i].valueLength = UInt32(v.count)
            }
            inFrame.append(i)
        }
        flush(last: true)
        return Output(bytes: out, rawBytes: rawBytes, placements: placements)
    }
}
