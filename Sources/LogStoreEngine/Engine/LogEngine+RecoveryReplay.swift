import Logging

// Recovery's last phases: replaying the log from where the checkpoint left it, settling its end
// (secondary indexes, durability, the checkpoint's witness) and upgrading a format v1 store.
// LogEngine+Recovery.swift runs them in order; LogEngine+SegmentReplay.swift replays one segment.

extension Recovery {
    /// Phase 7, the replay. Reads the listed segments from the resume position on, applying
    /// each transaction to `index` (``LogEngine/streamSegment(_:size:from:header:number:path:isLast:storeId:index:info:report:options:)``),
    /// and returns the segment new commits go to. In strict mode it may change the last segment
    /// only: a torn tail is cut and synced, a torn header rewritten, and (format v1) a listed last
    /// segment with no file recreated empty, each reported in `report.truncatedTail`. Throws
    /// `.corruption` for damage elsewhere or a missing segment in strict mode; salvage reports and
    /// skips it, and ends the log at the last segment left when the last one is gone.
    mutating func replay() throws -> SegmentFile {
        for i in first..<manifest.segments.count {
            let number = manifest.segments[i]
            let isLast = i == manifest.segments.count - 1
            let from: UInt64 = i == first ? resumeAt : 0
            let path = _joinPath(found.path, LogStoreFormat.segmentFileName(number))
            if fs.itemKind(atPath: path) == .file {
                try replaySegment(number, path: path, from: from, isLast: isLast)
            } else {
                try handleMissingSegment(number, path: path, isLast: isLast)
            }
        }
        if tail == nil, options.recovery == .salvage,
            let last = manifest.segments.last(where: { segments[$0] != nil }), let seg = segments[last]
        {
            // Salvage only reads: with the last segment gone, the last one left ends the log.
            tail = seg
            tailOffset = info[last]?.length ?? 0
        }
        guard let tail else {
            throw LogStoreError(.corruption, "No usable segment; run `logstore-compact salvage`.", path: found.path)
        }
        return tail
    }

    /// A listed segment whose file is missing. Format v1 only, strict mode, last segment: a
    /// roll-over by an older build that wrote the manifest first, or a lost directory entry; it
    /// is recreated empty and becomes the tail (a v2 roll-over makes the segment durable before
    /// MANIFEST lists it, so there it is lost data). Salvage reports it; strict throws
    /// `.corruption` saying what it held.
    mutating func handleMissingSegment(_ number: UInt32, path: String, isLast: Bool) throws {
        if isLast && options.recovery == .strict && manifest.version < 2 {
            // A version 1 store's segment: the upgrade after replay seals it.
            let seg = try LogWriter(directory: found.path, fileSystem: fs).createSegment(
                number, baseSequence: index.sequence == .max ? .max : index.sequence + 1, storeId: manifest.storeId,
                version: manifest.version)
            segments[number] = seg
            info[number] = SegmentInfo(length: UInt64(seg.headerSize), rawBytes: 0)
            tail = seg
            tailOffset = UInt64(seg.headerSize)
            report.truncatedTail = .init(
                path: path, offset: 0, bytes: 0, reason: "segment listed in MANIFEST was never created; recreated empty")
            return
        }
        if options.recovery == .salvage {
            report.dropped.append(.init(path: path, offset: 0, bytes: 0, reason: "segment file missing"))
            return
        }
        let what = manifest.sealed[number].map { "\($0.length) bytes of transactions up to \($0.lastSequence)" } ?? "its transactions"
        throw LogStoreError(
            .corruption,
            "Segment \(number) is listed in MANIFEST but its file is missing: \(what) are lost. \(LogStoreError.corruptionNextStep)",
            path: path)
    }

