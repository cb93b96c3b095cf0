/// The log's bookkeeping: the manifest in force, the tail segment, where the next append goes,
/// and what is known about each listed segment.
///
/// A value inside `LogEngine.EngineState`, guarded by the engine's state lock, so that a
/// checkpoint or a compaction captures it together with the views it belongs to. Its mutators are
/// the four things that happen to a log: ``appended(bytes:rawBytes:refs:pending:)``, a roll-over
/// (``reserveSegmentNumber()``, then ``rolledOver(to:manifest:)`` or ``giveBack(_:)``), and a
/// compaction switch (``compacted(to:removing:adding:)``).
struct LogState: Sendable {
    var manifest: ManifestFile
    var tail: SegmentFile
    /// Where the next transaction is appended: the tail's valid length.
    private(set) var tailOffset: UInt64
    /// Per listed segment: valid length and raw payload bytes.
    private(set) var segmentInfo: [UInt32: SegmentInfo]
    /// How many times segments' dead-byte counts became not known (a delete-all, a compaction
    /// that could not count): a walk that began before one must not make them known.
    private(set) var deadUnknownMarks: UInt64 = 0
    /// Log bytes appended since the last checkpoint was captured.
    var bytesSinceCheckpoint: UInt64
    /// How far the tail is known durable: the append offset when the last `fdatasync` of it that
    /// returned began. Every frame records it (`syncedThrough`, format v2), so that recovery can
    /// tell damage to durable bytes from an unsynced tail.
    private(set) var tailSynced: UInt64

    init(manifest: ManifestFile, tail: SegmentFile, tailOffset: UInt64, segmentInfo: [UInt32: SegmentInfo], bytesSinceCheckpoint: UInt64) {
        self.manifest = manifest
        self.tail = tail
        self.tailOffset = tailOffset
        self.segmentInfo = segmentInfo
        self.bytesSinceCheckpoint = bytesSinceCheckpoint
        // Recovery synced what it found before the engine starts.
        self.tailSynced = tailOffset
    }

    /// An `fdatasync` of `segment` that began when the tail ended at `offset` returned.
    mutating func synced(_ segment: SegmentFile, through offset: UInt64) {
        if segment === tail { tailSynced = max(tailSynced, offset) }
    }

    /// What a new frame may claim as durable (``tailSynced``, in the 32 bits a frame header holds).
    var syncedThroughForFrames: UInt32 { UInt32(min(tailSynced, UInt64(UInt32.max))) }

    /// A transaction of `bytes` stored bytes (`rawBytes` of records, `pending` of them not
    /// compressed with a dictionary) whose records use the defines `refs` and which made `dead`
    /// records dead was written at `tailOffset`.
    mutating func appended(bytes: Int, rawBytes: UInt64, refs: DefineRefs, pending: UInt64, dead: DeadBytes) {
        tailOffset += UInt64(bytes)
        segmentInfo[tail.number, default: SegmentInfo(length: 0, rawBytes: 0)].length = tailOffset
        segmentInfo[tail.number, default: SegmentInfo(length: 0, rawBytes: 0)].rawBytes += rawBytes
        segmentInfo[tail.number, default: SegmentInfo(length: 0, rawBytes: 0)].refs?.formUnion(refs)
        segmentInfo[tail.number, default: SegmentInfo(length: 0, rawBytes: 0)].pendingBytes += pending
        dead.fold(into: &segmentInfo)
        if dead.unknown { deadUnknownMarks += 1 }
        bytesSinceCheckpoint += UInt64(bytes)
    }

    /// Makes the dead-byte counts of a walk known: per segment, what the walk counted at the
    /// state it read plus what commits counted since (the count now minus `snapshot`). Skipped
    /// (false) when counts became not known since the walk's state (`marks` changed).
    mutating func adoptDeadCounts(_ counted: [UInt32: (snapshot: UInt64, dead: UInt64)], marks: UInt64) -> Bool {
        guard marks == deadUnknownMarks else { return false }
        for (n, c) in counted {
            guard let now = segmentInfo[n]?.deadBytes else { continue }
            segmentInfo[n]?.deadBytes = c.dead + (now >= c.snapshot ? now - c.snapshot : 0)
            segmentInfo[n]?.deadKnown = true
        }
        return true
    }

