import LogStoreCommandSupport
public import LogStoreEngine

/// Reads a store directory's files directly, without opening a ``LogEngine``: checks every
/// checksum and structure (manifest, segment headers, frames, transactions, records, values),
/// replays the log into an index of its own and measures live and dead bytes.
///
/// It works on stores the engine refuses to open (damaged manifest, damage in the middle of a
/// segment): every problem becomes a ``StoreIssue`` with the file and offset instead of an error.
/// It never writes and never takes the store's lock: callers that need the files to hold still
/// (everything but a forensic look at a live store) take the lock first.
///
/// Segments are read by recovery's own `SegmentReader` (Docs/Design.md, "Recovery"), so the frame
/// rules (transactions, sequence numbers, compacted segments, torn tails) are the engine's, not a
/// copy: segments in manifest order; a transaction counts once its commit frame is valid; a
/// fault stops the replay of its segment into the index (later transactions of that segment are counted in
/// ``StoreScan/transactionsAfterDamage``); a CRC-valid transaction whose records do not decode is
/// skipped alone; a fault at the end of the last segment with nothing valid after it is a torn
/// tail (a warning: the next open cuts it). Unlike the engine it keeps looking after a fault, so
/// the report names every damaged place, not only the first.
///
/// Runs on the calling thread; reads one segment file into memory at a time.
public struct StoreScanner: Sendable {
    /// How far a scan is; passed to the `progress` callback of ``scan(progress:)``.
    public struct Progress: Sendable, Hashable {
        /// Segment bytes scanned so far.
        public var bytesDone: UInt64
        /// Segment bytes to scan in all.
        public var bytesTotal: UInt64
        /// The file being scanned.
        public var path: String
    }

    /// The store directory (absolute path).
    public var directory: String
    /// Where the files are read from.
    public var fileSystem: any FileSystem
    /// Whether every put's value is decoded as an ``AttributeValue`` (a failure is a `.value`
    /// issue). LogStore always writes attribute values; turn this off for engine-level stores
    /// that hold other bytes.
    public var decodeValues: Bool
    /// The store key's cipher for an encrypted store (nil: a clear store, or no key given): it
    /// opens the sealed records, CHECKPOINT and run files. Without it, an encrypted store's
    /// records and checkpoint are reported as ones that cannot be read.
    public var cipher: (any StoreCipher)?

    /// Creates a scanner for `directory`, with the store key's `cipher` for an encrypted store.
    /// Cheap; reads nothing until ``scan(progress:)``.
    public init(
        directory: String, fileSystem: any FileSystem = POSIXFileSystem(), decodeValues: Bool = true, cipher: (any StoreCipher)? = nil
    ) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.decodeValues = decodeValues
        self.cipher = cipher
    }

    /// Scans the store. `progress` is called on the calling thread after each segment and every
    /// few MiB inside one.
    ///
    /// Throws only when the directory itself cannot be listed (`.io`, `.permissionDenied`,
    /// `.notAStore` if it is a file); damage of any kind is reported in ``StoreScan/issues``.
    public func scan(progress: ((Progress) -> Void)? = nil) throws -> StoreScan {
        var run = ScanRun(directory: directory, fs: fileSystem, decodeValues: decodeValues, progress: progress)
        run.cipher = cipher
        try run.run()
        return run.scan
    }
}

/// The state of one scan. Internal; see ``StoreScanner``.
struct ScanRun {
    let directory: String
    let fs: any FileSystem
    let decodeValues: Bool
    let progress: ((StoreScanner.Progress) -> Void)?
    /// The store key's cipher, if given: opens sealed records (attached to ``meta`` once MANIFEST
    /// names the store), the sealed CHECKPOINT and runs.
    var cipher: (any StoreCipher)? = nil
    var scan: StoreScan
    /// The sequence number of the last transaction replayed into the index (the engine's
    /// `index.sequence`).
    var applied: UInt64 = 0
    /// MANIFEST as decoded (for the version 2 checks: store id, sealed lengths).
    var manifestFile: ManifestFile? = nil
    /// The defines replayed so far (format 4 segments: type ids, dictionaries, key epochs).
    var meta = MetaTable()
    var bytesDone: UInt64 = 0
    var bytesTotal: UInt64 = 0

