import Foundation

/// One segment a compaction wrote.
struct CompactedSegment {
    var segment: SegmentFile
    var info: SegmentInfo
    /// The sequence of its last frame: what MANIFEST records as the log's sequence at its end.
    var lastSequence: UInt64
}

/// A run of frames for ``CompactionOutput``, in output order, built by the thread that reads the
/// prefix and written by the one that writes the output (``CompactionPipeline``).
///
///     item := copied    frame bytes (header and stored payload, unchanged) + the ordinals of
///                       its records, whose locations move with the frame
///           | repacked  a raw payload of `putAt` records + each record's ordinal and place
struct CopyBatch: Sendable {
    /// A record of a re-packed frame: its ordinal (``LivePrefix/records``) and its value's place in
    /// the frame's raw payload.
    struct Repacked: Sendable {
        var ordinal: Int32
        var valueOffset: UInt32
        var valueLength: UInt32
        var sequence: UInt64
    }

    enum Item: Sendable {
        /// A frame copied as it was: `bytes[range]`; its records are `order[records]` of the prefix.
        case copied(range: Range<Int>, sequence: UInt64, rawLength: Int, records: Range<Int>)
        /// A re-packed frame, records `repacked[records]`: its raw payload of `rawLength` bytes in
        /// `bytes[range]`, or, when `stored` is set, the whole frame already built (header and a
        /// payload of `stored` bytes), by a reader that had time to spare.
        case repacked(range: Range<Int>, records: Range<Int>, rawLength: Int, stored: Int?)
    }

    var bytes: [UInt8] = []
    var items: [Item] = []
    var repacked: [Repacked] = []
}

/// Writes compacted segments, frames in non-decreasing sequence order: frames copied unchanged
/// from the compacted segments, and frames of re-packed `putAt` records (compressed with LZ4
/// when that is smaller, checksummed here), each such frame's sequence the largest of its records.
/// Segments roll over at `segmentSize`. Not thread-safe; used by one thread at a time.
struct CompactionOutput {
    let engine: LogEngine
    /// The records copied (for the locations of copied frames' records).
    let live: LivePrefix
    /// Finished segments with their info and the log's last sequence at their end, in order.
    var segments: [CompactedSegment] = []
    /// New location per copied record (by ordinal).
    var locations: [RecordLocation]
    private var current: SegmentFile? = nil
    private var currentInfo = SegmentInfo(length: 0, rawBytes: 0)
    private var buffer: [UInt8] = []
    private var bufferStart: UInt64 = 0
    private var lastFrameSequence: UInt64 = 0
    private var created: [SegmentFile] = []
    private var frameBytes: [UInt8] = []
    private let compressor: LZ4.Compressor

    init(engine: LogEngine, live: LivePrefix) {
        self.engine = engine
        compressor = LZ4.Compressor(level: engine.options.compactionCompressionLevel)
        self.live = live
        locations = live.records.indices.map(live.location)
    }

    /// Writes the items of `batch`, in order.
    mutating func write(_ batch: CopyBatch) throws {
        try batch.bytes.withUnsafeBytes { bytes in
            for item in batch.items {
                switch item {
                case .copied(let range, let sequence, let rawLength, let records):
                    let (segment, offset) = try place(
                        UnsafeRawBufferPointer(rebasing: bytes[range]), rawBytes: rawLength, baseSequence: sequence)
                    lastFrameSequence = max(lastFrameSequence, sequence)
                    for r in live.order[records] {
                        locations[Int(r)].segment = segment
                        locations[Int(r)].frameOffset = offset
                    }
                case .repacked(let range, let records, let rawLength, let built):
                    let recs = batch.repacked[records]
                    guard let first = recs.first else { continue }
                    let sequence = recs.reduce(0) { max($0, $1.sequence) }
                    let placed: (UInt32, UInt32)
                    if built != nil {
                        placed = try place(
                            UnsafeRawBufferPointer(rebasing: bytes[range]), rawBytes: rawLength, baseSequence: first.sequence)
                    } else {
                        frameBytes.removeAll(keepingCapacity: true)
                        Self.frame(
                            UnsafeRawBufferPointer(rebasing: bytes[range]), sequence: sequence, into: &frameBytes, options: engine.options,
                            compressor: compressor)
                        placed = try frameBytes.withUnsafeBytes { try place($0, rawBytes: rawLength, baseSequence: first.sequence) }
                    }
                    for r in recs {
                        locations[Int(r.ordinal)] = RecordLocation(
                            segment: placed.0, frameOffset: placed.1, valueOffset: r.valueOffset,
                            sequence: r.sequence, valueLength: r.valueLength)
                    }
                    lastFrameSequence = max(lastFrameSequence, sequence)
                }
            }
        }
    }

    /// Appends to `out` the commit frame of a re-packed raw payload (compressed when that is
    /// smaller); returns its stored payload length. Either thread of a compaction may build one.
    @discardableResult
    static func frame(
        _ raw: UnsafeRawBufferPointer, sequence: UInt64, into out: inout [UInt8], options: LogEngineOptions, compressor: LZ4.Compressor
    ) -> Int {
        LogFrame.append(
            into: &out, raw: raw, kind: .commit, sequence: sequence, compress: options.compression, threshold: options.compressionThreshold,
            compressor: compressor)
    }

    /// Appends a frame to the current segment (starting a new one when it would pass the
    /// segment size); returns where it landed.
    private mutating func place(_ bytes: UnsafeRawBufferPointer, rawBytes: Int, baseSequence: UInt64) throws -> (UInt32, UInt32) {
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

    /// Writes, if the records do not reach it, an empty commit frame carrying `marker` (the last
    /// sequence number the replaced segments covered, so that recovery's sequence never goes
    /// backwards even when every record was dead); syncs the last segment.
    mutating func finish(marker: UInt64) throws {
        if marker > lastFrameSequence {
            var bytes: [UInt8] = []
            LogFrame.append(into: &bytes, raw: [], kind: .commit, sequence: marker, compress: false, threshold: 0)
            _ = try bytes.withUnsafeBytes { try place($0, rawBytes: 0, baseSequence: marker) }
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
