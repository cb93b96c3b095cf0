import Dispatch

/// The copy step of a compaction (Docs/Compaction.md, "Copy"): the live records of the prefix, in
/// log order, into compacted frames. A format 4 record is copied byte for byte: no
/// decompression, no recompression, no new checksum (its checksum travels with it), and its
/// sequence goes into its frame's sequence table. The live records of a legacy (version 1 or 2)
/// frame are re-encoded once as format 4 records. Before the first record that uses a define
/// (its type, its dictionary), the define is written into the output, so replay always meets a
/// define before its use. The calling thread reads and builds frames; a second thread
/// (``CompactionPipeline``) writes them, in order.
extension Compactor {
    /// What the copy did, for the report.
    struct CopyCounts {
        /// Format 4 records copied as they were.
        var recordsCopied = 0
        /// Legacy records re-encoded.
        var recordsReencoded = 0
        /// Define records written.
        var defines = 0
        /// The defines the output holds.
        var emitted = DefineRefs()
    }

    /// Reads the live records of `live` from `segments` (the prefix, in replay order) and hands
    /// the frames to `pipeline` in batches of about 1 MiB. `meta` (the copied view's) supplies
    /// the defines; after the last record, every define of `keep` not written yet follows (those
    /// the segments after the prefix may still need). Checks for `close()` every 256 units and
    /// stops early if the pipeline failed (``CompactionPipeline/finish(marker:)`` then throws
    /// its error). Throws `.corruption` naming the file and offset when an indexed record or
    /// frame is unreadable, or names a define `meta` does not hold.
    static func copy(
        _ live: LivePrefix, from segments: [SegmentFile], meta: MetaTable, keep: DefineRefs, recompressing plan: inout RecompressionPlan?,
        untried: Set<Int32> = [], to pipeline: CompactionPipeline, engine: LogEngine
    ) throws -> CopyCounts {
        let meta = plan?.meta ?? meta
        let recompressing = plan != nil
        var counts = CopyCounts()
        var reader: SegmentWindow? = nil
        var batch = CopyBatch()
        var frame = CompactedFrameBuilder(maxPayload: engine.options.maxFramePayload)
        var emitted = DefineRefs()
        var scratch: [UInt8] = []
        var recoded: [UInt8] = []
        func submitIfFull() {
            if batch.bytes.count >= 1 << 20 {
                pipeline.submit(batch)
                batch = CopyBatch()
            }
        }
        // An encrypted store's defines are sealed under the writing epoch, whose define goes first.
        let cipher = meta.cipher
        func defineEpoch(_ id: UInt32, path: String, offset: UInt64) throws {
            guard !emitted.epochs.contains(id) else { return }
            guard let epoch = meta.epoch(id) ?? cipher?.writingEpoch.flatMap({ $0.id == id ? $0 : nil }) else {
                throw LogStoreError(
                    .corruption, "A record sealed under key epoch \(id), which no define names.", path: path, offset: offset)
            }
            scratch.removeAll(keepingCapacity: true)
            RecordCodec.appendEpochDefine(into: &scratch, epoch: epoch)
            scratch.withUnsafeBytes { frame.add($0, ordinal: -1, sequence: nil, refs: DefineRefs(), into: &batch) }
            emitted.epochs.insert(id)
            counts.defines += 1
        }
        /// The refs of a record this copy seals (a define, a recompressed record): the writing
        /// epoch, its define written first.
        func sealingRefs(_ refs: DefineRefs, path: String, offset: UInt64) throws -> DefineRefs {
            guard let epoch = cipher?.writingEpoch else { return refs }
            try defineEpoch(epoch.id, path: path, offset: offset)
            var r = refs
            r.epochs.insert(epoch.id)
            return r
        }
        func defineType(_ id: UInt32, path: String, offset: UInt64) throws {
            guard !emitted.types.contains(id) else { return }
            guard let name = meta.typeName(id) else {
                throw LogStoreError(.corruption, "A record of type id \(id), which no define names.", path: path, offset: offset)
            }
            let refs = try sealingRefs(DefineRefs(), path: path, offset: offset)
            scratch.removeAll(keepingCapacity: true)
            RecordCodec.appendTypeDefine(into: &scratch, id: id, name: name)
            _ = try RecordCodec.sealLast(&scratch, from: 0, cipher: cipher)
            scratch.withUnsafeBytes { frame.add($0, ordinal: -1, sequence: nil, refs: refs, into: &batch) }
            emitted.types.insert(id)
            counts.defines += 1
        }
        func defineDictionary(_ id: UInt32, path: String, offset: UInt64) throws {
            guard !emitted.dictionaries.contains(id) else { return }
            guard let d = meta.dictionary(id) else {
                throw LogStoreError(
                    .corruption, "A record compressed with dictionary \(id), which no define names.", path: path, offset: offset)
            }
            try defineType(d.typeID, path: path, offset: offset)
            let refs = try sealingRefs(DefineRefs(types: [d.typeID]), path: path, offset: offset)
            scratch.removeAll(keepingCapacity: true)
            d.bytes.withUnsafeBytes { _ = RecordCodec.appendDictionaryDefine(into: &scratch, id: id, typeID: d.typeID, dictionary: $0) }
            _ = try RecordCodec.sealLast(&scratch, from: 0, cipher: cipher)
            scratch.withUnsafeBytes { frame.add($0, ordinal: -1, sequence: nil, dictionary: id, refs: refs, into: &batch) }
            emitted.dictionaries.insert(id)
            counts.defines += 1
        }
        for (n, unit) in live.units.enumerated() {
            if n & 255 == 0 {
                if engine.background.isClosing { throw LogEngine.closedError() }
                if pipeline.hasFailed { break }
            }
            let segment = segments[Int(unit.segmentPosition)]
            if reader?.segment !== segment { reader = SegmentWindow(segment) }
            if unit.isLegacy {
                try reencodeLegacyFrame(unit, live: live, segment: segment, reader: &reader!, meta: meta, plan: &plan) {
                    record, ordinal, sequence, typeID, dictionary in
                    try defineType(typeID, path: segment.path, offset: UInt64(unit.offset))
                    var used = DefineRefs(types: [typeID])
                    if let dictionary {
                        try defineDictionary(dictionary.id, path: segment.path, offset: UInt64(unit.offset))
                        used.dictionaries.insert(dictionary.id)
                    }
                    frame.add(record, ordinal: ordinal, sequence: sequence, refs: used, untried: !recompressing, into: &batch)
                    counts.recordsReencoded += 1
                    submitIfFull()
                }
                continue
            }
            let ordinal = live.order[unit.recordStart]
            let loc = live.location(Int(ordinal))
            try reader!.withBytes(at: UInt64(loc.offset), count: Int(loc.length)) { bytes in
                // The clear head only (no checksum: the record moves unchanged, and a read or
                // `verify` checks it): which defines it uses.
                let fields: RecordCodec.Fields
                do throws(_DecodeError) {
                    fields = try RecordCodec.parse(bytes, at: 0, checkingCRC: false)
                    guard fields.length == bytes.count, fields.op == .put else {
                        throw _DecodeError("the index points at something other than a put of its length", at: 0)
                    }
                } catch {
                    throw LogStoreError(
                        .corruption, "Indexed record unreadable: \(error.reason).", path: segment.path, offset: UInt64(loc.offset))
                }
                try defineType(fields.typeID, path: segment.path, offset: UInt64(loc.offset))
                var used = DefineRefs(types: [fields.typeID])
                if fields.sealed {
                    try defineEpoch(fields.epoch, path: segment.path, offset: UInt64(loc.offset))
                    used.epochs.insert(fields.epoch)
                }
                if plan != nil {
                    recoded.removeAll(keepingCapacity: true)
                    let (dictionary, done) = try plan!.reencode(bytes, fields, into: &recoded)
                    if done {
                        if fields.sealed { used = try sealingRefs(DefineRefs(types: [fields.typeID]), path: segment.path, offset: 0) }
                        if let dictionary {
                            try defineDictionary(dictionary.id, path: segment.path, offset: UInt64(loc.offset))
                            used.dictionaries.insert(dictionary.id)
                        }
                        recoded.withUnsafeBytes { frame.add($0, ordinal: ordinal, sequence: loc.sequence, refs: used, into: &batch) }
                        return
                    }
                }
                if fields.codec == .lz4Dictionary {
                    try defineDictionary(fields.dictionaryID, path: segment.path, offset: UInt64(loc.offset))
                    used.dictionaries.insert(fields.dictionaryID)
                }
                // Not tried by a recompression pass yet: counts towards the next one.
                let pending = plan == nil && fields.codec != .lz4Dictionary && untried.contains(unit.segmentPosition)
                frame.add(bytes, ordinal: ordinal, sequence: loc.sequence, refs: used, untried: pending, into: &batch)
            }
            counts.recordsCopied += 1
            submitIfFull()
        }
        // The defines later segments may use that the copy has not written (their define may be
        // in the prefix: replay reads the output first).
        for id in keep.epochs.sorted() where meta.epoch(id) != nil { try defineEpoch(id, path: engine.directory, offset: 0) }
        for id in keep.types.sorted() where meta.typeName(id) != nil { try defineType(id, path: engine.directory, offset: 0) }
        for id in keep.dictionaries.sorted() where meta.dictionary(id) != nil {
            try defineDictionary(id, path: engine.directory, offset: 0)
        }
        frame.flush(into: &batch)
        if !batch.frames.isEmpty { pipeline.submit(batch) }
        counts.emitted = emitted
        return counts
    }

