/// The header at the start of every segment file (Docs/FileFormat.md, "Segment header"):
///
///     v1 (32 bytes) := magic:8 = 89 'L' 'S' 'E' 'G' 0D 0A 1A   version:u16le = 1   flags:u16le
///                      segment:u32le   baseSequence:u64le   reserved:u32le = 0
///                      crc:u32le (masked CRC-32C of bytes 0..<28)
///     v2 (48 bytes) := magic:8   version:u16le = 2   flags:u16le   segment:u32le   baseSequence:u64le
///                      storeId:16   reserved:u32le = 0   crc:u32le (masked CRC-32C of bytes 0..<44)
///     v4 (48 bytes) := magic:8   version:u16le = 4   flags:u16le   segment:u32le   baseSequence:u64le
///                      storeId:16   cipher:u8   reserved:u8 = 0   reserved:u16le = 0
///                      crc:u32le (masked CRC-32C of bytes 0..<44)
///     cipher := 0 (records in the clear) | 1 (records sealed with AES-256-GCM; Docs/FileFormatEncryption.md)
///     flags := bit 0 (0x0001): compacted (written by compaction: only commit frames, frame
///              sequences non-decreasing; see Docs/Compaction.md); other bits 0
///
/// The version also selects the frame header layout of the segment's frames (``LogFrame``) and,
/// from version 4 on, the record grammar (``RecordCodec``). No LogStore writes version 3.
package struct SegmentHeader: Equatable {
    /// The size of a version 1 header.
    package static let sizeV1 = 32
    /// The size of a version 2 header.
    package static let sizeV2 = 48
    /// How many bytes to read to decode any header this build knows.
    package static let maxSize = sizeV2
    package static let magic: [UInt8] = [0x89, 0x4C, 0x53, 0x45, 0x47, 0x0D, 0x0A, 0x1A]
    /// Header flag: the segment was written by compaction. Part of the file format.
    package static let flagCompacted: UInt16 = 0x0001
    package var isCompacted: Bool { flags & Self.flagCompacted != 0 }

    /// The version this build writes.
    package static let currentVersion: UInt16 = 4
    /// The newest version this build reads.
    package static let newestReadable: UInt16 = 4

    package var version: UInt16 = SegmentHeader.currentVersion
    package var flags: UInt16 = 0
    package var segment: UInt32
    /// The sequence number of the first transaction this segment may hold (informational).
    package var baseSequence: UInt64
    /// Version 2: the store the segment belongs to (nil in version 1).
    package var storeId: StoreID?
    /// Version 4: how the segment's records are sealed (0: in the clear).
    package var cipher: UInt8 = 0

    package init(
        version: UInt16 = SegmentHeader.currentVersion, flags: UInt16 = 0, segment: UInt32, baseSequence: UInt64,
        storeId: StoreID? = nil, cipher: UInt8 = 0
    ) {
        self.version = version
        self.flags = flags
        self.segment = segment
        self.baseSequence = baseSequence
        self.storeId = storeId
        self.cipher = cipher
    }

    /// The size of a header of `version`.
    package static func size(version: UInt16) -> Int { version >= 2 ? sizeV2 : sizeV1 }
    /// This header's size: where the segment's first frame starts.
    package var size: Int { Self.size(version: version) }

    package func encoded() -> [UInt8] {
        var w = _ByteWriter(capacity: size)
        w.append(contentsOf: Self.magic)
        w.u16(version)
        w.u16(flags)
        w.u32(segment)
        w.u64(baseSequence)
        if version >= 2 { w.append(contentsOf: storeId?.bytes ?? [UInt8](repeating: 0, count: 16)) }
        if version >= 4 {
            w.u8(cipher)
            w.u8(0)
            w.u16(0)
        } else {
            w.u32(0)
        }
        let crc = w.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        w.u32(CRC32C.mask(crc))
        return w.bytes
    }

    package enum DecodeResult {
        case ok(SegmentHeader)
        case notASegment(String)
        case newerVersion(UInt16)
    }

    /// Decodes the header at the start of `bytes` (pass at least ``maxSize`` bytes when the file has
    /// them). Never traps; anything that is not a header this build reads is `.notASegment` or
    /// `.newerVersion`.
    package static func decode(_ bytes: UnsafeRawBufferPointer) -> DecodeResult {
        guard bytes.count >= sizeV1 else { return .notASegment("file is \(bytes.count) bytes, shorter than a segment header") }
        guard bytes.prefix(8).elementsEqual(magic) else { return .notASegment("bad magic") }
        var r = _ByteReader(UnsafeRawBufferPointer(rebasing: bytes[0..<min(bytes.count, sizeV2)]), offset: 8)
        do {
            let version = try r.u16()
            guard version >= 1 else { return .notASegment("format version 0") }
            // No LogStore writes version 3 (format 3 wrote version 2 segments).
            guard version != 3 else { return .notASegment("format version 3") }
            let size = size(version: version)
            if version > newestReadable {
                // A newer header whose checksum is right where this build's newest layout puts it:
                // a newer format. Otherwise a damaged version field, which is damage.
                guard bytes.count >= size else { return .notASegment("file is \(bytes.count) bytes, shorter than a segment header") }
                let stored = bytes.loadUnaligned(fromByteOffset: size - 4, as: UInt32.self).littleEndian
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<(size - 4)]))
                return CRC32C.mask(crc) == stored ? .newerVersion(version) : .notASegment("header checksum mismatch")
            }
            guard bytes.count >= size else {
                return .notASegment("file is \(bytes.count) bytes, shorter than a version \(version) segment header")
            }
            let flags = try r.u16()
            let segment = try r.u32()
            let base = try r.u64()
            let id = version >= 2 ? StoreID(bytes: Array(try r.bytes(16))) : nil
            var cipher: UInt8 = 0
            if version >= 4 {
                cipher = try r.u8()
                guard try r.u8() == 0, try r.u16() == 0 else { return .notASegment("reserved header bytes are not zero") }
            } else {
                _ = try r.u32()
            }
            let stored = try r.u32()
            let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<(size - 4)]))
            guard CRC32C.mask(crc) == stored else { return .notASegment("header checksum mismatch") }
            guard flags & ~flagCompacted == 0 else { return .notASegment("unknown header flags 0x\(String(flags, radix: 16))") }
            return .ok(SegmentHeader(version: version, flags: flags, segment: segment, baseSequence: base, storeId: id, cipher: cipher))
        } catch {
            return .notASegment(error.reason)
        }
    }
}

/// Format constants shared by every file of a store.
public enum LogStoreFormat {
    /// The store format this build writes and the newest it reads (Docs/FileFormat.md,
    /// "Versions"): format 4 writes MANIFEST 4 and segments 4. Stores of formats 1 to 3 open, and
    /// their first writable open upgrades them to format 4; their old segments stay readable until
    /// compaction rewrites them.
    public static let storeFormat: UInt16 = 4
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
