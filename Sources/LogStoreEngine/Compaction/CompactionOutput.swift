import Foundation

/// One segment a compaction wrote.
struct CompactedSegment {
    var segment: SegmentFile
    var info: SegmentInfo
    /// The sequence of its last frame: what MANIFEST records as the log's sequence at its end.
    var lastSequence: UInt64
}

/// Finished compacted frames for ``CompactionOutput``, in output order, built by the thread that
/// reads the prefix and written by the one that writes the output (``CompactionPipeline``).
struct CopyBatch: Sendable {
    /// A record of a frame: where it is in the frame's bytes, and whose it is.
    struct Placed: Sendable {
        /// The record's ordinal (``LivePrefix/records``), or -1 for a define.
        var ordinal: Int32
        /// A dictionary define: the dictionary's id (0 otherwise).
        var dictionary: UInt32
        /// Offset of the record in the frame's bytes (header included).
        var offset: UInt32
        var length: UInt32
    }

    /// A compacted frame: `bytes[range]`, its records `placed[records]`, its header's sequence,
    /// and the defines its records use.
    struct Frame: Sendable {
        var range: Range<Int>
        var records: Range<Int>
        var sequence: UInt64
        var recordBytes: Int
        var refs: DefineRefs
        /// Bytes of its records the recompression pass has not tried yet.
        var pendingBytes: Int
    }

    var bytes: [UInt8] = []
    var frames: [Frame] = []
    var placed: [Placed] = []
}

/// The compacted frame being filled on the reading thread: records copied verbatim (or re-encoded
/// from a legacy frame) with their sequences, then closed into a version 4 compacted frame
/// (header, sequence table, records; Docs/FileFormat.md, "Frames") whose header sequence is the
/// largest of its records' and of the frames before it. Only the header and the table are
/// checksummed: each record keeps its own checksum.
struct CompactedFrameBuilder {
    private var records: [UInt8] = []
    /// Per record: its sequence (nil: a define, which takes the frame's) and its placement.
    private var sequences: [UInt64?] = []
    private var placed: [CopyBatch.Placed] = []
    private var refs = DefineRefs()
    /// Bytes of the pending defines (overhead, not counted in ``SegmentInfo/rawBytes``).
    private var defineBytes = 0
    /// Bytes of pending records the recompression pass has not tried yet.
    private var untriedBytes = 0
    /// The sequence of the last frame built (frames never go backwards).
    private(set) var lastSequence: UInt64 = 0
    let maxPayload: Int

    init(maxPayload: Int) {
        self.maxPayload = maxPayload
        records.reserveCapacity(min(maxPayload, 64 << 10) + 256)
    }

    /// Bytes of records pending (0: nothing).
    var count: Int { records.count }

    /// Whether a record of `length` bytes starts a new frame.
    func wouldOverflow(_ length: Int) -> Bool { !records.isEmpty && records.count + length > maxPayload }

    /// Appends a copied record's bytes (`ordinal`, sequence `sequence`) or a define (`ordinal`
    /// -1, `sequence` nil; `dictionary` its id for a dictionary define), flushing the pending
    /// frame into `batch` first when the record would overflow it.
    mutating func add(
        _ record: UnsafeRawBufferPointer, ordinal: Int32, sequence: UInt64?, dictionary: UInt32 = 0, refs used: DefineRefs,
        untried: Bool = false, into batch: inout CopyBatch
    ) {
        if wouldOverflow(record.count) { flush(into: &batch) }
        placed.append(
            CopyBatch.Placed(ordinal: ordinal, dictionary: dictionary, offset: UInt32(records.count), length: UInt32(record.count)))
        records.append(contentsOf: record)
        sequences.append(sequence)
        refs.formUnion(used)
        if ordinal < 0 { defineBytes += record.count }
        if untried { untriedBytes += record.count }
    }

    /// Closes the pending frame (if any) into `batch`.
    mutating func flush(into batch: inout CopyBatch) {
        guard !placed.isEmpty else { return }
        let sequence = sequences.reduce(lastSequence) { max($0, $1 ?? 0) }
        let deltas = sequences.map { sequence - ($0 ?? sequence) }
        let start = batch.bytes.count
        let recordsAt = records.withUnsafeBytes {
            LogFrame.appendV4(
                into: &batch.bytes, records: $0, recordCount: placed.count, kind: .commit, sequence: sequence, syncedThrough: 0,
                sequenceDeltas: deltas)
        }
        let shift = UInt32(recordsAt - start)
        let first = batch.placed.count
        for var p in placed {
            p.offset += shift
            batch.placed.append(p)
        }
        batch.frames.append(
            CopyBatch.Frame(
                range: start..<batch.bytes.count, records: first..<batch.placed.count, sequence: sequence,
                recordBytes: records.count - defineBytes, refs: refs, pendingBytes: untriedBytes))
        lastSequence = sequence
        records.removeAll(keepingCapacity: true)
        sequences.removeAll(keepingCapacity: true)
        placed.removeAll(keepingCapacity: true)
        refs = DefineRefs()
        defineBytes = 0
        untriedBytes = 0
    }
}

