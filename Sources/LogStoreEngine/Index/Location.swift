/// Where a record's value lives: the frame that holds it and the value's bytes inside the frame's
/// raw (decompressed) payload. 24 bytes in memory: it is the payload of every index entry.
///
/// The frame's length is not kept: its header, which every read parses anyway, holds it (and a
/// checkpoint, which stores it, reads it from there: ``SegmentFile/storedFrameLength(at:)``).
/// The sequence number is kept whole, so "which records changed after sequence s" is exact.
public struct RecordLocation: Sendable, Hashable {
    /// Segment number.
    public var segment: UInt32
    /// Byte offset of the frame header in the segment file.
    public var frameOffset: UInt32
    /// Sequence number of the transaction that wrote the record.
    public var sequence: UInt64
    /// Offset of the value's bytes within the frame's raw payload.
    public var valueOffset: UInt32
    /// Length of the value's bytes.
    public var valueLength: UInt32

    /// A location from its parts (the engine's, and tools of this package that rebuild an index).
    package init(segment: UInt32, frameOffset: UInt32, valueOffset: UInt32, sequence: UInt64, valueLength: UInt32) {
        self.segment = segment
        self.frameOffset = frameOffset
        self.valueOffset = valueOffset
        self.sequence = sequence
        self.valueLength = valueLength
    }

    /// A key for caches: segment and frame offset.
    var frameID: UInt64 { UInt64(segment) << 32 | UInt64(frameOffset) }
}