    /// Reads the legacy frame of `unit`, checks it and decompresses it, and hands each of its live
    /// records to `add` encoded as a format 4 put of its type's id (`meta`), stored raw (or, when
    /// recompressing, as `plan` compresses it), with its ordinal, sequence, type id and dictionary. Throws `.corruption` naming the frame when it is unreadable
    /// or a value lies outside it, or when a type has no id.
    static func reencodeLegacyFrame(
        _ unit: LivePrefix.Unit, live: LivePrefix, segment: SegmentFile, reader: inout SegmentWindow, meta: MetaTable,
        plan: inout RecompressionPlan?, _ add: (UnsafeRawBufferPointer, Int32, UInt64, UInt32, DictionaryRef?) throws -> Void
    ) throws {
        let headerSize = LogFrame.headerSize(version: segment.version)
        let stored = try reader.withBytes(at: UInt64(unit.offset), count: headerSize) { bytes in
            LogFrame.peekHeader(bytes, version: segment.version)?.storedLength
        }
        guard let stored, stored <= LogFrame.maxPayload else {
            throw LogStoreError(.corruption, "Indexed frame has an unreadable header.", path: segment.path, offset: UInt64(unit.offset))
        }
        let raw: [UInt8] = try reader.withBytes(at: UInt64(unit.offset), count: headerSize + stored) { bytes in
            guard case .frame(let checked, let payloadOffset) = LogFrame.parse(bytes, at: 0, version: segment.version) else {
                throw LogStoreError(.corruption, "Frame unreadable (checksum or header).", path: segment.path, offset: UInt64(unit.offset))
            }
            do {
                return try LogFrame.rawPayload(
                    checked, UnsafeRawBufferPointer(rebasing: bytes[payloadOffset..<(payloadOffset + checked.storedLength)]))
            } catch var e as LogStoreError {
                e.path = segment.path
                e.offset = UInt64(unit.offset)
                throw e
            }
        }
        var record: [UInt8] = []
        try raw.withUnsafeBytes { payload in
            for r in live.order[unit.recordStart..<unit.recordEnd] {
                let i = Int(r)
                let loc = live.location(i)
                let start = loc.legacyValueOffset
                let end = start + Int(loc.length)
                guard end <= payload.count else {
                    throw LogStoreError(
                        .corruption, "Record value lies outside its frame.", path: segment.path, offset: UInt64(unit.offset))
                }
                guard let typeID = meta.typeID(named: live.type(i)) else {
                    throw LogStoreError(.corruption, "An item type has no id to re-encode its records with.", path: segment.path)
                }
                record.removeAll(keepingCapacity: true)
                let value = UnsafeRawBufferPointer(rebasing: payload[start..<end])
                var dictionary: DictionaryRef? = nil
                live.key(i).withUnsafeBytes { k in
                    if plan != nil {
                        dictionary = plan!.encode(value: value, key: k, typeID: typeID, into: &record)
                    } else {
                        _ = RecordCodec.appendPut(into: &record, typeID: typeID, key: k, stored: value)
                    }
                }
                try record.withUnsafeBytes { try add($0, r, loc.sequence, typeID, dictionary) }
            }
        }
    }
}

