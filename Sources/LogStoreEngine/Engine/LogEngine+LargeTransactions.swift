/// Committing a transaction whose values outgrew memory (Docs/Migrations.md, "Large transactions").
///
/// A write transaction moves its values to a spill file once they pass
/// ``LogEngineOptions/transactionSpillThreshold``. Its commit then never holds the whole
/// transaction in memory: the operations are read from the change set in key order, a chunk of
/// about ``chunkBytes(_:)`` at a time, encoded as data frames and written to the tail one chunk after
/// another; the last chunk ends with the commit frame. The log format needs nothing new: a
/// transaction has always been any number of data frames and one commit frame in one segment, and
/// it exists only once its commit frame does (Docs/FileFormat.md, section 6). A crash before the
/// commit frame leaves an unfinished transaction at the end of the tail, which recovery cuts like
/// any torn append; a failure while writing cuts the chunks written so far at once.
///
/// What stays in memory for the whole commit: the change set's keys (and the index built from
/// them), one location per put, the secondary-index entries the commit changes, and two chunks.
extension LogEngine {
    /// The raw bytes of operations encoded per chunk of a large commit: the spill threshold, kept
    /// between 1 KiB and 4 MiB (larger chunks buy nothing: each is many frames already).
    static func chunkBytes(_ options: LogEngineOptions) -> Int {
        min(4 << 20, max(1 << 10, options.transactionSpillThreshold))
    }

    /// Appends the transaction `changes` (which moved values to a spill file) in chunks. Caller
    /// holds the writer lock. Throws what ``appendLocked(_:)`` throws.
    func appendLargeLocked(_ changes: ChangeSet<FlatChangeStorage>) throws -> UInt64 {
        try notingDiskFull { try appendLargeLockedOnce(changes) }
    }

    func appendLargeLockedOnce(_ changes: ChangeSet<FlatChangeStorage>) throws -> UInt64 {
        let (start, observed) = state.withLock {
            (($0.views.head, $0.log.tail, $0.log.tailOffset, $0.log.syncedThroughForFrames), $0.publicationObserver != nil)
        }
        var (head, tail, offset, synced) = start
        let seq = try Self.sequence(after: head, tail: tail)
        // Secondary-index changes first, over every chunk: a unique-index violation refuses the
        // commit while nothing is written yet.
        var secondary = SecondaryChanges()
        if head.index.hasSecondaryIndexes {
            let reader = EngineSnapshot(index: head.index, segments: head.segments, cache: cache)
            try Self.forEachChunk(of: changes, bytes: Self.chunkBytes(options)) { ops, _ in
                try head.index.addSecondaryChanges(of: ops, readOld: { try reader.read($0) }, to: &secondary)
            }
            try head.index.checkUnique(secondary)
        }
        // Roll over first when the transaction may not fit: it never spans two segments. (Without
        // encoding it there is only a bound, which compression may undercut.)
        let bound = Self.encodedSizeBound(changes, options: options)
        var rolledOver = false
        if offset > UInt64(tail.headerSize), offset + UInt64(bound) > UInt64(options.segmentSize) {
            try rollOverLocked(nextSequence: seq)
            (head, tail, offset, synced) = state.withLock { ($0.views.head, $0.log.tail, $0.log.tailOffset, $0.log.syncedThroughForFrames) }
            rolledOver = true
        }

        var index = head.index
        // The commit's changed keys for the publication observer, gathered chunk by chunk (keys
        // only: they are in memory for the whole commit anyway).
        var committed = observed ? CommitChanges(sequence: seq, types: [:]) : nil
        let keysBefore = Self.keysBefore(head.index)
        let journaling = state.withLock { $0.compactionJournal != nil || $0.checkpointJournal != nil }
        var journal: [IndexJournal.Change] = []
        var written = 0
        var rawBytes: UInt64 = 0
        var refs = DefineRefs()
        var pending: UInt64 = 0
        var dead = DeadBytes()
        do {
            try Self.forEachChunk(of: changes, bytes: Self.chunkBytes(options)) { ops, isLast in
                // Every frame claims the durable offset of the transaction's start: a sync while
                // the chunks are written must not make a later frame vouch for unfinished ones.
                // A type first met in this chunk is defined in it, so the meta table grows chunk by
                // chunk.
                var encoded = try TransactionEncoder.encode(
                    ops, sequence: seq, meta: index.meta, options: options, syncedThrough: synced, commit: isLast,
                    compressor: compressor)
                // Locations address segments with 32-bit offsets (see appendLockedOnce).
                guard written + encoded.bytes.count <= LogFrame.maxPayload else {
                    throw LogStoreError(
                        .itemTooLarge,
                        "The transaction encodes to more than 1 GiB; one transaction may hold at most 1 GiB. Split it into several writes (a migration: into several steps)."
                    )
                }
                let at = offset + UInt64(written)
                do throws(LogWriter.AppendFailure) {
                    try log.append(encoded.bytes, to: tail, at: at)
                } catch {
                    switch error {
                    case .notWritten(let e): throw e
                    case .torn(let e, let undo):
                        throw TornChunk(error: e, undo: undo)
                    }
                }
                index.meta = encoded.meta
                try Self.index(
                    ops, placements: &encoded.placements, rawBytes: encoded.rawBytes, at: at, in: tail, sequence: seq, into: &index,
                    dead: &dead,
                    journaling: journaling, journal: &journal)
                committed?.add(operations: ops, keysBefore: keysBefore)
                written += encoded.bytes.count
                rawBytes += encoded.rawBytes
                refs.formUnion(encoded.refs)
                pending += encoded.pendingBytes
            }
        } catch let torn as TornChunk {
            poison(
                LogStoreError(
                    .storePoisoned, "A failed append could not be undone; reopen the store (recovery will cut the torn tail).",
                    path: tail.path, underlying: torn.undo))
            throw torn.error
        } catch {
            // Chunks written before the failure are data frames of a transaction that has no
            // commit frame: cut them, so the next append starts where this one did.
            if written > 0 {
                do { try tail.file.truncate(to: offset) } catch let undo {
                    poison(
                        LogStoreError(
                            .storePoisoned, "A failed append could not be undone; reopen the store (recovery will cut the torn tail).",
                            path: tail.path, underlying: undo))
                }
            }
            throw error
        }
        do { try index.apply(secondary) } catch { throw poison(Self.indexDamaged(error)) }
        if journaling && !secondary.isEmpty { journal.append(.secondary(secondary)) }
        finishAppend(
            head: head, index: index, sequence: seq, bytes: written, rawBytes: rawBytes, refs: refs, pending: pending, dead: dead,
            journal: journaling ? journal : nil, committed: committed, tail: tail, end: offset + UInt64(written),
            rolledOver: rolledOver)
        return seq
    }

