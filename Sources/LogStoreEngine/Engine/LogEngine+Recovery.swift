import Logging

/// What recovery hands to the engine.
struct Recovered {
    var index: IndexState
    var segments: [UInt32: SegmentFile]
    var manifest: ManifestFile
    var tail: SegmentFile
    var tailOffset: UInt64
    var report: RecoveryReport
    var segmentInfo: [UInt32: SegmentInfo]
    /// The checkpoint recovery started from, if one was used.
    var checkpoint: CheckpointMark?
    /// Log bytes replayed (after the checkpoint, if one was used).
    var bytesAfterCheckpoint: UInt64
}

extension LogEngine {
    /// Opens the store in `directory`, creating it if the directory is missing or empty.
    ///
    /// Takes the store's lock (`LOCK`, `flock`), reads `MANIFEST`, loads `CHECKPOINT` if it is
    /// intact and matches the manifest (else reports why in ``RecoveryReport/checkpointRejectedReason``),
    /// replays the log after it (every listed segment without one) and rebuilds the indexes. A torn tail of the last segment (an interrupted append) is cut
    /// off and reported in ``recoveryReport``; other damage throws `.corruption` naming the file
    /// and offset, unless ``LogEngineOptions/recovery`` is `.salvage`.
    ///
    /// Runs on the calling thread; its cost is proportional to the log written after the last
    /// checkpoint (plus reading the checkpoint), or to the whole log without one.
    /// Throws `.locked`, `.notAStore`, `.unsupportedFormatVersion`, `.corruption`, I/O errors.
    public static func open(
        directory: String, fileSystem: any FileSystem = POSIXFileSystem(),
        options: LogEngineOptions = LogEngineOptions()
    ) throws -> LogEngine {
        let options = try options.validated()
        let fs = fileSystem
        switch fs.itemKind(atPath: directory) {
        case .file?:
            throw LogStoreError(.notAStore, "The store path is a file, not a directory.", path: directory)
        case nil:
            // The new directories' entries must be durable before a commit can be: fsync the
            // parent of each directory created, or a power loss can take the whole store away.
            var created: [String] = []
            var d = directory
            while d.count > 1, d.hasSuffix("/") { d.removeLast() }
            while fs.itemKind(atPath: d) == nil {
                created.append(d)
                guard let slash = d.lastIndex(of: "/"), slash != d.startIndex else { break }
                d = String(d[..<slash])
            }
            try fs.createDirectory(atPath: directory)
            for c in created { try fs.syncDirectory(atPath: parentDirectory(of: c)) }
        case .directory?:
            // An earlier open may have been killed between creating the directory and fsyncing
            // its parent: make the directory's own entry durable.
            if options.recovery == .strict { try fs.syncDirectory(atPath: parentDirectory(of: directory)) }
        }
        try checkLooksLikeStore(directory, fs)
        if options.recovery == .strict { try checkWritable(directory: directory, fs) }
        let lock = try fs.lock(atPath: _joinPath(directory, LogStoreFormat.lockFileName))
        do {
            let recovered = try recover(directory: directory, fs: fs, options: options)
            let engine = LogEngine(directory: directory, fileSystem: fs, options: options, lock: lock, recovered: recovered)
            let r = recovered.report
            if let t = r.truncatedTail {
                options.logger?.warning("recovery cut a torn tail", metadata: ["drop": "\(t)"])
            }
            for d in r.dropped { options.logger?.error("salvage dropped damaged bytes", metadata: ["drop": "\(d)"]) }
            return engine
        } catch let error as LogStoreError {
            lock.unlock()
            throw error.withCorruptionNextStep()
        } catch {
            lock.unlock()
            throw error
        }
    }

    /// The directory holding `path` (`/` for a top-level path, `.` for a relative name).
    static func parentDirectory(of path: String) -> String {
        var p = path
        while p.count > 1, p.hasSuffix("/") { p.removeLast() }
        guard let slash = p.lastIndex(of: "/") else { return "." }
        return slash == p.startIndex ? "/" : String(p[..<slash])
    }

