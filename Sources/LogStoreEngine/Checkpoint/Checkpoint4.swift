/// CHECKPOINT version 4 (Docs/FileFormat.md, "Checkpoint"): a small file that names the run files
/// holding every index, and the log position they cover. Opening a store reads it whole, maps
/// the runs it names and checks their header pages against it; nothing else of an index is read.
///
///     checkpoint-4 := magic:8 version:u16le=4 flags:u16le=0 generation:u64le sequence:u64le
///                     createdAtMillis:u64le storeId:16 cipher:u8 reserved:u8{7}=0 salt:16
///                     bodyLength:u32le (body | sealedBody) crc:u32le
///                                                                -- crc: masked CRC-32C of every byte before it
///     cipher       := 0 (body in the clear; salt = 0^16) | 1 (sealedBody; salt: 16 random bytes, new per file)
///     sealedBody   := ciphertext:(bodyLength − 16) tag:16        -- AES-256-GCM of `body` under
///                     K_cp = StoreCrypto.checkpointKey(storeId, salt), nonce 0^12,
///                     AAD = the 80 bytes before it (magic … bodyLength)
///     body         := segments meta indexes nextRun:u32le end:u8=0xFF
///     segments     := count:uvarint (segment:u32le length:u64le rawBytes:u64le refs){count}
///     refs         := length:uvarint bytes{length}               -- the defines the segment's records use
///     meta         := length:uvarint bytes{length}               -- the store's table of defines
///     indexes      := count:uvarint index{count}
///     index        := type:string kind:u8 [definition hash:u64le] base:runRef? delta:runRef? entryCount:u64le
///                     -- kind 0: the type's primary index; 1: a secondary index (definition as in CHECKPOINT 3)
///     runRef?      := 0x00 | 0x01 runNumber:u32le pageCount:u32le rootPage:u32le entryCount:u64le headerCrc:u32le
///
/// `refs` holds a segment's define references and the bytes the recompression pass has not tried
/// (``CheckpointFile/encodeRefs(_:into:)``); `meta` the type and dictionary defines as replay of
/// the log up to `sequence` leaves them (``CheckpointFile/encodeMeta(_:position:segmentCount:into:)``;
/// a dictionary's define location names a segment by its index in `segments`). A run reference is a witness: the run's
/// header page must show the same numbers and CRC, or the checkpoint is not used. `entryCount` is
/// the count of the index its runs make together. `nextRun` is above every run number it names.
///
/// An encrypted store's CHECKPOINT (cipher 1) keeps only the header in the clear (positions and
/// counts of the log, no key bytes or type names) and seals the whole body, its type names,
/// defines and run witnesses, as one AEAD message; the header is its additional data, so no
/// header byte can change either without the file failing to open. Each file has a fresh salt,
/// hence a key of its own, so its one nonce (zero) is never reused under a key.
///
/// The decoder accepts any bytes without trapping: counts are checked against the bytes left
/// before anything is allocated, and an index is named at most once.
package struct CheckpointFileV4: Equatable, Sendable {
    /// Bytes before the body.
    package static let headerSize = 8 + 2 + 2 + 8 + 8 + 8 + 16 + 1 + 7 + 16 + 4
    /// The version of this layout.
    package static let version: UInt16 = 4

    /// One index and the runs that hold it.
    package struct Index: Equatable, Sendable {
        /// The item type.
        package var type: String
        /// Nil for the type's primary index, else the secondary index's definition.
        package var definition: IndexDefinition?
        /// The base run's witness; nil only for an index with no entries.
        package var base: RunWitness?
        /// The delta run's witness (changes on top of the base), if any.
        package var delta: RunWitness?
        /// Entries of the index (base and delta together).
        package var entryCount: UInt64

        /// An index reference.
        package init(type: String, definition: IndexDefinition?, base: RunWitness?, delta: RunWitness?, entryCount: UInt64) {
            self.type = type
            self.definition = definition
            self.base = base
            self.delta = delta
            self.entryCount = entryCount
        }
    }

    /// MANIFEST's generation when it was written.
    package var generation: UInt64
    /// The last transaction it covers.
    package var sequence: UInt64
    /// When it was written (milliseconds since 1970).
    package var createdAtMillis: UInt64
    /// The store it belongs to (MANIFEST's store id).
    package var storeId: StoreID
    /// The prefix of MANIFEST's replay order it covers, each with its valid length.
    package var segments: [CheckpointFile.Segment]
    /// Every index and the runs that hold it.
    package var indexes: [Index]
    /// The number the next run file gets (above every run it names).
    package var nextRun: UInt32
    /// The store's type and dictionary defines at ``sequence``.
    package var meta: MetaTable

    /// A checkpoint from its parts.
    package init(
        generation: UInt64, sequence: UInt64, createdAtMillis: UInt64, storeId: StoreID, segments: [CheckpointFile.Segment],
        indexes: [Index], nextRun: UInt32, meta: MetaTable = MetaTable()
    ) {
        self.generation = generation
        self.sequence = sequence
        self.createdAtMillis = createdAtMillis
        self.storeId = storeId
        self.segments = segments
        self.indexes = indexes
        self.nextRun = nextRun
        self.meta = meta
    }

    /// Every run it names.
    package var runNumbers: [UInt32] { indexes.flatMap { [$0.base?.runNumber, $0.delta?.runNumber].compactMap { $0 } } }

    /// The file's bytes, body in the clear (a clear store's CHECKPOINT).
    package func encode() -> [UInt8] {
        let body = encodeBody()
        var w = header(
            cipher: StoreCipherAlgorithm.none, salt: [UInt8](repeating: 0, count: StoreCrypto.saltByteCount), bodyLength: body.count)
        w.append(contentsOf: body)
        return Self.appendingCRC(w)
    }

    /// The file's bytes, body sealed with `cipher` when one is given (an encrypted store's
    /// CHECKPOINT: a new random salt, K_cp derived from it and ``storeId``, nonce zero, the header
    /// as additional data); nil: ``encode()``. Runs on the calling thread. Throws
    /// `.invalidArgument` when the cipher gives a salt of another length, and the cipher's errors.
    package func encode(sealedWith cipher: (any StoreCipher)?) throws -> [UInt8] {
        guard let cipher else { return encode() }
        let salt = cipher.randomBytes(StoreCrypto.saltByteCount)
        guard salt.count == StoreCrypto.saltByteCount else {
            throw LogStoreError(.invalidArgument, "A StoreCipher returned \(salt.count) random bytes for a 16-byte salt.")
        }
        let body = encodeBody()
        var w = header(cipher: cipher.algorithmID, salt: salt, bodyLength: body.count + StoreCrypto.tagByteCount)
        let key = try StoreCrypto.checkpointKey(cipher, storeID: storeId, salt: salt)
        let sealed = try key.seal(body, nonce: StoreCrypto.checkpointNonce, aad: w.bytes)
        w.append(contentsOf: sealed)
        return Self.appendingCRC(w)
    }

    /// The clear header, up to and including `bodyLength` (the sealed body's additional data).
    private func header(cipher: UInt8, salt: [UInt8], bodyLength: Int) -> _ByteWriter {
        var w = _ByteWriter(capacity: Self.headerSize + bodyLength + 4)
        w.append(contentsOf: CheckpointFile.magic)
        w.u16(Self.version)
        w.u16(0)
        w.u64(generation)
        w.u64(sequence)
        w.u64(createdAtMillis)
        w.append(contentsOf: storeId.bytes.count == 16 ? storeId.bytes : [UInt8](repeating: 0, count: 16))
        w.u8(cipher)
        w.append(contentsOf: [UInt8](repeating: 0, count: 7))
        w.append(contentsOf: salt)
        w.u32(UInt32(bodyLength))
        return w
    }

    /// `w`'s bytes followed by their masked CRC-32C.
    private static func appendingCRC(_ w: _ByteWriter) -> [UInt8] {
        var w = w
        let crc = w.bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum($0)) }
        w.u32(crc)
        return w.bytes
    }

    /// The body's bytes (`segments meta indexes nextRun end`), before any sealing.
    private func encodeBody() -> [UInt8] {
        var body = _ByteWriter(capacity: 64 + indexes.count * 64)
        body.uvarint(UInt64(segments.count))
        var position: [UInt32: UInt64] = [:]
        for (i, s) in segments.enumerated() {
            body.u32(s.number)
            body.u64(s.length)
            body.u64(s.rawBytes)
            var refs = _ByteWriter(capacity: 16)
            CheckpointFile.encodeRefs(s, into: &refs)
            body.lengthPrefixed(refs.bytes)
            position[s.number] = UInt64(i)
        }
        var metaBytes = _ByteWriter(capacity: 64)
        CheckpointFile.encodeMeta(meta, position: position, segmentCount: segments.count, into: &metaBytes)
        body.lengthPrefixed(metaBytes.bytes)
        body.uvarint(UInt64(indexes.count))
        for i in indexes {
            body.string(i.type)
            if let d = i.definition {
                body.u8(1)
                d.encode(into: &body)
                body.u64(d.definitionHash)
            } else {
                body.u8(0)
            }
            for run in [i.base, i.delta] {
                guard let run else {
                    body.u8(0)
                    continue
                }
                body.u8(1)
                body.u32(run.runNumber)
                body.u32(run.pageCount)
                body.u32(run.rootPage)
                body.u64(run.entryCount)
                body.u32(run.headerCrc)
            }
            body.u64(i.entryCount)
        }
        body.u32(nextRun)
        body.u8(0xFF)
        return body.bytes
    }

    /// Decodes and checks a clear version 4 checkpoint (``decode(_:cipher:)`` without a cipher:
    /// a sealed one throws). Throws `_DecodeError` (what is wrong and where) for anything else.
    package static func decode(_ buf: UnsafeRawBufferPointer) throws(_DecodeError) -> CheckpointFileV4 {
        try decode(buf, cipher: nil)
    }

    /// Decodes and checks a version 4 checkpoint of a store whose cipher is `cipher` (nil: a clear
    /// store): its `cipher` byte must be the same, and a sealed body must authenticate under the
    /// key of the file's salt and store id. Runs on the calling thread. Throws `_DecodeError`
    /// (what is wrong and where; for a sealed body, offsets of the plaintext are counted from
    /// where the body starts in the file) for anything else, the cipher's errors included.
    package static func decode(_ buf: UnsafeRawBufferPointer, cipher: (any StoreCipher)?) throws(_DecodeError) -> CheckpointFileV4 {
        guard buf.count >= headerSize + 4 else { throw _DecodeError("file is \(buf.count) bytes, too short for a checkpoint", at: 0) }
        guard buf.prefix(8).elementsEqual(CheckpointFile.magic) else { throw _DecodeError("bad magic", at: 0) }
        let bodyEnd = buf.count - 4
        let stored = buf.loadUnaligned(fromByteOffset: bodyEnd, as: UInt32.self).littleEndian
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<bodyEnd]))) == stored else {
            throw _DecodeError("checksum mismatch", at: bodyEnd)
        }
        var r = _ByteReader(UnsafeRawBufferPointer(rebasing: buf[0..<bodyEnd]), offset: 8)
        let version = try r.u16()
        guard version == Self.version else { throw _DecodeError("format version \(version), not 4", at: 8) }
        guard try r.u16() == 0 else { throw _DecodeError("unknown flags", at: 10) }
        let generation = try r.u64()
        let sequence = try r.u64()
        let createdAt = try r.u64()
        let storeId = StoreID(bytes: Array(try r.bytes(16)))
        let cipherAt = r.offset
        let fileCipher = try r.u8()
        let expected = cipher?.algorithmID ?? StoreCipherAlgorithm.none
        guard fileCipher == expected else {
            throw _DecodeError(
                fileCipher == StoreCipherAlgorithm.none
                    ? "a clear checkpoint in an encrypted store"
                    : expected == StoreCipherAlgorithm.none
                        ? "a sealed checkpoint (cipher \(fileCipher)), and the store is not encrypted or no key was given"
                        : "a checkpoint sealed with cipher \(fileCipher), the store's is \(expected)",
                at: cipherAt)
        }
        let reservedAt = r.offset
        guard try r.bytes(7).allSatisfy({ $0 == 0 }) else { throw _DecodeError("reserved bytes are not zero", at: reservedAt) }
        let saltAt = r.offset
        let salt = Array(try r.bytes(StoreCrypto.saltByteCount))
        let lengthAt = r.offset
        guard Int(try r.u32()) == r.remaining else { throw _DecodeError("body length disagrees with the file's", at: lengthAt) }
        guard let cipher else {
            guard salt.allSatisfy({ $0 == 0 }) else { throw _DecodeError("the salt of a clear checkpoint is not zero", at: saltAt) }
            return try decodeBody(
                UnsafeRawBufferPointer(rebasing: buf[0..<bodyEnd]), generation: generation, sequence: sequence, createdAt: createdAt,
                storeId: storeId)
        }
        // Sealed: the header, then the opened body, read as a clear file's bytes would be.
        guard r.remaining >= StoreCrypto.tagByteCount else { throw _DecodeError("a sealed body shorter than its tag", at: lengthAt) }
        let plain: [UInt8]?
        do {
            let key = try StoreCrypto.checkpointKey(cipher, storeID: storeId, salt: salt)
            plain = try key.open(
                UnsafeRawBufferPointer(rebasing: buf[headerSize..<bodyEnd]), nonce: StoreCrypto.checkpointNonce,
                aad: Array(UnsafeRawBufferPointer(rebasing: buf[0..<headerSize])))
        } catch {
            throw _DecodeError("the checkpoint's key could not be used: \(error)", at: cipherAt)
        }
        guard let plain else {
            throw _DecodeError("the sealed body does not authenticate (altered bytes, or another key)", at: headerSize)
        }
        let opened = Array(UnsafeRawBufferPointer(rebasing: buf[0..<headerSize])) + plain
        let decoded: Result<CheckpointFileV4, _DecodeError> = opened.withUnsafeBytes { b in
            do throws(_DecodeError) {
                return .success(try decodeBody(b, generation: generation, sequence: sequence, createdAt: createdAt, storeId: storeId))
            } catch { return .failure(error) }
        }
        return try decoded.get()
    }

    /// The body of a checkpoint whose clear bytes (header, then body) are `bytes`, CRC excluded.
    private static func decodeBody(
        _ bytes: UnsafeRawBufferPointer, generation: UInt64, sequence: UInt64, createdAt: UInt64, storeId: StoreID
    ) throws(_DecodeError) -> CheckpointFileV4 {
        var r = _ByteReader(bytes, offset: headerSize)
        let countAt = r.offset
        let count = try r.uvarint()
        guard count >= 1, count <= UInt64(ManifestFile.maxSegments), count <= UInt64(r.remaining / 21) else {
            throw _DecodeError("segment count \(count) is zero or exceeds the file", at: countAt)
        }
        var segments: [CheckpointFile.Segment] = []
        var seen = Set<UInt32>()
        for _ in 0..<Int(count) {
            let at = r.offset
            var s = CheckpointFile.Segment(number: try r.u32(), length: try r.u64(), rawBytes: try r.u64())
            let refsAt = r.offset
            var rr = _ByteReader(try r.lengthPrefixed())
            do throws(_DecodeError) {
                s.refs = try CheckpointFile.decodeRefs(&rr)
                s.pendingBytes = try rr.uvarint()
                if !rr.isAtEnd { s.deadBytes = try rr.uvarint() }
            } catch {
                throw _DecodeError("segment \(s.number)'s define references: \(error.reason)", at: refsAt)
            }
            guard rr.isAtEnd else { throw _DecodeError("bytes after segment \(s.number)'s define references", at: refsAt) }
            guard seen.insert(s.number).inserted else { throw _DecodeError("segment \(s.number) listed twice", at: at) }
            guard s.length >= UInt64(SegmentHeader.sizeV1), s.length <= UInt64(UInt32.max) + UInt64(LogFrame.maxPayload) else {
                throw _DecodeError("segment \(s.number) length \(s.length) is implausible", at: at)
            }
            segments.append(s)
        }
        let metaAt = r.offset
        var mr = _ByteReader(try r.lengthPrefixed())
        let meta: MetaTable
        do throws(_DecodeError) {
            meta = try CheckpointFile.decodeMeta(&mr, segments: segments, sequence: sequence)
        } catch {
            throw _DecodeError("meta: \(error.reason)", at: metaAt)
        }
        guard mr.isAtEnd else { throw _DecodeError("bytes after the meta section", at: metaAt) }
        let indexCountAt = r.offset
        let indexCount = try r.uvarint()
        guard indexCount <= UInt64(r.remaining / 12) else {
            throw _DecodeError("index count \(indexCount) exceeds the file", at: indexCountAt)
        }
        var indexes: [Index] = []
        var names = Set<String>()
        var runs = Set<UInt32>()
        for _ in 0..<Int(indexCount) {
            let at = r.offset
            let type = try r.string()
            guard !type.isEmpty else { throw _DecodeError("index of an empty type name", at: at) }
            let kindAt = r.offset
            let kind = try r.u8()
            var definition: IndexDefinition? = nil
            switch kind {
            case 0: break
            case 1:
                let d = try IndexDefinition.decode(from: &r)
                let hashAt = r.offset
                guard try r.u64() == d.definitionHash else {
                    throw _DecodeError("index \(d.name) of \(type): definition hash mismatch", at: hashAt)
                }
                definition = d
            default: throw _DecodeError("unknown index kind \(kind)", at: kindAt)
            }
            // "type" then the index name: unique, and never ambiguous (names hold no NUL).
            guard names.insert(type + "\u{0}" + (definition.map { "\u{1}" + $0.name } ?? "")).inserted else {
                throw _DecodeError("an index of \(type) appears twice", at: at)
            }
            var witnesses: [RunWitness?] = []
            for _ in 0..<2 {
                let flagAt = r.offset
                switch try r.u8() {
                case 0: witnesses.append(nil)
                case 1:
                    let w = RunWitness(
                        runNumber: try r.u32(), pageCount: try r.u32(), rootPage: try r.u32(), entryCount: try r.u64(),
                        headerCrc: try r.u32())
                    guard runs.insert(w.runNumber).inserted else { throw _DecodeError("run \(w.runNumber) named twice", at: flagAt) }
                    witnesses.append(w)
                default: throw _DecodeError("bad run reference", at: flagAt)
                }
            }
            guard witnesses[0] != nil || witnesses[1] == nil else { throw _DecodeError("a delta run without a base run", at: at) }
            let entryCount = try r.u64()
            indexes.append(Index(type: type, definition: definition, base: witnesses[0], delta: witnesses[1], entryCount: entryCount))
        }
        let nextAt = r.offset
        let nextRun = try r.u32()
        guard runs.allSatisfy({ $0 < nextRun }) else { throw _DecodeError("next run number \(nextRun) is not above every run", at: nextAt) }
        let endAt = r.offset
        guard try r.u8() == 0xFF, r.isAtEnd else { throw _DecodeError("no end marker, or bytes after it", at: endAt) }
        return CheckpointFileV4(
            generation: generation, sequence: sequence, createdAtMillis: createdAt, storeId: storeId, segments: segments, indexes: indexes,
            nextRun: nextRun, meta: meta)
    }

    /// The version field of checkpoint bytes (nil when too short): which decoder reads them.
    package static func version(of buf: UnsafeRawBufferPointer) -> UInt16? {
        guard buf.count >= 10 else { return nil }
        return UInt16(buf[8]) | UInt16(buf[9]) << 8
    }
}