    /// Hands out the next segment number. Roll-over (under the writer lock) and compaction (without
    /// it) both draw from here, so no number is handed out twice.
    mutating func reserveSegmentNumber() -> UInt32 {
        defer { manifest.nextSegment += 1 }
        return manifest.nextSegment
    }

    /// A roll-over or compaction that reserved `number` failed before anything listed it: take the
    /// number back if no later one was handed out, so failed attempts burn no numbers.
    mutating func giveBack(_ number: UInt32) {
        if manifest.nextSegment == number &+ 1 { manifest.nextSegment = number }
    }

    /// A roll-over installed `next` (listing `segment` last): `segment` is the new, empty tail.
    mutating func rolledOver(to segment: SegmentFile, manifest next: ManifestFile) {
        var next = next
        next.nextSegment = max(next.nextSegment, manifest.nextSegment)
        manifest = next
        tail = segment
        tailOffset = UInt64(segment.headerSize)
        tailSynced = tailOffset
        segmentInfo[segment.number] = SegmentInfo(length: tailOffset, rawBytes: 0, refs: DefineRefs())
    }

    /// A compaction installed `next`: the segments of `prefix` are replaced by `output`, whose
    /// records the commits made during the copy replaced are `dead` (nil: not counted).
    mutating func compacted(to next: ManifestFile, removing prefix: [UInt32], adding output: [CompactedSegment], dead: DeadBytes?) {
        var next = next
        next.nextSegment = max(next.nextSegment, manifest.nextSegment)
        manifest = next
        for n in prefix { segmentInfo[n] = nil }
        var added: [UInt32: SegmentInfo] = [:]
        for o in output { added[o.segment.number] = o.info }
        // Only the output's count is new: the commits counted what they replaced elsewhere.
        if let dead { dead.fold(into: &added) } else { for n in added.keys { added[n]?.deadKnown = false } }
        if dead?.unknown ?? true { deadUnknownMarks += 1 }
        segmentInfo.merge(added) { _, new in new }
    }
}

/// The file side of the log: appending frames to the tail, sealing it and starting the next
/// segment, and installing manifests. It holds no state of its own (that is ``LogState``); each
/// method is one step of the commit protocol (Docs/Design.md, "Commit protocol") and reports
/// failures as the step that failed, so the engine decides what the failure means for the store.
///
/// Runs on the caller's thread (the writer, or a compaction). `Sendable`: immutable.
struct LogWriter: Sendable {
    let directory: String
    let fileSystem: any FileSystem
    /// Writes the tail's blocks ahead of the appends (nil: appends grow the file).
    var preallocator: Preallocator? = nil

    /// How an append failed.
    enum AppendFailure: Error {
        /// Nothing of the transaction is in the log (the partial write was cut off again).
        case notWritten(any Error)
        /// A partial write could not be cut off: the tail may hold a torn frame after `offset`.
        case torn(any Error, undo: any Error)
    }

    /// Writes one encoded transaction at `offset` of `tail` (over preallocated zeros, or growing
    /// the file). On failure cuts the file back to `offset` (dropping the zeros after it too), so
    /// the log never holds a torn frame this engine knows about, and preallocation starts over.
    func append(_ bytes: [UInt8], to tail: SegmentFile, at offset: UInt64) throws(AppendFailure) {
        do {
            if let preallocator {
                try preallocator.write(bytes, to: tail, at: offset)
            } else {
                try tail.file.write(bytes, at: offset)
            }
        } catch {
            do {
                if let preallocator {
                    try preallocator.cut(tail, to: offset)
                    preallocator.start(tail: tail, appendEnd: offset, fileSize: offset)
                } else {
                    try tail.file.truncate(to: offset)
                }
            } catch let undo { throw .torn(error, undo: undo) }
            throw .notWritten(error)
        }
    }