/// The writing half of a compaction's copy, on its own serial queue: compresses and checksums
/// re-packed frames and writes every frame (``CompactionOutput``), batch by batch in submission
/// order, while the compacting thread reads the next frames. At most four batches (about 4 MiB)
/// wait at a time.
///
/// `@unchecked Sendable`: `output` and `failure` are touched only on `queue` until ``finish(marker:)``
/// (or ``discard()``) has drained it; after that only by the caller. `hasFailed` is an atomic
/// read of a flag set on `queue`.
final class CompactionPipeline: @unchecked Sendable {
    private var output: CompactionOutput
    private var failure: (any Error)? = nil
    private let failed = Protected(false)
    // No QoS of its own: blocks run at the submitting (compacting) thread's.
    private let queue = DispatchQueue(label: "LogStore.compaction.writer")
    private let slots = DispatchSemaphore(value: 4)

    init(_ output: CompactionOutput) { self.output = output }

    /// Whether a write failed (the rest is skipped; ``finish(marker:)`` throws the error).
    var hasFailed: Bool { failed.withLock { $0 } }

    private let waiting = Protected(0)

    /// Queues `batch` for writing; blocks while four batches wait.
    func submit(_ batch: CopyBatch) {
        waiting.withLock { $0 += 1 }
        slots.wait()
        queue.async {
            defer {
                self.waiting.withLock { $0 -= 1 }
                self.slots.signal()
            }
            guard self.failure == nil else { return }
            do { try self.output.write(batch) } catch {
                self.failure = error
                self.failed.withLock { $0 = true }
            }
        }
    }