    init(directory: String, fs: any FileSystem, decodeValues: Bool, progress: ((StoreScanner.Progress) -> Void)?) {
        self.directory = directory
        self.fs = fs
        self.decodeValues = decodeValues
        self.progress = progress
        self.scan = StoreScan(directory: directory)
    }

    mutating func issue(_ severity: StoreIssue.Severity, _ kind: StoreIssue.Kind, _ path: String, _ offset: Int?, _ message: String) {
        scan.issues.append(StoreIssue(severity, kind, path: path, offset: offset.map { UInt64($0) }, message))
    }

    mutating func run() throws {
        if fs.itemKind(atPath: directory) == .file {
            throw LogStoreError(.notAStore, "The store path is a file, not a directory.", path: directory)
        }
        let names = try fs.contentsOfDirectory(atPath: directory).sorted()
        for name in names {
            let path = _joinPath(directory, name)
            guard fs.itemKind(atPath: path) == .file else { continue }
            var size: UInt64 = 0
            do {
                let f = try fs.open(path, mode: .readOnly)
                defer { try? f.close() }
                size = try f.size()
            } catch {
                issue(.damage, .file, path, nil, "cannot read the file: \(error)")
            }
            let lower = name.lowercased()
            let number = LogStoreFormat.segmentNumber(fromFileName: name)
            let role: StoreScan.File.Role =
                name == LogStoreFormat.manifestFileName
                ? .manifest
                : name == LogStoreFormat.lockFileName
                    ? .lock
                    : number != nil
                        ? .segment
                        : name.hasSuffix(".tmp")
                            ? .temporary
                            : (lower.contains("checkpoint") || lower.hasSuffix(".ckpt"))
                                ? .checkpoint
                                : RunFile.number(fromFileName: name) != nil ? .run : .other
            scan.files.append(.init(name: name, size: size, role: role, segmentNumber: number, listed: false))
        }

        // Manifest (or, when it is missing or damaged, the segment files in number order, as the
        // engine's salvage does).
        let manifestPath = _joinPath(directory, LogStoreFormat.manifestFileName)
        let onDisk = scan.files.compactMap(\.segmentNumber).sorted()
        var order = onDisk
        if scan.files.contains(where: { $0.role == .manifest }) {
            do {
                let f = try fs.open(manifestPath, mode: .readOnly)
                defer { try? f.close() }
                let bytes = try f.read(at: 0, count: Int(try f.size()))
                let m = try ManifestFile.decode(bytes, path: manifestPath)
                scan.manifest = .init(
                    version: m.version, generation: m.generation, nextSegment: m.nextSegment, segments: m.segments,
                    storeId: m.storeId?.description)
                manifestFile = m
                order = m.segments
                if m.cipher != StoreCipherAlgorithm.none, let cipher, let id = m.storeId {
                    meta.attach(RecordCipher(cipher: cipher, storeID: id))
                }
            } catch let e as LogStoreError {
                let kind: StoreIssue.Kind =
                    e.code == .unsupportedFormatVersion
                    ? .unsupportedVersion : e.code == .corruption || e.code == .notAStore ? .manifest : .file
                issue(
                    .damage, kind, manifestPath, e.offset.map { Int($0) }, e.message + " Segments are checked in file-number order instead."
                )
            }
        } else if onDisk.isEmpty {
            issue(
                .damage, .manifest, manifestPath, nil, "MANIFEST is missing and there are no segment files: this is not a LogStore store.")
        } else {
            issue(
                .damage, .manifest, manifestPath, nil,
                "MANIFEST is missing. Segments are checked in file-number order; `salvage` recovers them.")
        }

        // Files an interrupted operation left, and files this build cannot check.
        let listed = Set(order)
        for i in scan.files.indices {
            let f = scan.files[i]
            let path = _joinPath(directory, f.name)
            switch f.role {
            case .segment:
                if let n = f.segmentNumber, listed.contains(n) {
                    scan.files[i].listed = true
                    bytesTotal += f.size
                } else if let n = f.segmentNumber, let m = manifestFile, n >= m.nextSegment, f.size > UInt64(SegmentHeader.maxSize),
                    LogEngine.readSegmentHeader(fs, path).map({ !$0.isCompacted && $0.segment == n }) ?? true
                {
                    // As the engine's open decides: a roll-over never appends before MANIFEST lists
                    // its segment, and compaction output is flagged.
                    issue(
                        .damage, .manifest, path, nil,
                        "segment \(n) holds transactions but MANIFEST (generation \(m.generation), next segment \(m.nextSegment)) does not list it: MANIFEST is an older copy or another store's; `salvage` replays it after the listed segments"
                    )
                } else {
                    issue(
                        .warning, .strayFile, path, nil,
                        "segment file not listed in MANIFEST (left by an interrupted roll-over or compaction); the next open removes it")
                }
            case .temporary:
                issue(.warning, .strayFile, path, nil, "temporary file left by an interrupted manifest rewrite; the next open removes it")
            case .checkpoint:
                // A checkpoint is only an accelerator: a damaged one is ignored by open, which
                // replays the log instead. It is still damage to report (the file is wrong).
                do {
                    let f = try fs.open(path, mode: .readOnly)
                    defer { try? f.close() }
                    let bytes = try f.read(at: 0, count: Int(try f.size()))
                    // Format 4: the run files it names are opened and checked page by page too.
                    switch CheckpointFile.read(bytes, directory: directory, fs: fs, validatingRuns: true, cipher: cipher) {
                    case .success(let cp):
                        scan.checkpoint = (cp.sequence, cp.generation, cp.createdAtMillis)
                        scan.checkpointIndexes = cp.index.secondarySummaries
                        let listed = Set(order)
                        if let missing = cp.segments.first(where: { !listed.contains($0.number) }) {
                            issue(
                                .warning, .checkpoint, path, nil,
                                "checkpoint (sequence \(cp.sequence)) names segment \(missing.number), which MANIFEST no longer lists; open ignores it and replays the log"
                            )
                        } else if cp.storeId == manifestFile?.storeId {
                            // The checkpoint is a witness: written after the log it covers was synced.
                            for s in cp.segments {
                                let size = scan.files.first { $0.segmentNumber == s.number }?.size
                                if let size, size < s.length {
                                    issue(
                                        .damage, .file, _joinPath(directory, LogStoreFormat.segmentFileName(s.number)), Int(size),
                                        "segment \(s.number) holds \(size) bytes, but the checkpoint recorded \(s.length) committed, synced bytes of it: it was truncated, and open refuses"
                                    )
                                }
                            }
                        }
                    case .failure(let problem):
                        issue(
                            .damage, .checkpoint, problem.path, problem.offset.map { Int(clamping: $0) },
                            "checkpoint damaged: \(problem.message); open ignores it and replays the log, and the next clean close writes a new one"
                        )
                    }
                } catch {
                    issue(.damage, .checkpoint, path, nil, "checkpoint unreadable: \(error)")
                }
            case .manifest, .lock, .run, .other:
                break
            }
        }

        for (i, number) in order.enumerated() {
            try scanSegment(number, isLast: i == order.count - 1)
        }
        finish()
    }

