import Foundation
import Logging

/// Writes checkpoints (Docs/FileFormat.md, "Checkpoint"): a snapshot of the index and of the log
/// position it covers, so the next open replays only the log after it.
///
/// Owned by one ``LogEngine``; one checkpoint is written at a time (`lock`). Runs on the caller's
/// thread: the background queue (``LogEngineOptions/checkpointInterval``), the end of a
/// compaction, or `close()`.
final class Checkpointer: Sendable {
    /// Serializes checkpoint writes.
    private let lock = NSLock()

    /// Writes a checkpoint of `engine`'s current head state, unless the newest checkpoint already
    /// covers it. Makes the tail durable first (a checkpoint must never cover bytes a power loss
    /// could take; a failure poisons the store), then replaces `CHECKPOINT` atomically
    /// (``AtomicFileReplace``). Takes the engine's state lock only to capture the state.
    func write(_ engine: LogEngine) throws {
        guard engine.options.recovery == .strict else { return }
        lock.lock()
        defer { lock.unlock() }
        struct Capture {
            var index: IndexState
            var segments: [UInt32: SegmentFile]
            var log: LogState
        }
        let capture = engine.state.withLock { s -> Capture? in
            if s.poisoned != nil { return nil }
            if let last = s.lastCheckpoint, last.generation == s.log.manifest.generation,
                last.sequence == s.views.head.index.sequence, last.segments == s.log.manifest.segments
            {
                return nil
            }
            s.log.bytesSinceCheckpoint = 0
            return Capture(index: s.views.head.index, segments: s.views.head.segments, log: s.log)
        }
        // A writable store runs on a version 2 manifest (recovery upgrades older ones).
        guard let capture, let storeId = capture.log.manifest.storeId, let segments = Self.segments(of: capture.log) else { return }
        let tail = capture.log.tail
        do {
            try tail.file.sync()
        } catch {
            // Linux reports a failed fsync once: later syncs could "succeed" over lost data.
            throw engine.poison(
                LogStoreError(
                    .storePoisoned, "fdatasync of the tail failed while writing a checkpoint; reopen the store.", path: tail.path,
                    underlying: error))
        }
        let created = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        // The index keeps no frame lengths; the checkpoint format does: read them from the frame
        // headers (in place in mapped segments).
        let bytes = try CheckpointFile.encode(
            generation: capture.log.manifest.generation, createdAtMillis: created, segments: segments, index: capture.index,
            storeId: storeId
        ) { loc in
            guard let segment = capture.segments[loc.segment] else {
                throw LogStoreError(.corruption, "Index points at segment \(loc.segment), which is not part of the store.")
            }
            return try segment.storedFrameLength(at: loc.offset)
        }
        try AtomicFileReplace.replaceOrThrow(LogStoreFormat.checkpointFileName, in: engine.directory, with: bytes, fs: engine.fileSystem)
        let mark = CheckpointMark(
            generation: capture.log.manifest.generation, sequence: capture.index.sequence, createdAtMillis: created,
            segments: capture.log.manifest.segments, positionOffset: capture.log.tailOffset, fileBytes: UInt64(bytes.count))
        engine.state.withLock { $0.lastCheckpoint = mark }
        engine.logger?.debug(
            "checkpoint written", metadata: ["store": "\(engine.directory)", "sequence": "\(mark.sequence)", "bytes": "\(bytes.count)"])
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
                    number: n, length: info.length, rawBytes: info.rawBytes, refs: info.refs, pendingBytes: info.pendingBytes))
        }
        guard segments.last?.number == log.tail.number else { return nil }
        return segments
    }
}

extension LogEngine {
    /// Writes a checkpoint now (see ``Checkpointer/write(_:)``).
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