    /// How a roll-over failed.
    enum RollOverFailure: Error {
        /// The file system's error.
        var underlying: any Error {
            switch self {
            case .sealFailed(let e), .notInstalled(let e), .mayBeInstalled(let e): return e
            }
        }

        /// fdatasync of the full tail failed: commits in it may not be durable.
        case sealFailed(any Error)
        /// The new segment or manifest could not be written; the old manifest is in force, the
        /// new segment file was removed (best effort; the next open removes what is left).
        case notInstalled(any Error)
        /// The new manifest may be in place (it was renamed, or the rename's outcome is unknown)
        /// but is not known to be durable: appending to either segment could now be wrong.
        case mayBeInstalled(any Error)
    }

    /// Seals `tail` at `sealAt` (its append offset: preallocated zeros after it are cut off, so
    /// the sealed size MANIFEST records is the file's size; then fsync) and starts segment
    /// `next.segments.last` with base sequence `baseSequence`: the segment file with its header
    /// first (fsync, fsync directory; from the preallocator's spare when one is ready), then
    /// `next`, replacing `previous` (``AtomicFileReplace``). Returns the new segment, open for
    /// appending.
    ///
    /// Segment first: a crash or failure before the manifest's rename leaves an unlisted segment
    /// file (removed here, or by the next open) and a log whose last listed segment is still the
    /// one being appended to. (Manifest first would leave a failed roll-over appending to a segment
    /// that is no longer last on disk, where a later torn write reads as corruption.)
    func rollOver(from tail: SegmentFile, sealAt: UInt64, to next: ManifestFile, replacing previous: ManifestFile, baseSequence: UInt64)
        throws(RollOverFailure) -> SegmentFile
    {
        do { try cut(tail, to: sealAt) } catch {
            resumePreallocation(tail, at: sealAt)
            throw .notInstalled(error)
        }
        do { try tail.file.sync() } catch { throw .sealFailed(error) }
        let number = next.segments[next.segments.count - 1]
        let segment: SegmentFile
        var size = UInt64(0)
        do {
            if let spare = preallocator?.takeSpare() {
                segment = try adoptSpare(spare.file, as: number, baseSequence: baseSequence, storeId: next.storeId, cipher: next.cipher)
                size = spare.size
            } else {
                segment = try createSegment(number, baseSequence: baseSequence, storeId: next.storeId, cipher: next.cipher)
            }
        } catch {
            removeSegmentFile(number)
            resumePreallocation(tail, at: sealAt)
            throw .notInstalled(error)
        }
        switch installManifest(next, replacing: previous) {
        case .success:
            let start = UInt64(segment.headerSize)
            preallocator?.start(tail: segment, appendEnd: start, fileSize: max(size, start))
            return segment
        case .failure(.notInstalled(let e)):
            try? segment.file.close()
            removeSegmentFile(number)
            resumePreallocation(tail, at: sealAt)
            throw .notInstalled(e)
        case .failure(.mayBeInstalled(let e)):
            throw .mayBeInstalled(e)
        }
    }

    /// Cuts the zeros after `offset` (the log's end) off `tail`: preallocated ones, or ones
    /// recovery kept (SegmentReader rule 6). Before sealing, and at close.
    func cut(_ tail: SegmentFile, to offset: UInt64) throws {
        if let preallocator {
            try preallocator.cut(tail, to: offset)
        } else if try tail.file.size() > offset {
            try tail.file.truncate(to: offset)
        }
    }

    /// A roll-over failed and `tail` stays the tail: preallocate it again.
    private func resumePreallocation(_ tail: SegmentFile, at offset: UInt64) {
        preallocator?.start(tail: tail, appendEnd: offset, fileSize: (try? tail.file.size()) ?? offset)
    }

