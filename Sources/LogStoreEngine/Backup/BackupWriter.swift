import Foundation

/// The destination side of a backup (``LogEngine/backup(to:fileSystem:verification:progress:)``):
/// one directory on one file system, written in the crash-safe order that function documents.
/// Use from one thread; each method is one step, in the order the backup calls them.
final class BackupWriter {
    let directory: String
    let fs: any FileSystem
    /// The MANIFEST already in the destination (an incremental backup), if any.
    private(set) var previousManifest: ManifestFile?
    /// Files this backup created, to remove when it is abandoned (until the MANIFEST is in place).
    private var created: [String] = []
    private var manifestInstalled = false
    /// The bytes copied or appended at once.
    static let chunk = 4 << 20

    init(directory: String, fs: any FileSystem) {
        self.directory = directory
        self.fs = fs
    }

    func path(_ name: String) -> String { _joinPath(directory, name) }

    /// The name segment `number` is copied under until it is whole and synced: `NNNNNN.log.backup.tmp`.
    /// Not a segment's name, and not `NNNNNN.log.tmp` either, which recovery takes for a new
    /// store's interrupted creation (and would create a new, empty store beside).
    static func copyName(_ number: UInt32) -> String { LogStoreFormat.segmentFileName(number) + ".backup.tmp" }
    var markerPath: String { path(LogEngine.backupMarkerFileName) }

    /// Makes sure the destination can take a backup of store `storeId`: missing (created), empty,
    /// the leftovers of an interrupted backup (cleared), or a backup of the same store (kept, for
    /// an incremental backup). Throws `.invalidArgument` otherwise.
    func prepare(storeId: StoreID) throws {
        switch fs.itemKind(atPath: directory) {
        case .file?:
            throw LogStoreError(
                .invalidArgument,
                "The backup destination \(directory) is a file; give a new directory, an empty one, or an earlier backup of this store.",
                path: directory)
        case nil:
            try fs.createDirectory(atPath: directory)
            try fs.syncDirectory(atPath: LogEngine.parentDirectory(of: directory))
            return
        case .directory?:
            break
        }
        let names = try fs.contentsOfDirectory(atPath: directory)
        if names.contains(LogStoreFormat.manifestFileName) {
            let f = try fs.open(path(LogStoreFormat.manifestFileName), mode: .readOnly)
            defer { try? f.close() }
            let manifest = try ManifestFile.decode(try f.read(at: 0, count: Int(try f.size())), path: path(LogStoreFormat.manifestFileName))
            guard manifest.storeId == storeId else {
                throw LogStoreError(
                    .invalidArgument,
                    "The backup destination \(directory) holds another store (store id \(manifest.storeId.map { "\($0)" } ?? "none")); back up into a new or empty directory, or into an earlier backup of this store.",
                    path: directory)
            }
            previousManifest = manifest
            return
        }
        let ours = names.filter { Self.isBackupFile($0) }
        if names.isEmpty { return }
        // An interrupted first backup (its marker is there, its MANIFEST never was): start over.
        if names.contains(LogEngine.backupMarkerFileName) && ours.count == names.count {
            // (LOCK too: beside nothing but a marker it would make the directory look like a store
            // being created.)
            for n in ours { try fs.removeFile(atPath: path(n)) }
            try fs.syncDirectory(atPath: directory)
            return
        }
        throw LogStoreError(
            .invalidArgument,
            "The backup destination \(directory) is not empty (\(names.sorted().prefix(3).joined(separator: ", "))\(names.count > 3 ? ", ..." : "")) and holds no backup of this store. Give a new or empty directory; a backup never writes over other files.",
            path: directory)
    }

    /// Whether a backup may have written `name`.
    static func isBackupFile(_ name: String) -> Bool {
        name.hasSuffix(".tmp") || LogStoreFormat.segmentNumber(fromFileName: name) != nil || name == LogStoreFormat.checkpointFileName
            || name == LogStoreFormat.lockFileName || RunFile.number(fromFileName: name) != nil
    }

