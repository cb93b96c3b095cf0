/// Format 4 records: each record of a version 4 segment stands alone, with its own length and
/// checksum, so that a read checks and decodes one record and compaction moves one without
/// reading its value (Docs/FileFormat.md, "Records (format 4)").
///
///     record     := size:uvarint crc:u32le body          -- size = bytes of body, 2 <= size <= 2^30
///     crc        := masked CRC-32C of body
///     body       := op:u8 form:u8 rest
///     form       := codec (bits 0-3) | sealed (bit 4); bits 5-7 are 0
///     codec      := 0 raw | 1 LZ4 | 2 LZ4 with a dictionary      (put only; 0 elsewhere)
///     put        := 0x01 form typeId:uvarint [dictId:uvarint] [rawLength:uvarint] key:bytes storedValue
///     delete     := 0x02 form typeId:uvarint key:bytes
///     deleteAll  := 0x03 form typeId:uvarint
///     define     := 0x10 form kind:u8 id:uvarint content     (kind 1 type: name:string;
///                                                             kind 2 dictionary: typeId:uvarint dictionary;
///                                                             kind 3 keyEpoch: salt:16 mac:16, never sealed)
///
/// `dictId` is present iff codec is 2, `rawLength` iff codec is not 0; the stored value (and a
/// dictionary's bytes) run to the end of the body. The sealed form of an encrypted store's
/// records (sealed bit set) is in RecordCodec+Sealed.swift: ``parse(_:at:checkingCRC:)`` reads
/// its clear header, ``withOpened(_:_:meta:path:offset:_:)`` its fields. Pure functions; any
/// thread.
package enum RecordCodec {
    /// The smallest record: a 1-byte size, the checksum, op and form.
    package static let minimumRecordSize = 7
    /// The largest body a record may have.
    package static let maxBodySize = 1 << 30
    /// The largest dictionary (LZ4 uses no more history).
    package static let maxDictionarySize = 64 << 10

    /// A record's operation. Part of the file format: never renumber or reuse. (0x04, `putAt` of
    /// version 1 and 2 compacted segments, is not valid in version 4 segments: a compacted
    /// frame's sequence table carries what it did.)
    package enum Op: UInt8, Sendable {
        case put = 0x01
        case delete = 0x02
        case deleteAll = 0x03
        case define = 0x10
    }

    /// How a put's value is stored. Part of the file format.
    package enum Codec: UInt8, Sendable {
        case raw = 0
        case lz4 = 1
        case lz4Dictionary = 2
    }

    /// What a define names. Part of the file format.
    package enum DefineKind: UInt8, Sendable {
        case type = 0x01
        case dictionary = 0x02
        case keyEpoch = 0x03
    }

    static let codecMask: UInt8 = 0x0F
    static let sealedBit: UInt8 = 0x10

    /// A record's clear fields and where its parts lie, as offsets from the record's first byte.
    package struct Fields: Sendable, Equatable {
        package var op: Op
        package var codec: Codec
        /// The whole record: size field, checksum and body.
        package var length: Int
        /// Where the body starts (after the size field and the checksum).
        package var bodyOffset: Int
        /// put, delete, deleteAll: the item type's id. A dictionary define: its type's id.
        package var typeID: UInt32 = 0
        /// A define: what it names, and its id.
        package var defineKind: DefineKind? = nil
        package var defineID: UInt32 = 0
        /// A put of codec 2: the dictionary's id.
        package var dictionaryID: UInt32 = 0
        /// A put: the value's length once decompressed (the stored length for codec 0).
        package var rawLength: Int = 0
        /// put, delete: the key's bytes.
        package var key: Range<Int> = 0..<0
        /// A put: the stored value. A define: its content (a type's name, a dictionary's bytes, a
        /// key epoch's salt and MAC). A sealed record: its ciphertext and tag.
        package var content: Range<Int> = 0..<0
        /// Whether the record is sealed: only the clear header (op, codec, ids, epoch, counter)
        /// is parsed; ``RecordCodec/withOpened(_:_:meta:path:offset:_:)`` gives the rest.
        package var sealed = false
        /// A sealed record: its key epoch and counter (its nonce).
        package var epoch: UInt32 = 0
        package var counter: UInt64 = 0
        /// A sealed record: where the clear fields after the counter start (ids, a define's kind).
        package var clearFieldsAt = 0
    }

    // MARK: Reading

    /// The length of the record at `at` of `payload` (a frame's payload), checking that its size
    /// field is plausible, that it lies inside `payload`, and (with `checkingCRC`) its checksum.
    /// Nothing else of the body is read: a frame's validity is its records' checksums.
    @inline(__always)
    package static func frameRecord(_ payload: UnsafeRawBufferPointer, at: Int, checkingCRC: Bool) -> Result<Int, _DecodeError> {
        var r = _ByteReader(payload, offset: at)
        do {
            let size = try r.uvarint()
            guard size >= 2, size <= UInt64(maxBodySize) else {
                return .failure(_DecodeError("record size \(size) is implausible", at: at))
            }
            let stored = try r.u32()
            let body = try r.bytes(Int(size))
            if checkingCRC && CRC32C.mask(CRC32C.checksum(body)) != stored {
                return .failure(_DecodeError("record checksum mismatch", at: at))
            }
            return .success(r.offset - at)
        } catch {
            return .failure(error)
        }
    }

    /// Parses the record that starts at `offset` of `bytes` (which may go on after it): its size,
    /// its checksum (when `checkingCRC`) and every clear field, with every length checked
    /// against the body (of a sealed record: its clear header). Throws `_DecodeError` (what is
    /// wrong, at which offset of `bytes`) for anything that is not a well-formed format 4 record.
    package static func parse(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, checkingCRC: Bool = true
    ) throws(_DecodeError) -> Fields {
        var r = _ByteReader(bytes, offset: offset)
        let size = try r.uvarint()
        guard size >= 2, size <= UInt64(maxBodySize) else { throw _DecodeError("record size \(size) is implausible", at: offset) }
        let stored = try r.u32()
        let bodyStart = r.offset
        let body = try r.bytes(Int(size))
        if checkingCRC && CRC32C.mask(CRC32C.checksum(body)) != stored {
            throw _DecodeError("record checksum mismatch", at: offset)
        }
        var f = try parseBody(UnsafeRawBufferPointer(rebasing: bytes[offset..<(bodyStart + Int(size))]), bodyOffset: bodyStart - offset)
        f.length = bodyStart + Int(size) - offset
        return f
    }

    /// The clear fields of a record whose bytes are exactly `record` and whose body starts at
    /// `bodyOffset`. Offsets in errors are relative to `record`.
    static func parseBody(_ record: UnsafeRawBufferPointer, bodyOffset: Int) throws(_DecodeError) -> Fields {
        var r = _ByteReader(record, offset: bodyOffset)
        let opAt = r.offset
        let rawOp = try r.u8()
        guard let op = Op(rawValue: rawOp) else { throw _DecodeError("unknown record operation 0x\(String(rawOp, radix: 16))", at: opAt) }
        let form = try r.u8()
        guard form & ~(codecMask | sealedBit) == 0 else {
            throw _DecodeError("unknown form bits 0x\(String(form, radix: 16))", at: opAt + 1)
        }
        guard let codec = Codec(rawValue: form & codecMask) else {
            throw _DecodeError("unknown codec \(form & codecMask)", at: opAt + 1)
        }
        guard codec == .raw || op == .put else { throw _DecodeError("a compressed record other than a put", at: opAt + 1) }
        var f = Fields(op: op, codec: codec, length: record.count, bodyOffset: bodyOffset)
        if form & sealedBit != 0 { return try parseSealedHeader(record, &r, &f) }
        func id(_ what: String) throws(_DecodeError) -> UInt32 {
            let at = r.offset
            let v = try r.uvarint()
            guard v >= 1, v <= UInt64(UInt32.max) else { throw _DecodeError("\(what) id \(v) is out of range", at: at) }
            return UInt32(v)
        }
        func end() throws(_DecodeError) {
            guard r.isAtEnd else { throw _DecodeError("\(r.remaining) bytes after the record's fields", at: r.offset) }
        }
        switch op {
        case .put:
            f.typeID = try id("type")
            if codec == .lz4Dictionary { f.dictionaryID = try id("dictionary") }
            var rawLength: UInt64? = nil
            if codec != .raw {
                let at = r.offset
                let n = try r.uvarint()
                guard n <= UInt64(maxBodySize) else { throw _DecodeError("raw length \(n) is implausible", at: at) }
                rawLength = n
            }
            let keyLength = try r.length()
            f.key = r.offset..<(r.offset + keyLength)
            r.offset += keyLength
            f.content = r.offset..<record.count
            if let rawLength {
                // (Whether the block can yield it is the decompression's check, before it
                // allocates anything: ``withValue(_:_:meta:path:offset:_:)``.)
                f.rawLength = Int(rawLength)
            } else {
                f.rawLength = f.content.count
            }
        case .delete:
            f.typeID = try id("type")
            let keyLength = try r.length()
            f.key = r.offset..<(r.offset + keyLength)
            r.offset += keyLength
            try end()
        case .deleteAll:
            f.typeID = try id("type")
            try end()
        case .define:
            let kindAt = r.offset
            let rawKind = try r.u8()
            guard let kind = DefineKind(rawValue: rawKind) else {
                throw _DecodeError("unknown define kind 0x\(String(rawKind, radix: 16))", at: kindAt)
            }
            f.defineKind = kind
            f.defineID = try id("define")
            switch kind {
            case .type:
                let nameAt = r.offset
                let n = try r.length()
                f.content = r.offset..<(r.offset + n)
                r.offset += n
                guard n >= 1, String(validating: UnsafeRawBufferPointer(rebasing: record[f.content]), as: UTF8.self) != nil else {
                    throw _DecodeError("a type define's name is empty or not UTF-8", at: nameAt)
                }
                try end()
            case .dictionary:
                f.typeID = try id("type")
                f.content = r.offset..<record.count
                guard (1...maxDictionarySize).contains(f.content.count) else {
                    throw _DecodeError("a dictionary of \(f.content.count) bytes", at: r.offset)
                }
            case .keyEpoch:
                f.content = r.offset..<record.count
                guard f.content.count == StoreCrypto.saltByteCount + StoreCrypto.macByteCount else {
                    throw _DecodeError("a key epoch define of \(f.content.count) bytes", at: r.offset)
                }
            }
        }
        return f
    }

    // MARK: Writing

    /// Appends a put of `key` with the stored value `stored` (`codec` raw: the value; otherwise an
    /// LZ4 block of `rawLength` bytes, with dictionary `dictionaryID` for codec 2). Returns the
    /// record's length.
    @discardableResult
    package static func appendPut(
        into out: inout [UInt8], typeID: UInt32, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
        codec: Codec = .raw, dictionaryID: UInt32 = 0, rawLength: Int = 0
    ) -> Int {
        var size = 2 + uvarintSize(UInt64(typeID)) + uvarintSize(UInt64(key.count)) + key.count + stored.count
        if codec == .lz4Dictionary { size += uvarintSize(UInt64(dictionaryID)) }
        if codec != .raw { size += uvarintSize(UInt64(rawLength)) }
        return append(into: &out, size: size) { w in
            w.append(Op.put.rawValue)
            w.append(codec.rawValue)
            w.appendUVarint(UInt64(typeID))
            if codec == .lz4Dictionary { w.appendUVarint(UInt64(dictionaryID)) }
            if codec != .raw { w.appendUVarint(UInt64(rawLength)) }
            w.appendUVarint(UInt64(key.count))
            w.append(contentsOf: key)
            w.append(contentsOf: stored)
        }
    }

    /// Appends a delete of `key`. Returns the record's length.
    @discardableResult
    package static func appendDelete(into out: inout [UInt8], typeID: UInt32, key: UnsafeRawBufferPointer) -> Int {
        let size = 2 + uvarintSize(UInt64(typeID)) + uvarintSize(UInt64(key.count)) + key.count
        return append(into: &out, size: size) { w in
            w.append(Op.delete.rawValue)
            w.append(0)
            w.appendUVarint(UInt64(typeID))
            w.appendUVarint(UInt64(key.count))
            w.append(contentsOf: key)
        }
    }

    /// Appends a deleteAll of type `typeID`. Returns the record's length.
    @discardableResult
    package static func appendDeleteAll(into out: inout [UInt8], typeID: UInt32) -> Int {
        append(into: &out, size: 2 + uvarintSize(UInt64(typeID))) { w in
            w.append(Op.deleteAll.rawValue)
            w.append(0)
            w.appendUVarint(UInt64(typeID))
        }
    }

    /// Appends the define of type `id` named `name`. Returns the record's length.
    @discardableResult
    package static func appendTypeDefine(into out: inout [UInt8], id: UInt32, name: String) -> Int {
        let n = name.utf8.count
        return append(into: &out, size: 3 + uvarintSize(UInt64(id)) + uvarintSize(UInt64(n)) + n) { w in
            w.append(Op.define.rawValue)
            w.append(0)
            w.append(DefineKind.type.rawValue)
            w.appendUVarint(UInt64(id))
            w.appendUVarint(UInt64(n))
            w.append(contentsOf: name.utf8)
        }
    }

    /// Appends the define of dictionary `id` of type `typeID`. Returns the record's length.
    @discardableResult
    package static func appendDictionaryDefine(
        into out: inout [UInt8], id: UInt32, typeID: UInt32, dictionary: UnsafeRawBufferPointer
    ) -> Int {
        append(into: &out, size: 3 + uvarintSize(UInt64(id)) + uvarintSize(UInt64(typeID)) + dictionary.count) { w in
            w.append(Op.define.rawValue)
            w.append(0)
            w.append(DefineKind.dictionary.rawValue)
            w.appendUVarint(UInt64(id))
            w.appendUVarint(UInt64(typeID))
            w.append(contentsOf: dictionary)
        }
    }

    /// Appends size, a checksum placeholder and the `size` body bytes `body` writes, then the
    /// checksum. Returns the record's length.
    @inline(__always)
    static func append(into out: inout [UInt8], size: Int, _ body: (inout [UInt8]) -> Void) -> Int {
        let start = out.count
        out.appendUVarint(UInt64(size))
        let crcAt = out.count
        out.append(contentsOf: [0, 0, 0, 0])
        let bodyStart = out.count
        body(&out)
        assert(out.count - bodyStart == size, "record size computed wrongly")
        let crc = out.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[bodyStart...]))) }
        out.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: crcAt, as: UInt32.self) }
        return out.count - start
    }

    /// Bytes LEB128 takes for `v`.
    @inline(__always)
    package static func uvarintSize(_ v: UInt64) -> Int {
        var n = 1
        var v = v
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }

    /// The length of a record whose body is `size` bytes.
    @inline(__always)
    package static func recordLength(bodySize size: Int) -> Int { uvarintSize(UInt64(size)) + 4 + size }
}

