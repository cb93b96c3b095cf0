/// The manifest names the segments that make up the store, in replay order
/// (Docs/FileFormat.md, "Manifest"). It is replaced atomically (``AtomicFileReplace``).
///
///     v1 := magic:8 = 89 'L' 'S' 'M' 'F' 0D 0A 1A   version:u16le = 1   flags:u16le = 0
///           generation:u64le   nextSegment:u32le   count:u32le   segment:u32le * count
///           crc:u32le   (masked CRC-32C of every byte before it)
///     v2 := magic:8   version:u16le = 2   flags:u16le = 0   generation:u64le   nextSegment:u32le
///           storeId:16   count:u32le   entry * count   crc:u32le
///     v4 := magic:8   version:u16le = 4   flags:u16le = 0   generation:u64le   nextSegment:u32le
///           storeId:16   cipher:u8   reserved:u8 * 3 = 0   keyCheck:16   count:u32le   entry * count
///           crc:u32le
///     entry := segment:u32le   length:u64le   lastSequence:u64le
///     cipher := 0 (none; keyCheck is 16 zero bytes) | 1 (AES-256-GCM; keyCheck proves the key)
///
/// Versions 1, 2 and 4 exist (store formats 1, 2 and 3 wrote versions 1, 2 and 2; format 4
/// writes 4); no LogStore writes version 3.
///
/// In v2 every entry but the last describes a **sealed** segment: `length` is its exact file size
/// and `lastSequence` the sequence of the last transaction in it (0 if it holds none). The last
/// entry is the tail, still being appended to: `length` and `lastSequence` are 0. A sealed segment
/// whose file is shorter or longer than `length`, or whose transactions end elsewhere than
/// `lastSequence`, is damage (Docs/Design.md, failure table).
package struct ManifestFile: Equatable, Sendable {
    package static let magic: [UInt8] = [0x89, 0x4C, 0x53, 0x4D, 0x46, 0x0D, 0x0A, 0x1A]
    package static let maxSegments = 1 << 20

    /// What a v2 manifest records about a sealed segment.
    package struct Sealed: Equatable, Sendable {
        /// The segment's exact file size.
        package var length: UInt64
        /// The sequence of its last transaction (0: none).
        package var lastSequence: UInt64
        package init(length: UInt64, lastSequence: UInt64) {
            self.length = length
            self.lastSequence = lastSequence
        }
    }

    /// The version this build writes.
    package static let currentVersion: UInt16 = 4
    /// The newest version this build reads.
    package static let newestReadable: UInt16 = 4
    /// The ciphers this build reads: 0 (records in the clear) and 1 (AES-256-GCM).
    package static let knownCiphers: Set<UInt8> = [StoreCipherAlgorithm.none, StoreCipherAlgorithm.aes256GCM]

    package var version: UInt16 = ManifestFile.currentVersion
    /// Incremented on every rewrite (roll-over, compaction).
    package var generation: UInt64
    /// The number the next new segment file gets. Always greater than every listed segment.
    package var nextSegment: UInt32
    /// Live segments in replay order. The last one is the one being appended to.
    package var segments: [UInt32]
    /// Version 2: the store's id (nil in version 1).
    package var storeId: StoreID?
    /// Version 2: the sealed segments (every listed one but the last).
    package var sealed: [UInt32: Sealed]
    /// Version 4: how the store's records are sealed (0: in the clear).
    package var cipher: UInt8 = 0
    /// Version 4: proof of the store key for `cipher` 1 (16 zero bytes for cipher 0).
    package var keyCheck: [UInt8] = [UInt8](repeating: 0, count: 16)

    package init(
        version: UInt16 = ManifestFile.currentVersion, generation: UInt64, nextSegment: UInt32, segments: [UInt32],
        storeId: StoreID? = nil, sealed: [UInt32: Sealed] = [:], cipher: UInt8 = 0, keyCheck: [UInt8]? = nil
    ) {
        self.version = version
        self.generation = generation
        self.nextSegment = nextSegment
        self.segments = segments
        self.storeId = storeId
        self.sealed = sealed
        self.cipher = cipher
        self.keyCheck = keyCheck ?? [UInt8](repeating: 0, count: 16)
    }

    package func encoded() -> [UInt8] {
        var w = _ByteWriter(capacity: 48 + 20 * segments.count)
        w.append(contentsOf: Self.magic)
        w.u16(version)
        w.u16(0)
        w.u64(generation)
        w.u32(nextSegment)
        if version >= 2 { w.append(contentsOf: storeId?.bytes ?? [UInt8](repeating: 0, count: 16)) }
        if version >= 4 {
            w.u8(cipher)
            w.append(contentsOf: [0, 0, 0])
            w.append(contentsOf: keyCheck.count == 16 ? keyCheck : [UInt8](repeating: 0, count: 16))
        }
        w.u32(UInt32(segments.count))
        for s in segments {
            w.u32(s)
            if version >= 2 {
                let seal = sealed[s]
                w.u64(seal?.length ?? 0)
                w.u64(seal?.lastSequence ?? 0)
            }
        }
        let crc = w.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        w.u32(CRC32C.mask(crc))
        return w.bytes
    }

    /// Decodes and checks a manifest; throws `.corruption`, `.notAStore` or
    /// `.unsupportedFormatVersion` naming `path`.
    package static func decode(_ bytes: [UInt8], path: String) throws -> ManifestFile {
        try bytes.withUnsafeBytes { buf in
            guard buf.count >= 8, buf.prefix(8).elementsEqual(magic) else {
                throw LogStoreError(
                    .notAStore, "MANIFEST does not start with LogStore's magic bytes; this directory was not written by LogStore.",
                    path: path, offset: 0)
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
                guard version <= newestReadable else {
                    throw LogStoreError(
                        .unsupportedFormatVersion,
                        "The store was written by a newer LogStore (MANIFEST version \(version); this build reads up to \(newestReadable), store format \(LogStoreFormat.storeFormat)). Upgrade LogStore to open it.",
                        path: path, offset: 8)
                }
                // No LogStore writes version 0 or 3 (segment headers refuse them too).
                guard version >= 1, version != 3 else { throw _DecodeError("format version \(version)", at: 8) }
                _ = try r.u16()
                let generation = try r.u64()
                let next = try r.u32()
                let storeId = version >= 2 ? StoreID(bytes: Array(try r.bytes(16))) : nil
                var cipher: UInt8 = 0
                var keyCheck: [UInt8]? = nil
                if version >= 4 {
                    let cipherAt = r.offset
                    cipher = try r.u8()
                    guard try r.u8() == 0, try r.u16() == 0 else { throw _DecodeError("reserved bytes are not zero", at: cipherAt + 1) }
                    keyCheck = Array(try r.bytes(16))
                    guard knownCiphers.contains(cipher) else {
                        throw LogStoreError(
                            .unsupportedFormatVersion,
                            "The store's records are sealed with cipher \(cipher), which this build cannot open. Open it with a LogStore that supports it (and its key).",
                            path: path, offset: UInt64(cipherAt))
                    }
                }
                let count = try r.u32()
                let entrySize = version >= 2 ? 20 : 4
                guard count <= maxSegments, Int(count) * entrySize + 4 <= r.remaining else {
                    throw _DecodeError("segment count \(count) exceeds the file", at: r.offset - 4)
                }
                var segments: [UInt32] = []
                var sealed: [UInt32: Sealed] = [:]
                for i in 0..<Int(count) {
                    let at = r.offset
                    let n = try r.u32()
                    segments.append(n)
                    guard version >= 2 else { continue }
                    let seal = Sealed(length: try r.u64(), lastSequence: try r.u64())
                    if i == Int(count) - 1 {
                        guard seal == Sealed(length: 0, lastSequence: 0) else {
                            throw _DecodeError("the tail segment \(n) is recorded as sealed", at: at)
                        }
                    } else {
                        guard seal.length >= UInt64(SegmentHeader.sizeV1), seal.length <= UInt64(UInt32.max) else {
                            throw _DecodeError("sealed segment \(n) has an implausible length \(seal.length)", at: at)
                        }
                        sealed[n] = seal
                    }
                }
                let end = r.offset
                let stored = try r.u32()
                guard r.isAtEnd else { throw _DecodeError("trailing bytes", at: r.offset) }
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<end]))
                guard CRC32C.mask(crc) == stored else { throw _DecodeError("checksum mismatch", at: end) }
                guard !segments.isEmpty, segments.allSatisfy({ $0 < next }), Set(segments).count == segments.count else {
                    throw _DecodeError("segment list is empty, repeats a segment or names one >= nextSegment", at: 28)
                }
                return ManifestFile(
                    version: version, generation: generation, nextSegment: next, segments: segments, storeId: storeId, sealed: sealed,
                    cipher: cipher, keyCheck: keyCheck)
            } catch let e as _DecodeError {
                throw LogStoreError(
                    .corruption, "MANIFEST is damaged: \(e.reason). Run `logstore-compact salvage` to recover the segments' data.",
                    path: path, offset: UInt64(e.offset))
            }
        }
    }
}