    /// Locks the destination against apps and other backups, and writes the marker: an earlier
    /// backup's `LOCK` (an app that has it open refuses the backup with `.locked`), or, in a new
    /// destination, the marker file itself (creating `LOCK` there would make an empty directory
    /// look like a store being created). Returns the lock.
    func lock() throws -> any FileSystemLock {
        let lock = try fs.lock(atPath: previousManifest == nil ? markerPath : path(LogStoreFormat.lockFileName))
        do {
            let f = try fs.open(markerPath, mode: previousManifest == nil ? .readWrite : .createOrTruncate)
            if previousManifest == nil { created.append(markerPath) }
            try f.write(
                Array("A LogStore backup is being written into this directory; it is complete once this file is gone.\n".utf8), at: 0)
            try f.sync()
            try f.close()
            try fs.syncDirectory(atPath: directory)
        } catch {
            lock.unlock()
            throw error
        }
        return lock
    }

    /// One segment of the backup and what to do with it.
    struct SegmentPlan {
        enum Action: Equatable {
            /// The destination holds it already (a sealed segment of an earlier backup).
            case reuse
            /// The destination holds its first bytes (the earlier backup's tail): append the rest.
            case append(from: UInt64)
            /// Copy it whole (as ``BackupWriter/copyName(_:)``, renamed into place once synced).
            case copy
        }
        var number: UInt32
        var file: any FileSystemFile
        /// The bytes of the segment the backup holds.
        var length: UInt64
        var action: Action

        /// Whether the backup writes this segment (a tail that did not grow since the earlier
        /// backup is reused as it is, like a sealed segment).
        var writesBytes: Bool { action == .copy || bytesToCopy > 0 }

        var bytesToCopy: UInt64 {
            switch action {
            case .reuse: return 0
            case .append(let from): return length - from
            case .copy: return length
            }
        }
    }

    /// What to do with segment `number` of the store, `length` bytes of which the backup holds.
    func plan(segment number: UInt32, file: any FileSystemFile, length: UInt64, sealed: Bool) -> SegmentPlan {
        var action = SegmentPlan.Action.copy
        if let previous = previousManifest, previous.segments.contains(number),
            let size = try? LogEngine.fileSize(fs, path(LogStoreFormat.segmentFileName(number)))
        {
            if sealed, previous.sealed[number]?.length == length, size == length {
                action = .reuse
            } else if previous.segments.last == number, size <= length, size > 0, (try? samePrefix(number, file, size)) == true {
                action = .append(from: size)
            }
        }
        return SegmentPlan(number: number, file: file, length: length, action: action)
    }

    /// Whether the destination's segment `number` holds exactly the store's first `size` bytes of it.
    func samePrefix(_ number: UInt32, _ file: any FileSystemFile, _ size: UInt64) throws -> Bool {
        let mine = try fs.open(path(LogStoreFormat.segmentFileName(number)), mode: .readOnly)
        defer { try? mine.close() }
        var at: UInt64 = 0
        while at < size {
            let n = Int(min(UInt64(Self.chunk), size - at))
            guard try mine.read(at: at, count: n) == file.read(at: at, count: n) else { return false }
            at += UInt64(n)
        }
        return true
    }

    /// Removes an earlier backup's CHECKPOINT before anything else changes: until the new
    /// MANIFEST is in place the destination then opens as the earlier backup by replaying it.
    func removeCheckpoint() throws {
        guard previousManifest != nil, fs.itemKind(atPath: path(LogStoreFormat.checkpointFileName)) != nil else { return }
        try fs.removeFile(atPath: path(LogStoreFormat.checkpointFileName))
        try fs.syncDirectory(atPath: directory)
    }

