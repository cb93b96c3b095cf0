import Foundation

/// Online backup (Docs/Backup.md): a consistent snapshot of a live store copied into a
/// directory that is itself a store (restore = open it), while readers and writers go on.
///
/// The snapshot is the head state taken under the state lock together with the log position it
/// ends at (the manifest, the tail and its append offset), then made durable; commits after it
/// are not in the backup. Sealed segments never change and are copied whole (through the open
/// files the snapshot holds, so a compaction that deletes them meanwhile does not matter); the
/// tail is copied up to the snapshot's offset. The backup gets the store's manifest and a
/// checkpoint of the snapshot's index (a base run file of each index, and a CHECKPOINT 4 naming
/// them), so it opens without replaying.
///
/// Crash safety in the destination (a `kill -9` or a power loss during a backup never leaves a
/// half backup that opens as if complete, and never touches the store):
/// 1. A marker file `backup-in-progress.tmp` exists from the first write to the last: a
///    directory holding it and no MANIFEST is refused as "not a store" or as damaged (segments
///    without MANIFEST), never opened as a new, empty store.
/// 2. Segment files are written as `NNNNNN.log.backup.tmp`, synced, and only then renamed into place, so
///    a file named like a segment is always whole (a lone, short `000001.log` would read as an
///    interrupted store creation).
/// 3. MANIFEST is written last of the store files (atomically): it is what makes the directory a
///    store. The checkpoint follows it (a checkpoint newer than the manifest is refused); the run
///    files it names are written and synced before it, and a failure before it removes them.
/// 4. An incremental backup (into a backup of the same store) keeps the destination openable as
///    the previous backup until its new MANIFEST is in place: it reuses the sealed segments it
///    already holds, appends to its old tail in place (whole transactions, or a torn one that
///    recovery cuts), deletes its old checkpoint first (the old backup then opens by replaying),
///    and writes a MANIFEST whose next segment number leaves a gap of ``segmentNumberGap``, so
///    that new segment files renamed in before the MANIFEST are below it: unlisted garbage to the
///    old backup (deleted if it is opened), not evidence of a lost MANIFEST.
extension LogEngine {
    /// The name of the marker file of a backup in progress.
    public static let backupMarkerFileName = "backup-in-progress.tmp"
    /// How far above the store's next segment number a backup's MANIFEST puts its own.
    static let segmentNumberGap: UInt32 = 1 << 20

