/// Sealed records: how an encrypted store's records hide their keys, values and names
/// (Docs/FileFormatEncryption.md, "Records"). A sealed record has the record framing of every
/// format 4 record (size, checksum of the body as stored) and a body whose clear header says
/// what the log needs without the key, followed by the AES-256-GCM ciphertext of the rest:
///
///     sealed-body  := op:u8 form:u8 epoch:uvarint counter:uvarint clearFields ciphertext tag:16
///     form         := codec | 0x10 (sealed)
///     clearFields  := put: typeId:uvarint [dictId:uvarint]          -- dictId iff codec = 2
///                   | delete, deleteAll: typeId:uvarint
///                   | define: kind:u8 id:uvarint [typeId:uvarint]   -- typeId iff kind = dictionary
///     ciphertext   := AES-256-GCM of sealedFields under key epoch `epoch`'s record key K_e,
///                     nonce u64le(counter) ‖ 0^4, additional data "LS4R" ‖ storeId ‖ every body
///                     byte before the ciphertext
///     sealedFields := put: [rawLength:uvarint] key:bytes storedValue
///                   | delete: key:bytes | deleteAll: (nothing) | define: content
///     keyEpoch     := 0x10 0x00 0x03 epoch:uvarint salt:16 mac:16  -- a define, never sealed
///
/// Opening a sealed body gives back the clear body `op codec clearFields sealedFields`, byte for
/// byte the record the clear format would have written, which ``parseBody(_:bodyOffset:)``
/// reads. The ids stay clear so that compaction copies a record, and keeps the defines it needs,
/// without its key; a type's name and a dictionary's bytes are sealed in their defines.
extension RecordCodec {
    /// Reads a sealed body's clear header into `f`; `r` stands after op and form. Throws
    /// `_DecodeError` for a malformed header or a body shorter than a tag.
    static func parseSealedHeader(
        _ record: UnsafeRawBufferPointer, _ r: inout _ByteReader, _ f: inout Fields
    ) throws(_DecodeError) -> Fields {
        f.sealed = true
        f.epoch = try readID(&r, "key epoch")
        f.counter = try r.uvarint()
        f.clearFieldsAt = r.offset
        switch f.op {
        case .put:
            f.typeID = try readID(&r, "type")
            if f.codec == .lz4Dictionary { f.dictionaryID = try readID(&r, "dictionary") }
        case .delete, .deleteAll:
            f.typeID = try readID(&r, "type")
        case .define:
            let kindAt = r.offset
            let rawKind = try r.u8()
            guard let kind = DefineKind(rawValue: rawKind), kind != .keyEpoch else {
                throw _DecodeError("a sealed define of kind 0x\(String(rawKind, radix: 16))", at: kindAt)
            }
            f.defineKind = kind
            f.defineID = try readID(&r, "define")
            if kind == .dictionary { f.typeID = try readID(&r, "type") }
        }
        f.content = r.offset..<record.count
        guard f.content.count >= StoreCrypto.tagByteCount else {
            throw _DecodeError("a sealed record shorter than its tag", at: r.offset)
        }
        return f
    }

    /// An id of 1 to 2^32 − 1 (uvarint). Throws `_DecodeError` naming `what` otherwise.
    @inline(__always)
    static func readID(_ r: inout _ByteReader, _ what: String) throws(_DecodeError) -> UInt32 {
        let at = r.offset
        let v = try r.uvarint()
        guard v >= 1, v <= UInt64(UInt32.max) else { throw _DecodeError("\(what) id \(v) is out of range", at: at) }
        return UInt32(v)
    }

