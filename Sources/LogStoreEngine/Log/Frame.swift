/// A frame: the checksummed unit of the log's commit protocol (Docs/FileFormat.md, "Frames").
///
///     frame      := header payload
///     header v1  := crc:u32le storedLength:u32le kind:u8 flags:u8 reserved:u16le=0 sequence:u64le rawLength:u32le           (24 bytes)
///     header v2  := crc:u32le storedLength:u32le kind:u8 flags:u8 reserved:u16le=0 sequence:u64le rawLength:u32le
///                   syncedThrough:u32le                                                                               (28 bytes)
///     header v4  := crc:u32le payloadLength:u32le kind:u8 flags:u8=0 reserved:u16le=0 sequence:u64le recordCount:u32le
///                   syncedThrough:u32le                                                                               (28 bytes)
///     crc        := v1, v2: masked CRC-32C of header[4...] ++ payload
///                   v4: masked CRC-32C of header[4...] ++ sequenceTable (each record has its own CRC)
///     kind       := 0x01 data (more frames of this transaction follow) | 0x02 commit (last frame)
///     flags      := v1, v2: bit 0: payload is an LZ4 block of rawLength bytes; other bits 0.  v4: 0
///     payload    := v1, v2: record*   (after decompression; see RecordOperation)
///                   v4: record{recordCount}                                    (normal segments)
///                       sequenceTable record{recordCount}                      (compacted segments)
///     sequenceTable := delta:uvarint{recordCount}     -- record i has sequence (header.sequence - delta_i)
///     syncedThrough := a segment offset: when the frame was written, every byte of the segment before
///                   it was known durable (an fdatasync covering it had returned). 0 = nothing claimed.
///
/// A segment's header version decides the frame header version of all its frames. A transaction is
/// one or more frames with the same sequence number in consecutive positions of one segment; it
/// exists only if its commit frame is valid. A version 4 frame is valid when its header checksum
/// matches and its payload splits into exactly `recordCount` records (``RecordCodec``) whose own
/// checksums match.
package enum LogFrame {
    /// The frame header size of format version 1 segments.
    package static let headerSizeV1 = 24
    /// The frame header size of format version 2 segments.
    package static let headerSizeV2 = 28

    /// The frame header size of format version 4 segments.
    package static let headerSizeV4 = 28

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
        /// The payload's length on disk (version 4: sequence table and records).
        package var storedLength: Int
        package var kind: Kind
        /// Versions 1 and 2: whether the payload is an LZ4 block (never in version 4).
        package var compressed: Bool
        package var sequence: UInt64
        /// Versions 1 and 2: the payload's length once decompressed. Version 4: the records' bytes
        /// (the payload without the sequence table).
        package var rawLength: Int
        /// Version 2: how far the segment was known durable when the frame was written (0 in v1).
        package var syncedThrough: UInt32 = 0
        /// Version 4: the number of records in the frame.
        package var recordCount: Int = 0
        /// Version 4, compacted segments: the bytes of the sequence table at the payload's start.
        package var sequenceTableLength: Int = 0
    }

    /// Appends one version 1 or 2 frame holding `raw` (already-encoded ``RecordOperation`` records):
    /// the legacy frame, which this build writes only in tests and tools that make old stores.
    /// Compresses when `compress` and the payload is at least `threshold` bytes and LZ4 makes it
    /// smaller. Returns the frame's stored payload length.
    @discardableResult
    package static func append(
        into out: inout [UInt8], raw: [UInt8], kind: Kind, sequence: UInt64, compress: Bool, threshold: Int,
        version: UInt16 = 2, syncedThrough: UInt32 = 0, compressor: LZ4.Compressor? = nil
    ) -> Int {
        raw.withUnsafeBytes {
            append(
                into: &out, raw: $0, kind: kind, sequence: sequence, compress: compress, threshold: threshold, version: version,
                syncedThrough: syncedThrough, compressor: compressor)
        }
    }

    /// ``append(into:raw:kind:sequence:compress:threshold:version:syncedThrough:compressor:)`` from raw
    /// bytes in place. `compressor`: a reusable LZ4 state for a caller that writes many frames.
    @discardableResult
    package static func append(
        into out: inout [UInt8], raw: UnsafeRawBufferPointer, kind: Kind, sequence: UInt64, compress: Bool, threshold: Int,
        version: UInt16 = 2, syncedThrough: UInt32 = 0, compressor: LZ4.Compressor? = nil
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

    /// Appends one version 4 frame whose payload is `records` (``RecordCodec`` records, back to
    /// back, `recordCount` of them), checksumming its header. With `sequenceDeltas` (a compacted
    /// frame: one per record, its sequence `sequence - delta`) the sequence table goes before the
    /// records and under the checksum. Returns the offset in `out` where the records start.
    @discardableResult
    package static func appendV4(
        into out: inout [UInt8], records: UnsafeRawBufferPointer, recordCount: Int, kind: Kind, sequence: UInt64,
        syncedThrough: UInt32, sequenceDeltas: [UInt64]? = nil
    ) -> Int {
        var table = _ByteWriter(capacity: sequenceDeltas.map { $0.count + 8 } ?? 0)
        for d in sequenceDeltas ?? [] { table.uvarint(d) }
        var w = _ByteWriter(capacity: headerSizeV4)
        w.u32(0)  // crc, patched below
        w.u32(UInt32(table.count + records.count))
        w.u8(kind.rawValue)
        w.u8(0)
        w.u16(0)
        w.u64(sequence)
        w.u32(UInt32(recordCount))
        w.u32(syncedThrough)
        var crc = w.bytes.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[4...])) }
        crc = table.bytes.withUnsafeBytes { CRC32C.update(crc, $0) }
        w.patchU32(CRC32C.mask(crc), at: 0)
        out.append(contentsOf: w.bytes)
        out.append(contentsOf: table.bytes)
        let start = out.count
        out.append(contentsOf: records)
        return start
    }

    package enum ParseResult {
        case frame(Header, payloadOffset: Int)
        /// Not enough bytes for the header or the payload it announces.
        case truncated(String)
        /// The bytes are there but wrong.
        case invalid(String)
    }

    /// Parses and checks the frame at `offset` of `bytes`, a frame of a segment of format
    /// `version` (CRC included; does not decompress). Version 4: `compacted` says whether the
    /// segment is compacted (its frames have sequence tables), and every record's checksum is
    /// checked too.
    package static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, version: UInt16, compacted: Bool = false) -> ParseResult {
        if version >= 4 { return parseV4(bytes, at: offset, compacted: compacted, checkingCRC: true) }
        return parse(bytes, at: offset, version: version, checkingCRC: true)
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
    package static func parseSkippingCRC(_ bytes: UnsafeRawBufferPointer, at offset: Int, version: UInt16, compacted: Bool = false)
        -> ParseResult
    {
        if version >= 4 { return parseV4(bytes, at: offset, compacted: compacted, checkingCRC: false) }
        return parse(bytes, at: offset, version: version, checkingCRC: false)
    }

    /// The version 4 frame at `offset`: header, sequence table (compacted) and the chain of
    /// `recordCount` records filling the payload, with their checksums when `checkingCRC`.
    private static func parseV4(_ bytes: UnsafeRawBufferPointer, at offset: Int, compacted: Bool, checkingCRC: Bool) -> ParseResult {
        guard offset >= 0, bytes.count - offset >= headerSizeV4 else {
            return .truncated("\(bytes.count - offset) bytes left, a frame header needs \(headerSizeV4)")
        }
        func u32(_ at: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt32.self).littleEndian }
        let stored = u32(0)
        let payloadLength = Int(u32(4))
        let kindRaw = bytes[offset + 8]
        let flags = bytes[offset + 9]
        let reserved = bytes.loadUnaligned(fromByteOffset: offset + 10, as: UInt16.self)
        let seq = bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt64.self).littleEndian
        let recordCount = Int(u32(20))
        let synced = u32(24)
        let payloadOffset = offset + headerSizeV4
        guard payloadLength <= maxPayload else { return .invalid("frame length \(payloadLength) is implausible") }
        // Every record takes at least 7 bytes (size, checksum, op, form).
        guard recordCount <= payloadLength / RecordCodec.minimumRecordSize else {
            return .invalid("\(recordCount) records cannot fit in \(payloadLength) payload bytes")
        }
        guard bytes.count - payloadOffset >= payloadLength else {
            return .truncated("frame announces \(payloadLength) payload bytes, \(bytes.count - payloadOffset) left")
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[payloadOffset..<(payloadOffset + payloadLength)])
        var tableLength = 0
        if compacted {
            var r = _ByteReader(payload)
            for _ in 0..<recordCount {
                guard (try? r.uvarint()) != nil else { return .invalid("sequence table overruns the payload") }
            }
            tableLength = r.offset
        }
        if checkingCRC {
            var crc = CRC32C.update(0, UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<payloadOffset]))
            crc = CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: payload[0..<tableLength]))
            guard CRC32C.mask(crc) == stored else { return .invalid("checksum mismatch") }
        }
        guard let kind = Kind(rawValue: kindRaw) else { return .invalid("unknown frame kind 0x\(String(kindRaw, radix: 16))") }
        guard flags == 0, reserved == 0 else { return .invalid("unknown flags 0x\(String(flags, radix: 16))") }
        if compacted && (kind != .commit || synced != 0) {
            return .invalid("a compacted segment's frame is not a commit frame with syncedThrough 0")
        }
        // The records fill the rest of the payload exactly, each with a valid checksum.
        var at = tableLength
        for i in 0..<recordCount {
            guard at < payload.count else { return .invalid("record \(i) of \(recordCount) lies past the payload") }
            switch RecordCodec.frameRecord(payload, at: at, checkingCRC: checkingCRC) {
            case .success(let length): at += length
            case .failure(let e): return .invalid("record \(i) at payload offset \(at): \(e.reason)")
            }
        }
        guard at == payload.count else { return .invalid("\(payload.count - at) bytes after the frame's \(recordCount) records") }
        return .frame(
            Header(
                storedLength: payloadLength, kind: kind, compressed: false, sequence: seq, rawLength: payloadLength - tableLength,
                syncedThrough: synced, recordCount: recordCount, sequenceTableLength: tableLength),
            payloadOffset: payloadOffset)
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

    /// The header fields of the version 1 or 2 frame at the start of `bytes`, without checking its
    /// checksum or reading its payload: for compaction, which copies a frame whose records the
    /// index says are all live without reading it (its checksum travels with it). Nil if the
    /// header is short, or its kind, flags or lengths are not a frame's.
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

