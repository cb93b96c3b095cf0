/// Where a record lives: 24 bytes, the payload of every index entry (Docs/FileFormat.md, "Record
/// locations").
///
/// - In a format 4 segment (``isLegacy`` false): ``offset`` is the file offset of the record's
///   first byte and ``length`` the whole record (size, checksum, body). A read checks and decodes
///   that one record.
/// - In a version 1 or 2 segment (a store upgraded from format 3 whose old segments compaction
///   has not rewritten yet): ``offset`` is the offset of the frame that holds the record,
///   ``length`` the value's length, and ``legacy`` holds the flag `0x8000_0000` and the value's
///   offset in the frame's raw (decompressed) payload. Such a read goes through the frame.
///
/// The sequence number is kept whole, so "which records changed after sequence s" is exact.
public struct RecordLocation: Sendable, Hashable {
    /// Segment number.
    public var segment: UInt32
    /// Format 4: the record's file offset. Legacy: the frame's file offset.
    public var offset: UInt32
    /// Format 4: the record's length in bytes. Legacy: the value's length.
    public var length: UInt32
    /// 0 for a format 4 record; `0x8000_0000 | valueOffset` for a record of a version 1 or 2 segment.
    public var legacy: UInt32
    /// Sequence number of the transaction that wrote the record.
    public var sequence: UInt64

    /// The flag bit of ``legacy``.
    package static let legacyFlag: UInt32 = 0x8000_0000

    /// The location of the format 4 record of `length` bytes at `offset` of `segment`.
    package init(segment: UInt32, offset: UInt32, length: UInt32, sequence: UInt64) {
        self.segment = segment
        self.offset = offset
        self.length = length
        self.legacy = 0
        self.sequence = sequence
    }

    /// The location of a value in a version 1 or 2 frame: the frame at `frameOffset`, the value's
    /// `valueLength` bytes at `valueOffset` of its raw payload (at most 2^31 - 1).
    package init(segment: UInt32, frameOffset: UInt32, valueOffset: UInt32, valueLength: UInt32, sequence: UInt64) {
        self.segment = segment
        self.offset = frameOffset
        self.length = valueLength
        self.legacy = Self.legacyFlag | (valueOffset & ~Self.legacyFlag)
        self.sequence = sequence
    }

    /// A location from its five stored fields, as run files and checkpoints hold them.
    package init(segment: UInt32, offset: UInt32, length: UInt32, legacy: UInt32, sequence: UInt64) {
        self.segment = segment
        self.offset = offset
        self.length = length
        self.legacy = legacy
        self.sequence = sequence
    }

    /// Whether the record lives in a version 1 or 2 frame (read through the frame).
    @inline(__always)
    public var isLegacy: Bool { legacy & Self.legacyFlag != 0 }

    /// Legacy: the value's offset in its frame's raw payload.
    @inline(__always)
    var legacyValueOffset: Int { Int(legacy & ~Self.legacyFlag) }

    /// A key for caches and for grouping records by frame (legacy locations): segment and offset.
    var frameID: UInt64 { UInt64(segment) << 32 | UInt64(offset) }

    /// Log order: segment number, then offset (within one segment).
    var logPosition: UInt64 { UInt64(segment) << 32 | UInt64(offset) }
}