    /// Copies (or appends) what `plan` says, syncing the file; calls `copied` with each chunk's size.
    func copy(_ plan: SegmentPlan, copied: (UInt64) -> Void) throws {
        let target: any FileSystemFile
        var at: UInt64
        switch plan.action {
        case .reuse:
            return
        case .append(let from):
            target = try fs.open(path(LogStoreFormat.segmentFileName(plan.number)), mode: .readWrite)
            at = from
        case .copy:
            let tmp = path(Self.copyName(plan.number))
            target = try fs.open(tmp, mode: .createOrTruncate)
            created.append(tmp)
            at = 0
        }
        defer { try? target.close() }
        // Inside the kernel where the file system can (copy_file_range): one copy of each byte.
        at += try target.copyBytes(from: plan.file, at: at, count: plan.length - at, to: at, chunk: Self.chunk, copied: copied)
        guard at == plan.length else {
            throw LogStoreError(
                .corruption, "Segment \(plan.number) of the store ends at \(at) bytes, before the \(plan.length) its snapshot covers.",
                path: plan.file.path)
        }
        // An appended tail may be longer than the snapshot (an interrupted incremental backup).
        if case .append = plan.action, try target.size() > plan.length { try target.truncate(to: plan.length) }
        try target.sync()
    }

    /// Renames the copies into place and makes the renames durable.
    func installCopies(_ plans: [SegmentPlan]) throws {
        for p in plans where p.action == .copy {
            let name = LogStoreFormat.segmentFileName(p.number)
            try fs.rename(from: path(Self.copyName(p.number)), to: path(name))
            created.removeAll { $0 == path(Self.copyName(p.number)) }
            if previousManifest?.segments.contains(p.number) != true { created.append(path(name)) }
        }
        try fs.syncDirectory(atPath: directory)
    }

    /// Reads back what was copied and compares it with the store's bytes (memcmp: cheaper than a
    /// checksum of each side, and exact).
    func verifyCopies(_ plans: [SegmentPlan]) throws {
        for p in plans {
            let from: UInt64
            switch p.action {
            case .reuse: continue
            case .append(let f): from = f
            case .copy: from = 0
            }
            let f = try fs.open(path(LogStoreFormat.segmentFileName(p.number)), mode: .readOnly)
            defer { try? f.close() }
            guard try f.size() == p.length else {
                throw LogStoreError(
                    .corruption, "The backup's segment \(p.number) has \(try f.size()) bytes after the copy, not \(p.length).", path: f.path
                )
            }
            var at = from
            while at < p.length {
                let n = Int(min(UInt64(Self.chunk), p.length - at))
                guard Self.same(try f.read(at: at, count: n), try p.file.read(at: at, count: n)) else {
                    throw LogStoreError(
                        .corruption,
                        "The backup's segment \(p.number) reads back other bytes than were copied into it at \(at): the destination's storage is failing.",
                        path: f.path, offset: at)
                }
                at += UInt64(n)
            }
        }
    }