    /// Replays segment `number` from offset `from` (0: from its header), opening it for writing
    /// when it is the last one in strict mode. The last segment's end decides the tail: a torn
    /// header is rewritten (nothing after it was committed), bytes after the last transaction
    /// other than preallocated zeros are cut (strict). A sealed segment must end at the sequence
    /// MANIFEST recorded when it was sealed unless its damage was already reported: strict throws
    /// `.corruption`, salvage reports it. Throws `.corruption` for a file of 4 GiB or more (never
    /// a LogStore segment) and for damage replay finds.
    mutating func replaySegment(_ number: UInt32, path: String, from: UInt64, isLast: Bool) throws {
        let file = try fs.open(path, mode: isLast && options.recovery == .strict ? .readWrite : .readOnly)
        let size = try file.size()
        guard size <= UInt64(UInt32.max) else {
            throw LogStoreError(
                .corruption,
                "Segment is \(size) bytes; LogStore never writes segments of 4 GiB or more, so this file is not one of its segments.",
                path: path, offset: UInt64(UInt32.max))
        }
        // Replayed from its start, a segment's define references are all seen; resumed after a
        // checkpoint, they are what the checkpoint recorded (nil: unknown).
        var segInfo = info[number] ?? SegmentInfo(length: 0, rawBytes: 0)
        if from == 0 { segInfo.refs = DefineRefs() }
        let sequenceBefore = index.sequence
        let droppedBefore = report.dropped.count
        var known: SegmentHeader? = nil
        if from > 0 {
            // Resuming after a checkpoint, which checked this header and length.
            let headerBytes = try file.read(at: 0, count: SegmentHeader.maxSize)
            guard case .ok(let header) = headerBytes.withUnsafeBytes({ SegmentHeader.decode($0) }), from <= size else {
                throw LogStoreError(.corruption, "Segment header or length changed while the store was being opened.", path: path)
            }
            known = header
        }
        report.segmentsScanned += 1
        report.bytesReplayed += size - from
        var dead = DeadBytes()
        let result = try LogEngine.streamSegment(
            file, size: size, from: from, header: known, number: number, path: path, isLast: isLast, storeId: manifest.storeId,
            index: &index, info: &segInfo, dead: &dead, report: &report, options: options)
        let seg: SegmentFile
        switch result {
        case .recreateHeader:
            let base = index.sequence == .max ? .max : index.sequence + 1
            // The store's own version: a v1 store's recreated tail keeps a v1 header (no store
            // id), which the upgrade then seals as it seals any v1 segment.
            let header = SegmentHeader(
                version: manifest.version, segment: number, baseSequence: base, storeId: manifest.storeId, cipher: manifest.cipher)
            try file.truncate(to: 0)
            try file.write(header.encoded(), at: 0)
            try file.sync()
            report.truncatedTail = .init(
                path: path, offset: 0, bytes: size, reason: "segment header torn while the segment was being created")
            tailOffset = UInt64(header.size)
            segInfo = SegmentInfo(length: UInt64(header.size), rawBytes: 0, refs: DefineRefs())
            seg = SegmentFile(number: number, file: file, header: header)
        case .end(let validEnd, let header, let zeroTail):
            // Zeros after the last transaction are preallocated space: the next commits
            // overwrite them. Anything else after it is a torn tail, cut off.
            if isLast && validEnd < size && !zeroTail && options.recovery == .strict {
                try file.truncate(to: validEnd)
                try file.sync()
            }
            tailOffset = validEnd
            segInfo.length = validEnd
            // A legacy segment's every record waits to be re-encoded (and compressed).
            if (header?.version ?? 1) < 4 { segInfo.pendingBytes = segInfo.rawBytes }
            seg = SegmentFile(
                number: number, file: file, baseSequence: header?.baseSequence ?? sequenceBefore + 1,
                compacted: header?.isCompacted ?? false, version: header?.version ?? 1)
        }
        if let sealed = manifest.sealed[number], sealed.lastSequence != 0, index.sequence != sealed.lastSequence,
            report.dropped.count == droppedBefore
        {
            let message =
                "Sealed segment \(number) ends at transaction \(index.sequence), but MANIFEST recorded \(sealed.lastSequence) when it was sealed: the segment was replaced or damaged."
            guard options.recovery == .salvage else {
                throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: path)
            }
            report.dropped.append(.init(path: path, offset: 0, bytes: 0, reason: message))
        }
        info[number] = segInfo
        // What the replayed transactions replaced, in this segment and earlier ones.
        dead.fold(into: &info)
        segments[number] = seg
        if isLast { tail = seg }
    }

    /// Phase 8a, the secondary indexes. When a checkpoint with secondary indexes was adopted,
    /// brings them up to date with what replay applied after it, reading the records replay
    /// touched (``LogEngine/catchUpSecondaryIndexes(_:from:segments:options:report:)``; salvage
    /// drops them if a record cannot be read). Changes nothing on disk.
    mutating func catchUpSecondaryIndexes() throws {
        if index.replayTouches != nil, let checkpointIndex {
            try LogEngine.catchUpSecondaryIndexes(&index, from: checkpointIndex, segments: segments, options: options, report: &report)
        }
    }

    /// Phase 8b, durability (strict mode). Syncs the tail and the directory: what recovery found
    /// may still be only in the OS cache (the previous process was killed before its fsyncs), so
    /// it is made durable before anyone reads it or builds on it, or a later power loss could take
    /// back transactions readers have seen and lose the entries of segments new commits go to.
    ///
    /// The tail's `fdatasync` is skipped when its transactions are durable already
    /// (``tailAlreadyDurable``), the usual open of a store closed cleanly. Throws I/O errors.
    func makeDurable(_ tail: SegmentFile) throws {
        guard options.recovery == .strict else { return }
        if !tailAlreadyDurable { try tail.file.sync() }
        try fs.syncDirectory(atPath: found.path)
    }

    /// Whether the tail's transactions were durable before recovery ran: it adopted a
    /// checkpoint, which is written only after the log it covers is synced, and found nothing
    /// after it to replay, cut or drop. (Zeros after the checkpoint's end are preallocated space:
    /// durable or not, they read as the end of the log.)
    var tailAlreadyDurable: Bool {
        report.checkpointUsed && report.transactionsReplayed == 0 && report.truncatedTail == nil && report.dropped.isEmpty
    }

    /// Phase 8c, the witness. The log must reach the sequence CHECKPOINT proves was committed and
    /// synced (``startFromCheckpoint()``): a listed file may have lost committed data that no
    /// check before could point at (a stale checkpoint, a replaced or shortened file), and a
    /// store never opens with less than was durable. Strict throws `.corruption` naming the
    /// missing transactions; salvage reports them once. Reads and changes nothing on disk.
    mutating func checkWitness() throws {
        guard let witness, index.sequence < witness else { return }
        let message =
            "CHECKPOINT proves transactions up to \(witness) were committed and synced, but the log ends at \(index.sequence): transactions \(index.sequence + 1)...\(witness) are missing (a segment file was deleted, truncated or replaced)."
        let checkpointPath = _joinPath(found.path, LogStoreFormat.checkpointFileName)
        guard options.recovery == .salvage else {
            throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: checkpointPath)
        }
        if !report.dropped.contains(where: { $0.reason.hasPrefix("The checkpoint proves") }) {
            report.dropped.append(.init(path: checkpointPath, offset: 0, bytes: 0, reason: message))
        }
    }

    /// Phase 9, the upgrade (strict mode, stores of formats 1 to 3: MANIFEST version 1 or 2).
    /// Upgrades the store once, atomically, and returns the new tail: seals the old tail where
    /// replay left it (cut and synced), starts a format 4 segment, and lists both in a MANIFEST 4
    /// with every sealed segment's length (a format 1 store also gets a store id). A crash before
    /// the MANIFEST rename leaves the old store as it was (plus an unlisted empty segment that the
    /// next open removes as a stray); after it, the store is format 4. Old segments keep their own
    /// rules (the segment header's version decides) until compaction rewrites them. Throws
    /// `.corruption` when MANIFEST's numbers leave no room for the new segment, `.io` when writing
    /// fails (the store unchanged).
    mutating func upgradeFormat(_ tail: SegmentFile) throws -> SegmentFile {
        guard options.recovery == .strict && manifest.version < ManifestFile.currentVersion else { return tail }
        guard manifest.nextSegment < UInt32.max, manifest.generation < UInt64.max else {
            throw LogStoreError(
                .corruption,
                "MANIFEST's next segment number (\(manifest.nextSegment)) or generation (\(manifest.generation)) is at its limit, so the store cannot be upgraded to format \(LogStoreFormat.storeFormat). \(LogStoreError.corruptionNextStep)",
                path: found.manifestPath)
        }
        var next = manifest
        next.version = ManifestFile.currentVersion
        if manifest.storeId == nil { next.storeId = StoreID.random() }
        next.generation += 1
        for n in manifest.segments where n != tail.number && (manifest.version < 2 || next.sealed[n] == nil) {
            let length = try LogEngine.fileSize(fs, _joinPath(found.path, LogStoreFormat.segmentFileName(n)))
            next.sealed[n] = ManifestFile.Sealed(length: length, lastSequence: 0)
        }
        // The old tail is sealed where its log ends (preallocated zeros after it are cut off).
        next.sealed[tail.number] = ManifestFile.Sealed(length: tailOffset, lastSequence: index.sequence)
        let number = next.nextSegment
        next.segments.append(number)
        next.nextSegment += 1
        let writer = LogWriter(directory: found.path, fileSystem: fs)
        let segment: SegmentFile
        do {
            segment = try writer.rollOver(from: tail, sealAt: tailOffset, to: next, replacing: manifest, baseSequence: index.sequence &+ 1)
        } catch {
            throw LogStoreError(
                .io,
                "Upgrading the store from MANIFEST version \(manifest.version) to \(ManifestFile.currentVersion) failed; the store is unchanged. Free space or fix permissions and open it again.",
                path: found.manifestPath, underlying: error.underlying)
        }
        segments[number] = segment
        info[number] = SegmentInfo(length: UInt64(segment.headerSize), rawBytes: 0, refs: DefineRefs())
        info[tail.number]?.length = tailOffset
        tailOffset = UInt64(segment.headerSize)
        // Formats 2 and 3 share their log files (MANIFEST 2); only CHECKPOINT tells them apart.
        report.upgradedFromVersion = manifest.version < 2 ? 1 : 3
        options.logger?.notice(
            "upgraded the store from MANIFEST version \(manifest.version) to \(ManifestFile.currentVersion)",
            metadata: ["store": "\(found.path)", "storeId": "\(next.storeId.map(\.description) ?? "")", "newSegment": "\(number)"])
        manifest = next
        return segment
    }

    /// What recovery hands to the engine, with `tail` as the segment new commits go to: records
    /// the last sequence and the checkpoint file's size (for deciding when to write the next).
    mutating func finish(tail: SegmentFile) -> Recovered {
        report.lastSequence = index.sequence
        if report.checkpointUsed, let size = try? LogEngine.fileSize(fs, _joinPath(found.path, LogStoreFormat.checkpointFileName)) {
            checkpoint?.fileBytes = size
        }
        return Recovered(
            index: index, segments: segments, manifest: manifest, tail: tail, tailOffset: tailOffset, report: report,
            segmentInfo: info, checkpoint: checkpoint, bytesAfterCheckpoint: report.bytesReplayed, runs: checkpointRuns, nextRun: nextRun,
            cipher: cipher)
    }
}