extension Array where Element == UInt8 {
    /// Appends `v` as an unsigned LEB128 varint.
    @inline(__always)
    package mutating func appendUVarint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }
}

extension RecordCodec {
    /// Calls `body` with the value of the put `fields` (parsed from `record`, its bytes): in place
    /// when stored raw (opened first when sealed), else decompressed into a scratch buffer that lives only while `body`
    /// runs (with the dictionary `meta` names for codec 2). Throws `.corruption` naming `path` and
    /// the record's file `offset` when the dictionary is not defined or the value does not
    /// decompress to its raw length; rethrows what `body` throws.
    @inline(__always)
    package static func withValue<R>(
        _ record: UnsafeRawBufferPointer, _ fields: Fields, meta: MetaTable, path: String?, offset: UInt64,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        if fields.sealed {
            return try withOpenedSealed(record, fields, meta: meta, path: path, offset: offset) { clear, opened in
                try withValue(clear, opened, meta: meta, path: path, offset: offset, body)
            }
        }
        let stored = UnsafeRawBufferPointer(rebasing: record[fields.content])
        if fields.codec == .raw { return try body(stored) }
        return try withDecompressed(stored, fields, meta: meta, path: path, offset: offset, body)
    }

    /// The compressed half of ``withValue(_:_:meta:path:offset:_:)``.
    static func withDecompressed<R>(
        _ stored: UnsafeRawBufferPointer, _ fields: Fields, meta: MetaTable, path: String?, offset: UInt64,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        // An LZ4 block expands at most 255-fold: a larger claim is damage, refused before anything
        // is allocated for it.
        guard stored.count > 0, fields.rawLength <= stored.count * LogFrame.maxLZ4Expansion else {
            throw LogStoreError(
                .corruption,
                "The record claims \(fields.rawLength) bytes of value, more than its \(stored.count) compressed bytes can hold.",
                path: path, offset: offset)
        }
        var dictionary: DictionaryRef? = nil
        if fields.codec == .lz4Dictionary {
            guard let d = meta.dictionary(fields.dictionaryID) else {
                throw LogStoreError(
                    .corruption, "The record is compressed with dictionary \(fields.dictionaryID), which no define names.", path: path,
                    offset: offset)
            }
            dictionary = d
        }
        return try withUnsafeTemporaryAllocation(byteCount: max(fields.rawLength, 1), alignment: 16) { scratch in
            let out = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<fields.rawLength])
            let ok =
                dictionary.map { d in d.bytes.withUnsafeBytes { LZ4.decompress(stored, into: out, dictionary: $0) } }
                ?? LZ4.decompress(stored, into: out)
            guard ok else {
                throw LogStoreError(
                    .corruption, "The record's value does not decompress to its announced \(fields.rawLength) bytes.", path: path,
                    offset: offset)
            }
            return try body(UnsafeRawBufferPointer(out))
        }
    }
}