    mutating func report(_ path: String) {
        progress?(.init(bytesDone: bytesDone, bytesTotal: bytesTotal, path: path))
    }

    mutating func scanSegment(_ number: UInt32, isLast: Bool) throws {
        let path = _joinPath(directory, LogStoreFormat.segmentFileName(number))
        var seg = StoreScan.Segment(number: number, path: path, fileSize: 0)
        defer { scan.segments.append(seg) }
        guard fs.itemKind(atPath: path) == .file else {
            if isLast && scan.manifest != nil && (manifestFile?.version ?? 1) < 2 {
                issue(
                    .warning, .file, path, nil,
                    "the last segment listed in MANIFEST was never created (interrupted roll-over); the next open creates it")
            } else {
                issue(.damage, .file, path, nil, "segment \(number) is listed in MANIFEST but its file is missing")
                seg.damaged = true
            }
            return
        }
        let bytes: [UInt8]
        do {
            let f = try fs.open(path, mode: .readOnly)
            defer { try? f.close() }
            bytes = try f.read(at: 0, count: Int(try f.size()))
        } catch {
            issue(.damage, .file, path, nil, "cannot read the segment: \(error)")
            seg.damaged = true
            return
        }
        seg.fileSize = UInt64(bytes.count)
        scan.segmentBytes += UInt64(bytes.count)
        if let sealed = manifestFile?.sealed[seg.number], sealed.length != UInt64(bytes.count) {
            issue(
                .damage, .file, path, Int(min(sealed.length, UInt64(bytes.count))),
                "sealed segment \(seg.number) is \(bytes.count) bytes, but MANIFEST recorded \(sealed.length) when it was sealed (transactions up to \(sealed.lastSequence)): it changed after it was sealed"
            )
            seg.damaged = true
        }
        bytes.withUnsafeBytes { buf in scanSegmentBytes(buf, path: path, isLast: isLast, seg: &seg) }
        bytesDone += UInt64(bytes.count)
        report(path)
    }

