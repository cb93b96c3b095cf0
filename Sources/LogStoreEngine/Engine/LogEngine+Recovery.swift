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
    /// The run files the adopted checkpoint names (format 4), opened.
    var runs: [UInt32: MappedRun] = [:]
    /// The number the next run file gets: above every run file in the directory.
    var nextRun: UInt32 = 1
    /// The store key's cipher (``StoreEncryption/select(storeCipher:keyCheck:storeID:path:)``),
    /// nil for a store in the clear.
    var cipher: (any StoreCipher)? = nil
}

/// One open's recovery once its manifest is chosen: the context every phase reads and the state
/// the phases build, in the order ``LogEngine/recover(directory:fs:options:)`` runs them. Used by
/// one thread, for the duration of the open.
struct Recovery {
    /// What the survey found (phase 1).
    let found: RecoveryDirectory
    let fs: any FileSystem
    let options: LogEngineOptions
    /// The manifest recovery goes by; salvage adds unlisted segments to it, the upgrade replaces it.
    var manifest: ManifestFile
    var report: RecoveryReport
    /// The checkpoint's index, then what replay applies to it.
    var index = IndexState()
    /// The segments opened so far (a checkpoint's covered ones, then those replay opens).
    var segments: [UInt32: SegmentFile] = [:]
    var info: [UInt32: SegmentInfo] = [:]
    /// The segment new commits go to, once replay has found it.
    var tail: SegmentFile? = nil
    /// Where the next commit goes in `tail`.
    var tailOffset: UInt64 = 0
    /// Where replay starts: `manifest.segments[first]` at `resumeAt` (the checkpoint's last
    /// covered segment at its recorded length; else the first segment from its header).
    var first = 0
    var resumeAt: UInt64 = 0
    /// The checkpoint recovery started from, if one was adopted.
    var checkpoint: CheckpointMark? = nil
    /// The last sequence CHECKPOINT says was committed and synced: the log must reach it.
    var witness: UInt64? = nil
    /// The adopted checkpoint's index, for bringing its secondary indexes up to date.
    var checkpointIndex: IndexState? = nil
    /// The run files the adopted checkpoint names (format 4), and the next run number.
    var checkpointRuns: [UInt32: MappedRun] = [:]
    var nextRun: UInt32 = 1
    /// Set when an earlier attempt found a run damaged: the checkpoint's runs are not used.
    var runsRejected: String? = nil
    /// The store key's cipher, chosen by the key check before any other phase; nil: clear store.
    var cipher: (any StoreCipher)? = nil

    init(found: RecoveryDirectory, fs: any FileSystem, options: LogEngineOptions, manifest: ManifestFile, report: RecoveryReport) {
        self.found = found
        self.fs = fs
        self.options = options
        self.manifest = manifest
        self.report = report
    }
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
    /// Throws `.locked`, `.notAStore`, `.unsupportedFormatVersion`, `.corruption`, I/O errors;
    /// with ``LogEngineOptions/encryption``, `.wrongKey` or `.notEncrypted` before any file changes.
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

