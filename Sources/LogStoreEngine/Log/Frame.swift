/// A frame: the checksummed unit of the log (Docs/FileFormat.md, "Frames").
///
///     frame      := header payload:storedLength
///     header v1  := crc:u32le storedLength:u32le kind:u8 flags:u8 reserved:u16le=0 sequence:u64le rawLength:u32le           (24 bytes)
///     header v2  := crc:u32le storedLength:u32le kind:u8 flags:u8 reserved:u16le=0 sequence:u64le rawLength:u32le
///                   syncedThrough:u32le                                                                               (28 bytes)
///     crc        := masked CRC-32C of header[4...] ++ payload
///     kind       := 0x01 data (more frames of this transaction follow) | 0x02 commit (last frame)
///     flags      := bit 0: payload is an LZ4 block of rawLength bytes; other bits 0
///     payload    := record*   (after decompression; see RecordOperation)
///     syncedThrough := a segment offset: when the frame was written, every byte of the segment before
///                   it was known durable (an fdatasync covering it had returned). 0 = nothing claimed.
///
/// A segment's header version decides the frame header version of all its frames. A transaction is
/// one or more frames with the same sequence number in consecutive positions of one segment; it
/// exists only if its commit frame is valid.
package enum LogFrame {
    /// The frame header size of format version 1 segments.
    package static let headerSizeV1 = 24
    /// The frame header size of format version 2 segments.
    package static let headerSizeV2 = 28

    /// The frame header size in a segment of format `version`.
    @inline(__always)
    package static func headerSize(version: UInt16) -> Int { version >= 2 ? headerSizeV2 : headerSizeV1 }

    /// The frame kind on disk. Part of the file format: never renumber or reuse.
    package enum Kind: UInt8 {
        case data = 0x01
        case commit = 0x02
    }
    package static let flagLZ4: UInt8 = 0x01
    /// Largest stored or raw payload accepted by the decoder (a sanity bound for corrupt lengths).
    package static let maxPayload = 1 << 30
    /// The most an LZ4 block can expand: 255 output bytes per input byte.
    package static let maxLZ4Expansion = 255

    package struct Header {
        package var storedLength: Int
        package var kind: Kind
        package var compressed: Bool
        package var sequence: UInt64
        package var rawLength: Int
        /// Version 2: how far the segment was known durable when the frame was written (0 in v1).
        package var syncedThrough: UInt32 = 0
    }

    /// Appends one frame holding `raw` (already-encoded records). Compresses when `compress` and
    /// the payload is at least `threshold` bytes and LZ4 makes it smaller.
    /// Returns the frame's stored payload length.
    @discardableResult
    package static func append(
        into out: inout [UInt8], raw: [UInt8], kind: Kind, sequence: UInt64, compress: Bool, threshold: Int,
        version: UInt16 = LogStoreFormat.version, syncedThrough: UInt32 = 0, compressor: LZ4.Compressor? = nil
    ) -> Int {
        raw.withUnsafeBytes {
            append(
                into: &out, raw: $0, kind: kind, sequence: sequence, compress: compress, threshold: threshold, version: version,
                syncedThrough: syncedThrough, compressor: compressor)
        }
    }

    /// ``append(into:raw:kind:sequence:compress:threshold:version:syncedThrough:compressor:)`` from raw
    /// bytes in place (a compaction's re-packed frames). `compressor`: a reusable LZ4 state for a
    /// caller that writes many frames.
    @discardableResult
    package static func append(
        into out: inout [UInt8], raw: UnsafeRawBufferPointer, kind: Kind, sequence: UInt64, compress: Bool, threshold: Int,
        version: UInt16 = LogStoreFormat.version, syncedThrough: UInt32 = 0, compressor: LZ4.Compressor? = nil
    ) -> Int {
        var payload: [UInt8]? = nil
        if compress && raw.count >= threshold {
            if let compressor {
                payload = compressor.compress(raw)
            } else {
                payload = LZ4.compress(raw)
            }
        }
        let compressed = payload != nil
        var w = _ByteWriter(capacity: headerSizeV2)
        w.u32(0)  // crc, patched below
        func finish(_ body: UnsafeRawBufferPointer) -> Int {
            w.u32(UInt32(body.count))
            w.u8(kind.rawValue)
            w.u8(compressed ? flagLZ4 : 0)
            w.u16(0)
            w.u64(sequence)
            w.u32(UInt32(raw.count))
            if version >= 2 { w.u32(syncedThrough) }
            var crc = w.bytes.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[4...])) }
            crc = CRC32C.update(crc, body)
            w.patchU32(CRC32C.mask(crc), at: 0)
            out.append(contentsOf: w.bytes)
            out.append(contentsOf: body)
            return body.count
        }
        if let payload { return payload.withUnsafeBytes { finish($0) } }
        return finish(raw)
    }

    package enum ParseResult {
        case frame(Header, payloadOffset: Int)
        /// Not enough bytes for the header or the payload it announces.
        case truncated(String)
        /// The bytes are there but wrong.
        case invalid(String)
    }

    /// Parses and checks the frame at `offset` of `bytes`, a frame of a segment of format
    /// `version` (CRC included; does not decompress).
    package static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, version: UInt16) -> ParseResult {
        parse(bytes, at: offset, version: version, checkingCRC: true)
    }

    /// The stored payload length the frame header at `offset` announces, if the header is there
    /// and the length plausible (nothing else is checked: a reader then reads the frame and
    /// ``parse(_:at:version:)``s it).
    package static func announcedLength(_ bytes: UnsafeRawBufferPointer, at offset: Int, version: UInt16) -> Int? {
        guard offset >= 0, bytes.count - offset >= headerSize(version: version) else { return nil }
        let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian)
        return length <= maxPayload ? length : nil
    }

    /// Like ``parse(_:at:version:)`` but without the CRC: for a frame of an immutable (sealed)
    /// segment whose CRC this process already checked (``SegmentFile``'s verified frames). Every
    /// other check still runs, so damaged lengths never lead a read out of `bytes`.
    package static func parseSkippingCRC(_ bytes: UnsafeRawBufferPointer, at offset: Int, version: UInt16) -> ParseResult {
        parse(bytes, at: offset, version: version, checkingCRC: false)
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, version: UInt16, checkingCRC: Bool) -> ParseResult {
        let headerSize = headerSize(version: version)
        guard offset >= 0, bytes.count - offset >= headerSize else {
            return .truncated("\(bytes.count - offset) bytes left, a frame header needs \(headerSize)")
        }
        // The header is all there: plain loads (a point read parses one per read).
        func u32(_ at: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt32.self).littleEndian }
        let stored = u32(0)
        let length = u32(4)
        let kindRaw = bytes[offset + 8]
        let flags = bytes[offset + 9]
        let reserved = bytes.loadUnaligned(fromByteOffset: offset + 10, as: UInt16.self)
        let seq = bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt64.self).littleEndian
        let raw = u32(20)
        let synced = version >= 2 ? u32(24) : 0
        let storedLength = Int(length)
        let rawLength = Int(raw)
        let payloadOffset = offset + headerSize
        if storedLength > maxPayload || rawLength > maxPayload {
            return .invalid("frame length \(storedLength) (raw \(rawLength)) is implausible")
        }
        if bytes.count - payloadOffset < storedLength {
            // Check the CRC as far as possible is impossible; report as truncated.
            return .truncated("frame announces \(storedLength) payload bytes, \(bytes.count - payloadOffset) left")
        }
        if checkingCRC {
            var crc = CRC32C.update(0, UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<payloadOffset]))
            crc = CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: bytes[payloadOffset..<(payloadOffset + storedLength)]))
            guard CRC32C.mask(crc) == stored else { return .invalid("checksum mismatch") }
        }
        guard let kind = Kind(rawValue: kindRaw) else { return .invalid("unknown frame kind 0x\(String(kindRaw, radix: 16))") }
        guard flags & ~flagLZ4 == 0, reserved == 0 else { return .invalid("unknown flags 0x\(String(flags, radix: 16))") }
        let compressed = flags & flagLZ4 != 0
        if !compressed && rawLength != storedLength {
            return .invalid("raw length \(rawLength) != stored length \(storedLength) in an uncompressed frame")
        }
        // An LZ4 block expands at most 255-fold; refusing larger claims here keeps a damaged or
        // hostile header from making the decoder allocate up to `maxPayload` bytes for nothing.
        if compressed && rawLength > storedLength * maxLZ4Expansion {
            return .invalid("raw length \(rawLength) is more than LZ4 can expand \(storedLength) stored bytes to")
        }
        return .frame(
            Header(
                storedLength: storedLength, kind: kind, compressed: compressed, sequence: seq, rawLength: rawLength, syncedThrough: synced),
            payloadOffset: payloadOffset)
    }

    /// The header fields of the frame at the start of `bytes`, without checking its checksum or
    /// reading its payload: for compaction, which copies a frame whose records the index says
    /// are all live without reading it (its checksum travels with it). Nil if the header is
    /// short, or its kind, flags or lengths are not a frame's.
    package static func peekHeader(_ bytes: UnsafeRawBufferPointer, version: UInt16) -> Header? {
        guard bytes.count >= headerSize(version: version) else { return nil }
        var r = _ByteReader(bytes, offset: 4)
        guard let length = try? r.u32(), let kindRaw = try? r.u8(), let kind = Kind(rawValue: kindRaw), let flags = try? r.u8(),
            flags & ~flagLZ4 == 0, let reserved = try? r.u16(), reserved == 0, let seq = try? r.u64(), let raw = try? r.u32(),
            let synced = version >= 2 ? try? r.u32() : 0, Int(length) <= maxPayload, Int(raw) <= maxPayload
        else { return nil }
        return Header(
            storedLength: Int(length), kind: kind, compressed: flags & flagLZ4 != 0, sequence: seq, rawLength: Int(raw),
            syncedThrough: synced)
    }

    /// The frame's records as raw bytes (decompressed if needed). Throws `.corruption` if LZ4 fails.
    package static func rawPayload(_ header: Header, _ stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        if !header.compressed { return Array(stored) }
        guard let out = LZ4.decompress(stored, rawLength: header.rawLength) else {
            throw LogStoreError(.corruption, "LZ4 payload does not decompress to its announced \(header.rawLength) bytes.")
        }
        return out
    }
}