    mutating func scanSegmentBytes(_ buf: UnsafeRawBufferPointer, path: String, isLast: Bool, seg: inout StoreScan.Segment) {
        let number = seg.number
        let compacted: Bool
        let version: UInt16
        switch SegmentHeader.decode(buf) {
        case .ok(let h):
            seg.baseSequence = h.baseSequence
            compacted = h.isCompacted
            version = h.version
            if let id = h.storeId, let mine = manifestFile?.storeId, id != mine {
                issue(
                    .damage, .segmentHeader, path, 24,
                    "the segment belongs to store \(id), not to this store (\(mine)); it was copied here from another store")
                seg.damaged = true
                return
            }
            guard h.segment == number else {
                issue(
                    .damage, .segmentHeader, path, 12,
                    "the header names segment \(h.segment) but the file is segment \(number); the whole segment is unusable")
                seg.damaged = true
                return
            }
        case .newerVersion(let v):
            issue(
                .damage, .unsupportedVersion, path, 8,
                "segment written by format version \(v); this build reads up to \(SegmentHeader.currentVersion)")
            seg.damaged = true
            return
        case .notASegment(let why):
            if isLast && buf.count <= SegmentHeader.maxSize && (manifestFile?.version ?? 1) < 2 {
                issue(
                    .warning, .tornTail, path, 0,
                    "segment header torn while the segment was being created (\(why)); the next open rewrites it")
            } else {
                issue(.damage, .segmentHeader, path, 0, "bad segment header: \(why); the whole segment is unusable")
                seg.damaged = true
            }
            return
        }
        let headerSize = SegmentHeader.size(version: version)
        scan.overheadBytes += UInt64(headerSize)

        /// Set at the first damage: the scan keeps reading (to name every damaged place) but, like
        /// strict recovery, replays nothing after it into the index.
        var damaged = false
        var nextReport = headerSize + (8 << 20)
        let segmentStart = bytesDone
        // The frame rules are recovery's own (SegmentReader); the scanner reports instead of throwing.
        // Its closures never throw, so neither does the read.
        let outcome = try? SegmentReader.read(
            buf, from: headerSize, version: version, compacted: compacted, isLast: isLast, lastSequence: applied,
            lastIsExact: !scan.hasDamage,
            onTransaction: { frames in
                let last = frames[frames.count - 1]
                if last.frameOffset >= nextReport {
                    nextReport = last.frameOffset + (8 << 20)
                    self.progress?(.init(bytesDone: segmentStart + UInt64(last.frameOffset), bytesTotal: self.bytesTotal, path: path))
                }
                for f in frames {
                    seg.frames += 1
                    self.scan.frames += 1
                    seg.storedPayloadBytes += UInt64(f.header.storedLength)
                    seg.rawPayloadBytes += UInt64(f.header.rawLength)
                    self.scan.storedPayloadBytes += UInt64(f.header.storedLength)
                    self.scan.rawPayloadBytes += UInt64(f.header.rawLength)
                    self.scan.overheadBytes += UInt64(LogFrame.headerSize(version: version))
                }
                let sequence = last.header.sequence
                // The replay as of the checkpoint's sequence, which its runs must equal.
                if !damaged, let covered = self.scan.checkpoint?.sequence, sequence > covered, self.scan.indexAtCheckpoint == nil {
                    self.scan.indexAtCheckpoint = self.scan.index
                }
                let replayed =
                    version >= 4
                    ? self.replayRecords(frames, buf: buf, segment: number, path: path, apply: !damaged, seg: &seg)
                    : self.replayTransaction(frames, buf: buf, segment: number, path: path, apply: !damaged)
                guard replayed else { return false }
                if damaged {
                    self.scan.transactionsAfterDamage += 1
                } else {
                    self.applied = sequence
                    seg.transactions += 1
                    self.scan.transactions += 1
                    if seg.firstSequence == nil { seg.firstSequence = sequence }
                    seg.lastSequence = sequence
                    if self.scan.firstSequence == nil { self.scan.firstSequence = sequence }
                    self.scan.lastSequence = sequence
                }
                return true
            },
            onDamage: { d in
                if version >= 4 {
                    LogEngine.harvestDefines(
                        buf, from: d.offset, to: d.resumeAt ?? buf.count, base: 0, segment: number, into: &self.meta)
                }
                var message = d.reason
                if d.kind == .frame, let lost = d.lostTransaction { message += "; transaction \(lost) is lost with it" }
                self.issue(.damage, d.kind == .frame ? .frame : .transaction, path, d.offset, message)
                damaged = true
                seg.damaged = true
                return .resume
            })
        if let outcome, outcome.zeroTail { scan.preallocatedBytes += UInt64(buf.count - outcome.validEnd) }
        if let torn = outcome?.tornTail {
            if damaged {
                self.issue(.damage, torn.kind == .frame ? .frame : .transaction, path, torn.offset, torn.reason)
            } else {
                self.issue(
                    .warning, .tornTail, path, torn.validEnd,
                    "\(buf.count - torn.validEnd) bytes of an interrupted append (\(torn.reason)); the next open cuts them")
            }
        }
    }