    /// A chunk's append failed and could not be cut off.
    struct TornChunk: Error {
        var error: any Error
        var undo: any Error
    }

    /// Calls `body` with the operations of `changes` in order, in chunks of about `bytes` (by
    /// their encoded-size bound), telling it which chunk is the last. Holds at most two chunks.
    /// Throws `.corruption` for a damaged spilled value, or `body`'s error.
    static func forEachChunk(
        of changes: ChangeSet<FlatChangeStorage>, bytes: Int, _ body: ([RecordOperation], _ isLast: Bool) throws -> Void
    ) throws {
        var pending: [RecordOperation]? = nil
        var current: [RecordOperation] = []
        var size = 0
        try changes.forEachOperation { op in
            current.append(op)
            size += op.encodedSizeBound
            if size >= bytes {
                if let p = pending { try body(p, false) }
                pending = current
                current = []
                size = 0
            }
        }
        if current.isEmpty {
            if let p = pending { try body(p, true) }
        } else {
            if let p = pending { try body(p, false) }
            try body(current, true)
        }
    }

    /// An upper bound of the bytes `changes` encodes to as one transaction, from the lengths the
    /// change set knows (no value is read): every operation's bound, and a frame header for at
    /// most every half frame (a frame closes only when the next record would overflow it).
    static func encodedSizeBound(_ changes: ChangeSet<FlatChangeStorage>, options: LogEngineOptions) -> Int {
        let raw = changes.encodedSizeBound
        let frames = 2 * raw / max(1, options.maxFramePayload) + 2
        return raw + frames * LogFrame.headerSizeV4
    }
}

extension ChangeSet {
    /// The sum of ``RecordOperation/encodedSizeBound`` over ``operations()``, without reading any
    /// value.
    package var encodedSizeBound: Int {
        var n = 0
        for (type, c) in types {
            let t = 1 + 10 + type.utf8.count
            if c.cleared { n += t }
            for k in c.deletedKeys { n += t + 10 + k.count }
            for (k, v) in c.puts {
                switch v {
                case .inline(let b): n += t + 10 + k.count + 10 + b.count
                case .external(_, let length): n += t + 10 + k.count + 10 + Int(length)
                }
            }
        }
        return n
    }
}
