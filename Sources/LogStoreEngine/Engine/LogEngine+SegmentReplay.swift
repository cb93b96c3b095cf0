import Logging

// Replaying one segment: the windowed stream over a file and the scan of one window, shared by
// full replay and replay after a checkpoint. LogEngine+RecoveryReplay.swift decides which
// segments to replay and what their damage means for the store.

extension LogEngine {
    enum ScanResult {
        /// Valid data ends here (the tail after it, if any, is cut or reported); the segment's
        /// header if it could be read. `zeroTail`: only zeros follow, up to the end of what was
        /// scanned (SegmentReader rule 6: preallocated space, which stays).
        case end(UInt64, SegmentHeader?, zeroTail: Bool = false)
        /// The last segment's header is torn and it holds nothing: rewrite it.
        case recreateHeader
    }

    /// How many bytes of a segment recovery reads at a time (doubled while one transaction does not
    /// fit). Recovery's memory is bounded by this and the largest transaction, not by the segment.
    static let recoveryWindow = 8 << 20

    /// Replays segment `number` from file offset `from` (0: from its header) in windows of
    /// ``recoveryWindow`` bytes: each window is scanned as far as whole transactions go, and the
    /// next one starts where they end. Damage, or a transaction larger than the window, makes the
    /// window grow (to the rest of the file at most), because only the bytes after it can decide
    /// what it is (SegmentReader rules 4 and 5).
    static func streamSegment(
        _ file: any FileSystemFile, size: UInt64, from: UInt64, header known: SegmentHeader?, number: UInt32,
        path: String, isLast: Bool, storeId: StoreID?, index: inout IndexState, info: inout SegmentInfo,
        dead: inout DeadBytes, report: inout RecoveryReport, options: LogEngineOptions
    ) throws -> ScanResult {
        var header = known
        var position = from
        var window = recoveryWindow
        while true {
            let remaining = size - position
            let count = Int(min(UInt64(window), remaining))
            let atEnd = UInt64(count) == remaining
            let bytes = try file.read(at: position, count: count)
            let result = try bytes.withUnsafeBytes { buf in
                try scanSegment(
                    buf, base: Int(position), header: header, number: number, path: path, isLast: isLast, storeId: storeId,
                    endIsFileEnd: atEnd, index: &index, info: &info, dead: &dead, report: &report, options: options)
            }
            switch result {
            case .recreateHeader:
                return result
            case .end(let validEnd, let h, let zeroTail):
                if atEnd { return result }
                // No header: salvage dropped the whole segment.
                guard let h else { return .end(size, nil) }
                header = h
                // Zeros to the end of the window: if the rest of the file is zeros too, they are
                // preallocated space (SegmentReader rule 6), read window by window, not all at once.
                if zeroTail, try zeros(file, from: position + UInt64(count), to: size) {
                    return .end(validEnd, h, zeroTail: true)
                }
                // No whole transaction in this window: it needs a bigger one.
                if validEnd <= position { window = window.multipliedReportingOverflow(by: 2).overflow ? Int.max : window * 2 }
                position = max(position, validEnd)
            }
        }
    }

    /// Whether `file` holds only zero bytes in `from..<to`, read in windows of ``recoveryWindow``.
    static func zeros(_ file: any FileSystemFile, from: UInt64, to: UInt64) throws -> Bool {
        var at = from
        while at < to {
            let bytes = try file.read(at: at, count: Int(min(UInt64(recoveryWindow), to - at)))
            if bytes.isEmpty { return true }
            guard bytes.withUnsafeBytes({ SegmentReader.isZero($0, from: 0) }) else { return false }
            at += UInt64(bytes.count)
        }
        return true
    }

