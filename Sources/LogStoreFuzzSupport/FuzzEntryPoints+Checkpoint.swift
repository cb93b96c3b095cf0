import Foundation
import LogStoreEncryption
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Checkpoint

    /// The checkpoint readers, `CheckpointFileV4.decode` (format 4: a small file naming run
    /// files) and the legacy `CheckpointFile.decode` (versions 1 to 3), and the engine's use of a
    /// checkpoint file.
    ///
    /// Input: `mode:u8 bytes`. Mode bits: 0 set = the last 4 bytes are replaced by the right
    /// checksum; 1 set = the bytes also become the CHECKPOINT file of a small store (one
    /// segment, two committed transactions, closed with a checkpoint, so its run files are there),
    /// which is then opened; 2 set = before that, the checkpoint is made to name that store: a
    /// version 2 or 3 store section where a checkpoint puts it gets that store's id; a version 4
    /// checkpoint that decodes gets the store's id and, for each run file it names that exists,
    /// that run's header CRC in its witness (and the checksum is fixed again), so the checkpoint is
    /// checked against the store's files instead of being refused as another store's.
    ///
    /// Checks: decode fails only with a decode error (never traps); a decoded version 4
    /// checkpoint names no run or index twice, has its next run number above every run, and
    /// survives an encode/decode round trip; a decoded legacy checkpoint has every location inside the
    /// segments it lists and re-encodes to a checkpoint that decodes to the same generation,
    /// sequence, segments and index (secondary indexes included: one well-formed entry per
    /// record); a store with the checkpoint file opens or throws a `LogStoreError`, every record
    /// it indexes reads back or throws a `LogStoreError`, and every secondary-index entry it
    /// loaded can be walked.
    ///
    /// Mode bit 3, sealed (an encrypted store's CHECKPOINT): `bytes` starts with a 32-byte
    /// AES-256-GCM store key (zero-padded when short); the rest, made a sealed checkpoint (its
    /// first 80 bytes the header with cipher 1, everything after them up to the last 4 the
    /// plaintext body, sealed under that key, then the CRC), is decoded with the key: it must
    /// decode exactly as its clear twin does (cipher 0, zero salt, the body in the clear), fail
    /// without a key or with another, and fail with any one byte of the sealed body changed.
    /// Throws ``FuzzPropertyViolation``.
    public static func checkpoint(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var bytes = Array(data.dropFirst())
        if mode & 8 != 0 {
            try sealedCheckpoint(bytes)
            return
        }
        if mode & 1 != 0, bytes.count >= 4 {
            let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)]))) }
            for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        }
        let isV4 = bytes.withUnsafeBytes { CheckpointFileV4.version(of: $0) } == CheckpointFileV4.version
        if isV4 { try checkpoint4(bytes) }
        let decoded: CheckpointFile? = isV4 ? nil : bytes.withUnsafeBytes { try? CheckpointFile.decode($0) }
        if let cp = decoded {
            let numbers = Set(cp.segments.map(\.number))
            for (type, d) in cp.index.types {
                guard !d.isEmpty else { throw FuzzPropertyViolation("checkpoint decoded an empty type \(type)") }
                for (_, loc) in try d.elements() where !numbers.contains(loc.segment) || loc.sequence > cp.sequence {
                    throw FuzzPropertyViolation("checkpoint decoded a location outside its segments or newer than its sequence: \(loc)")
                }
            }
            let id = cp.storeId ?? StoreID(bytes: Array(repeating: 0, count: 16))
            // The decoded index keeps no frame lengths (RecordLocation); 0 lies inside any segment.
            let again = try CheckpointFile.encode(
                generation: cp.generation, createdAtMillis: cp.createdAtMillis, segments: cp.segments, index: cp.index, storeId: id
            ) { _ in 0 }
            let back: CheckpointFile
            do {
                back = try again.withUnsafeBytes { (b) throws(_DecodeError) in try CheckpointFile.decode(b) }
            } catch {
                throw FuzzPropertyViolation("a decoded checkpoint re-encodes to bytes that do not decode: \(error)")
            }
            guard back.generation == cp.generation, back.sequence == cp.sequence, back.segments == cp.segments, back.storeId == id,
                back.index.types == cp.index.types, back.index.sequence == cp.index.sequence
            else {
                throw FuzzPropertyViolation("checkpoint changed in an encode/decode round trip")
            }
            // Index sections (version 3): one entry per record of the type, each ending in a key,
            // and the same definitions and entries after the round trip.
            for (type, indexes) in cp.index.secondary {
                for (name, index) in indexes {
                    guard index.entries.count == (cp.index.types[type]?.count ?? 0), name == index.definition.name else {
                        throw FuzzPropertyViolation(
                            "checkpoint decoded index \(name) of \(type) with \(index.entries.count) entries for \((cp.index.types[type]?.count ?? 0)) records"
                        )
                    }
                    for entry in try index.entries.keys()
                    where IndexKeyEncoding.recordKey(ofEntry: entry, componentCount: index.definition.attributes.count) == nil {
                        throw FuzzPropertyViolation("checkpoint decoded a malformed entry of index \(name) of \(type)")
                    }
                    guard let other = back.index.secondary[type]?[name], other.definition == index.definition,
                        other.entries == index.entries
                    else {
                        throw FuzzPropertyViolation("index \(name) of \(type) changed in an encode/decode round trip")
                    }
                }
            }
        }
        guard mode & 2 != 0 else { return }

        let fs = InMemoryFileSystem()
        var options = LogEngineOptions()
        options.durability = .none
        do {
            let engine = try checkpointFuzzStore(fs)
            try engine.close()
            options.checkpointOnClose = false
            let idAt = CheckpointFile.headerSize + 1
            if mode & 4 != 0, isV4 {
                bytes = try namingTheStore(bytes, fs: fs)
            } else if mode & 4 != 0, bytes.count >= idAt + 16 + 4, bytes[idAt - 1] == CheckpointFile.Tag.store.rawValue {
                let manifestPath = _joinPath("/store", LogStoreFormat.manifestFileName)
                let f = try fs.open(manifestPath, mode: .readOnly)
                let m = try ManifestFile.decode(try f.read(at: 0, count: Int(try f.size())), path: manifestPath)
                try f.close()
                if let id = m.storeId { bytes.replaceSubrange(idAt..<(idAt + 16), with: id.bytes) }
                if mode & 1 != 0 {
                    let crc = bytes.withUnsafeBytes {
                        CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)])))
                    }
                    for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
                }
            }
            try writeFile(fs, _joinPath("/store", LogStoreFormat.checkpointFileName), bytes)
        } catch {
            throw FuzzPropertyViolation("setting up the in-memory store failed: \(error)")
        }
        let engine: LogEngine
        do {
            engine = try LogEngine.open(directory: "/store", fileSystem: fs, options: options)
        } catch {
            guard error is LogStoreError else { throw FuzzPropertyViolation("open threw a non-LogStoreError: \(error)") }
            return
        }
        defer { try? engine.close() }
        func read(_ body: () throws -> Void) throws {
            do { try body() } catch {
                guard error is LogStoreError else { throw FuzzPropertyViolation("reading threw a non-LogStoreError: \(error)") }
            }
        }
        let snap: EngineSnapshot
        do { snap = try engine.snapshot() } catch { throw FuzzPropertyViolation("snapshot of an open store failed: \(error)") }
        for type in snap.itemTypes {
            for key in try snap.keys(ofType: type) { try read { _ = try snap.value(type: type, key: key) } }
            try read { try snap.forEach(ofType: type) { _, _ in true } }
            for name in snap.secondaryIndexes(ofType: type).keys {
                try read {
                    try snap.forEachIndexEntry(ofType: type, index: name, in: IndexEntryRange(), reverse: false) { _, key in
                        _ = try snap.value(type: type, key: key)
                        return true
                    }
                }
            }
        }
        try read { _ = try snap.secondaryIndexProblems() }
    }

    /// The small store of ``checkpoint(_:)``'s mode bit 1, in `/store` of `fs`: two types, two
    /// transactions, open (closing it writes its checkpoint and runs).
    static func checkpointFuzzStore(_ fs: InMemoryFileSystem) throws -> LogEngine {
        var options = LogEngineOptions()
        options.durability = .none
        let engine = try LogEngine.open(directory: "/store", fileSystem: fs, options: options)
        try engine.commit([.put(type: "a", key: RecordKey([1]), value: [1, 1]), .put(type: "b", key: RecordKey([2]), value: [2])])
        try engine.commit([.put(type: "a", key: RecordKey([3]), value: [3]), .delete(type: "b", key: RecordKey([2]))])
        return engine
    }

    /// The CHECKPOINT that closing ``checkpointFuzzStore(_:)`` writes (a seed for mode bits 1
    /// and 2: its store id and run CRCs differ from run to run, and mode bit 2 puts them right).
    public static func checkpointFuzzStoreCheckpoint() throws -> [UInt8] {
        let fs = InMemoryFileSystem()
        try checkpointFuzzStore(fs).close()
        let f = try fs.open(_joinPath("/store", LogStoreFormat.checkpointFileName), mode: .readOnly)
        defer { try? f.close() }
        return try f.read(at: 0, count: Int(try f.size()))
    }

    /// CHECKPOINT 4 properties: the decoder never traps, and what it accepts is consistent and
    /// survives an encode/decode round trip.
    static func checkpoint4(_ bytes: [UInt8]) throws {
        guard let cp = bytes.withUnsafeBytes({ try? CheckpointFileV4.decode($0) }) else { return }
        let runs = cp.runNumbers
        guard Set(runs).count == runs.count, runs.allSatisfy({ $0 < cp.nextRun }) else {
            throw FuzzPropertyViolation("CHECKPOINT 4 decoded a run named twice or at or above its next run number")
        }
        var names = Set<String>()
        for i in cp.indexes where !names.insert(i.type + "\u{0}" + (i.definition?.name ?? "")).inserted {
            throw FuzzPropertyViolation("CHECKPOINT 4 decoded an index named twice")
        }
        let again = cp.encode()
        guard again.withUnsafeBytes({ try? CheckpointFileV4.decode($0) }) == cp else {
            throw FuzzPropertyViolation("CHECKPOINT 4 changed in an encode/decode round trip")
        }
    }

    /// Mode bit 3: see ``checkpoint(_:)``.
    static func sealedCheckpoint(_ input: [UInt8]) throws {
        let n = StoreCrypto.keyByteCount
        let key = Array((input.prefix(n) + [UInt8](repeating: 0, count: n)).prefix(n))
        let rest = Array(input.dropFirst(n))
        let h = CheckpointFileV4.headerSize
        guard rest.count >= h + 4 else { return }
        let cipher: AESGCMCipher
        do { cipher = try AESGCMCipher(key: key) } catch { throw FuzzPropertyViolation("a 32-byte key was refused: \(error)") }
        let body = Array(rest[h..<(rest.count - 4)])
        func withCRC(_ b: [UInt8]) -> [UInt8] {
            let crc = b.withUnsafeBytes { CRC32C.mask(CRC32C.checksum($0)) }
            return b + withUnsafeBytes(of: crc.littleEndian, Array.init)
        }
        func header(cipher c: UInt8, salt: [UInt8], bodyLength: Int) -> [UInt8] {
            var head = Array(rest[0..<h])
            head[52] = c
            for i in 53..<60 { head[i] = 0 }
            head.replaceSubrange(60..<76, with: salt)
            head.replaceSubrange(76..<80, with: withUnsafeBytes(of: UInt32(bodyLength).littleEndian, Array.init))
            return head
        }
        let clear = withCRC(header(cipher: 0, salt: [UInt8](repeating: 0, count: 16), bodyLength: body.count) + body)
        let salt = Array(rest[60..<76])
        let sealedHead = header(cipher: cipher.algorithmID, salt: salt, bodyLength: body.count + StoreCrypto.tagByteCount)
        let storeId = StoreID(bytes: Array(rest[36..<52]))
        let sealedBody = try StoreCrypto.checkpointKey(cipher, storeID: storeId, salt: salt).seal(
            body, nonce: StoreCrypto.checkpointNonce, aad: sealedHead)
        let sealed = withCRC(sealedHead + sealedBody)
        let twin = clear.withUnsafeBytes { try? CheckpointFileV4.decode($0) }
        let opened = sealed.withUnsafeBytes { try? CheckpointFileV4.decode($0, cipher: cipher) }
        guard opened == twin else { throw FuzzPropertyViolation("a sealed checkpoint decodes otherwise than its clear twin") }
        guard sealed.withUnsafeBytes({ try? CheckpointFileV4.decode($0) }) == nil else {
            throw FuzzPropertyViolation("a sealed checkpoint decoded without its key")
        }
        let other = try AESGCMCipher(key: key.map { $0 ^ 0x5A })
        guard sealed.withUnsafeBytes({ try? CheckpointFileV4.decode($0, cipher: other) }) == nil else {
            throw FuzzPropertyViolation("a sealed checkpoint decoded with another key")
        }
        // One changed byte of the sealed body (CRC fixed again) never decodes.
        let at = h + Int(input.count % max(1, sealedBody.count))
        var changed = Array(sealed.dropLast(4))
        changed[at] ^= 0x01
        guard withCRC(changed).withUnsafeBytes({ try? CheckpointFileV4.decode($0, cipher: cipher) }) == nil else {
            throw FuzzPropertyViolation("a sealed checkpoint with a changed byte decoded")
        }
        // A sealed checkpoint the decoder accepts re-seals (new salt) to the same checkpoint.
        if let cp = opened {
            let again = try cp.encode(sealedWith: cipher)
            guard again.withUnsafeBytes({ try? CheckpointFileV4.decode($0, cipher: cipher) }) == cp else {
                throw FuzzPropertyViolation("a sealed CHECKPOINT 4 changed in an encode/decode round trip")
            }
        }
    }

    /// `bytes` (a version 4 checkpoint) with the store id of `/store` in `fs` and, for each run it
    /// names whose file is there, that run's header CRC; unchanged if they do not decode.
    static func namingTheStore(_ bytes: [UInt8], fs: InMemoryFileSystem) throws -> [UInt8] {
        guard var cp = bytes.withUnsafeBytes({ try? CheckpointFileV4.decode($0) }) else { return bytes }
        let manifestPath = _joinPath("/store", LogStoreFormat.manifestFileName)
        let f = try fs.open(manifestPath, mode: .readOnly)
        let m = try ManifestFile.decode(try f.read(at: 0, count: Int(try f.size())), path: manifestPath)
        try f.close()
        if let id = m.storeId { cp.storeId = id }
        func fixed(_ w: RunWitness?) -> RunWitness? {
            guard var w, let run = try? MappedRun.open(path: _joinPath("/store", RunFile.fileName(w.runNumber)), fs: fs) else { return w }
            w.headerCrc = RunWitness(run.header).headerCrc
            return w
        }
        for i in cp.indexes.indices {
            cp.indexes[i].base = fixed(cp.indexes[i].base)
            cp.indexes[i].delta = fixed(cp.indexes[i].delta)
        }
        return cp.encode()
    }
}
