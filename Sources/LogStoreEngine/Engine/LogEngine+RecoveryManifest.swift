// Recovery's first phases: what the directory holds, which MANIFEST to recover by, and the
// creation of a new store. LogEngine+Recovery.swift runs them; the phases after the manifest is
// chosen are in LogEngine+RecoveryChecks.swift and LogEngine+RecoveryReplay.swift.

/// What recovery found in the store's directory before deciding anything: its file names and the
/// headers of its segment-named files. Read once, by the first phase; every later phase decides
/// from it, so the files an interrupted operation left are judged as they were at the start.
struct RecoveryDirectory {
    /// The store's directory.
    let path: String
    /// The directory's entries when recovery started.
    let names: [String]
    /// The numbers of the files named like segments, ascending.
    let onDisk: [UInt32]
    /// The headers of those files that start with a valid LogStore segment header, by number.
    let segmentHeaders: [UInt32: SegmentHeader]
    /// Where MANIFEST is.
    let manifestPath: String

    /// Phase 1, the survey. Reads the directory's entries and the first bytes of every file
    /// named like a segment; changes nothing. The segment headers are the evidence that LogStore
    /// wrote this directory: a MANIFEST that is missing, empty or garbled beside such files is a
    /// damaged store (salvage rebuilds the list), not a foreign directory. Throws I/O errors from
    /// listing the directory (an unreadable segment file just has no header here).
    init(directory: String, fs: any FileSystem) throws {
        path = directory
        names = try fs.contentsOfDirectory(atPath: directory)
        manifestPath = _joinPath(directory, LogStoreFormat.manifestFileName)
        onDisk = names.compactMap(LogStoreFormat.segmentNumber(fromFileName:)).sorted()
        segmentHeaders = Dictionary(
            uniqueKeysWithValues: onDisk.compactMap { n in
                LogEngine.readSegmentHeader(fs, _joinPath(directory, LogStoreFormat.segmentFileName(n))).map { (n, $0) }
            })
    }

    /// Whether the directory holds a CHECKPOINT file.
    var hasCheckpoint: Bool { names.contains(LogStoreFormat.checkpointFileName) }
}

/// What ``LogEngine/chooseManifest(_:fs:options:report:)`` decided.
enum ManifestChoice {
    /// Recover by this manifest (MANIFEST's, or one salvage rebuilt).
    case use(ManifestFile)
    /// The directory is new, or a creation stopped before its manifest existed: create the store.
    case createStore
}

extension LogEngine {
    /// Phase 2, the manifest choice. Reads MANIFEST (if present) and decides what to recover by:
    /// MANIFEST as decoded; a new store when the directory is new or its creation was interrupted
    /// (``isNewOrInterruptedCreation(_:_:_:)``); in salvage, a manifest rebuilt from the segment
    /// headers when MANIFEST is missing, damaged or another store's. Changes nothing on disk.
    ///
    /// Throws `.notAStore` when segment-named files exist but none is a LogStore segment (a
    /// foreign directory), and `.corruption` for a CHECKPOINT without any log, or (strict) a
    /// missing or damaged MANIFEST beside LogStore segments: creating a store there would lose
    /// them. Salvage appends the rebuilt manifest and the segments it leaves out to
    /// `report.dropped`.
    static func chooseManifest(
        _ found: RecoveryDirectory, fs: any FileSystem, options: LogEngineOptions, report: inout RecoveryReport
    ) throws -> ManifestChoice {
        let (decoded, manifestProblem) = try readManifest(found, fs: fs, options: options)
        if let decoded { return .use(decoded) }
        if manifestProblem == nil && !found.hasCheckpoint && isNewOrInterruptedCreation(found.onDisk, found.path, fs) {
            // A new store, or one whose creation was interrupted before its manifest existed.
            return .createStore
        }
        if found.segmentHeaders.isEmpty && found.hasCheckpoint {
            // A checkpoint is written only after the log it covers is synced: its log is gone.
            throw LogStoreError(
                .corruption,
                "CHECKPOINT is here but MANIFEST and every segment file are missing: the store's log was deleted. \(LogStoreError.corruptionNextStep)",
                path: _joinPath(found.path, LogStoreFormat.checkpointFileName))
        }
        if found.segmentHeaders.isEmpty {
            // Files named like segments, but none is one (a photo called 000001.log): not ours.
            throw LogStoreError(
                .notAStore,
                "The directory has no MANIFEST and none of its segment-named files (\(found.onDisk.prefix(3).map { LogStoreFormat.segmentFileName($0) }.joined(separator: ", "))) starts with a LogStore segment header: it was not written by LogStore. Point the store at an empty or new directory.",
                path: found.path)
        }
        if options.recovery == .salvage {
            return .use(rebuildManifest(found, problem: manifestProblem, report: &report))
        }
        let what = manifestProblem.map { "MANIFEST is damaged (\($0.message))" } ?? "MANIFEST is missing"
        throw LogStoreError(
            .corruption,
            "\(what), but \(found.segmentHeaders.count) LogStore segment file(s) exist: this is a damaged store. \(LogStoreError.corruptionNextStep)",
            path: found.manifestPath, offset: manifestProblem?.offset, underlying: manifestProblem)
    }