    /// Refuses a non-empty directory that holds no store files, before creating anything in it.
    static func checkLooksLikeStore(_ directory: String, _ fs: any FileSystem) throws {
        let names = try fs.contentsOfDirectory(atPath: directory)
        if names.isEmpty || names.contains(LogStoreFormat.manifestFileName) || names.contains(LogStoreFormat.lockFileName) { return }
        // What a creation stopped before its first rename leaves: the new segment 1 or MANIFEST
        // under their temporary names (see createFirstSegment).
        let creationLeftovers = [LogStoreFormat.segmentFileName(1) + ".tmp", LogStoreFormat.manifestFileName + ".tmp"]
        if names.contains(where: creationLeftovers.contains) { return }
        if names.contains(where: { LogStoreFormat.segmentNumber(fromFileName: $0) != nil }) { return }
        throw LogStoreError(
            .notAStore,
            "The directory is not empty and holds no LogStore files (\(names.prefix(3).joined(separator: ", "))\(names.count > 3 ? ", ..." : "")). Point the store at an empty or new directory.",
            path: directory)
    }

    static func recover(directory: String, fs: any FileSystem, options: LogEngineOptions) throws -> Recovered {
        var report = RecoveryReport()
        let names = try fs.contentsOfDirectory(atPath: directory)
        let manifestPath = _joinPath(directory, LogStoreFormat.manifestFileName)
        let onDisk = names.compactMap(LogStoreFormat.segmentNumber(fromFileName:)).sorted()

        // The evidence that LogStore wrote this directory: segment files that start with a LogStore
        // segment header. A MANIFEST that is missing, empty or garbled beside such files is a
        // damaged store (salvage rebuilds the list), not a foreign directory.
        let segmentHeaders: [UInt32: SegmentHeader] = Dictionary(
            uniqueKeysWithValues: onDisk.compactMap { n in
                readSegmentHeader(fs, _joinPath(directory, LogStoreFormat.segmentFileName(n))).map { (n, $0) }
            })
        var manifestProblem: LogStoreError? = nil
        var decoded: ManifestFile? = nil
        if names.contains(LogStoreFormat.manifestFileName) {
            let f = try fs.open(manifestPath, mode: .readOnly)
            let bytes = try f.read(at: 0, count: Int(try f.size()))
            try f.close()
            do {
                decoded = try ManifestFile.decode(bytes, path: manifestPath)
            } catch let e as LogStoreError where (e.code == .notAStore || e.code == .corruption) && !segmentHeaders.isEmpty {
                manifestProblem = e
            }
        }

        // Salvage: a MANIFEST that none of the version 2 segments here belongs to is another
        // store's; its list would drop every segment as foreign, so it is damage like a garbled
        // one and the list is rebuilt from the segment headers. (Strict open refuses it below.)
        if options.recovery == .salvage, let id = decoded?.storeId {
            let ids = Set(segmentHeaders.values.compactMap(\.storeId))
            if !ids.isEmpty && !ids.contains(id) {
                manifestProblem = LogStoreError(
                    .corruption, "MANIFEST belongs to store \(id), not to the store of the segment files here", path: manifestPath)
                decoded = nil
            }
        }

        var manifest: ManifestFile
        if let decoded {
            manifest = decoded
        } else if manifestProblem == nil && !names.contains(LogStoreFormat.checkpointFileName)
            && isNewOrInterruptedCreation(onDisk, directory, fs)
        {
            // A new store, or one whose creation was interrupted before its manifest existed.
            let storeId = StoreID.random()
            let segment = try createFirstSegment(directory: directory, fs: fs, storeId: storeId)
            manifest = ManifestFile(generation: 1, nextSegment: 2, segments: [1], storeId: storeId)
            try AtomicFileReplace.replaceOrThrow(LogStoreFormat.manifestFileName, in: directory, with: manifest.encoded(), fs: fs)
            report.created = true
            var index = IndexState()
            index.sequence = 0
            let start = UInt64(segment.headerSize)
            return Recovered(
                index: index, segments: [1: segment], manifest: manifest, tail: segment,
                tailOffset: start, report: report,
                segmentInfo: [1: SegmentInfo(length: start, rawBytes: 0)],
                checkpoint: nil, bytesAfterCheckpoint: 0)
        } else if segmentHeaders.isEmpty && names.contains(LogStoreFormat.checkpointFileName) {
            // A checkpoint is written only after the log it covers is synced: its log is gone.
            throw LogStoreError(
                .corruption,
                "CHECKPOINT is here but MANIFEST and every segment file are missing: the store's log was deleted. \(LogStoreError.corruptionNextStep)",
                path: _joinPath(directory, LogStoreFormat.checkpointFileName))
        } else if segmentHeaders.isEmpty {
            // Files named like segments, but none is one (a photo called 000001.log): not ours.
            throw LogStoreError(
                .notAStore,
                "The directory has no MANIFEST and none of its segment-named files (\(onDisk.prefix(3).map { LogStoreFormat.segmentFileName($0) }.joined(separator: ", "))) starts with a LogStore segment header: it was not written by LogStore. Point the store at an empty or new directory.",
                path: directory)
        } else if options.recovery == .salvage {
            // Rebuild a manifest from the segment files present. Compaction always replaces a
            // prefix of the replay order and numbers its output above the tail, so the replay
            // order is: compacted segments, then the others, each in file-number order. A file
            // numbered UInt32.max (never written by LogStore) leaves no number for a next segment.
            let usable = onDisk.filter { $0 < UInt32.max && segmentHeaders[$0] != nil }
            let compacted = Set(usable.filter { segmentHeaders[$0]?.isCompacted == true })
            let order = usable.filter { compacted.contains($0) } + usable.filter { !compacted.contains($0) }
            // The store is the one most segment headers name (a foreign segment is then dropped).
            var votes: [StoreID: Int] = [:]
            for n in usable { if let id = segmentHeaders[n]?.storeId { votes[id, default: 0] += 1 } }
            let id = votes.max { $0.value < $1.value || ($0.value == $1.value && $0.key.description < $1.key.description) }?.key
            manifest = ManifestFile(
                version: id == nil ? 1 : LogStoreFormat.version, generation: 1, nextSegment: (usable.last ?? 0) + 1,
                segments: order, storeId: id)
            let why = manifestProblem.map { "MANIFEST damaged (\($0.message))" } ?? "MANIFEST missing"
            report.dropped.append(
                .init(path: manifestPath, offset: 0, bytes: 0, reason: "\(why); segments taken in file-number order, compacted ones first"))
            for n in onDisk where !usable.contains(n) {
                report.dropped.append(
                    .init(
                        path: _joinPath(directory, LogStoreFormat.segmentFileName(n)), offset: 0, bytes: 0,
                        reason: n == UInt32.max ? "segment number out of range" : "no LogStore segment header"))
            }
        } else {
            let what = manifestProblem.map { "MANIFEST is damaged (\($0.message))" } ?? "MANIFEST is missing"
            throw LogStoreError(
                .corruption,
                "\(what), but \(segmentHeaders.count) LogStore segment file(s) exist: this is a damaged store. \(LogStoreError.corruptionNextStep)",
                path: manifestPath, offset: manifestProblem?.offset, underlying: manifestProblem)
        }

        var index = IndexState()
        var segments: [UInt32: SegmentFile] = [:]
        var info: [UInt32: SegmentInfo] = [:]
        var tail: SegmentFile? = nil
        var tailOffset: UInt64 = 0
        // With a usable checkpoint, replay starts in its last covered segment at its length.
        var first = 0
        var resumeAt: UInt64 = 0
        var checkpoint: CheckpointMark? = nil
        /// The last sequence CHECKPOINT says was committed and synced: the log must reach it.
        var witness: UInt64? = nil
        /// The adopted checkpoint's index, for bringing its secondary indexes up to date.
        var checkpointState: IndexState? = nil
        if names.contains(LogStoreFormat.checkpointFileName) {
            switch loadCheckpoint(directory: directory, fs: fs, manifest: manifest, options: options) {
            case .adopted(let cp, let opened):
                index = cp.index
                checkpointState = cp.index
                segments = opened
                for c in cp.segments { info[c.number] = SegmentInfo(length: c.length, rawBytes: c.rawBytes) }
                first = cp.segments.count - 1
                resumeAt = cp.segments[first].length
                checkpoint = cp.mark(fileBytes: 0)
                report.checkpointUsed = true
                report.checkpointSequence = cp.sequence
                // The checkpoint's secondary indexes are right for its records: note what replay
                // changes of indexed types, to bring them up to date once it ends.
                if index.hasSecondaryIndexes { index.replayTouches = SecondaryReplayTouches() }
            case .rejected(let reason, let w):
                witness = w
                report.checkpointRejectedReason = reason
                options.logger?.warning(
                    "checkpoint not used; replaying the whole log", metadata: ["store": "\(directory)", "reason": "\(reason)"])
            case .contradicted(let reason, let path, let w):
                // Committed, synced data is gone. Refuse before anything is cut or recreated.
                let message = "The checkpoint proves transactions up to \(w) were committed and synced; \(reason)."
                guard options.recovery == .salvage else {
                    throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: path)
                }
                witness = w
                report.checkpointRejectedReason = reason
                report.dropped.append(.init(path: path, offset: 0, bytes: 0, reason: message))
            }
        }
        // Format v2: a sealed segment never changes, so any size but the one MANIFEST recorded when
        // it was sealed is damage to durable data, including in segments a checkpoint lets replay
        // skip.
        for number in manifest.segments {
            let path = _joinPath(directory, LogStoreFormat.segmentFileName(number))
            guard let sealed = manifest.sealed[number], fs.itemKind(atPath: path) == .file else { continue }
            let size = try fileSize(fs, path)
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
        // An unlisted segment numbered from MANIFEST's next number on that holds more than its
        // header (and the zeros of a preallocated spare) was not left by an interrupted roll-over
        // (which never appends before its manifest is in place) nor by a compaction (whose output
        // is flagged compacted): MANIFEST is an older copy, or another store's, and that segment
        // holds committed data.
        let orphans = onDisk.filter { n in
            // (A file whose header names another number is a copy, not a segment written under
            // this name: a stray like any other.)
            guard !manifest.segments.contains(n), n >= manifest.nextSegment, segmentHeaders[n]?.isCompacted != true,
                segmentHeaders[n].map({ $0.segment == n }) ?? true
            else { return false }
            return holdsData(
                fs, _joinPath(directory, LogStoreFormat.segmentFileName(n)), after: segmentHeaders[n]?.size ?? SegmentHeader.maxSize)
        }
        // Format v2: MANIFEST and the segments name their store. A MANIFEST none of the version 2
        // segments here belongs to is another store's (or the segments are), whatever it lists.
        if let id = manifest.storeId {
            let ids = Set(segmentHeaders.values.compactMap(\.storeId))
            if !ids.isEmpty && !ids.contains(id) && options.recovery == .strict {
                throw LogStoreError(
                    .corruption,
                    "MANIFEST belongs to store \(id), but the segment files here belong to \(ids.map(\.description).sorted().joined(separator: ", ")): MANIFEST was replaced by another store's. \(LogStoreError.corruptionNextStep)",
                    path: manifestPath)
            }
        }
        if let orphan = orphans.first {
            let path = _joinPath(directory, LogStoreFormat.segmentFileName(orphan))
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
        // Remove what interrupted operations left behind (never in salvage mode: it only reads).
        // Only now: the checkpoint above has vouched that MANIFEST is not an older copy, whose
        // unlisted segments would be the newest data rather than strays.
        if options.recovery == .strict {
            let listed = Set(manifest.segments)
            let strays = names.filter { name in
                if let n = LogStoreFormat.segmentNumber(fromFileName: name) { return !listed.contains(n) }
                return name.hasSuffix(".tmp")
            }
            if !strays.isEmpty {
                // The MANIFEST that makes them strays may be only in the OS cache: a kill -9
                // between its rename and the directory's fsync (a compaction's, a roll-over's).
                // Make it durable first, or a power loss could bring back the older MANIFEST that
                // still lists the segments removed here (found by the DataStore power-loss soak).
                try fs.syncDirectory(atPath: directory)
            }
            for name in strays {
                try fs.removeFile(atPath: _joinPath(directory, name))
                report.removedFiles.append(name)
            }
            if !report.removedFiles.isEmpty { try fs.syncDirectory(atPath: directory) }
        }

        for i in first..<manifest.segments.count {
            let number = manifest.segments[i]
            let isLast = i == manifest.segments.count - 1
            let from: UInt64 = i == first ? resumeAt : 0
            let path = _joinPath(directory, LogStoreFormat.segmentFileName(number))
            guard fs.itemKind(atPath: path) == .file else {
                // Format v1 only: a v2 roll-over makes the segment durable before MANIFEST lists it.
                if isLast && options.recovery == .strict && manifest.version < 2 {
                    // A listed last segment with no file (a roll-over by an older build that wrote the
                    // manifest first, or a lost directory entry): recreate it empty.
                    let seg = try LogWriter(directory: directory, fileSystem: fs).createSegment(
                        number, baseSequence: index.sequence == .max ? .max : index.sequence + 1, storeId: manifest.storeId)
                    segments[number] = seg
                    info[number] = SegmentInfo(length: UInt64(seg.headerSize), rawBytes: 0)
                    tail = seg
                    tailOffset = UInt64(seg.headerSize)
                    report.truncatedTail = .init(
                        path: path, offset: 0, bytes: 0, reason: "segment listed in MANIFEST was never created; recreated empty")
                    continue
                }
                if options.recovery == .salvage {
                    report.dropped.append(.init(path: path, offset: 0, bytes: 0, reason: "segment file missing"))
                    continue
                }
                let what =
                    manifest.sealed[number].map { "\($0.length) bytes of transactions up to \($0.lastSequence)" } ?? "its transactions"
                throw LogStoreError(
                    .corruption,
                    "Segment \(number) is listed in MANIFEST but its file is missing: \(what) are lost. \(LogStoreError.corruptionNextStep)",
                    path: path)
            }
            let file = try fs.open(path, mode: isLast && options.recovery == .strict ? .readWrite : .readOnly)
            let size = try file.size()
            guard size <= UInt64(UInt32.max) else {
                throw LogStoreError(
                    .corruption,
                    "Segment is \(size) bytes; LogStore never writes segments of 4 GiB or more, so this file is not one of its segments.",
                    path: path, offset: UInt64(UInt32.max))
            }

            var segInfo = info[number] ?? SegmentInfo(length: 0, rawBytes: 0)
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
            let result = try streamSegment(
                file, size: size, from: from, header: known, number: number, path: path, isLast: isLast, storeId: manifest.storeId,
                index: &index, info: &segInfo, report: &report, options: options)
            let seg: SegmentFile
            switch result {
            case .recreateHeader:
                let base = index.sequence == .max ? .max : index.sequence + 1
                let header = SegmentHeader(segment: number, baseSequence: base, storeId: manifest.storeId)
                try file.truncate(to: 0)
                try file.write(header.encoded(), at: 0)
                try file.sync()
                report.truncatedTail = .init(
                    path: path, offset: 0, bytes: size, reason: "segment header torn while the segment was being created")
                tailOffset = UInt64(header.size)
                segInfo = SegmentInfo(length: UInt64(header.size), rawBytes: 0)
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
            segments[number] = seg
            if isLast { tail = seg }
        }
        if tail == nil, options.recovery == .salvage,
            let last = manifest.segments.last(where: { segments[$0] != nil }), let seg = segments[last]
        {
            // Salvage only reads: with the last segment gone, the last one left ends the log.
            tail = seg
            tailOffset = info[last]?.length ?? 0
        }
        guard var tail else {
            throw LogStoreError(.corruption, "No usable segment; run `logstore-compact salvage`.", path: directory)
        }
        if index.replayTouches != nil, let checkpointIndex = checkpointState {
            try catchUpSecondaryIndexes(&index, from: checkpointIndex, segments: segments, options: options, report: &report)
        }
        if options.recovery == .strict {
            // What recovery found may still be only in the OS cache (the previous process was
            // killed before its fsyncs): make it durable before anyone reads it or builds on it,
            // or a later power loss could take back transactions readers have seen and lose the
            // entries of segments that new commits go to.
            try tail.file.sync()
            try fs.syncDirectory(atPath: directory)
        }
        if let witness, index.sequence < witness {
            // Some listed file lost committed data that no check above could point at (a stale
            // checkpoint, a replaced or shortened file): never open with less than was durable.
            let message =
                "CHECKPOINT proves transactions up to \(witness) were committed and synced, but the log ends at \(index.sequence): transactions \(index.sequence + 1)...\(witness) are missing (a segment file was deleted, truncated or replaced)."
            let checkpointPath = _joinPath(directory, LogStoreFormat.checkpointFileName)
            guard options.recovery == .salvage else {
                throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: checkpointPath)
            }
            if !report.dropped.contains(where: { $0.reason.hasPrefix("The checkpoint proves") }) {
                report.dropped.append(.init(path: checkpointPath, offset: 0, bytes: 0, reason: message))
            }
        }
        if options.recovery == .strict && manifest.version < 2 {
            // Upgrade a format v1 store once, atomically: seal its tail where recovery left it
            // (cut and synced above), start a version 2 segment, and list both in a version 2
            // MANIFEST with a new store id and every sealed segment's length. A crash before the
            // MANIFEST rename leaves the v1 store as it was (plus an unlisted empty segment that
            // the next open removes); after it, the store is v2. v1 segments keep v1 rules.
            guard manifest.nextSegment < UInt32.max, manifest.generation < UInt64.max else {
                throw LogStoreError(
                    .corruption,
                    "MANIFEST's next segment number (\(manifest.nextSegment)) or generation (\(manifest.generation)) is at its limit, so the store cannot be upgraded to format version \(LogStoreFormat.version). \(LogStoreError.corruptionNextStep)",
                    path: manifestPath)
            }
            var next = manifest
            next.version = LogStoreFormat.version
            next.storeId = StoreID.random()
            next.generation += 1
            for n in manifest.segments {
                let length = try fileSize(fs, _joinPath(directory, LogStoreFormat.segmentFileName(n)))
                next.sealed[n] = ManifestFile.Sealed(length: length, lastSequence: n == tail.number ? index.sequence : 0)
            }
            let number = next.nextSegment
            next.segments.append(number)
            next.nextSegment += 1
            let writer = LogWriter(directory: directory, fileSystem: fs)
            let segment: SegmentFile
            do {
                segment = try writer.rollOver(
                    from: tail, sealAt: tailOffset, to: next, replacing: manifest, baseSequence: index.sequence &+ 1)
            } catch {
                throw LogStoreError(
                    .io,
                    "Upgrading the store from format version \(manifest.version) to \(LogStoreFormat.version) failed; the store is unchanged. Free space or fix permissions and open it again.",
                    path: manifestPath, underlying: error.underlying)
            }
            segments[number] = segment
            info[number] = SegmentInfo(length: UInt64(segment.headerSize), rawBytes: 0)
            tail = segment
            tailOffset = UInt64(segment.headerSize)
            report.upgradedFromVersion = manifest.version
            options.logger?.notice(
                "upgraded the store from format version \(manifest.version) to \(LogStoreFormat.version)",
                metadata: ["store": "\(directory)", "storeId": "\(next.storeId.map(\.description) ?? "")", "newSegment": "\(number)"])
            manifest = next
        }
        report.lastSequence = index.sequence
        if report.checkpointUsed, let size = try? fileSize(fs, _joinPath(directory, LogStoreFormat.checkpointFileName)) {
            checkpoint?.fileBytes = size
        }
        return Recovered(
            index: index, segments: segments, manifest: manifest, tail: tail, tailOffset: tailOffset, report: report,
            segmentInfo: info, checkpoint: checkpoint, bytesAfterCheckpoint: report.bytesReplayed)
    }

    /// Whether the file at `path` holds a byte other than zero from offset `start` on (false if it
    /// cannot be read).
    static func holdsData(_ fs: any FileSystem, _ path: String, after start: Int) -> Bool {
        guard let f = try? fs.open(path, mode: .readOnly) else { return false }
        defer { try? f.close() }
        guard let size = try? f.size(), size > UInt64(start) else { return false }
        return (try? zeros(f, from: UInt64(start), to: size)) == false
    }

    /// The segment header at the start of `path`, or nil if the file cannot be read or does not
    /// start with a valid LogStore segment header.
    package static func readSegmentHeader(_ fs: any FileSystem, _ path: String) -> SegmentHeader? {
        guard let f = try? fs.open(path, mode: .readOnly) else { return nil }
        defer { try? f.close() }
        guard let bytes = try? f.read(at: 0, count: SegmentHeader.maxSize),
            case .ok(let h) = bytes.withUnsafeBytes({ SegmentHeader.decode($0) })
        else { return nil }
        return h
    }

    /// Whether a directory without MANIFEST is new, or a store whose creation stopped before its
    /// manifest was written: no segment file, or only segment 1 holding nothing but (a prefix of)
    /// the header creation writes, or zeros. Any other bytes there are someone else's file, which
    /// must never be overwritten as an "interrupted creation".
    static func isNewOrInterruptedCreation(_ onDisk: [UInt32], _ directory: String, _ fs: any FileSystem) -> Bool {
        if onDisk.isEmpty { return true }
        guard onDisk == [1], let f = try? fs.open(_joinPath(directory, LogStoreFormat.segmentFileName(1)), mode: .readOnly) else {
            return false
        }
        defer { try? f.close() }
        guard let size = try? f.size(), size <= UInt64(SegmentHeader.maxSize), let bytes = try? f.read(at: 0, count: Int(size)) else {
            return false
        }
        if bytes.allSatisfy({ $0 == 0 }) || firstSegmentHeaderV1.starts(with: bytes) { return true }
        // This build renames segment 1 into place whole: its header and nothing else.
        guard case .ok(let h) = bytes.withUnsafeBytes({ SegmentHeader.decode($0) }) else { return false }
        return h.segment == 1 && h.baseSequence == 1 && !h.isCompacted && bytes.count == h.size
    }

    /// The header a format v1 build wrote first into a new store's segment 1 (deterministic), a
    /// prefix of which an interrupted creation by such a build leaves.
    static let firstSegmentHeaderV1 = SegmentHeader(version: 1, segment: 1, baseSequence: 1).encoded()

    /// Creates a new store's segment 1 under a temporary name and renames it into place once its
    /// header is synced, so `000001.log` never exists with a torn header: a short file of that
    /// name without MANIFEST is then either an older build's interrupted creation (a prefix of
    /// the header, or zeros) or a foreign file, never something to overwrite by guess.
    static func createFirstSegment(directory: String, fs: any FileSystem, storeId: StoreID) throws -> SegmentFile {
        let name = LogStoreFormat.segmentFileName(1)
        let header = SegmentHeader(segment: 1, baseSequence: 1, storeId: storeId)
        try AtomicFileReplace.replaceOrThrow(name, in: directory, with: header.encoded(), fs: fs)
        return SegmentFile(number: 1, file: try fs.open(_joinPath(directory, name), mode: .readWrite), header: header)
    }

    static func fileSize(_ fs: any FileSystem, _ path: String) throws -> UInt64 {
        let f = try fs.open(path, mode: .readOnly)
        defer { try? f.close() }
        return try f.size()
    }

    /// Brings the checkpoint's secondary indexes up to date with what replay applied after it
    /// (``IndexState/catchUpSecondaryIndexes(from:read:)``). In salvage mode a value that cannot
    /// be read drops the secondary indexes instead (they are rebuilt when declared again).
    static func catchUpSecondaryIndexes(
        _ index: inout IndexState, from checkpoint: IndexState, segments: [UInt32: SegmentFile],
        options: LogEngineOptions, report: inout RecoveryReport
    ) throws {
        func read(_ loc: RecordLocation) throws -> ArraySlice<UInt8> {
            guard let seg = segments[loc.segment] else {
                throw LogStoreError(.corruption, "Index points at segment \(loc.segment), which is not part of the store.")
            }
            return try seg.readValue(loc, cache: nil)
        }
        do {
            try index.catchUpSecondaryIndexes(from: checkpoint, read: read)
        } catch let e as LogStoreError where options.recovery == .salvage && e.code == .corruption {
            index.secondary = [:]
            index.replayTouches = nil
            options.logger?.warning(
                "secondary indexes dropped: a record they need cannot be read; they are rebuilt when declared", metadata: ["error": "\(e)"])
        }
    }
}