/// Writes compacted segments (version 4), frames in non-decreasing sequence order, each placed
/// whole in a segment; segments roll over at `segmentSize`. Records where each copied record
/// and each dictionary define landed. Not thread-safe; used by one thread at a time.
struct CompactionOutput {
    let engine: LogEngine
    /// The records copied (their old locations: lengths and sequences carry over).
    let live: LivePrefix
    /// Finished segments with their info and the log's last sequence at their end, in order.
    var segments: [CompactedSegment] = []
    /// New location per copied record (by ordinal).
    var locations: [RecordLocation]
    /// Where each dictionary define was written.
    var dictionaryDefines: [UInt32: RecordLocation] = [:]
    private var current: SegmentFile? = nil
    private var currentInfo = SegmentInfo(length: 0, rawBytes: 0, refs: DefineRefs())
    private var buffer: [UInt8] = []
    private var bufferStart: UInt64 = 0
    private var lastFrameSequence: UInt64 = 0
    private var created: [SegmentFile] = []

    init(engine: LogEngine, live: LivePrefix) {
        self.engine = engine
        self.live = live
        locations = live.records.indices.map(live.location)
    }

    /// Writes the frames of `batch`, in order.
    mutating func write(_ batch: CopyBatch) throws {
        try batch.bytes.withUnsafeBytes { bytes in
            for frame in batch.frames {
                let (segment, offset) = try place(
                    UnsafeRawBufferPointer(rebasing: bytes[frame.range]), rawBytes: frame.recordBytes, baseSequence: frame.sequence,
                    refs: frame.refs, pending: frame.pendingBytes)
                lastFrameSequence = max(lastFrameSequence, frame.sequence)
                for p in batch.placed[frame.records] {
                    if p.ordinal >= 0 {
                        let old = locations[Int(p.ordinal)]
                        locations[Int(p.ordinal)] = RecordLocation(
                            segment: segment, offset: offset + p.offset, length: p.length, sequence: old.sequence)
                    } else if p.dictionary != 0 {
                        dictionaryDefines[p.dictionary] = RecordLocation(
                            segment: segment, offset: offset + p.offset, length: p.length, sequence: frame.sequence)
                    }
                }
            }
        }
    }

    /// Appends a frame to the current segment (starting a new one when it would pass the
    /// segment size); returns where it landed.
    private mutating func place(_ bytes: UnsafeRawBufferPointer, rawBytes: Int, baseSequence: UInt64, refs: DefineRefs, pending: Int = 0)
        throws -> (UInt32, UInt32)
    {
        if let current, currentInfo.length > UInt64(current.headerSize),
            currentInfo.length + UInt64(bytes.count) > UInt64(engine.options.segmentSize)
        {
            try finishSegment()
        }
        let segment: SegmentFile
        if let current {
            segment = current
        } else {
            let number = engine.state.withLock { $0.log.reserveSegmentNumber() }
            let (storeId, cipher) = engine.state.withLock { ($0.log.manifest.storeId, $0.log.manifest.cipher) }
            segment = try engine.log.createSegment(
                number, baseSequence: baseSequence, storeId: storeId, cipher: cipher, flags: SegmentHeader.flagCompacted)
            created.append(segment)
            current = segment
            currentInfo = SegmentInfo(length: UInt64(segment.headerSize), rawBytes: 0, refs: DefineRefs())
            bufferStart = UInt64(segment.headerSize)
        }
        let offset = currentInfo.length
        buffer.append(contentsOf: bytes)
        currentInfo.length += UInt64(bytes.count)
        currentInfo.rawBytes += UInt64(rawBytes)
        currentInfo.refs?.formUnion(refs)
        currentInfo.pendingBytes += UInt64(pending)
        if buffer.count >= 1 << 20 { try flushBuffer() }
        return (segment.number, UInt32(offset))
    }

    private mutating func flushBuffer() throws {
        guard let current, !buffer.isEmpty else { return }
        try current.file.write(buffer, at: bufferStart)
        bufferStart += UInt64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }

    private mutating func finishSegment() throws {
        guard let segment = current else { return }
        try flushBuffer()
        try segment.file.sync()
        segment.seal(length: currentInfo.length)
        segments.append(CompactedSegment(segment: segment, info: currentInfo, lastSequence: lastFrameSequence))
        current = nil
    }

    /// Writes, if the records do not reach it, an empty frame carrying `marker` (the last
    /// sequence number the replaced segments covered, so that recovery's sequence never goes
    /// backwards even when every record was dead); syncs the last segment.
    mutating func finish(marker: UInt64) throws {
        if marker > lastFrameSequence {
            var bytes: [UInt8] = []
            LogFrame.appendV4(
                into: &bytes, records: UnsafeRawBufferPointer(start: nil, count: 0), recordCount: 0, kind: .commit, sequence: marker,
                syncedThrough: 0, sequenceDeltas: [])
            _ = try bytes.withUnsafeBytes { try place($0, rawBytes: 0, baseSequence: marker, refs: DefineRefs()) }
            lastFrameSequence = marker
        }
        try finishSegment()
    }

    /// Removes every segment this output created (they are not listed in any manifest).
    func discard() {
        for s in created {
            try? s.file.close()
            engine.log.removeSegmentFile(s.number)
        }
    }
}