    /// Calls `body` with the record's clear bytes and fields: `record` and `fields` themselves
    /// when the record is not sealed; else the opened body (valid only while `body` runs), parsed.
    /// Throws `.corruption` naming `path` and the record's file `offset` for a sealed record when
    /// the store is not encrypted (``MetaTable/cipher`` nil), the epoch is not defined, the record
    /// does not authenticate, or its opened fields are malformed, and for a clear record (but a
    /// key epoch define) in an encrypted store; rethrows what `body` throws.
    @inline(__always)
    package static func withOpened<R>(
        _ record: UnsafeRawBufferPointer, _ fields: Fields, meta: MetaTable, path: String?, offset: UInt64,
        _ body: (UnsafeRawBufferPointer, Fields) throws -> R
    ) throws -> R {
        if !fields.sealed {
            try checkClearAllowed(fields, meta: meta, path: path, offset: offset)
            return try body(record, fields)
        }
        return try withOpenedSealed(record, fields, meta: meta, path: path, offset: offset, body)
    }

    /// Throws `.corruption` for a clear record in an encrypted store: only key epoch defines are
    /// written clear there, and a record whose sealed bit was cleared (with its checksum fixed)
    /// must not read as the clear record its ciphertext happens to parse as.
    @inline(__always)
    package static func checkClearAllowed(_ fields: Fields, meta: MetaTable, path: String?, offset: UInt64) throws {
        guard meta.cipher == nil || fields.sealed || fields.defineKind == .keyEpoch else {
            throw LogStoreError(.corruption, "A record in the clear in an encrypted store.", path: path, offset: offset)
        }
    }

    /// The sealed half of ``withOpened(_:_:meta:path:offset:_:)``.
    static func withOpenedSealed<R>(
        _ record: UnsafeRawBufferPointer, _ fields: Fields, meta: MetaTable, path: String?, offset: UInt64,
        _ body: (UnsafeRawBufferPointer, Fields) throws -> R
    ) throws -> R {
        guard let cipher = meta.cipher else {
            throw LogStoreError(.corruption, "A sealed record in a store that is not encrypted.", path: path, offset: offset)
        }
        let key = try cipher.key(epoch: fields.epoch, meta: meta, path: path, offset: offset)
        let clearFields = UnsafeRawBufferPointer(rebasing: record[fields.clearFieldsAt..<fields.content.lowerBound])
        let sealed = UnsafeRawBufferPointer(rebasing: record[fields.content])
        let plainCount = sealed.count - StoreCrypto.tagByteCount
        let total = 2 + clearFields.count + plainCount
        let aad = StoreCrypto.recordAAD(
            storeID: cipher.storeID, clearHeader: UnsafeRawBufferPointer(rebasing: record[fields.bodyOffset..<fields.content.lowerBound]))
        return try withUnsafeTemporaryAllocation(byteCount: total, alignment: 16) { buf in
            buf[0] = fields.op.rawValue
            buf[1] = fields.codec.rawValue
            UnsafeMutableRawBufferPointer(rebasing: buf[2..<(2 + clearFields.count)]).copyMemory(from: clearFields)
            let out = UnsafeMutableRawBufferPointer(rebasing: buf[(2 + clearFields.count)..<total])
            let ok = try aad.withUnsafeBytes { a in try key.open(sealed, nonce: AEADNonce(fields.counter), aad: a, into: out) }
            guard ok else {
                throw LogStoreError(
                    .corruption, "The sealed record does not authenticate: its bytes were damaged or changed without the key.",
                    path: path, offset: offset)
            }
            let clear = UnsafeRawBufferPointer(buf)
            var opened: Fields
            do throws(_DecodeError) {
                opened = try parseBody(clear, bodyOffset: 0)
            } catch {
                throw LogStoreError(.corruption, "The sealed record's fields are malformed: \(error.reason).", path: path, offset: offset)
            }
            opened.length = fields.length
            return try body(clear, opened)
        }
    }

    // MARK: Writing

