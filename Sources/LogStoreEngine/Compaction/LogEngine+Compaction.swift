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

    /// Queues a background check of ``compactionDue()`` and a compaction if it says so.
    func scheduleCompactionCheck() {
        guard options.autoCompaction, options.recovery == .strict,
            compactor.backoff.withLock({ $0.allows(ContinuousClock.now) }), background.claim(.compaction)
        else { return }
        background.queue.async { [weak self] in
            guard let self else { return }
            self.background.unclaim(.compaction)
            guard self.background.begin() else { return }
            defer { self.background.end() }
            guard !self.isClosed, self.compactionDue() else { return }
            do {
                let r = try self.compactor.run(self, includingTail: false)
                self.compactor.backoff.withLock { $0.succeeded() }
                if r.performed {
                    self.logger?.info(
                        "background compaction",
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
}