    /// Copies a consistent snapshot of the store into `destination` (on `fileSystem`) and verifies
    /// it: the committed state as of the call, whatever is written meanwhile. Readers and writers
    /// are not blocked (the snapshot waits for the `fdatasync` of commits already appended, as a
    /// `flush()` does). Restore by opening the destination as a store.
    ///
    /// `destination` must be missing, an empty directory, or a backup of this store made earlier
    /// (then only what it lacks is copied: an incremental backup). It must not be the store's
    /// directory or inside it. It is locked (its `LOCK`) while the backup writes it.
    ///
    /// Runs on the calling thread and blocks until the backup is written, synced and verified;
    /// `progress` is called on that thread. Throws `.invalidArgument` for a destination that is
    /// not empty and not a backup of this store, or that lies in the store; `.locked` when the
    /// destination is open; `.notOpen`, `.storePoisoned`; I/O errors and `.diskFull` of either
    /// side (the store is untouched; the destination is left without a MANIFEST, refusing to
    /// open, or, for an incremental backup, as the previous backup); `.corruption` when the copy
    /// does not verify (the destination's MANIFEST is removed).
    @discardableResult
    public func backup(
        to destination: String, fileSystem: any FileSystem, verification: BackupVerification = .readBack,
        progress: ((BackupProgress) -> Void)? = nil
    ) throws -> BackupReport {
        let started = ContinuousClock.now
        let dest = Self.normalized(destination)
        let source = Self.normalized(directory)
        if dest == source || dest.hasPrefix(source + "/") || source.hasPrefix(dest + "/") {
            throw LogStoreError(
                .invalidArgument, "The backup directory \(dest) must be outside the store \(source), and the store outside it.", path: dest)
        }
        // The snapshot: the head and the log position it ends at, taken together.
        struct Capture {
            var view: ViewState
            var log: LogState
        }
        let capture = try state.withLock { s -> Capture in
            try Self.checkWritable(s)
            return Capture(view: s.views.head, log: s.log)
        }
        // Commits appended but not yet durable become durable (and published) first: the backup
        // never holds a commit the store could still lose.
        try syncThrough(capture.view.index.sequence)
        guard let storeId = capture.log.manifest.storeId, let segmentList = Checkpointer.segments(of: capture.log) else {
            throw LogStoreError(
                .invalidArgument,
                "The store runs on a version 1 MANIFEST; reopen it writable once (which upgrades it) and back it up then.", path: directory)
        }

        let writer = BackupWriter(directory: dest, fs: fileSystem)
        try writer.prepare(storeId: storeId)
        let lock = try writer.lock()
        var unlocked = false
        defer { if !unlocked { lock.unlock() } }

        // What to copy: per segment, the bytes the snapshot covers.
        var plan: [BackupWriter.SegmentPlan] = []
        for s in segmentList {
            guard let file = capture.view.segments[s.number] else {
                throw LogStoreError(.corruption, "Segment \(s.number) is listed but not open in the snapshot.", path: directory)
            }
            plan.append(writer.plan(segment: s.number, file: file.file, length: s.length, sealed: s.number != capture.log.tail.number))
        }
        // The backup's MANIFEST: the store's, with a generation above the destination's and a
        // next segment number past the gap (see rule 4).
        var manifest = capture.log.manifest
        let previous = writer.previousManifest
        manifest.generation = max(manifest.generation, (previous?.generation ?? 0) + 1)
        let gapped = manifest.nextSegment.addingReportingOverflow(Self.segmentNumberGap)
        manifest.nextSegment = max(gapped.overflow ? manifest.nextSegment : gapped.partialValue, previous?.nextSegment ?? 0)
        // Its checkpoint (unless the replay writes one): base runs of every index of the snapshot,
        // written into the destination on another thread while the segments are copied (both take
        // about as long at a million records), then a CHECKPOINT 4 naming them.
        let fs = fileSystem
        var checkpoint: BackgroundValue<Result<BackupCheckpoint, any Error>>? = nil
        var checkpointInstalled = false
        let total = plan.reduce(UInt64(0)) { $0 + $1.bytesToCopy }
        var done: UInt64 = 0
        progress?(BackupProgress(phase: .copying, bytesDone: 0, bytesTotal: total, segmentsDone: 0, segmentsTotal: plan.count))
        do {
            // (An earlier backup's CHECKPOINT goes first: the runs written next may reuse its
            // runs' numbers.)
            try writer.removeCheckpoint()
            if verification != .replay {
                checkpoint = BackgroundValue { [generation = manifest.generation, index = capture.view.index, cipher = storeCipher] in
                    Result { () throws(any Error) -> BackupCheckpoint in
                        try BackupCheckpoint.write(
                            index, fs: fs, directory: dest, generation: generation, storeId: storeId, cipher: cipher,
                            segments: segmentList)
                    }
                }
            }
            for (i, p) in plan.enumerated() {
                try writer.copy(p) { n in
                    done += n
                    progress?(
                        BackupProgress(phase: .copying, bytesDone: done, bytesTotal: total, segmentsDone: i, segmentsTotal: plan.count))
                }
            }
            try writer.installCopies(plan)
            progress?(BackupProgress(phase: .verifying, bytesDone: 0, bytesTotal: total, segmentsDone: 0, segmentsTotal: plan.count))
            try writer.verifyCopies(plan)

            try writer.installManifest(manifest)
            try writer.removeUnlisted(keeping: Set(manifest.segments))
            if let checkpoint {
                try writer.installCheckpoint(checkpoint.wait().get().bytes)
                checkpointInstalled = true
            }
            lock.unlock()
            unlocked = true
            if verification != .readBack {
                try writer.verifyByOpening(expected: capture.view.index, replay: verification == .replay, cipher: storeCipher)
            }
            try writer.finish()
        } catch {
            // Run files no CHECKPOINT names (best effort, like the rest of what abandon removes).
            if !checkpointInstalled, case .success(let written)? = checkpoint?.wait() {
                for path in written.runPaths { try? fs.removeFile(atPath: path) }
            }
            writer.abandon()
            throw error
        }
        let bytes = plan.reduce(UInt64(0)) { $0 + $1.length }
        progress?(BackupProgress(phase: .done, bytesDone: total, bytesTotal: total, segmentsDone: plan.count, segmentsTotal: plan.count))
        logger?.notice(
            "backup written",
            metadata: ["store": "\(directory)", "backup": "\(dest)", "sequence": "\(capture.view.index.sequence)", "bytes": "\(done)"])
        return BackupReport(
            directory: dest, sequence: capture.view.index.sequence, records: capture.view.index.totalCount, segments: plan.count,
            segmentsCopied: plan.filter(\.writesBytes).count, segmentsReused: plan.filter { !$0.writesBytes }.count,
            bytesCopied: done, bytes: bytes, verification: verification, duration: ContinuousClock.now - started)
    }

    static func normalized(_ path: String) -> String {
        var p = path
        while p.count > 1, p.hasSuffix("/") { p.removeLast() }
        return p
    }
}

/// A backup's checkpoint: the CHECKPOINT 4 bytes and the run files they name, already written
/// and synced in the backup's directory.
struct BackupCheckpoint: Sendable {
    var bytes: [UInt8]
    var runPaths: [String]

    /// Writes a base run of every index of `index` into `directory` (numbered from 1), syncs them
    /// and the directory, and encodes the CHECKPOINT that names them, runs and CHECKPOINT sealed
    /// with `cipher` (the store's; nil: clear). Reads every entry of the index (runs included:
    /// `.corruption` for a damaged page); throws I/O and cipher errors, after removing the runs it
    /// wrote.
    static func write(
        _ index: IndexState, fs: any FileSystem, directory: String, generation: UInt64, storeId: StoreID, cipher: (any StoreCipher)?,
        segments: [CheckpointFile.Segment]
    ) throws -> BackupCheckpoint {
        var runs = RunSetWriter(
            fs: fs, directory: directory, storeId: storeId, cipher: cipher, sequence: index.sequence, next: 1, fresh: true)
        do {
            let (_, references) = try runs.write(index)
            if !runs.written.isEmpty { try fs.syncDirectory(atPath: directory) }
            let bytes = try CheckpointFileV4(
                generation: generation, sequence: index.sequence, createdAtMillis: UInt64(max(0, Date().timeIntervalSince1970 * 1000)),
                storeId: storeId, segments: segments, indexes: references, nextRun: runs.next, meta: index.meta
            ).encode(sealedWith: cipher)
            return BackupCheckpoint(bytes: bytes, runPaths: runs.written.map(\.path))
        } catch {
            for run in runs.written { try? fs.removeFile(atPath: run.path) }
            throw error
        }
    }
}