extension LogFrame {
    /// Calls `body` with each record of the version 4 frame whose header is `header` and whose
    /// payload is `payload` (as ``parse(_:at:version:compacted:)`` checked it): the record's
    /// fields (parsed without checking its checksum again), its offset in `payload`, and its
    /// sequence (a compacted frame's from the sequence table, the frame's otherwise; a define
    /// always takes the frame's). Throws `_DecodeError` (offset in `payload`) for a record that
    /// does not decode or a sequence delta that reaches below 1; rethrows what `body` throws.
    package static func forEachRecord(
        _ payload: UnsafeRawBufferPointer, _ header: Header, _ body: (RecordCodec.Fields, Int, UInt64) throws -> Void
    ) throws {
        var table = _ByteReader(UnsafeRawBufferPointer(rebasing: payload[0..<header.sequenceTableLength]))
        var at = header.sequenceTableLength
        for _ in 0..<header.recordCount {
            let fields = try RecordCodec.parse(payload, at: at, checkingCRC: false)
            var sequence = header.sequence
            // A compacted frame with records has a table (each entry takes at least a byte).
            if header.sequenceTableLength > 0 {
                let delta = try table.uvarint()
                if fields.op != .define {
                    guard delta < sequence else { throw _DecodeError("sequence delta \(delta) reaches below 1", at: at) }
                    sequence -= delta
                }
            }
            try body(fields, at, sequence)
            at += fields.length
        }
    }
}