    /// Replays one segment into `index` (Docs/Design.md, "Recovery").
    ///
    /// `buf` holds the segment's bytes from offset `base` on. With `header == nil` the buffer
    /// starts at the segment header (`base == 0`), which is decoded and checked here; otherwise
    /// the caller checked it (resuming after a checkpoint). Offsets in locations, reports and
    /// errors are file offsets.
    ///
    /// Normal segments: transactions of data frames ending in a commit frame, each with a
    /// sequence number above every earlier one. Compacted segments (header flag): commit frames
    /// only, of `putAt` records, frame sequences non-decreasing (several frames can share the
    /// last record's sequence); the index's sequence becomes the largest seen.
    static func scanSegment(
        _ buf: UnsafeRawBufferPointer, base: Int, header known: SegmentHeader?, number: UInt32,
        path: String, isLast: Bool, storeId: StoreID?, endIsFileEnd: Bool = true, index: inout IndexState, info: inout SegmentInfo,
        dead: inout DeadBytes, report: inout RecoveryReport, options: LogEngineOptions
    ) throws -> ScanResult {
        let segmentHeader: SegmentHeader
        var offset: Int
        if let known {
            segmentHeader = known
            offset = 0
        } else {
            switch SegmentHeader.decode(buf) {
            case .ok(let h):
                guard h.segment == number else {
                    if options.recovery == .salvage {
                        report.dropped.append(
                            .init(path: path, offset: 0, bytes: UInt64(buf.count), reason: "segment header names segment \(h.segment)"))
                        return .end(UInt64(buf.count), nil)
                    }
                    throw LogStoreError(
                        .corruption, "Segment header names segment \(h.segment), but the file is segment \(number).", path: path, offset: 12
                    )
                }
                if let id = h.storeId, id != storeId {
                    let message =
                        "Segment \(number) belongs to store \(id), not to this store (\(storeId.map(\.description) ?? "format version 1")): it was copied here from another store."
                    if options.recovery == .salvage {
                        report.dropped.append(.init(path: path, offset: 0, bytes: UInt64(buf.count), reason: message))
                        return .end(UInt64(buf.count), nil)
                    }
                    throw LogStoreError(.corruption, message + " " + LogStoreError.corruptionNextStep, path: path, offset: 24)
                }
                // An encrypted store's segments all say so, and a clear store's none (its cipher
                // byte sits at offset 40 of a version 4 header).
                if h.version >= 4, (h.cipher != StoreCipherAlgorithm.none) != (index.meta.cipher != nil) {
                    throw LogStoreError(
                        .corruption,
                        "Segment \(number)'s header says its records are \(h.cipher == 0 ? "in the clear" : "sealed"), MANIFEST says the store is \(index.meta.cipher == nil ? "not " : "")encrypted. "
                            + LogStoreError.corruptionNextStep, path: path, offset: 40)
                }
                segmentHeader = h
            case .newerVersion(let v):
                throw LogStoreError(
                    .unsupportedFormatVersion,
                    "The segment was written by a newer LogStore (format version \(v); this build reads up to \(SegmentHeader.currentVersion), store format \(LogStoreFormat.storeFormat)). Upgrade LogStore to open it.",
                    path: path, offset: 8)
            case .notASegment(let why):
                if isLast && buf.count <= SegmentHeader.maxSize && options.recovery == .strict && storeId == nil { return .recreateHeader }
                if options.recovery == .salvage {
                    report.dropped.append(.init(path: path, offset: 0, bytes: UInt64(buf.count), reason: "bad segment header: \(why)"))
                    return .end(UInt64(buf.count), nil)
                }
                throw LogStoreError(.corruption, "Bad segment header: \(why).", path: path, offset: 0)
            }
            offset = segmentHeader.size
        }
        let compacted = segmentHeader.isCompacted

        // The frame rules live in SegmentReader (shared with the scanner behind verify and stats);
        // what recovery adds is what it does with each transaction and each damage.
        let outcome = try SegmentReader.read(
            buf, from: offset, base: base, version: segmentHeader.version, compacted: compacted, isLast: isLast,
            lastSequence: index.sequence, lastIsExact: report.dropped.isEmpty, endIsFileEnd: endIsFileEnd,
            onTransaction: { frames in
                let first = frames[0]
                var defineBytes = 0
                var pendingBytes = 0
                let end = frames[frames.count - 1].payloadOffset + frames[frames.count - 1].header.storedLength
                do {
                    // Apply to a copy so a transaction that fails half-way leaves no trace.
                    var next = index
                    var nextDead = dead
                    if segmentHeader.version >= 4 {
                        var refs = DefineRefs()
                        var skipped: [(offset: Int, bytes: Int, reason: String)] = []
                        let typesBefore = next.meta.types.count
                        try applyRecords(
                            frames, buf: buf, base: base, segment: number, compacted: compacted, index: &next, dead: &nextDead, refs: &refs,
                            defineBytes: &defineBytes, pendingBytes: &pendingBytes, salvage: options.recovery == .salvage,
                            skipped: &skipped)
                        for s in skipped {
                            report.dropped.append(.init(path: path, offset: UInt64(s.offset), bytes: UInt64(s.bytes), reason: s.reason))
                        }
                        info.refs?.formUnion(refs)
                        if options.recovery == .salvage && next.meta.types.count != typesBefore {
                            for t in next.meta.types where t.name.hasPrefix(salvagedTypePrefix) && index.meta.typeName(t.id) == nil {
                                report.dropped.append(
                                    .init(
                                        path: path, offset: UInt64(base + first.frameOffset), bytes: 0,
                                        reason: "the define of item type id \(t.id) is lost; its records are kept as item type \(t.name)"))
                            }
                        }
                    } else {
                        try apply(
                            frames, buf: buf, base: base, segment: number, compacted: compacted, version: segmentHeader.version,
                            index: &next, dead: &nextDead)
                    }
                    index = next
                    dead = nextDead
                } catch var e as LogStoreError {
                    // CRC-valid but undecodable: written by a broken or foreign writer.
                    if options.recovery == .salvage {
                        report.dropped.append(
                            .init(
                                path: path, offset: UInt64(base + first.frameOffset), bytes: UInt64(end - first.frameOffset),
                                reason: e.message))
                        return false
                    }
                    e.path = path
                    e.offset = UInt64(base + first.frameOffset) + (e.offset ?? 0)
                    throw e
                }
                index.sequence = frames[frames.count - 1].header.sequence
                // (Defines are overhead, like frame headers: not counted.)
                for f in frames { info.rawBytes += UInt64(f.header.rawLength) }
                info.rawBytes -= UInt64(defineBytes)
                info.pendingBytes += UInt64(pendingBytes)
                report.transactionsReplayed += 1
                return true
            },
            onDamage: { d in
                guard options.recovery == .salvage else {
                    throw LogStoreError(
                        .corruption,
                        "Damaged log: \(d.reason). Committed data follows this point, so it is not a torn write. Run `logstore-compact verify` for a full report and `logstore-compact salvage` to recover the valid transactions.",
                        path: path, offset: UInt64(base + d.offset))
                }
                // Keep every valid transaction: skip to the next valid frame and go on.
                let resume = d.resumeAt ?? buf.count
                // The defines of the damaged range whose own checksums hold still name their ids
                // for the transactions after it.
                if segmentHeader.version >= 4 {
                    harvestDefines(buf, from: d.offset, to: resume, base: base, segment: number, into: &index.meta)
                }
                report.dropped.append(
                    .init(path: path, offset: UInt64(base + d.validEnd), bytes: UInt64(max(0, resume - d.validEnd)), reason: d.reason))
                return .resume
            })
        if let torn = outcome.tornTail {
            var reason = torn.reason
            if torn.transactionsCut > 0 {
                reason += "; \(torn.transactionsCut) later transaction(s) that were never synced are cut with it"
            }
            report.truncatedTail = .init(
                path: path, offset: UInt64(base + torn.validEnd), bytes: UInt64(buf.count - torn.validEnd), reason: reason)
            report.transactionsCut = torn.transactionsCut + (torn.lostTransaction == nil ? 0 : 1)
        }
        return .end(UInt64(base + outcome.validEnd), segmentHeader, zeroTail: outcome.zeroTail)
    }