    /// Recovers the store in `directory`: chooses its manifest, checks the files against it and
    /// against the checkpoint, replays the log and settles its end, each phase a function with its
    /// own account of what it reads, decides and may change on disk. In order:
    ///
    /// 1. ``RecoveryDirectory/init(directory:fs:)``: lists the directory and reads every
    ///    segment-named file's header, the evidence of whether LogStore wrote it.
    /// 2. ``chooseManifest(_:fs:options:report:)``: the MANIFEST to recover by (the one on disk,
    ///    or in salvage one rebuilt from the segment headers), or a new store; refuses a foreign
    ///    directory or a damaged MANIFEST. ``createStore(_:fs:encryption:report:)`` creates a new one.
    /// 3. ``Recovery/startFromCheckpoint()``: adopts CHECKPOINT's index and resume position, or
    ///    keeps the sequence it proves durable as a witness for the end of replay.
    /// 4. ``Recovery/checkSealedSizes()``: every sealed segment still has the length MANIFEST
    ///    recorded.
    /// 5. ``Recovery/checkManifestIsCurrent()``: MANIFEST is this store's newest (no unlisted
    ///    segment holds committed data; the segments name MANIFEST's store).
    /// 6. ``Recovery/removeStrays()``: removes what interrupted operations left behind.
    /// 7. ``Recovery/replay()``: replays the listed segments after the checkpoint, cuts a torn
    ///    tail, and returns the segment new commits go to.
    /// 8. ``Recovery/catchUpSecondaryIndexes()``, ``Recovery/makeDurable(_:)``,
    ///    ``Recovery/checkWitness()``: brings the checkpoint's secondary indexes up to date, syncs
    ///    what recovery found, and refuses a log shorter than the checkpoint proves.
    /// 9. ``Recovery/upgradeFormat(_:)``: upgrades a format v1 store to the current version.
    ///
    /// Strict mode refuses any damage to durable data before the first phase that changes a file
    /// (strays, a torn tail) runs on it; salvage mode only reads, reports what it skips in
    /// ``RecoveryReport/dropped`` and opens with what is left.
    static func recover(directory: String, fs: any FileSystem, options: LogEngineOptions, runsRejected: String? = nil) throws -> Recovered {
        let found = try RecoveryDirectory(directory: directory, fs: fs)
        var report = RecoveryReport()
        let manifest: ManifestFile
        let cipher: (any StoreCipher)?
        switch try chooseManifest(found, fs: fs, options: options, report: &report) {
        case .use(let chosen):
            // The key check comes first: a wrong key changes nothing.
            cipher = try options.encryption.select(
                storeCipher: chosen.cipher, keyCheck: chosen.keyCheck, storeID: chosen.storeId ?? StoreID(bytes: []),
                path: _joinPath(directory, LogStoreFormat.manifestFileName))
            manifest = chosen
        case .createStore:
            return try createStore(found, fs: fs, encryption: options.encryption, report: report)
        }
        var recovery = Recovery(found: found, fs: fs, options: options, manifest: manifest, report: report)
        recovery.cipher = cipher
        recovery.runsRejected = runsRejected
        try recovery.startFromCheckpoint()
        // Every view's defines carry the record keys, from the first record replay reads.
        let records = cipher.map { RecordCipher(cipher: $0, storeID: manifest.storeId ?? StoreID(bytes: [])) }
        recovery.index.meta.attach(records)
        try recovery.checkSealedSizes()
        try recovery.checkManifestIsCurrent()
        try recovery.removeStrays()
        var tail: SegmentFile
        do {
            tail = try recovery.replay()
            try recovery.catchUpSecondaryIndexes()
        } catch let e as LogStoreError
            where e.code == .corruption && !recovery.checkpointRuns.isEmpty && (e.path?.hasSuffix(".run") ?? false)
        {
            // A run page the checkpoint named is damaged: open again from the log alone (what
            // replay changed on disk so far, a cut torn tail, holds either way).
            options.logger?.warning(
                "an index run is damaged; replaying the whole log", metadata: ["store": "\(directory)", "error": "\(e)"])
            return try recover(directory: directory, fs: fs, options: options, runsRejected: "\(e.message) [\(e.path ?? "")]")
        }
        try recovery.makeDurable(tail)
        try recovery.checkWitness()
        tail = try recovery.upgradeFormat(tail)
        // This process's writes get a key epoch of their own (a new salt: no nonce of an earlier
        // process can repeat).
        try records?.startWriting(after: recovery.index.meta)
        return recovery.finish(tail: tail)
    }

    /// Whether the file at `path` holds a byte other than zero from offset `start` on (false if it
    /// cannot be read).
    static func holdsData(_ fs: any FileSystem, _ path: String, after start: Int) -> Bool {
        guard let f = try? fs.open(path, mode: .readOnly) else { return false }
        defer { try? f.close() }
        guard let size = try? f.size(), size > UInt64(start) else { return false }
        return (try? zeros(f, from: UInt64(start), to: size)) == false
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
        let meta = index.meta
        func read(_ loc: RecordLocation) throws -> ArraySlice<UInt8> {
            guard let seg = segments[loc.segment] else {
                throw LogStoreError(.corruption, "Index points at segment \(loc.segment), which is not part of the store.")
            }
            return try seg.readValue(loc, meta: meta, cache: nil)
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
