import Foundation
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Checkpoint

    /// The checkpoint reader, `CheckpointFile.decode`, and the engine's use of a checkpoint file.
    ///
    /// Input: `mode:u8 bytes`. Mode bits: 0 set = the last 4 bytes are replaced by the right
    /// checksum; 1 set = the bytes also become the CHECKPOINT file of a small store (one
    /// segment, two committed transactions), which is then opened; 2 set = before that, if the
    /// bytes hold a version 2 store section where a checkpoint puts it, it is set to that store's
    /// id (and the checksum fixed again), so the checkpoint is checked against the store's files
    /// instead of being refused as another store's.
    ///
    /// Checks: decode fails only with a decode error (never traps); a decoded checkpoint has
    /// every location inside the segments it lists and re-encodes to a checkpoint that decodes to
    /// the same generation, sequence, segments and index (secondary indexes included: one
    /// well-formed entry per record); a store with the checkpoint file opens or throws a
    /// `LogStoreError`, every record it indexes reads back or throws a `LogStoreError`, and every
    /// secondary-index entry it loaded can be walked. Throws ``FuzzPropertyViolation``.
    public static func checkpoint(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var bytes = Array(data.dropFirst())
        if mode & 1 != 0, bytes.count >= 4 {
            let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)]))) }
            for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        }
        let decoded: CheckpointFile? = bytes.withUnsafeBytes { try? CheckpointFile.decode($0) }
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
        options.checkpointOnClose = false
        do {
            let engine = try LogEngine.open(directory: "/store", fileSystem: fs, options: options)
            try engine.commit([.put(type: "a", key: RecordKey([1]), value: [1, 1]), .put(type: "b", key: RecordKey([2]), value: [2])])
            try engine.commit([.put(type: "a", key: RecordKey([3]), value: [3]), .delete(type: "b", key: RecordKey([2]))])
            try engine.close()
            let idAt = CheckpointFile.headerSize + 1
            if mode & 4 != 0, bytes.count >= idAt + 16 + 4, bytes[idAt - 1] == CheckpointFile.Tag.store.rawValue {
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
}