    struct Op {
        var tag: RecordOperation.Tag
        var type: String
        var key: RecordKey
        var entry: ScanEntry
    }

    /// Decodes one committed transaction and, when `apply`, replays it into the index.
    /// Returns false (after recording an issue) if its payloads do not decompress or decode.
    mutating func replayTransaction(
        _ frames: [SegmentReader.Frame], buf: UnsafeRawBufferPointer, segment: UInt32, path: String, apply: Bool
    ) -> Bool {
        var ops: [Op] = []
        let sequence = frames[0].header.sequence
        for f in frames {
            let stored = UnsafeRawBufferPointer(rebasing: buf[f.payloadOffset..<(f.payloadOffset + f.header.storedLength)])
            var decompressed: [UInt8]? = nil
            if f.header.compressed {
                guard let out = LZ4.decompress(stored, rawLength: f.header.rawLength) else {
                    issue(
                        .damage, .frame, path, f.frameOffset,
                        "LZ4 payload does not decompress to its announced \(f.header.rawLength) bytes; transaction \(sequence) is unusable")
                    return false
                }
                decompressed = out
            }
            let share = Double(f.header.storedLength) / Double(max(1, f.header.rawLength))
            let ok: Bool = {
                func each(_ payload: UnsafeRawBufferPointer) -> Bool {
                    do {
                        try DecodedRecord.decodeAll(payload) { rec in
                            scan.records += 1
                            let size = Self.encodedSize(rec)
                            var crc: UInt32 = 0
                            if rec.op == .put || rec.op == .putAt {
                                let value = UnsafeRawBufferPointer(rebasing: payload[rec.valueOffset..<(rec.valueOffset + rec.valueLength)])
                                crc = CRC32C.checksum(value)
                                if decodeValues {
                                    do {
                                        _ = try AttributeValue.decode(value)
                                        scan.valuesDecoded += 1
                                    } catch let e as LogStoreError {
                                        issue(
                                            .damage, .value, path, f.frameOffset,
                                            "the value of \(rec.type) key \(rec.key) (transaction \(sequence), byte \(rec.valueOffset) of the frame's decoded payload) is not a valid attribute value: \(e.message)"
                                        )
                                    }
                                }
                            }
                            // A compacted segment's frame holds records of many transactions: each
                            // putAt carries its own (the frame's sequence is only the largest).
                            let loc = RecordLocation(
                                segment: segment, frameOffset: UInt32(f.frameOffset), valueOffset: UInt32(rec.valueOffset),
                                valueLength: UInt32(rec.valueLength), sequence: rec.op == .putAt ? rec.sequence : sequence)
                            ops.append(
                                Op(
                                    tag: rec.op, type: rec.type, key: rec.key,
                                    entry: ScanEntry(location: loc, valueCRC: crc, rawSize: size, storedShare: Double(size) * share)))
                        }
                        return true
                    } catch let e as LogStoreError {
                        issue(
                            .damage, .record, path, f.frameOffset,
                            "\(e.message) (byte \(e.offset ?? 0) of the frame's decoded payload); transaction \(sequence) is unusable")
                        return false
                    } catch {
                        issue(.damage, .record, path, f.frameOffset, "\(error); transaction \(sequence) is unusable")
                        return false
                    }
                }
                if let decompressed { return decompressed.withUnsafeBytes { each($0) } }
                return each(stored)
            }()
            if !ok { return false }
        }
        guard apply else { return true }
        applyOps(ops)
        return true
    }

