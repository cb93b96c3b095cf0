import Foundation
import Logging

/// What recovery made of the CHECKPOINT file.
enum CheckpointLoad {
    /// Usable: its index, and the covered segments before the resume position, already opened.
    case adopted(CheckpointFile, opened: [UInt32: SegmentFile])
    /// Not usable; the whole log is replayed. `witness`: the last sequence the checkpoint says was
    /// committed and synced, when it decoded (a checkpoint is written only after the log it covers
    /// is durable, so the log must reach that sequence).
    case rejected(String, witness: UInt64?)
    /// Proof of lost data: a segment the checkpoint covers is missing or shorter than the length
    /// the checkpoint recorded, so committed, synced transactions (up to `witness`) are gone.
    case contradicted(String, path: String, witness: UInt64)
}

extension LogEngine {
    // MARK: Writing

    /// Writes a checkpoint of the current head state, unless the newest checkpoint already covers
    /// it. Makes the tail durable first (the checkpoint must never cover bytes a power loss could
    /// take), then writes `CHECKPOINT.tmp`, fsyncs it, renames it over `CHECKPOINT` and fsyncs the
    /// directory. Runs on the caller's thread; takes the state lock only to capture the state.
    func writeCheckpoint() throws {
        guard options.recovery == .strict else { return }
        checkpointLock.lock()
        defer { checkpointLock.unlock() }
        struct Capture {
            var index: IndexState
            var manifest: ManifestFile
            var info: [UInt32: SegmentInfo]
            var tail: SegmentFile
            var tailOffset: UInt64
        }
        let capture = state.withLock { s -> Capture? in
            if s.poisoned != nil { return nil }
            if let last = s.lastCheckpoint, last.generation == s.manifest.generation,
                last.sequence == s.head.index.sequence, last.segments == s.manifest.segments
            {
                return nil
            }
            s.bytesSinceCheckpoint = 0
            return Capture(index: s.head.index, manifest: s.manifest, info: s.segmentInfo, tail: s.tail, tailOffset: s.tailOffset)
        }
        guard let capture else { return }
        var segments: [CheckpointFile.Segment] = []
        for n in capture.manifest.segments {
            guard var info = capture.info[n] else { return }
            if n == capture.tail.number { info.length = capture.tailOffset }
            segments.append(CheckpointFile.Segment(number: n, length: info.length, rawBytes: info.rawBytes))
        }
        guard segments.last?.number == capture.tail.number else { return }
        do {
            try capture.tail.file.sync()
        } catch {
            // Linux reports a failed fsync once: later syncs could "succeed" over lost data.
            let p = LogStoreError(
                .storePoisoned, "fdatasync of the tail failed while writing a checkpoint; reopen the store.", path: capture.tail.path,
                underlying: error)
            state.withLock { if $0.poisoned == nil { $0.poisoned = p } }
            group.fail(p)
            throw p
        }
        let created = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        let bytes = CheckpointFile.encode(
            generation: capture.manifest.generation, createdAtMillis: created, segments: segments, index: capture.index)
        let tmp = _joinPath(directory, LogStoreFormat.checkpointFileName + ".tmp")
        let f = try fileSystem.open(tmp, mode: .createOrTruncate)
        do {
            try f.write(bytes, at: 0)
            try f.sync()
            try f.close()
        } catch {
            try? f.close()
            try? fileSystem.removeFile(atPath: tmp)
            throw error
        }
        try fileSystem.rename(from: tmp, to: _joinPath(directory, LogStoreFormat.checkpointFileName))
        try fileSystem.syncDirectory(atPath: directory)
        let mark = CheckpointMark(
            generation: capture.manifest.generation, sequence: capture.index.sequence, createdAtMillis: created,
            segments: capture.manifest.segments, positionOffset: capture.tailOffset, fileBytes: UInt64(bytes.count))
        state.withLock { $0.lastCheckpoint = mark }
        logger?.debug("checkpoint written", metadata: ["store": "\(directory)", "sequence": "\(mark.sequence)", "bytes": "\(bytes.count)"])
    }