    /// MANIFEST decoded, or nil with why it cannot be used (nil, nil: there is none). Reads
    /// MANIFEST; changes nothing. A MANIFEST that does not decode beside LogStore segments is a
    /// problem to report rather than an error, so that the caller decides between refusing and
    /// salvaging; without segments its decoding error is thrown (`.notAStore`, `.corruption`),
    /// as are I/O errors. In salvage, a MANIFEST that none of the version 2 segments here belongs
    /// to is another store's: its list would drop every segment as foreign, so it is damage like
    /// a garbled one. (Strict open refuses it in ``Recovery/checkManifestIsCurrent()``.)
    static func readManifest(
        _ found: RecoveryDirectory, fs: any FileSystem, options: LogEngineOptions
    ) throws -> (manifest: ManifestFile?, problem: LogStoreError?) {
        var manifestProblem: LogStoreError? = nil
        var decoded: ManifestFile? = nil
        if found.names.contains(LogStoreFormat.manifestFileName) {
            let f = try fs.open(found.manifestPath, mode: .readOnly)
            let bytes = try f.read(at: 0, count: Int(try f.size()))
            try f.close()
            do {
                decoded = try ManifestFile.decode(bytes, path: found.manifestPath)
            } catch let e as LogStoreError where (e.code == .notAStore || e.code == .corruption) && !found.segmentHeaders.isEmpty {
                manifestProblem = e
            }
        }
        if options.recovery == .salvage, let id = decoded?.storeId {
            let ids = Set(found.segmentHeaders.values.compactMap(\.storeId))
            if !ids.isEmpty && !ids.contains(id) {
                manifestProblem = LogStoreError(
                    .corruption, "MANIFEST belongs to store \(id), not to the store of the segment files here", path: found.manifestPath)
                decoded = nil
            }
        }
        return (decoded, manifestProblem)
    }