    /// Waits for every batch, writes the marker frame if needed and syncs the last segment;
    /// returns the output. Throws the first write error (the output is then discarded).
    func finish(marker: UInt64) throws -> CompactionOutput {
        queue.sync {}
        if let failure {
            output.discard()
            throw failure
        }
        do { try output.finish(marker: marker) } catch {
            output.discard()
            throw error
        }
        return output
    }

    /// Waits for every batch and removes what was written (the copy failed or was stopped).
    func discard() {
        queue.sync {}
        output.discard()
    }
}

/// Reads one segment forward in windows of 4 MiB, so a compaction reads its input sequentially
/// in large reads instead of one `pread` per frame.
struct SegmentWindow {
    let segment: SegmentFile
    private var start: UInt64 = 0
    private var bytes: [UInt8] = []
    static let size = 4 << 20

    init(_ segment: SegmentFile) { self.segment = segment }

    /// Calls `body` with the `count` bytes at `offset` (reading the window that holds them).
    mutating func withBytes<R>(at offset: UInt64, count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        if offset < start || offset + UInt64(count) > start + UInt64(bytes.count) {
            if count > Self.size {
                let whole = try segment.file.read(at: offset, count: count)
                guard whole.count == count else { throw truncated(offset) }
                return try whole.withUnsafeBytes(body)
            }
            start = offset
            bytes = try segment.file.read(at: offset, count: Self.size)
            guard bytes.count >= count else { throw truncated(offset) }
        }
        let from = Int(offset - start)
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[from..<(from + count)])) }
    }

    private func truncated(_ offset: UInt64) -> LogStoreError {
        LogStoreError(.corruption, "Segment ends inside an indexed frame.", path: segment.path, offset: offset)
    }
}
