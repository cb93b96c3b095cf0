import Foundation

/// One segment a compaction wrote.
struct CompactedSegment {
    var segment: SegmentFile
    var info: SegmentInfo
    /// The sequence of its last frame: what MANIFEST records as the log's sequence at its end.
    var lastSequence: UInt64
}

/// Writes compacted segments: `putAt` records in ascending sequence order, grouped into commit
/// frames of at most `maxFramePayload` raw bytes (LZ4-compressed when that is smaller), each
/// frame's sequence the largest of its records; segments roll over at `segmentSize`.
/// Not thread-safe; used by one compaction.
struct CompactionOutput {
    let engine: LogEngine
    /// Finished segments with their info and the log's last sequence at their end, in order.
    var segments: [CompactedSegment] = []
    /// New location per copied record (by record index).
    var locations: [RecordLocation]
    private var current: SegmentFile? = nil
    private var currentInfo = SegmentInfo(length: 0, rawBytes: 0)
    private var buffer: [UInt8] = []
    private var bufferStart: UInt64 = 0
    private var frame = _ByteWriter()
    private var frameRecords: [(index: Int, valueOffset: Int, sequence: UInt64, valueLength: Int)] = []
    private var lastFrameSequence: UInt64 = 0
    private var created: [SegmentFile] = []

    init(engine: LogEngine, count: Int) {
        self.engine = engine
        locations = [RecordLocation](
            repeating: RecordLocation(segment: 0, frameOffset: 0, valueOffset: 0, sequence: 0, valueLength: 0),
            count: count)
        frame = _ByteWriter(capacity: min(engine.options.maxFramePayload, 64 << 10))
    }

    mutating func add(index: Int, type: String, key: RecordKey, sequence: UInt64, value: UnsafeRawBufferPointer) throws {
        let size = CompactedRecord.size(typeBytes: type.utf8.count, keyBytes: key.count, sequence: sequence, valueBytes: value.count)
        if frame.count > 0 && frame.count + size > engine.options.maxFramePayload { try flushFrame() }
        let at = CompactedRecord.encode(type: type, key: key, sequence: sequence, value: value, into: &frame)
        frameRecords.append((index, at, sequence, value.count))
    }

    private mutating func flushFrame() throws {
        guard let last = frameRecords.last else { return }
        var bytes: [UInt8] = []
        LogFrame.append(
            into: &bytes, raw: frame.bytes, kind: .commit, sequence: last.sequence,
            compress: engine.options.compression, threshold: engine.options.compressionThreshold)
        let (segment, offset) = try place(bytes, rawBytes: frame.count, baseSequence: frameRecords[0].sequence)
        for r in frameRecords {
            locations[r.index] = RecordLocation(
                segment: segment, frameOffset: offset, valueOffset: UInt32(r.valueOffset),
                sequence: r.sequence, valueLength: UInt32(r.valueLength))
        }
        lastFrameSequence = last.sequence
        frameRecords.removeAll(keepingCapacity: true)
        frame = _ByteWriter(capacity: min(engine.options.maxFramePayload, 64 << 10))
    }

    /// Appends a frame to the current segment (starting a new one when it would pass the
    /// segment size); returns where it landed.
    private mutating func place(_ bytes: [UInt8], rawBytes: Int, baseSequence: UInt64) throws -> (UInt32, UInt32) {
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
            let storeId = engine.state.withLock { $0.log.manifest.storeId }
            segment = try engine.log.createSegment(number, baseSequence: baseSequence, storeId: storeId, flags: SegmentHeader.flagCompacted)
            created.append(segment)
            current = segment
            currentInfo = SegmentInfo(length: UInt64(segment.headerSize), rawBytes: 0)
            bufferStart = UInt64(segment.headerSize)
        }
        let offset = currentInfo.length
        buffer.append(contentsOf: bytes)
        currentInfo.length += UInt64(bytes.count)
        currentInfo.rawBytes += UInt64(rawBytes)
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

    /// Writes the last frame and, if the records do not reach it, an empty commit frame carrying
    /// `marker` (the last sequence number the replaced segments covered, so that recovery's
    /// sequence never goes backwards even when every record was dead); syncs the last segment.
    mutating func finish(marker: UInt64) throws {
        try flushFrame()
        if marker > lastFrameSequence {
            var bytes: [UInt8] = []
            LogFrame.append(into: &bytes, raw: [], kind: .commit, sequence: marker, compress: false, threshold: 0)
            _ = try place(bytes, rawBytes: 0, baseSequence: marker)
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
