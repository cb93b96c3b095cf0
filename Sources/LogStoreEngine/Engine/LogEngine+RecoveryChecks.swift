import Logging

// Recovery's phases between the manifest choice and replay: where replay starts, and the checks
// that MANIFEST and the files still agree, run before anything is cut or removed. Then the
// strays are removed. LogEngine+Recovery.swift runs them in order.

extension Recovery {
    /// Phase 3, the checkpoint. Reads CHECKPOINT, if present, through
    /// ``LogEngine/loadCheckpoint(directory:fs:manifest:options:cipher:)`` (with the store's
    /// ``cipher``), and decides where replay
    /// starts. Adopted: its index, its covered segments (opened) and their lengths, replay from
    /// its last covered segment at the recorded length. Rejected (damaged, another store's, or
    /// older than a compaction): replay the whole log, keeping the sequence it proves committed
    /// as the witness ``checkWitness()`` holds the log to. Contradicted (a covered segment is
    /// missing or shorter, or MANIFEST is older than the checkpoint): committed, synced data is
    /// gone; strict throws `.corruption` here, before anything is cut or recreated, salvage
    /// reports it and replays. Changes nothing on disk.
    mutating func startFromCheckpoint() throws {
        guard found.hasCheckpoint else { return }
        var load = LogEngine.loadCheckpoint(directory: found.path, fs: fs, manifest: manifest, options: options, cipher: cipher)
        if let reason = runsRejected, case .adopted(let cp, _) = load, cp.runReferences != nil {
            load = .rejected(reason, witness: cp.sequence)
        }
        switch load {
        case .adopted(let cp, let opened):
            index = cp.index
            checkpointIndex = cp.index
            segments = opened
            for c in cp.segments {
                info[c.number] = SegmentInfo(
                    length: c.length, rawBytes: c.rawBytes, refs: c.refs, pendingBytes: c.pendingBytes, deadBytes: c.deadBytes ?? 0,
                    deadKnown: c.deadBytes != nil)
            }
            first = cp.segments.count - 1
            resumeAt = cp.segments[first].length
            checkpoint = cp.mark(fileBytes: 0)
            checkpointRuns = cp.runs
            nextRun = max(nextRun, cp.runReferences?.nextRun ?? 1)
            report.checkpointUsed = true
            report.checkpointSequence = cp.sequence
            // The checkpoint's secondary indexes are right for its records: note what replay
            // changes of indexed types, to bring them up to date once it ends.
            if index.hasSecondaryIndexes { index.replayTouches = SecondaryReplayTouches() }
        case .rejected(let reason, let w):
            witness = w
            report.checkpointRejectedReason = reason
            // Salvage replays the whole log, but starts from the checkpoint's defines: a record
            // whose define the damage took keeps its type's name.
            if options.recovery == .salvage,
                let meta = LogEngine.checkpointMeta(directory: found.path, fs: fs, storeId: manifest.storeId, cipher: cipher)
            {
                index.meta = meta
            }
            options.logger?.warning(
                "checkpoint not used; replaying the whole log", metadata: ["store": "\(found.path)", "reason": "\(reason)"])
        case .contradicted(let reason, let path, let w):
            let message = "The checkpoint proves transactions up to \(w) were committed and synced; \(reason)."
            guard options.recovery == .salvage else {
                throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: path)
            }
            witness = w
            report.checkpointRejectedReason = reason
            report.dropped.append(.init(path: path, offset: 0, bytes: 0, reason: message))
            if let meta = LogEngine.checkpointMeta(directory: found.path, fs: fs, storeId: manifest.storeId, cipher: cipher) {
                index.meta = meta
            }
        }
    }

    /// Phase 4, the sealed sizes. Reads the size of every listed segment MANIFEST recorded as
    /// sealed (format v2). A sealed segment never changes, so any other size is damage to durable
    /// data, including in segments a checkpoint lets replay skip: strict throws `.corruption`
    /// naming the segment and where it differs; salvage reports it in `report.dropped`. A missing
    /// file is left to ``replay()``. Changes nothing on disk.
    mutating func checkSealedSizes() throws {
        for number in manifest.segments {
            let path = _joinPath(found.path, LogStoreFormat.segmentFileName(number))
            guard let sealed = manifest.sealed[number], fs.itemKind(atPath: path) == .file else { continue }
            let size = try LogEngine.fileSize(fs, path)
            guard size != sealed.length else { continue }
            let what =
                size < sealed.length
                ? "it is \(sealed.length - size) bytes shorter than the \(sealed.length) MANIFEST recorded when it was sealed: committed transactions up to \(sealed.lastSequence) are cut"
                : "it is \(size - sealed.length) bytes longer than the \(sealed.length) MANIFEST recorded when it was sealed"
            let message = "Sealed segment \(number) changed after it was sealed: \(what)."
            guard options.recovery == .salvage else {
                throw LogStoreError(
                    .corruption, message + " " + LogStoreError.corruptionNextStep, path: path, offset: min(size, sealed.length))
            }
            report.dropped.append(
                .init(
                    path: path, offset: min(size, sealed.length), bytes: size > sealed.length ? size - sealed.length : sealed.length - size,
                    reason: message))
        }
    }

    /// Phase 5, MANIFEST is current. Reads the unlisted segment files numbered from MANIFEST's
    /// next number on, and compares the store ids in MANIFEST and the segment headers. Such a
    /// segment holding more than its header (and the zeros of a preallocated spare) was not left
    /// by an interrupted roll-over (which never appends before its manifest is in place) nor by a
    /// compaction (whose output is flagged compacted): MANIFEST is an older copy, or another
    /// store's, and that segment holds committed data. Likewise a format v2 MANIFEST that none of
    /// the version 2 segments here belongs to. Strict throws `.corruption` for either, before
    /// ``removeStrays()`` could remove the newest data as strays; salvage appends such segments
    /// to the replay order and reports them. Changes nothing on disk.
    mutating func checkManifestIsCurrent() throws {
        let segmentHeaders = found.segmentHeaders
        let orphans = found.onDisk.filter { n in
            // (A file whose header names another number is a copy, not a segment written under
            // this name: a stray like any other.)
            guard !manifest.segments.contains(n), n >= manifest.nextSegment, segmentHeaders[n]?.isCompacted != true,
                segmentHeaders[n].map({ $0.segment == n }) ?? true
            else { return false }
            return LogEngine.holdsData(
                fs, _joinPath(found.path, LogStoreFormat.segmentFileName(n)), after: segmentHeaders[n]?.size ?? SegmentHeader.maxSize)
        }
        if let id = manifest.storeId {
            let ids = Set(segmentHeaders.values.compactMap(\.storeId))
            if !ids.isEmpty && !ids.contains(id) && options.recovery == .strict {
                throw LogStoreError(
                    .corruption,
                    "MANIFEST belongs to store \(id), but the segment files here belong to \(ids.map(\.description).sorted().joined(separator: ", ")): MANIFEST was replaced by another store's. \(LogStoreError.corruptionNextStep)",
                    path: found.manifestPath)
            }
        }
        if let orphan = orphans.first {
            let path = _joinPath(found.path, LogStoreFormat.segmentFileName(orphan))
            let message =
                "Segment \(orphan) holds transactions but MANIFEST (generation \(manifest.generation), next segment \(manifest.nextSegment)) does not list it: MANIFEST is an older copy or another store's, and the newest data is in unlisted segments \(orphans)."
            guard options.recovery == .salvage else {
                throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: path)
            }
            manifest.segments += orphans.filter { segmentHeaders[$0] != nil }
            manifest.nextSegment = max(manifest.nextSegment, (orphans.last ?? 0) &+ 1)
            report.dropped.append(
                .init(path: path, offset: 0, bytes: 0, reason: message + " Salvage replays them after the listed segments."))
        }
    }

    /// Phase 6, the strays (strict mode only: salvage only reads). Removes what interrupted
    /// operations left behind: segment files MANIFEST does not list (a compaction's replaced
    /// inputs or unfinished output, a roll-over's segment created before its manifest) and
    /// `.tmp` files, listing each in `report.removedFiles`. It runs only after the checkpoint and
    /// ``checkManifestIsCurrent()`` have vouched that MANIFEST is not an older copy, whose
    /// unlisted segments would be the newest data rather than strays. Syncs the directory before
    /// removing (the MANIFEST that makes them strays may be only in the OS cache, after a kill
    /// between its rename and the directory's fsync; a power loss could otherwise bring back the
    /// older MANIFEST that still lists them) and after. Throws I/O errors.
    mutating func removeStrays() throws {
        // Run numbers stay above every run file there is, removed or not.
        for name in found.names { if let n = RunFile.number(fromFileName: name), n < UInt32.max { nextRun = max(nextRun, n + 1) } }
        guard options.recovery == .strict else { return }
        let listed = Set(manifest.segments)
        let strays = found.names.filter { name in
            if let n = LogStoreFormat.segmentNumber(fromFileName: name) { return !listed.contains(n) }
            // Run files the adopted checkpoint does not name: a checkpoint written after them
            // replaced it, or one was being written when the process stopped.
            if let n = RunFile.number(fromFileName: name) { return checkpointRuns[n] == nil }
            return name.hasSuffix(".tmp")
        }
        if !strays.isEmpty { try fs.syncDirectory(atPath: found.path) }
        for name in strays {
            try fs.removeFile(atPath: _joinPath(found.path, name))
            report.removedFiles.append(name)
        }
        if !report.removedFiles.isEmpty { try fs.syncDirectory(atPath: found.path) }
    }
}