    /// Decodes one committed transaction of format 4 frames and, when `apply`, replays it into
    /// the index and its defines into ``meta``. Each put's value is decompressed (with its
    /// dictionary) to check its length and checksum it, and decoded when ``decodeValues``. Returns
    /// false (after recording an issue naming the record's offset) if a record does not decode, names a
    /// type or dictionary no define before it names, or its value does not decompress to its
    /// length. Counts what compression saved in `seg` and the scan's raw bytes.
    mutating func replayRecords(
        _ frames: [SegmentReader.Frame], buf: UnsafeRawBufferPointer, segment: UInt32, path: String, apply: Bool,
        seg: inout StoreScan.Segment
    ) -> Bool {
        var ops: [Op] = []
        var next = meta
        var expansion: UInt64 = 0
        let transaction = frames[frames.count - 1].header.sequence
        for f in frames {
            let payload = UnsafeRawBufferPointer(rebasing: buf[f.payloadOffset..<(f.payloadOffset + f.header.storedLength)])
            var failure: String? = nil
            var failedAt = f.payloadOffset
            do {
                func visit(_ sealed: RecordCodec.Fields, _ at: Int, _ sequence: UInt64) throws {
                    let offset = f.payloadOffset + at
                    failedAt = offset
                    let stored = UnsafeRawBufferPointer(rebasing: payload[at..<(at + sealed.length)])
                    let location = RecordLocation(
                        segment: segment, offset: UInt32(offset), length: UInt32(sealed.length), sequence: sequence)
                    scan.records += 1
                    let known = next
                    try RecordCodec.withOpened(stored, sealed, meta: known, path: path, offset: UInt64(offset)) { record, fields in
                        try visitOpened(record, fields, offset, location, sequence)
                    }
                }
                func visitOpened(
                    _ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, _ offset: Int, _ location: RecordLocation,
                    _ sequence: UInt64
                ) throws {
                    if fields.op == .define {
                        try next.apply(fields, record: record, location: location)
                        return
                    }
                    if (!apply || scan.hasDamage) && next.typeName(fields.typeID) == nil {
                        // After damage (which may have taken the define), as salvage does: the
                        // type keeps a reserved name that says its define was lost.
                        try? next.defineType(fields.typeID, name: "\(LogEngine.salvagedTypePrefix)\(fields.typeID)")
                    }
                    guard let type = next.typeName(fields.typeID) else {
                        throw LogStoreError(.corruption, "a record of type id \(fields.typeID), which no define before it names")
                    }
                    let key = RecordKey(UnsafeRawBufferPointer(rebasing: record[fields.key]))
                    var crc: UInt32 = 0
                    if fields.op == .put {
                        crc = try RecordCodec.withValue(record, fields, meta: next, path: path, offset: UInt64(offset)) { value in
                            if decodeValues {
                                do {
                                    _ = try AttributeValue.decode(value)
                                    scan.valuesDecoded += 1
                                } catch let e as LogStoreError {
                                    issue(
                                        .damage, .value, path, offset,
                                        "the value of \(type) key \(key) (transaction \(sequence)) is not a valid attribute value: \(e.message)"
                                    )
                                }
                            }
                            return CRC32C.checksum(value)
                        }
                        expansion += UInt64(fields.rawLength) - UInt64(min(fields.rawLength, fields.content.count))
                    }
                    let tag: RecordOperation.Tag = fields.op == .put ? .put : fields.op == .delete ? .delete : .deleteAll
                    ops.append(
                        Op(
                            tag: tag, type: type, key: key,
                            entry: ScanEntry(location: location, valueCRC: crc, rawSize: fields.length, storedShare: Double(fields.length)))
                    )
                }
                try LogFrame.forEachRecord(payload, f.header, visit)
            } catch let e as _DecodeError {
                failedAt = f.payloadOffset + e.offset
                failure = "malformed record: \(e.reason)"
            } catch let e as LogStoreError {
                failure = e.message
            } catch {
                failure = "\(error)"
            }
            if let failure {
                issue(.damage, .record, path, failedAt, "\(failure); transaction \(transaction) is unusable")
                return false
            }
        }
        seg.rawPayloadBytes += expansion
        scan.rawPayloadBytes += expansion
        // Defines count even after damage (the records that use them come later).
        meta = next
        guard apply else { return true }
        applyOps(ops)
        return true
    }

