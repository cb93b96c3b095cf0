import Dispatch

/// The copy step of a compaction (Docs/Compaction.md, "Copy"): the frames of the prefix that hold
/// live records, in log order, into the output. A frame whose records are all live is copied as
/// it is (no decompression, recompression or new checksum); the live records of the others are
/// re-packed into new frames as `putAt` records. The calling thread reads and decides; a second
/// thread (``CompactionPipeline``) compresses, checksums and writes, in order.
extension Compactor {
    /// What the copy did, for the report.
    struct CopyCounts {
        var framesCopied = 0
        var framesRepacked = 0
    }

    /// Reads the live records of `live` from `segments` (the prefix, in replay order) and hands
    /// them to `pipeline` in batches. Checks for `close()` every 256 frames and stops early if
    /// the pipeline failed (``CompactionPipeline/finish(marker:)`` then throws its error).
    static func copy(_ live: LivePrefix, from segments: [SegmentFile], to pipeline: CompactionPipeline, engine: LogEngine) throws
        -> CopyCounts
    {
        var counts = CopyCounts()
        var reader: SegmentWindow? = nil
        let maxFrame = engine.options.maxFramePayload
        var batch = CopyBatch()
        var repack = RepackedFrame(capacity: maxFrame)
        let options = engine.options
        // Builds re-packed frames on this thread too while the writing thread is behind.
        let compressor = LZ4.Compressor(level: options.compactionCompressionLevel)
        func flushRepacked() { repack.flush(into: &batch, building: pipeline.isBehind ? compressor : nil, options: options) }
        func submitIfFull() {
            if batch.bytes.count >= 1 << 20 {
                pipeline.submit(batch)
                batch = CopyBatch()
            }
        }
        for (n, frame) in live.frames.enumerated() {
            if n & 255 == 0 {
                if engine.background.isClosing { throw LogEngine.closedError() }
                if pipeline.hasFailed { break }
            }
            let segment = segments[frame.segmentPosition]
            if reader?.segment !== segment { reader = SegmentWindow(segment) }
            // The index keeps no frame lengths (RecordLocation): the header says how long it is.
            let headerSize = LogFrame.headerSize(version: segment.version)
            let stored = try reader!.withBytes(at: UInt64(frame.offset), count: headerSize) { bytes in
                LogFrame.peekHeader(bytes, version: segment.version)?.storedLength
            }
            guard let stored, stored <= LogFrame.maxPayload else {
                throw LogStoreError(
                    .corruption, "Indexed frame has an unreadable header.", path: segment.path, offset: UInt64(frame.offset))
            }
            let total = headerSize + stored
            let records = frame.recordStart..<frame.recordEnd
            try reader!.withBytes(at: UInt64(frame.offset), count: total) { bytes in
                guard let header = LogFrame.peekHeader(bytes, version: segment.version) else {
                    throw LogStoreError(
                        .corruption, "Indexed frame has an unreadable header.", path: segment.path, offset: UInt64(frame.offset))
                }
                // Which records the frame holds: `putAt` when compaction wrote it (compacted
                // segment, syncedThrough 0, or any frame of a version 1 compacted segment), else `put`.
                let putAt = segment.compacted && (segment.version < 2 || header.syncedThrough == 0)
                var liveBytes = 0
                for r in live.order[records] {
                    let i = Int(r)
                    liveBytes += LogEngine.recordSize(
                        typeBytes: live.type(i).utf8.count, keyBytes: live.key(i).count, location: live.location(i), compacted: putAt)
                }
                // Copied as it is when every record is live (their exact sizes fill the payload;
                // deletes are never live), it is a version 2 frame (the output's header layout),
                // it will read as what it holds (in a compacted segment a frame holds putAt records
                // if and only if its syncedThrough is 0, FileFormat.md §7a: every frame this engine
                // writes to a normal segment claims a synced offset), and no small re-packed frame
                // is pending (it would have to be written first, as a runt).
                let allLive = liveBytes == header.rawLength
                // A writer's frame left uncompressed (compressOnWrite false) is re-packed once to
                // be compressed; a compacted segment's frames already had their chance.
                let compressLater =
                    options.compression && !header.compressed && !segment.compacted
                    && header.rawLength >= options.compressionThreshold
                if allLive && !compressLater && segment.version >= 2 && putAt == (header.syncedThrough == 0)
                    && (repack.count == 0 || repack.count >= maxFrame / 2)
                {
                    flushRepacked()
                    let start = batch.bytes.count
                    batch.bytes.append(contentsOf: bytes)
                    batch.items.append(
                        .copied(range: start..<batch.bytes.count, sequence: header.sequence, rawLength: header.rawLength, records: records))
                    counts.framesCopied += 1
                    submitIfFull()
                    return
                }
                guard case .frame(let checked, let payloadOffset) = LogFrame.parse(bytes, at: 0, version: segment.version) else {
                    throw LogStoreError(
                        .corruption, "Frame unreadable (checksum or header).", path: segment.path, offset: UInt64(frame.offset))
                }
                let raw: [UInt8]
                do {
                    raw = try LogFrame.rawPayload(
                        checked, UnsafeRawBufferPointer(rebasing: bytes[payloadOffset..<(payloadOffset + checked.storedLength)]))
                } catch var e as LogStoreError {
                    e.path = segment.path
                    e.offset = UInt64(frame.offset)
                    throw e
                }
                try raw.withUnsafeBytes { payload in
                    for r in live.order[records] {
                        let i = Int(r)
                        let (type, key, loc) = (live.type(i), live.key(i), live.location(i))
                        let start = Int(loc.valueOffset)
                        let end = start + Int(loc.valueLength)
                        guard end <= payload.count else {
                            throw LogStoreError(
                                .corruption, "Record value lies outside its frame.", path: segment.path, offset: UInt64(frame.offset))
                        }
                        let size = CompactedRecord.size(
                            typeBytes: type.utf8.count, keyBytes: key.count, sequence: loc.sequence, valueBytes: end - start)
                        if repack.count > 0 && repack.count + size > maxFrame {
                            flushRepacked()
                            submitIfFull()
                        }
                        repack.add(
                            ordinal: r, type: type, key: key, sequence: loc.sequence,
                            value: UnsafeRawBufferPointer(rebasing: payload[start..<end]))
                    }
                }
                counts.framesRepacked += 1
            }
        }
        flushRepacked()
        if !batch.items.isEmpty { pipeline.submit(batch) }
        return counts
    }
}