    /// Applies a committed transaction's format 4 frames to the index and its defines to the
    /// meta table (Docs/FileFormat.md, "Records (format 4)"), noting in `refs` the defines its
    /// records use. `base` is the file offset of `buf`. The frames' records were checked
    /// (checksums, lengths) by ``LogFrame/parse(_:at:version:compacted:)``; here each is decoded.
    /// A record of a type or dictionary no define before it names, a value that does not
    /// decompress to its raw length, or a delete in a compacted segment is corruption (offsets
    /// relative to the first frame).
    static func applyRecords(
        _ frames: [SegmentReader.Frame], buf: UnsafeRawBufferPointer, base: Int, segment: UInt32, compacted: Bool,
        index: inout IndexState, dead: inout DeadBytes, refs: inout DefineRefs, defineBytes: inout Int, pendingBytes: inout Int,
        salvage: Bool = false,
        skipped: inout [(offset: Int, bytes: Int, reason: String)]
    ) throws {
        let origin = frames[0].frameOffset
        for f in frames {
            let payload = UnsafeRawBufferPointer(rebasing: buf[f.payloadOffset..<(f.payloadOffset + f.header.storedLength)])
            var recordAt = f.payloadOffset
            func corruption(_ why: String) -> LogStoreError {
                LogStoreError(.corruption, why, offset: UInt64(recordAt - origin))
            }
            do {
                func visit(_ fields: RecordCodec.Fields, _ at: Int, _ sequence: UInt64) throws {
                    recordAt = f.payloadOffset + at
                    let record = UnsafeRawBufferPointer(rebasing: payload[at..<(at + fields.length)])
                    let location = RecordLocation(
                        segment: segment, offset: UInt32(base + recordAt), length: UInt32(fields.length), sequence: sequence)
                    refs.note(fields)
                    do { try RecordCodec.checkClearAllowed(fields, meta: index.meta, path: nil, offset: 0) } catch let e as LogStoreError {
                        throw corruption(e.message)
                    }
                    if fields.sealed {
                        // Opened in a scratch buffer; its location stays the sealed record's.
                        let meta = index.meta
                        do {
                            try RecordCodec.withOpenedSealed(record, fields, meta: meta, path: nil, offset: 0) { clear, opened in
                                try applyOne(clear, opened, location)
                            }
                        } catch let e as LogStoreError where e.code == .corruption && e.path == nil {
                            throw corruption(e.message)
                        }
                        return
                    }
                    try applyOne(record, fields, location)
                }
                func applyOne(_ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, _ location: RecordLocation) throws {
                    if fields.op == .define {
                        do { try index.meta.apply(fields, record: record, location: location) } catch let e as LogStoreError {
                            throw corruption(e.message)
                        }
                        defineBytes += fields.length
                        return
                    }
                    if salvage && index.meta.typeName(fields.typeID) == nil {
                        // Salvage keeps the record even though the define that named its type
                        // was lost with damage: under a reserved name that says so.
                        try? index.meta.defineType(fields.typeID, name: "\(Self.salvagedTypePrefix)\(fields.typeID)")
                    }
                    guard let type = index.meta.typeName(fields.typeID) else {
                        throw corruption("A record of type id \(fields.typeID), which no define before it names.")
                    }
                    let key = RecordKey(UnsafeRawBufferPointer(rebasing: record[fields.key]))
                    switch fields.op {
                    case .put:
                        if fields.codec != .raw {
                            // A compressed value must decompress to its length (and its dictionary
                            // exist) now, or a read would find the damage only later. Such a
                            // record damages its frame (a torn tail is cut, durable data refused).
                            do {
                                try RecordCodec.withValue(record, fields, meta: index.meta, path: nil, offset: 0) { _ in }
                            } catch let e as LogStoreError {
                                // Salvage drops that record alone and keeps the others.
                                guard salvage else {
                                    throw SegmentReader.FrameDamage(
                                        frameOffset: f.frameOffset, reason: "record at \(base + recordAt): \(e.message)")
                                }
                                skipped.append((base + recordAt, fields.length, e.message))
                                return
                            }
                        }
                        try index.put(type, key, location, dead: &dead)
                        // A writer's record not compressed with a dictionary waits for the
                        // recompression pass (a compacted segment's were tried, or are unknown).
                        if !compacted && fields.codec != .lz4Dictionary { pendingBytes += fields.length }
                    case .delete, .deleteAll:
                        if compacted { throw corruption("A compacted segment holds a delete.") }
                        dead.add(fields.length, in: segment)
                        if fields.op == .delete {
                            try index.delete(type, key, dead: &dead)
                        } else {
                            index.deleteAll(type, dead: &dead)
                        }
                    case .define:
                        break
                    }
                }
                try LogFrame.forEachRecord(payload, f.header, visit)
            } catch let e as _DecodeError {
                recordAt = f.payloadOffset + e.offset
                throw corruption("Malformed record: \(e.reason).")
            }
        }
    }