    /// Whether two byte arrays are equal (memcmp).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                guard let px = x.baseAddress, let py = y.baseAddress else { return true }
                return memcmp(px, py, x.count) == 0
            }
        }
    }

    /// Replaces the file `name` with `bytes` (atomically) and reads it back.
    func installFile(_ name: String, _ bytes: [UInt8]) throws {
        try AtomicFileReplace.replaceOrThrow(name, in: directory, with: bytes, fs: fs)
        let f = try fs.open(path(name), mode: .readOnly)
        defer { try? f.close() }
        guard Self.same(try f.read(at: 0, count: bytes.count + 1), bytes) else {
            throw LogStoreError(
                .corruption, "The backup's \(name) reads back other bytes than were written: the destination's storage is failing.",
                path: f.path)
        }
    }

    /// Writes the backup's CHECKPOINT (after its MANIFEST: a checkpoint newer than the manifest is
    /// refused) and reads it back.
    func installCheckpoint(_ bytes: [UInt8]) throws {
        try installFile(LogStoreFormat.checkpointFileName, bytes)
    }

    /// Writes the backup's MANIFEST: from now on the destination is the new backup.
    func installManifest(_ manifest: ManifestFile) throws {
        try installFile(LogStoreFormat.manifestFileName, manifest.encoded())
        manifestInstalled = true
        created.removeAll()
    }

    /// Removes the segment files of an earlier backup that the new MANIFEST does not list (the
    /// store compacted them away).
    func removeUnlisted(keeping listed: Set<UInt32>) throws {
        var removed = false
        for name in try fs.contentsOfDirectory(atPath: directory) {
            guard let n = LogStoreFormat.segmentNumber(fromFileName: name), !listed.contains(n) else { continue }
            try fs.removeFile(atPath: path(name))
            removed = true
        }
        if removed { try fs.syncDirectory(atPath: directory) }
    }

    /// Opens the backup as a store and checks that it holds `expected` exactly: the same last
    /// transaction, every record at the same location, the same secondary indexes. With `replay`,
    /// the backup has no checkpoint yet and is opened by replaying its whole log, its secondary
    /// indexes are built again from its records, and the opened engine writes its checkpoint. A backup that does not check out loses its MANIFEST (it no longer opens)
    /// and the call throws `.corruption`. `cipher` is the store's key (nil: a clear store), which
    /// opens the backup of an encrypted store.
    func verifyByOpening(expected: IndexState, replay: Bool, cipher: (any StoreCipher)?) throws {
        var o = LogEngineOptions()
        o.encryption = StoreEncryption(cipher: cipher)
        o.durability = .none
        o.checkpointOnClose = false
        o.autoCompaction = false
        o.checkpointInterval = 0
        o.cacheSize = 1 << 20
        let engine = try LogEngine.open(directory: directory, fileSystem: fs, options: o)
        defer { try? engine.close() }
        let report = engine.recoveryReport
        var problems: [String] = []
        if report.lastSequence != expected.sequence {
            problems.append("it ends at transaction \(report.lastSequence), not \(expected.sequence)")
        }
        if let t = report.truncatedTail { problems.append("opening it cut its tail (\(t))") }
        if !report.dropped.isEmpty { problems.append("opening it dropped damaged bytes") }
        if !replay && !report.checkpointUsed {
            problems.append("its checkpoint was not used (\(report.checkpointRejectedReason ?? "no reason given"))")
        }
        let snapshot = try engine.snapshot()
        let have = EngineSnapshot(index: expected, segments: [:], cache: FrameCache(capacity: 0))
        if Set(snapshot.itemTypes) != Set(have.itemTypes) { problems.append("its item types differ") }
        for type in have.itemTypes where problems.isEmpty {
            if try snapshot.locations(ofType: type).elementsEqual(
                have.locations(ofType: type), by: { $0.key == $1.key && $0.location == $1.location })
            {
                continue
            }
            problems.append("the records of \(type) differ")
        }
        // Secondary indexes: loaded from the checkpoint, or (replayed) built again from the
        // backup's records as the store had them declared; either way equal to the snapshot's.
        for type in expected.secondary.keys.sorted() where problems.isEmpty {
            let wanted = expected.secondaryIndexes(ofType: type)
            if replay { try engine.declareIndexes(wanted.values.map(\.definition), ofType: type) }
            let got = try engine.snapshot().index.secondaryIndexes(ofType: type)
            if got.mapValues(\.entries.count) != wanted.mapValues(\.entries.count)
                || got.mapValues(\.definition) != wanted.mapValues(\.definition)
            {
                problems.append("the secondary indexes of \(type) differ")
            }
        }
        guard problems.isEmpty else {
            try? engine.close()
            try? fs.removeFile(atPath: path(LogStoreFormat.manifestFileName))
            try? fs.syncDirectory(atPath: directory)
            throw LogStoreError(
                .corruption,
                "The backup in \(directory) did not verify: \(problems.joined(separator: "; ")). Its MANIFEST was removed, so it does not open; back up again.",
                path: directory)
        }
        if replay { try engine.writeCheckpoint() }
        try engine.close()
    }

    /// Removes the marker: the backup is complete.
    func finish() throws {
        try fs.removeFile(atPath: markerPath)
        try fs.syncDirectory(atPath: directory)
    }

    /// After a failure before the MANIFEST was installed: removes what this backup created
    /// (best effort), leaving a new destination empty and an earlier backup as it was (its tail
    /// perhaps longer by whole transactions). Later failures leave the files in place.
    func abandon() {
        guard !manifestInstalled else { return }
        for p in created.reversed() { try? fs.removeFile(atPath: p) }
        if previousManifest != nil { try? fs.removeFile(atPath: markerPath) }
        try? fs.syncDirectory(atPath: directory)
    }
}