    /// Appends the sealed form of the clear record `record` (size, checksum and body, as the
    /// `append*` functions write it) under `cipher`'s writing epoch and its next counter.
    /// Returns the sealed record's length. Throws `.invalidArgument` for a record that is not a
    /// clear put, delete, deleteAll or type or dictionary define, and the cipher's errors.
    @discardableResult
    package static func appendSealed(_ record: UnsafeRawBufferPointer, cipher: RecordCipher, into out: inout [UInt8]) throws -> Int {
        let fields: Fields
        do throws(_DecodeError) { fields = try parse(record, at: 0, checkingCRC: false) } catch {
            throw LogStoreError(.invalidArgument, "Sealing a record that does not parse: \(error.reason).")
        }
        guard !fields.sealed, fields.defineKind != .keyEpoch else {
            throw LogStoreError(.invalidArgument, "Sealing a record that is sealed already, or a key epoch define.")
        }
        // The clear fields end where the sealed ones begin: after the ids.
        var r = _ByteReader(record, offset: fields.bodyOffset + 2)
        do throws(_DecodeError) {
            switch fields.op {
            case .put:
                _ = try r.uvarint()
                if fields.codec == .lz4Dictionary { _ = try r.uvarint() }
            case .delete, .deleteAll: _ = try r.uvarint()
            case .define:
                _ = try r.u8()
                _ = try r.uvarint()
                if fields.defineKind == .dictionary { _ = try r.uvarint() }
            }
        } catch {
            throw LogStoreError(.invalidArgument, "Sealing a record that does not parse: \(error.reason).")
        }
        let clearFields = UnsafeRawBufferPointer(rebasing: record[(fields.bodyOffset + 2)..<r.offset])
        let plain = UnsafeRawBufferPointer(rebasing: record[r.offset..<fields.length])
        let (epoch, key, counter) = try cipher.takeCounters(1)
        let size =
            2 + uvarintSize(UInt64(epoch)) + uvarintSize(counter) + clearFields.count + plain.count + StoreCrypto.tagByteCount
        let start = out.count
        out.appendUVarint(UInt64(size))
        let crcAt = out.count
        out.append(contentsOf: [0, 0, 0, 0])
        let bodyStart = out.count
        out.append(fields.op.rawValue)
        out.append(fields.codec.rawValue | sealedBit)
        out.appendUVarint(UInt64(epoch))
        out.appendUVarint(counter)
        out.append(contentsOf: clearFields)
        let sealedAt = out.count
        out.append(contentsOf: repeatElement(0, count: plain.count + StoreCrypto.tagByteCount))
        let aad = out.withUnsafeBytes {
            StoreCrypto.recordAAD(storeID: cipher.storeID, clearHeader: UnsafeRawBufferPointer(rebasing: $0[bodyStart..<sealedAt]))
        }
        try out.withUnsafeMutableBytes { o in
            try aad.withUnsafeBytes { a in
                try key.seal(plain, nonce: AEADNonce(counter), aad: a, into: UnsafeMutableRawBufferPointer(rebasing: o[sealedAt...]))
            }
            let crc = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: o[bodyStart...])))
            o.storeBytes(of: crc.littleEndian, toByteOffset: crcAt, as: UInt32.self)
        }
        return out.count - start
    }

    /// Replaces the clear record at `start..<out.count` (the last one appended) by its sealed
    /// form when `cipher` is set. Returns the record's length as it now is. Throws as
    /// ``appendSealed(_:cipher:into:)``.
    @inline(__always)
    package static func sealLast(_ out: inout [UInt8], from start: Int, cipher: RecordCipher?) throws -> Int {
        guard let cipher else { return out.count - start }
        let clear = Array(out[start...])
        out.removeSubrange(start...)
        return try clear.withUnsafeBytes { try appendSealed($0, cipher: cipher, into: &out) }
    }

    /// Appends the define of key epoch `epoch` (never sealed: recovery reads it to derive the
    /// epoch's key). Returns the record's length.
    @discardableResult
    package static func appendEpochDefine(into out: inout [UInt8], epoch: KeyEpoch) -> Int {
        append(into: &out, size: 3 + uvarintSize(UInt64(epoch.id)) + epoch.salt.count + epoch.mac.count) { w in
            w.append(Op.define.rawValue)
            w.append(0)
            w.append(DefineKind.keyEpoch.rawValue)
            w.appendUVarint(UInt64(epoch.id))
            w.append(contentsOf: epoch.salt)
            w.append(contentsOf: epoch.mac)
        }
    }
}