    /// The name salvage gives an item type whose define was lost with damage (followed by its id).
    /// Reserved (`logstore.`): the DataStore layer does not list it; tools do.
    package static let salvagedTypePrefix = "logstore.salvaged.type-"

    /// Salvage: applies to `meta` the define records of the damaged range `from..<to` of `buf` (a
    /// frame's records, found from where its header says they start) whose own checksums hold.
    /// A record whose checksum fails is stepped over by its size field (a damaged size makes the
    /// records after it fail their checksums, so nothing wrong is applied); the walk ends at the
    /// first size that does not fit. Best effort; never throws.
    package static func harvestDefines(
        _ buf: UnsafeRawBufferPointer, from: Int, to: Int, base: Int, segment: UInt32, into meta: inout MetaTable
    ) {
        var at = from + LogFrame.headerSizeV4
        let end = min(to, buf.count)
        let range = UnsafeRawBufferPointer(rebasing: buf[..<end])
        while at < end {
            if let fields = try? RecordCodec.parse(range, at: at) {
                if fields.op == .define {
                    let record = UnsafeRawBufferPointer(rebasing: buf[at..<(at + fields.length)])
                    let location = RecordLocation(segment: segment, offset: UInt32(base + at), length: UInt32(fields.length), sequence: 0)
                    let known = meta
                    try? RecordCodec.withOpened(record, fields, meta: known, path: nil, offset: 0) { clear, opened in
                        try meta.apply(opened, record: clear, location: location)
                    }
                }
                at += fields.length
            } else if case .success(let length) = RecordCodec.frameRecord(range, at: at, checkingCRC: false) {
                at += length
            } else {
                return
            }
        }
    }