    /// Salvage's manifest, rebuilt from the segment files present (in memory; salvage writes
    /// nothing). Compaction always replaces a prefix of the replay order and numbers its output
    /// above the tail, so the replay order is: compacted segments, then the others, each in
    /// file-number order. The store is the one most segment headers name, so a foreign segment is
    /// then dropped. A file numbered UInt32.max (never written by LogStore) leaves no number for a
    /// next segment and is left out, like a file without a segment header; each is reported in
    /// `report.dropped`, as is the rebuilt MANIFEST.
    static func rebuildManifest(_ found: RecoveryDirectory, problem: LogStoreError?, report: inout RecoveryReport) -> ManifestFile {
        let segmentHeaders = found.segmentHeaders
        let usable = found.onDisk.filter { $0 < UInt32.max && segmentHeaders[$0] != nil }
        let compacted = Set(usable.filter { segmentHeaders[$0]?.isCompacted == true })
        let order = usable.filter { compacted.contains($0) } + usable.filter { !compacted.contains($0) }
        var votes: [StoreID: Int] = [:]
        for n in usable { if let id = segmentHeaders[n]?.storeId { votes[id, default: 0] += 1 } }
        let id = votes.max { $0.value < $1.value || ($0.value == $1.value && $0.key.description < $1.key.description) }?.key
        // An encrypted store's segments say so; its key check went with MANIFEST (left as zeros,
        // which the key selection reads as "check the key against the key epochs instead").
        let sealed = usable.filter { (segmentHeaders[$0]?.cipher ?? 0) != StoreCipherAlgorithm.none }
        let manifest = ManifestFile(
            version: id == nil ? 1 : ManifestFile.currentVersion, generation: 1, nextSegment: (usable.last ?? 0) + 1,
            segments: order, storeId: id,
            cipher: sealed.count * 2 > usable.count ? segmentHeaders[sealed[0]]?.cipher ?? 0 : StoreCipherAlgorithm.none)
        let why = problem.map { "MANIFEST damaged (\($0.message))" } ?? "MANIFEST missing"
        report.dropped.append(
            .init(
                path: found.manifestPath, offset: 0, bytes: 0, reason: "\(why); segments taken in file-number order, compacted ones first"))
        for n in found.onDisk where !usable.contains(n) {
            report.dropped.append(
                .init(
                    path: _joinPath(found.path, LogStoreFormat.segmentFileName(n)), offset: 0, bytes: 0,
                    reason: n == UInt32.max ? "segment number out of range" : "no LogStore segment header"))
        }
        return manifest
    }

    /// Creates a new store in the surveyed directory (empty, or holding what an interrupted
    /// creation left): segment 1 (``createFirstSegment(directory:fs:storeId:cipher:)``), then a MANIFEST
    /// listing it with a new store id, each renamed into place once synced, so a crash between
    /// them leaves an interrupted creation that the next open completes. Returns the empty store,
    /// with `report.created` set. Throws I/O errors.
    static func createStore(_ found: RecoveryDirectory, fs: any FileSystem, encryption: StoreEncryption, report: RecoveryReport) throws
        -> Recovered
    {
        var report = report
        let storeId = StoreID.random()
        let cipher = encryption.cipher
        let cipherID = cipher?.algorithmID ?? StoreCipherAlgorithm.none
        let keyCheck = try cipher.map { try StoreCrypto.keyCheck($0, storeID: storeId) }
        let segment = try createFirstSegment(directory: found.path, fs: fs, storeId: storeId, cipher: cipherID)
        let manifest = ManifestFile(generation: 1, nextSegment: 2, segments: [1], storeId: storeId, cipher: cipherID, keyCheck: keyCheck)
        try AtomicFileReplace.replaceOrThrow(LogStoreFormat.manifestFileName, in: found.path, with: manifest.encoded(), fs: fs)
        report.created = true
        var index = IndexState()
        index.sequence = 0
        if let cipher {
            let records = RecordCipher(cipher: cipher, storeID: storeId)
            index.meta.attach(records)
            try records.startWriting(after: index.meta)
        }
        let start = UInt64(segment.headerSize)
        return Recovered(
            index: index, segments: [1: segment], manifest: manifest, tail: segment,
            tailOffset: start, report: report,
            segmentInfo: [1: SegmentInfo(length: start, rawBytes: 0, refs: DefineRefs())],
            checkpoint: nil, bytesAfterCheckpoint: 0, cipher: cipher)
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
    static func createFirstSegment(directory: String, fs: any FileSystem, storeId: StoreID, cipher: UInt8) throws -> SegmentFile {
        let name = LogStoreFormat.segmentFileName(1)
        let header = SegmentHeader(segment: 1, baseSequence: 1, storeId: storeId, cipher: cipher)
        try AtomicFileReplace.replaceOrThrow(name, in: directory, with: header.encoded(), fs: fs)
        return SegmentFile(number: 1, file: try fs.open(_joinPath(directory, name), mode: .readWrite), header: header)
    }
}
