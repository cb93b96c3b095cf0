import Foundation
import Logging
import Synchronization

/// Writes checkpoints (Docs/FileFormat.md, "Checkpoint"; Docs/Compaction.md, "Checkpoints"): the
/// indexes as run files and a small `CHECKPOINT` naming them with the log position they cover,
/// so the next open maps the runs and replays only the log after that position.
///
/// Per index it writes what changed since the runs it already has: nothing when its tree is
/// empty, else a delta run (the tree merged over its delta run), or a new base run (a fold:
/// every entry, by a sequential merge) when the changes outgrow a twentieth of the base or the
/// index has no base yet. A run no checkpoint names any more is removed as soon as the new
/// checkpoint is in place: views still reading it read its mapping, not its file.
///
/// Owned by one ``LogEngine``; one checkpoint is written at a time (`lock`). Runs on the caller's
/// thread: the background queue (``LogEngineOptions/checkpointInterval``), the end of a
/// compaction, or `close()`.
final class Checkpointer: Sendable {
    /// Serializes checkpoint writes.
    private let lock = NSLock()
    /// The next run number, and the runs the current CHECKPOINT names.
    private let files = Mutex<(next: UInt32, current: [UInt32: MappedRun])>((1, [:]))

    /// Takes over what recovery found: the runs the adopted checkpoint names and the next run
    /// number.
    func adopt(runs: [UInt32: MappedRun], nextRun: UInt32) {
        files.withLock { $0 = (max(1, nextRun), runs) }
    }

    /// The runs the current CHECKPOINT names (tests, tools).
    var currentRuns: [UInt32: MappedRun] { files.withLock { $0.current } }

    struct Capture {
        var index: IndexState
        var segments: [UInt32: SegmentFile]
        var log: LogState
    }

    /// Writes a checkpoint of `engine`'s current head state, unless the newest checkpoint already
    /// covers it. Makes the tail durable first (a checkpoint must never cover bytes a power loss
    /// could take; a failure poisons the store), writes and syncs the runs, then replaces
    /// `CHECKPOINT` atomically (``AtomicFileReplace``). Unless `closing`, it then gives the head
    /// the runs in place of its trees (with what was appended meanwhile). Takes the engine's state
    /// and writer locks only to capture and to install.
    func write(_ engine: LogEngine, closing: Bool = false) throws {
        guard engine.options.recovery == .strict else { return }
        // The capture and the start of the journal happen under the writer lock (close holds it
        // already): a commit decides whether to journal its index changes under that lock, so
        // none can fall between the capture and the journal. Lock order: the writer lock, then
        // `lock` (as in close); holding `lock`, this never waits for the writer lock.
        if closing {
            lock.lock()
        } else {
            while true {
                try engine.writer.acquire()
                if lock.try() { break }
                engine.writer.release()
                // Another checkpoint is being written: wait for it without the writer lock.
                lock.lock()
                lock.unlock()
            }
        }
        defer { lock.unlock() }
        let capture = engine.state.withLock { s -> Capture? in
            // A closed store's directory is no longer this engine's (its LOCK is released).
            if s.poisoned != nil || (s.closed && !closing) { return nil }
            if let last = s.lastCheckpoint, last.generation == s.log.manifest.generation,
                last.sequence == s.views.head.index.sequence, last.segments == s.log.manifest.segments
            {
                return nil
            }
            s.log.bytesSinceCheckpoint = 0
            if !closing { s.checkpointJournal = IndexJournal() }
            return Capture(index: s.views.head.index, segments: s.views.head.segments, log: s.log)
        }
        if !closing { engine.writer.release() }
        defer { if !closing { engine.state.withLock { $0.checkpointJournal = nil } } }
        // A writable store runs on a version 2 manifest (recovery upgrades older ones).
        guard let capture, let storeId = capture.log.manifest.storeId, let segments = Self.segments(of: capture.log) else { return }
        let tail = capture.log.tail
        do {
            // CHECKPOINT may name only log bytes that are durable. A tail already synced through
            // the captured offset (every commit of a `.synchronous` store) needs no second sync.
            if capture.log.tailSynced < capture.log.tailOffset { try tail.file.sync() }
        } catch {
            // Linux reports a failed fsync once: later syncs could "succeed" over lost data.
            throw engine.poison(
                LogStoreError(
                    .storePoisoned, "fdatasync of the tail failed while writing a checkpoint; reopen the store.", path: tail.path,
                    underlying: error))
        }
        var writer = RunSetWriter(
            fs: engine.fileSystem, directory: engine.directory, storeId: storeId, cipher: engine.storeCipher,
            sequence: capture.index.sequence, next: files.withLock { $0.next })
        let (runsIndex, references): (IndexState, [CheckpointFileV4.Index])
        let created = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        let bytes: [UInt8]
        do {
            (runsIndex, references) = try writer.write(capture.index)
            if !writer.written.isEmpty { try engine.fileSystem.syncDirectory(atPath: engine.directory) }
            bytes = try CheckpointFileV4(
                generation: capture.log.manifest.generation, sequence: capture.index.sequence, createdAtMillis: created, storeId: storeId,
                segments: segments, indexes: references, nextRun: writer.next, meta: capture.index.meta
            ).encode(sealedWith: engine.storeCipher)
            try AtomicFileReplace.replaceOrThrow(
                LogStoreFormat.checkpointFileName, in: engine.directory, with: bytes, fs: engine.fileSystem)
        } catch {
            files.withLock { $0.next = max($0.next, writer.next) }
            // No CHECKPOINT names them for sure (if the replace failed after its rename, the new
            // one names runs that are gone, and the next open replays the log instead).
            for run in writer.written { try? engine.fileSystem.removeFile(atPath: run.path) }
            throw error
        }
        // The runs the old CHECKPOINT names and the new one does not go now: views that still
        // search them read their mapping (or in-memory copy), never the file.
        let named = Dictionary(
            uniqueKeysWithValues: references.flatMap { [$0.base, $0.delta].compactMap { $0 } }.map { ($0.runNumber, ()) })
        var now: [UInt32: MappedRun] = [:]
        for run in writer.used where named[run.header.runNumber] != nil { now[run.header.runNumber] = run }
        let old = files.withLock { f -> [MappedRun] in
            defer { f = (max(f.next, writer.next), now) }
            return f.current.values.filter { now[$0.header.runNumber] == nil }
        }
        for run in old { try? engine.fileSystem.removeFile(atPath: run.path) }
        let mark = CheckpointMark(
            generation: capture.log.manifest.generation, sequence: capture.index.sequence, createdAtMillis: created,
            segments: capture.log.manifest.segments, positionOffset: capture.log.tailOffset, fileBytes: UInt64(bytes.count))
        engine.state.withLock { $0.lastCheckpoint = mark }
        engine.logger?.debug(
            "checkpoint written",
            metadata: [
                "store": "\(engine.directory)", "sequence": "\(mark.sequence)", "bytes": "\(bytes.count)",
                "runs": "\(writer.written.count)",
            ])
        if !closing { try install(runsIndex, capturedFrom: capture, engine: engine) }
    }