    /// Applies a committed transaction's frames to the index. `base` is the file offset of
    /// `buf`. In a compacted segment a frame written by compaction (format v1: every frame; v2:
    /// `syncedThrough` 0) holds only `putAt` records no newer than the frame, and a frame copied
    /// unchanged from a normal segment (v2, `syncedThrough` not 0) only `put` records, which take
    /// the frame's sequence; a `putAt` anywhere else, or a delete in a compacted segment, is
    /// corruption (FileFormat.md §7a).
    static func apply(
        _ frames: [SegmentReader.Frame],
        buf: UnsafeRawBufferPointer, base: Int, segment: UInt32, compacted: Bool, version: UInt16,
        index: inout IndexState, dead: inout DeadBytes
    ) throws {
        for f in frames {
            let stored = UnsafeRawBufferPointer(rebasing: buf[f.payloadOffset..<(f.payloadOffset + f.header.storedLength)])
            let seq = f.header.sequence
            let frameOffset = UInt32(base + f.frameOffset)
            // What this frame may hold: putAt (compaction wrote it), put (copied or a normal
            // segment's), or also deletes (a normal segment's).
            let putAt = compacted && (version < 2 || f.header.syncedThrough == 0)
            func each(_ payload: UnsafeRawBufferPointer) throws {
                try DecodedRecord.decodeAll(payload) { rec in
                    if putAt != (rec.op == .putAt) || (compacted && (rec.op == .delete || rec.op == .deleteAll)) {
                        throw LogStoreError(
                            .corruption,
                            putAt
                                ? "A frame compaction wrote holds a record other than putAt."
                                : compacted
                                    ? "A frame copied into a compacted segment holds a record other than put."
                                    : "A putAt record outside a compacted segment.",
                            offset: UInt64(rec.valueOffset))
                    }
                    switch rec.op {
                    case .put:
                        try index.put(
                            rec.type, rec.key,
                            RecordLocation(
                                segment: segment, frameOffset: frameOffset, valueOffset: UInt32(rec.valueOffset),
                                valueLength: UInt32(rec.valueLength), sequence: seq), dead: &dead)
                    case .putAt:
                        guard rec.sequence >= 1, rec.sequence <= seq else {
                            throw LogStoreError(
                                .corruption, "A putAt record's sequence \(rec.sequence) is newer than its frame's \(seq).",
                                offset: UInt64(rec.valueOffset))
                        }
                        try index.put(
                            rec.type, rec.key,
                            RecordLocation(
                                segment: segment, frameOffset: frameOffset, valueOffset: UInt32(rec.valueOffset),
                                valueLength: UInt32(rec.valueLength), sequence: rec.sequence), dead: &dead)
                    case .delete: try index.delete(rec.type, rec.key, dead: &dead)
                    case .deleteAll: index.deleteAll(rec.type, dead: &dead)
                    }
                }
            }
            if f.header.compressed {
                let raw = try LogFrame.rawPayload(f.header, stored)
                try raw.withUnsafeBytes { try each($0) }
            } else {
                try each(stored)
            }
        }
    }
}