    /// Replays decoded operations into the scan's index and per-type counts.
    mutating func applyOps(_ ops: [Op]) {
        for op in ops {
            switch op.tag {
            case .put, .putAt:
                scan.index[op.type, default: [:]][op.key] = op.entry
                scan.types[op.type, default: .init()].puts += 1
            case .delete:
                scan.index[op.type]?.removeValue(forKey: op.key)
                if scan.index[op.type]?.isEmpty == true { scan.index[op.type] = nil }
                scan.types[op.type, default: .init()].deletes += 1
            case .deleteAll:
                scan.index[op.type] = nil
                scan.types[op.type, default: .init()].deleteAlls += 1
            }
        }
    }

    /// The size of a record as the engine encodes it (minimal varints).
    static func encodedSize(_ rec: DecodedRecord) -> Int {
        func varint(_ n: Int) -> Int {
            var n = UInt64(n)
            var size = 1
            while n >= 0x80 {
                n >>= 7
                size += 1
            }
            return size
        }
        let t = rec.type.utf8.count
        var size = 1 + varint(t) + t
        if rec.op != .deleteAll { size += varint(rec.key.count) + rec.key.count }
        if rec.op == .putAt { size += varint(Int(clamping: rec.sequence)) }
        if rec.op == .put || rec.op == .putAt { size += varint(rec.valueLength) + rec.valueLength }
        return size
    }

    /// Totals that need the final index.
    mutating func finish() {
        if let covered = scan.checkpoint?.sequence, scan.indexAtCheckpoint == nil, scan.lastSequence == covered {
            scan.indexAtCheckpoint = scan.index
        }
        var bySegment: [UInt32: Int] = [:]
        for (i, s) in scan.segments.enumerated() { bySegment[s.number] = i }
        var live = 0.0
        for (type, entries) in scan.index {
            var t = scan.types[type, default: .init()]
            var typeLive = 0.0
            for (_, e) in entries {
                t.liveRecords += 1
                t.liveValueBytes += UInt64(e.location.length)
                scan.liveRawBytes += UInt64(e.rawSize)
                typeLive += e.storedShare
                if let i = bySegment[e.location.segment] {
                    scan.segments[i].liveBytes += UInt64(e.storedShare.rounded())
                    scan.segments[i].liveRecords += 1
                }
            }
            t.liveBytes = UInt64(typeLive.rounded())
            live += typeLive
            scan.types[type] = t
        }
        scan.liveBytes = UInt64(live.rounded())
        report(scan.segments.last?.path ?? directory)
    }
}