    /// Gives the head `runsIndex` (the captured index read from the runs just written) plus what
    /// was appended since the capture, in place of its trees, under the writer lock. Skipped when
    /// something other than appends changed the head meanwhile (a compaction switch, indexes
    /// declared), the journal overflowed, or the writer lock stays taken (a close or a compaction
    /// switch holds it, and this must not wait for it while holding the checkpoint lock): the head
    /// keeps its trees, and the next checkpoint writes from them. Throws `.corruption` for a
    /// damaged run (the head is then unchanged).
    private func install(_ runsIndex: IndexState, capturedFrom capture: Capture, engine: LogEngine) throws {
        guard engine.writer.tryAcquire() else { return }
        defer { engine.writer.release() }
        let (head, journal, generation) = engine.state.withLock { ($0.views.head, $0.checkpointJournal, $0.log.manifest.generation) }
        guard let journal, !journal.overflowed, generation == capture.log.manifest.generation,
            Self.definitions(head.index) == Self.definitions(capture.index)
        else { return }
        var index = runsIndex
        // (What the journal's changes replaced was counted when they were committed.)
        var counted = DeadBytes()
        try journal.apply(to: &index, secondary: true, dead: &counted)
        index.sequence = head.index.sequence
        // The head's defines: the journal holds index changes only, and the head's table already
        // has every define committed since the capture.
        index.meta = head.index.meta
        var newHead = head
        newHead.index = index
        newHead.index._checkInvariants()
        engine.state.withLock { s in
            guard s.views.head.index.sequence == head.index.sequence, s.poisoned == nil else { return }
            s.views.install(checkpointed: newHead)
        }
    }

    /// Every secondary index's definition hash, by type and name.
    private static func definitions(_ index: IndexState) -> [String: [String: UInt64]] {
        index.secondary.mapValues { $0.mapValues(\.definition.definitionHash) }
    }
}

extension Checkpointer {
    /// What a checkpoint of `log` records about its segments: each listed segment's valid length
    /// (the tail's append offset) and raw payload bytes, in replay order; nil when `log` does
    /// not know one of them or does not end with its tail.
    static func segments(of log: LogState) -> [CheckpointFile.Segment]? {
        var segments: [CheckpointFile.Segment] = []
        for n in log.manifest.segments {
            guard var info = log.segmentInfo[n] else { return nil }
            if n == log.tail.number { info.length = log.tailOffset }
            segments.append(
                CheckpointFile.Segment(
                    number: n, length: info.length, rawBytes: info.rawBytes, refs: info.refs, pendingBytes: info.pendingBytes,
                    deadBytes: info.deadKnown ? info.deadBytes : nil))
        }
        guard segments.last?.number == log.tail.number else { return nil }
        return segments
    }
}

extension LogEngine {
    /// Writes a checkpoint now (see ``Checkpointer/write(_:closing:)``).
    func writeCheckpoint() throws { try checkpointer.write(self) }

    /// Writes a checkpoint on the background queue (``LogEngineOptions/checkpointInterval``).
    func scheduleCheckpoint() {
        guard options.recovery == .strict, background.claim(.checkpoint) else { return }
        background.queue.async { [weak self] in
            guard let self else { return }
            self.background.unclaim(.checkpoint)
            guard self.background.begin() else { return }
            defer { self.background.end() }
            do { try self.writeCheckpoint() } catch {
                self.logger?.warning("background checkpoint failed", metadata: ["store": "\(self.directory)", "error": "\(error)"])
            }
        }
    }
}
