import Foundation
import Logging

extension LogEngine {
    /// Compacts the store: rewrites the live records of the sealed segments into new compacted
    /// segments and switches to them atomically (Docs/Compaction.md).
    ///
    /// With `includingTail` (the default, what offline `logstore-compact compact` wants) the tail
    /// segment is sealed first when it holds anything, so every record is rewritten; without it
    /// only segments already sealed are (what background compaction does).
    ///
    /// Runs on the calling thread and may take a while (it reads every live record of the
    /// compacted segments). Readers and writers keep going meanwhile; writers are blocked only
    /// for the switch (a manifest write and re-pointing the index). Snapshots taken before keep
    /// reading the old segments, whose files are deleted when the last such snapshot is released.
    /// A crash at any point leaves the old or the new generation, never a mix. Waits for a
    /// background compaction in progress. Afterwards a checkpoint is written.
    ///
    /// Throws `.reentrantWrite` inside a write block, `.notOpen` after (or during) ``close()``,
    /// `.invalidArgument` in salvage mode, `.storePoisoned` if the store refuses writes, `.corruption`
    /// if a live record cannot be read, and I/O errors (in which case the old generation stays).
    @discardableResult
    public func compact(includingTail: Bool = true) throws -> CompactionReport {
        if writer.heldByCurrentThread {
            throw LogStoreError(.reentrantWrite, "compact() was called from inside a write block of the same store.")
        }
        return try compactor.run(self, includingTail: includingTail)
    }

    /// Queues a background check (after `delay`) of ``recompressionDue()`` and
    /// ``compactionDue()``, and the recompression pass or the compaction they call for. When
    /// recompression waits only for the store to be quiet, the check is queued again after
    /// ``LogEngineOptions/recompressionIdleDelay``.
    func scheduleCompactionCheck(after delay: Duration = .zero) {
        guard options.autoCompaction || options.autoRecompression, options.recovery == .strict,
            compactor.backoff.withLock({ $0.allows(ContinuousClock.now) }), background.claim(.compaction)
        else { return }
        let nanos = max(0, delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
        background.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanos))) { [weak self] in
            guard let self else { return }
            self.background.unclaim(.compaction)
            guard self.background.begin() else { return }
            defer { self.background.end() }
            guard !self.isClosed else { return }
            let recompression = self.recompressionDue()
            let recompress = recompression == .due
            guard recompress || (self.options.autoCompaction && self.compactionDue()) else {
                if recompression == .waitingForQuiet { self.scheduleCompactionCheck(after: self.options.recompressionIdleDelay) }
                return
            }
            do {
                let r = try self.compactor.run(self, includingTail: false, recompressing: recompress)
                self.compactor.backoff.withLock { $0.succeeded() }
                if r.performed {
                    self.logger?.info(
                        recompress ? "background recompression" : "background compaction",
                        metadata: [
                            "store": "\(self.directory)", "replaced": "\(r.replacedSegments)", "new": "\(r.newSegments)",
                            "bytesBefore": "\(r.bytesBefore)", "bytesAfter": "\(r.bytesAfter)",
                        ])
                }
            } catch let e as LogStoreError where e.code == .diskFull {
                let wait = self.compactor.backoff.withLock { $0.failed(at: ContinuousClock.now) }
                self.logger?.warning(
                    "background compaction needs free space; the store is unchanged, next try after a roll-over at least \(wait) from now",
                    metadata: ["store": "\(self.directory)", "error": "\(e)"])
            } catch {
                self.logger?.warning(
                    "background compaction failed; the store is unchanged", metadata: ["store": "\(self.directory)", "error": "\(error)"])
            }
        }
    }

    /// What ``recompressionDue()`` says.
    enum RecompressionDue {
        case notDue
        /// Enough to recompress, once the store has been quiet long enough.
        case waitingForQuiet
        case due
    }

    /// Whether background recompression should run: ``LogEngineOptions/autoRecompression`` and
    /// compression on, sealed segments holding at least ``LogEngineOptions/compactionMinimumDeadBytes``
    /// (and more than nothing) of records the pass has not tried, and no commit for
    /// ``LogEngineOptions/recompressionIdleDelay``. Only a quiet store: the pass spends spare CPU
    /// (training, LZ4HC), never the writers'.
    func recompressionDue() -> RecompressionDue {
        guard options.autoRecompression, options.compression else { return .notDue }
        let (info, segments, lastCommit) = state.withLock { ($0.log.segmentInfo, $0.log.manifest.segments, $0.lastCommit) }
        let pending = segments.dropLast().reduce(UInt64(0)) { $0 + (info[$1]?.pendingBytes ?? 0) }
        guard pending > 0, pending >= UInt64(options.compactionMinimumDeadBytes) else { return .notDue }
        if ContinuousClock.now - lastCommit >= options.recompressionIdleDelay { return .due }
        return .waitingForQuiet
    }
}

extension LogEngine {
    /// Runs the recompression pass (Docs/Compaction.md, "Recompression"): a compaction of the
    /// sealed segments whose copy compresses the records that compress better than they are
    /// stored, each alone with its item type's dictionary (LZ4HC at
    /// ``LogEngineOptions/recompressionLevel``), training a dictionary for each type that has
    /// enough live values and none yet (or a 5 % better one). Records already compressed with
    /// their type's current dictionary, and those that do not shrink, are copied as they are: a
    /// second pass costs only a copy. With ``LogEngineOptions/compression`` off it compacts.
    ///
    /// `includingTail` as ``compact(includingTail:)``. Runs on the calling thread; readers and
    /// writers keep going, as during a compaction. Throws what ``compact(includingTail:)`` throws.
    @discardableResult
    public func recompress(includingTail: Bool = true) throws -> CompactionReport {
        if writer.heldByCurrentThread {
            throw LogStoreError(.reentrantWrite, "recompress() was called from inside a write block of the same store.")
        }
        return try compactor.run(self, includingTail: includingTail, recompressing: true)
    }
}
