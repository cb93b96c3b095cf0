/// The 32-byte header at the start of every segment file (Docs/FileFormat.md, "Segment header"):
///
///     magic:8 = 89 'L' 'S' 'E' 'G' 0D 0A 1A   version:u16le   flags:u16le
///     segment:u32le   baseSequence:u64le   reserved:u32le = 0   crc:u32le (masked CRC-32C of bytes 0..<28)
///     flags := bit 0 (0x0001): compacted (written by compaction: only commit frames of `putAt`
///              records, frame sequences non-decreasing; see Docs/Compaction.md); other bits 0
package struct SegmentHeader: Equatable {
    package static let size = 32
    package static let magic: [UInt8] = [0x89, 0x4C, 0x53, 0x45, 0x47, 0x0D, 0x0A, 0x1A]
    /// Header flag: the segment was written by compaction. Part of the file format.
    package static let flagCompacted: UInt16 = 0x0001

    package var isCompacted: Bool { flags & Self.flagCompacted != 0 }

    package var version: UInt16 = LogStoreFormat.version
    package var flags: UInt16 = 0
    package var segment: UInt32
    /// The sequence number of the first transaction this segment may hold (informational).
    package var baseSequence: UInt64

    package init(version: UInt16 = LogStoreFormat.version, flags: UInt16 = 0, segment: UInt32, baseSequence: UInt64) {
        self.version = version
        self.flags = flags
        self.segment = segment
        self.baseSequence = baseSequence
    }

    package func encoded() -> [UInt8] {
        var w = _ByteWriter(capacity: Self.size)
        w.append(contentsOf: Self.magic)
        w.u16(version)
        w.u16(flags)
        w.u32(segment)
        w.u64(baseSequence)
        w.u32(0)
        let crc = w.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        w.u32(CRC32C.mask(crc))
        return w.bytes
    }

    package enum DecodeResult {
        case ok(SegmentHeader)
        case notASegment(String)
        case newerVersion(UInt16)
    }

    package static func decode(_ bytes: UnsafeRawBufferPointer) -> DecodeResult {
        guard bytes.count >= size else { return .notASegment("file is \(bytes.count) bytes, shorter than a segment header") }
        guard bytes.prefix(8).elementsEqual(magic) else { return .notASegment("bad magic") }
        var r = _ByteReader(UnsafeRawBufferPointer(rebasing: bytes[0..<size]), offset: 8)
        do {
            let version = try r.u16()
            let flags = try r.u16()
            let segment = try r.u32()
            let base = try r.u64()
            _ = try r.u32()
            let stored = try r.u32()
            let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28]))
            guard CRC32C.mask(crc) == stored else { return .notASegment("header checksum mismatch") }
            guard version <= LogStoreFormat.version else { return .newerVersion(version) }
            guard version >= 1 else { return .notASegment("format version 0") }
            guard flags & ~flagCompacted == 0 else { return .notASegment("unknown header flags 0x\(String(flags, radix: 16))") }
            return .ok(SegmentHeader(version: version, flags: flags, segment: segment, baseSequence: base))
        } catch {
            return .notASegment(error.reason)
        }
    }
}

/// Format constants shared by every file of a store.
public enum LogStoreFormat {
    /// The format version this build writes and the newest it reads.
    public static let version: UInt16 = 1
    /// Segment file name for a segment number: `000001.log`.
    public static func segmentFileName(_ n: UInt32) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".log"
    }
    /// Parses `NNNNNN.log`.
    public static func segmentNumber(fromFileName name: String) -> UInt32? {
        guard name.hasSuffix(".log") else { return nil }
        return UInt32(name.dropLast(4))
    }
    /// The lock file's name.
    public static let lockFileName = "LOCK"
    /// The manifest's name.
    public static let manifestFileName = "MANIFEST"
    /// The checkpoint's name (a snapshot of the indexes; see Docs/Compaction.md).
    public static let checkpointFileName = "CHECKPOINT"
}
