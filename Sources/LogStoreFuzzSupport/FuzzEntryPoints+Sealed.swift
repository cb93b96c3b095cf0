import LogStoreEncryption
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Sealed records (encryption at rest)

    /// The store id of the sealed-record target's meta table. Constant.
    static let sealedStoreID = StoreID(bytes: Array(0x30..<0x40))

    /// A meta table of ``fuzzMeta()``'s defines whose records are sealed under `key` (32 bytes),
    /// with key epoch 1 (salt of zeros) and the writing epoch (2) defined.
    static func sealedMeta(key: [UInt8]) throws -> MetaTable {
        var meta = try fuzzMeta()
        let records = RecordCipher(cipher: try AESGCMCipher(key: key), storeID: sealedStoreID)
        meta.attach(records)
        let salt = [UInt8](repeating: 0, count: StoreCrypto.saltByteCount)
        let mac = try StoreCrypto.epochMAC(records.cipher, storeID: sealedStoreID, epoch: 1, salt: salt)
        meta.defineEpoch(KeyEpoch(id: 1, salt: salt, mac: mac, location: nil))
        try records.startWriting(after: meta)
        if let writing = records.writingEpoch { meta.defineEpoch(writing) }
        return meta
    }

    /// The decryption path of sealed records: `RecordCodec.parse` of a sealed record's clear
    /// header, then `RecordCodec.withOpened` and `withValue` under a key taken from the input.
    ///
    /// Input: `mode:u8 key:32 bytes`. Mode bit 0 set: `bytes` is a record body, given its size
    /// field and a correct checksum; else `bytes` is a whole record. Bit 1 set: `bytes` is the
    /// content of a put that is sealed, opened, and then, with byte `bytes[0]` of its body
    /// changed (its checksum fixed), opened again.
    ///
    /// Checks: nothing traps; a failure to open is `.corruption`; an opened record's fields lie
    /// inside it; a record sealed and opened gives back its clear record byte for byte; a sealed
    /// record with any byte of its body changed never opens (authentication, or a malformed
    /// header). Throws ``FuzzPropertyViolation``.
    public static func sealedRecord(_ data: UnsafeRawBufferPointer) throws {
        guard data.count >= 1 + 32 else { return }
        let mode = data[0]
        let meta = try sealedMeta(key: Array(data[1..<33]))
        var bytes = Array(data[33...])
        if mode & 2 != 0 { return try sealedRoundTrip(bytes, meta: meta) }
        if mode & 1 != 0 { bytes = withSizeAndChecksum(bytes) }
        try bytes.withUnsafeBytes { buf in
            let fields: RecordCodec.Fields
            do throws(_DecodeError) {
                fields = try RecordCodec.parse(buf, at: 0)
            } catch {
                return
            }
            try checkRecord(UnsafeRawBufferPointer(rebasing: buf[0..<fields.length]), fields, meta: meta, context: "sealed")
        }
    }

    /// `body` behind its size field and checksum: a record whose checksum holds.
    static func withSizeAndChecksum(_ body: [UInt8]) -> [UInt8] {
        var wrapped: [UInt8] = []
        wrapped.appendUVarint(UInt64(body.count))
        let crc = body.withUnsafeBytes { CRC32C.mask(CRC32C.checksum($0)) }
        wrapped += withUnsafeBytes(of: crc.littleEndian) { Array($0) }
        return wrapped + body
    }

    /// The checks of ``checkRecord(_:_:meta:context:)`` on a sealed record: it opens (and its
    /// opened fields are a well-formed clear record of the same op and ids) or fails with
    /// `.corruption`.
    static func checkSealed(_ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, meta: MetaTable, context: String) throws {
        guard fields.clearFieldsAt > fields.bodyOffset, fields.clearFieldsAt <= fields.content.lowerBound,
            fields.content.count >= StoreCrypto.tagByteCount
        else {
            throw FuzzPropertyViolation("\(context): a sealed record's clear header does not fit it: \(fields)")
        }
        do {
            try RecordCodec.withOpened(record, fields, meta: meta, path: nil, offset: 0) { clear, opened in
                guard !opened.sealed, opened.op == fields.op, opened.codec == fields.codec, opened.typeID == fields.typeID,
                    opened.defineID == fields.defineID, opened.dictionaryID == fields.dictionaryID,
                    opened.key.upperBound <= clear.count, opened.content.upperBound <= clear.count
                else {
                    throw FuzzPropertyViolation("\(context): a sealed record opens to other fields than its clear header says")
                }
                if opened.op == .put {
                    _ = try? RecordCodec.withValue(clear, opened, meta: meta, path: nil, offset: 0) { $0.count }
                }
            }
        } catch let v as FuzzPropertyViolation {
            throw v
        } catch {
            try expectCorruption(error, "\(context): withOpened")
        }
    }

    /// Mode 2 of ``sealedRecord(_:)``.
    static func sealedRoundTrip(_ content: [UInt8], meta: MetaTable) throws {
        guard let records = meta.cipher else { return }
        let key = Array(content.prefix(8))
        var clear: [UInt8] = []
        key.withUnsafeBytes { k in content.withUnsafeBytes { _ = RecordCodec.appendPut(into: &clear, typeID: 1, key: k, stored: $0) } }
        var sealed: [UInt8] = []
        _ = try clear.withUnsafeBytes { try RecordCodec.appendSealed($0, cipher: records, into: &sealed) }
        let fields = try parseOrViolation(sealed, "a sealed record does not parse")
        let opened = try sealed.withUnsafeBytes { s in
            try RecordCodec.withOpened(s, fields, meta: meta, path: nil, offset: 0) { c, _ in Array(c) }
        }
        let clearFields = try parseOrViolation(clear, "a clear record does not parse")
        guard opened == Array(clear[clearFields.bodyOffset...]) else {
            throw FuzzPropertyViolation("sealed: a record sealed and opened is not the record sealed")
        }
        // One changed byte anywhere in the body: never opens.
        let bodyOffset = fields.bodyOffset
        let at = bodyOffset + Int(content.first ?? 0) % (sealed.count - bodyOffset)
        var changed = sealed
        changed[at] ^= content.count > 1 ? max(content[1], 1) : 0x5A
        let body = Array(changed[bodyOffset...])
        let damaged = withSizeAndChecksum(body)
        try damaged.withUnsafeBytes { d in
            guard let f = try? RecordCodec.parse(d, at: 0) else { return }
            do {
                try RecordCodec.withOpened(d, f, meta: meta, path: nil, offset: 0) { _, _ in
                    throw FuzzPropertyViolation("sealed: a record with byte \(at) changed opened")
                }
            } catch let v as FuzzPropertyViolation {
                throw v
            } catch {
                try expectCorruption(error, "sealed: a changed record")
            }
        }
    }

    static func parseOrViolation(_ bytes: [UInt8], _ why: String) throws -> RecordCodec.Fields {
        let parsed: Result<RecordCodec.Fields, _DecodeError> = bytes.withUnsafeBytes { b in
            do throws(_DecodeError) { return .success(try RecordCodec.parse(b, at: 0)) } catch { return .failure(error) }
        }
        switch parsed {
        case .success(let f): return f
        case .failure(let e): throw FuzzPropertyViolation("sealed: \(why): \(e.reason)")
        }
    }
}
