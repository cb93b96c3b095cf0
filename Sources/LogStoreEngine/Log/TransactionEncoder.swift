/// Encodes a transaction's operations into frames (see `LogFrame`), and where each put's value lands.
enum TransactionEncoder {
    struct Output {
        var bytes: [UInt8]
        /// Sum of the frames' raw (uncompressed) payload lengths.
        var rawBytes: UInt64 = 0
        /// Per operation (puts only meaningful): frame offset relative to `bytes`, value offset in
        /// the frame's raw payload, value length.
        var placements: [RecordLocation]
    }

    /// `syncedThrough`: how far the tail segment is known durable now (every frame records it).
    /// `version`: the tail segment's format version, which decides the frame header layout.
    /// `commit`: whether the last frame is the transaction's commit frame (false: a chunk of a
    /// large transaction that more frames follow; every frame is a data frame).
    /// `compressor`: the caller's reusable LZ4 state, if it has one.
    static func encode(
        _ ops: [RecordOperation], sequence: UInt64, options: LogEngineOptions, syncedThrough: UInt32,
        version: UInt16 = LogStoreFormat.version, commit: Bool = true, compressor: LZ4.Compressor? = nil
    ) -> Output {
        var out: [UInt8] = []
        out.reserveCapacity(ops.reduce(0) { $0 + $1.encodedSizeBound } + LogFrame.headerSizeV2 * 2)
        var placements = [RecordLocation](
            repeating: RecordLocation(segment: 0, frameOffset: 0, valueOffset: 0, sequence: 0, valueLength: 0), count: ops.count)
        var frame = _ByteWriter(capacity: min(options.maxFramePayload, 64 << 10))
        var inFrame: [Int] = []
        var rawBytes: UInt64 = 0
        func flush(last: Bool) {
            let start = out.count
            rawBytes += UInt64(frame.count)
            LogFrame.append(
                into: &out, raw: frame.bytes, kind: last ? .commit : .data, sequence: sequence,
                compress: options.compression && options.compressOnWrite, threshold: options.compressionThreshold, version: version,
                syncedThrough: syncedThrough,
                compressor: compressor)
            for i in inFrame {
                placements[i].frameOffset = UInt32(start)
            }
            inFrame.removeAll(keepingCapacity: true)
            frame = _ByteWriter(capacity: min(options.maxFramePayload, 64 << 10))
        }
        for (i, op) in ops.enumerated() {
            if frame.count > 0 && frame.count + op.encodedSizeBound > options.maxFramePayload {
                flush(last: false)
            }
            if let at = op.encode(into: &frame), case .put(_, _, let v) = op {
                placements[i].valueOffset = UInt32(at)
                placements[i].valueLength = UInt32(v.count)
            }
            inFrame.append(i)
        }
        flush(last: commit)
        return Output(bytes: out, rawBytes: rawBytes, placements: placements)
    }
}