    /// Writes a checkpoint on the background queue (``LogStoreOptions/checkpointInterval``).
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

    // MARK: Loading

    /// Reads, decodes and checks `CHECKPOINT` against `manifest` and the segment files.
    /// Never throws: anything wrong makes it `.rejected` with the reason.
    static func loadCheckpoint(directory: String, fs: any FileSystem, manifest: ManifestFile, options: LogStoreOptions) -> CheckpointLoad {
        let path = _joinPath(directory, LogStoreFormat.checkpointFileName)
        let bytes: [UInt8]
        do {
            let f = try fs.open(path, mode: .readOnly)
            defer { try? f.close() }
            let size = try f.size()
            guard size <= UInt64(Int.max) else { return .rejected("checkpoint file is implausibly large", witness: nil) }
            bytes = try f.read(at: 0, count: Int(size))
        } catch {
            return .rejected("checkpoint unreadable: \(error)", witness: nil)
        }
        let decoded: Result<CheckpointFile, _DecodeError> = bytes.withUnsafeBytes { buf in
            do throws(_DecodeError) { return .success(try CheckpointFile.decode(buf)) } catch { return .failure(error) }
        }
        let cp: CheckpointFile
        switch decoded {
        case .success(let c): cp = c
        case .failure(let e): return .rejected("checkpoint damaged at offset \(e.offset): \(e.reason)", witness: nil)
        }
        let witness = cp.sequence
        guard cp.generation <= manifest.generation else {
            // Manifests are installed before anything is written under them, so a checkpoint of a
            // newer generation proves MANIFEST was replaced by an older copy: the segments it does
            // not list hold the newest data and must not be taken for strays.
            return .contradicted(
                "MANIFEST is generation \(manifest.generation), older than the checkpoint's \(cp.generation), which was written after it: MANIFEST was replaced by an older copy, and segments it does not list may hold committed data",
                path: _joinPath(directory, LogStoreFormat.manifestFileName), witness: witness)
        }
        let covered = cp.segments.map(\.number)
        guard covered.count <= manifest.segments.count, Array(manifest.segments.prefix(covered.count)) == covered else {
            return .rejected(
                "checkpoint covers segments \(covered) but the manifest lists \(manifest.segments) (generation \(cp.generation) vs \(manifest.generation)): the log was compacted after it was written",
                witness: witness)
        }
        var opened: [UInt32: SegmentFile] = [:]
        for (i, s) in cp.segments.enumerated() {
            let isPosition = i == cp.segments.count - 1
            let segPath = _joinPath(directory, LogStoreFormat.segmentFileName(s.number))
            do {
                guard fs.itemKind(atPath: segPath) == .file else {
                    return .contradicted(
                        "segment \(s.number) is listed in MANIFEST and the checkpoint recorded \(s.length) bytes of it, but its file is missing",
                        path: segPath, witness: witness)
                }
                let f = try fs.open(segPath, mode: .readOnly)
                let size = try f.size()
                guard size >= s.length else {
                    try? f.close()
                    return .contradicted(
                        "segment \(s.number) holds \(size) bytes, but the checkpoint recorded \(s.length) committed, synced bytes of it: it was truncated",
                        path: segPath, witness: witness)
                }
                let header = try f.read(at: 0, count: SegmentHeader.size)
                guard case .ok(let h) = header.withUnsafeBytes({ SegmentHeader.decode($0) }), h.segment == s.number else {
                    try? f.close()
                    return .rejected("segment \(s.number) has a bad header", witness: witness)
                }
                if isPosition || options.recovery != .strict {
                    try f.close()
                } else {
                    opened[s.number] = SegmentFile(number: s.number, file: f, baseSequence: h.baseSequence, compacted: h.isCompacted)
                }
            } catch {
                return .rejected("segment \(s.number) unreadable: \(error)", witness: witness)
            }
        }
        // Salvage replays every segment on its own terms; it only uses the checkpoint as a witness.
        guard options.recovery == .strict else { return .rejected("salvage mode replays the whole log", witness: witness) }
        return .adopted(cp, opened: opened)
    }
}