/// The re-packed frame being filled: `putAt` records of live records from frames that also held
/// dead ones.
struct RepackedFrame {
    private var frame: _ByteWriter
    private var records: [CopyBatch.Repacked] = []

    init(capacity: Int) { frame = _ByteWriter(capacity: min(capacity, 64 << 10)) }

    /// Raw bytes so far (0: nothing pending).
    var count: Int { frame.count }

    mutating func add(ordinal: Int32, type: String, key: RecordKey, sequence: UInt64, value: UnsafeRawBufferPointer) {
        let at = CompactedRecord.encode(type: type, key: key, sequence: sequence, value: value, into: &frame)
        records.append(CopyBatch.Repacked(ordinal: ordinal, valueOffset: UInt32(at), valueLength: UInt32(value.count), sequence: sequence))
    }

    /// Moves the pending frame (if any) into `batch`: its raw payload, for the writing thread to
    /// compress and checksum, or, with `building` (that thread is behind), the finished frame.
    mutating func flush(into batch: inout CopyBatch, building compressor: LZ4.Compressor? = nil, options: LogEngineOptions) {
        guard !records.isEmpty else { return }
        let start = batch.bytes.count
        var stored: Int? = nil
        if let compressor {
            let sequence = records.reduce(0) { max($0, $1.sequence) }
            stored = frame.bytes.withUnsafeBytes {
                CompactionOutput.frame($0, sequence: sequence, into: &batch.bytes, options: options, compressor: compressor)
            }
        } else {
            frame.bytes.withUnsafeBytes { batch.bytes.append(contentsOf: $0) }
        }
        let first = batch.repacked.count
        batch.repacked.append(contentsOf: records)
        batch.items.append(
            .repacked(range: start..<batch.bytes.count, records: first..<batch.repacked.count, rawLength: frame.count, stored: stored))
        records.removeAll(keepingCapacity: true)
        frame.bytes.removeAll(keepingCapacity: true)
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

    /// Whether two or more batches wait: the reading thread then builds re-packed frames itself.
    var isBehind: Bool { waiting.withLock { $0 >= 2 } }
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