    /// Turns the preallocator's spare file (zeros, synced) into segment file `number`: the header
    /// over its first bytes (fsync), then renamed into place (fsync directory). Until MANIFEST lists
    /// it, it is an unlisted segment holding nothing but zeros after its header, which recovery
    /// removes like an interrupted roll-over's (FileFormat.md §1).
    func adoptSpare(_ spare: any FileSystemFile, as number: UInt32, baseSequence: UInt64, storeId: StoreID?, cipher: UInt8) throws
        -> SegmentFile
    {
        defer { try? spare.close() }
        let sparePath = _joinPath(directory, Preallocator.spareName)
        let path = _joinPath(directory, LogStoreFormat.segmentFileName(number))
        let header = SegmentHeader(flags: 0, segment: number, baseSequence: baseSequence, storeId: storeId, cipher: cipher)
        do {
            try spare.write(header.encoded(), at: 0)
            try spare.sync()
            try fileSystem.rename(from: sparePath, to: path)
        } catch {
            try? fileSystem.removeFile(atPath: sparePath)
            throw error
        }
        try fileSystem.syncDirectory(atPath: directory)
        return SegmentFile(number: number, file: try fileSystem.open(path, mode: .readWrite), header: header)
    }

    /// How installing a manifest failed.
    enum ManifestFailure: Error {
        /// The previous manifest is still in place.
        case notInstalled(any Error)
        /// The new manifest is in place, or may be, but is not known to be durable.
        case mayBeInstalled(any Error)
    }

    /// Replaces MANIFEST with `next`. A rename that reports an error counts as not installed only
    /// if MANIFEST still reads as `previous`.
    func installManifest(_ next: ManifestFile, replacing previous: ManifestFile?) -> Result<Void, ManifestFailure> {
        do {
            try AtomicFileReplace.replace(LogStoreFormat.manifestFileName, in: directory, with: next.encoded(), fs: fileSystem)
            return .success(())
        } catch {
            switch error {
            case .beforeRename(let e):
                return .failure(.notInstalled(e))
            case .rename(let e):
                let old =
                    previous.map { AtomicFileReplace.holds(LogStoreFormat.manifestFileName, in: directory, $0.encoded(), fs: fileSystem) }
                    ?? false
                return .failure(old ? .notInstalled(e) : .mayBeInstalled(e))
            case .directorySync(let e):
                return .failure(.mayBeInstalled(e))
            }
        }
    }

    /// Creates segment file `number` of store `storeId` holding only its header (fsync, fsync
    /// directory), whose records are sealed with `cipher` (MANIFEST's; 0: clear). The header has
    /// the current version unless `version` says otherwise: a format v1 store (no store id) gets a
    /// v1 header, so that the store stays one version until its upgrade.
    func createSegment(
        _ number: UInt32, baseSequence: UInt64, storeId: StoreID?, cipher: UInt8 = 0, flags: UInt16 = 0,
        version: UInt16 = SegmentHeader.currentVersion
    ) throws -> SegmentFile {
        let path = _joinPath(directory, LogStoreFormat.segmentFileName(number))
        let f = try fileSystem.open(path, mode: .createOrTruncate)
        let header = SegmentHeader(
            version: version, flags: flags, segment: number, baseSequence: baseSequence, storeId: storeId, cipher: cipher)
        try f.write(header.encoded(), at: 0)
        try f.sync()
        try fileSystem.syncDirectory(atPath: directory)
        return SegmentFile(number: number, file: f, header: header)
    }

    /// Removes an unlisted segment file (a failed roll-over's or compaction's). Best effort: a file
    /// left behind is unlisted, and the next open removes it.
    func removeSegmentFile(_ number: UInt32) {
        try? fileSystem.removeFile(atPath: _joinPath(directory, LogStoreFormat.segmentFileName(number)))
        try? fileSystem.syncDirectory(atPath: directory)
    }
}
