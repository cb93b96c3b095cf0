/// The manifest names the segments that make up the store, in replay order
/// (Docs/FileFormat.md, "Manifest"). It is replaced atomically: written to `MANIFEST.tmp`,
/// fsynced, renamed over `MANIFEST`, then the directory is fsynced.
///
///     magic:8 = 89 'L' 'S' 'M' 'F' 0D 0A 1A   version:u16le   flags:u16le = 0
///     generation:u64le   nextSegment:u32le   count:u32le   segment:u32le * count
///     crc:u32le   (masked CRC-32C of every byte before it)
package struct ManifestFile: Equatable, Sendable {
    package static let magic: [UInt8] = [0x89, 0x4C, 0x53, 0x4D, 0x46, 0x0D, 0x0A, 0x1A]
    package static let maxSegments = 1 << 20

    package var version: UInt16 = LogStoreFormat.version
    /// Incremented on every rewrite (roll-over, compaction).
    package var generation: UInt64
    /// The number the next new segment file gets. Always greater than every listed segment.
    package var nextSegment: UInt32
    /// Live segments in replay order. The last one is the one being appended to.
    package var segments: [UInt32]

    package init(version: UInt16 = LogStoreFormat.version, generation: UInt64, nextSegment: UInt32, segments: [UInt32]) {
        self.version = version
        self.generation = generation
        self.nextSegment = nextSegment
        self.segments = segments
    }

    package func encoded() -> [UInt8] {
        var w = _ByteWriter(capacity: 32 + 4 * segments.count)
        w.append(contentsOf: Self.magic)
        w.u16(version)
        w.u16(0)
        w.u64(generation)
        w.u32(nextSegment)
        w.u32(UInt32(segments.count))
        for s in segments { w.u32(s) }
        let crc = w.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        w.u32(CRC32C.mask(crc))
        return w.bytes
    }

    /// Decodes and checks a manifest; throws `.corruption`, `.notAStore` or
    /// `.unsupportedFormatVersion` naming `path`.
    package static func decode(_ bytes: [UInt8], path: String) throws -> ManifestFile {
        try bytes.withUnsafeBytes { buf in
            guard buf.count >= 8, buf.prefix(8).elementsEqual(magic) else {
                throw LogStoreError(.notAStore, "MANIFEST does not start with LogStore's magic bytes; this directory was not written by LogStore.", path: path, offset: 0)
            }
            var r = _ByteReader(buf, offset: 8)
            do {
                // The checksum (always the last 4 bytes, over everything before them) is checked
                // before the version, so a damaged version field reads as damage, not as a newer
                // format.
                guard buf.count >= 12 else { throw _DecodeError("file is \(buf.count) bytes, too short for a manifest", at: buf.count) }
                let whole = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<(buf.count - 4)]))
                guard CRC32C.mask(whole) == buf.loadUnaligned(fromByteOffset: buf.count - 4, as: UInt32.self).littleEndian else {
                    throw _DecodeError("checksum mismatch", at: buf.count - 4)
                }
                let version = try r.u16()
                guard version <= LogStoreFormat.version else {
                    throw LogStoreError(.unsupportedFormatVersion, "The store was written by a newer LogStore (format version \(version); this build reads up to \(LogStoreFormat.version)). Upgrade LogStore to open it.", path: path, offset: 8)
                }
                // No LogStore writes version 0 (segment headers refuse it too).
                guard version >= 1 else { throw _DecodeError("format version 0", at: 8) }
                _ = try r.u16()
                let generation = try r.u64()
                let next = try r.u32()
                let count = try r.u32()
                guard count <= maxSegments, Int(count) * 4 + 4 <= r.remaining else { throw _DecodeError("segment count \(count) exceeds the file", at: r.offset - 4) }
                var segments: [UInt32] = []
                for _ in 0..<count { segments.append(try r.u32()) }
                let end = r.offset
                let stored = try r.u32()
                guard r.isAtEnd else { throw _DecodeError("trailing bytes", at: r.offset) }
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<end]))
                guard CRC32C.mask(crc) == stored else { throw _DecodeError("checksum mismatch", at: end) }
                guard !segments.isEmpty, segments.allSatisfy({ $0 < next }), Set(segments).count == segments.count else {
                    throw _DecodeError("segment list is empty, repeats a segment or names one >= nextSegment", at: 28)
                }
                return ManifestFile(version: version, generation: generation, nextSegment: next, segments: segments)
            } catch let e as _DecodeError {
                throw LogStoreError(.corruption, "MANIFEST is damaged: \(e.reason). Run `logstore-compact salvage` to recover the segments' data.", path: path, offset: UInt64(e.offset))
            }
        }
    }
}
