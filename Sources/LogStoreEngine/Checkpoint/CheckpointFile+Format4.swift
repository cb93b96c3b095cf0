// CHECKPOINT 4's record-layer fields (grammar in Checkpoint4.swift): the meta section (the
// store's defines) and each segment's define references.

extension CheckpointFile {
    /// Appends the meta section's bytes: every type and dictionary `meta` defines, each dictionary
    /// with the location of its define record (`position`: segment number to its index in the
    /// segments section; a location outside them is written as `segmentCount`, which decodes as
    /// none), then an encrypted store's key epochs.
    ///
    ///     meta     := typeCount:uvarint (id:uvarint name:string){typeCount}
    ///                 dictCount:uvarint (id:uvarint typeId:uvarint current:u8 location dictionary:bytes){dictCount}
    ///                 [epochCount:uvarint (id:uvarint salt:16 mac:16){epochCount}]   -- only when epochCount >= 1
    ///     location := segmentIndex:uvarint offset:uvarint length:uvarint sequence:uvarint
    static func encodeMeta(_ meta: MetaTable, position: [UInt32: UInt64], segmentCount: Int, into w: inout _ByteWriter) {
        let types = meta.types
        w.uvarint(UInt64(types.count))
        for t in types {
            w.uvarint(UInt64(t.id))
            w.string(t.name)
        }
        let dictionaries = meta.allDictionaries
        let current = meta.currentDictionaryIDs
        w.uvarint(UInt64(dictionaries.count))
        for d in dictionaries {
            w.uvarint(UInt64(d.id))
            w.uvarint(UInt64(d.typeID))
            w.u8(current.contains(d.id) ? 1 : 0)
            let loc = d.location
            w.uvarint(loc.flatMap { position[$0.segment] } ?? UInt64(segmentCount))
            w.uvarint(UInt64(loc?.offset ?? 0))
            w.uvarint(UInt64(loc?.length ?? 0))
            w.uvarint(loc?.sequence ?? 0)
            w.lengthPrefixed(d.bytes)
        }
        // Key epochs (an encrypted store's) follow only when there are any, so that a clear
        // store's meta section is the same bytes as before encryption existed.
        let epochs = meta.allEpochs
        guard !epochs.isEmpty else { return }
        w.uvarint(UInt64(epochs.count))
        for e in epochs {
            w.uvarint(UInt64(e.id))
            w.bytes.append(contentsOf: e.salt)
            w.bytes.append(contentsOf: e.mac)
        }
    }

    /// The meta section (after its tag). Every id and name is checked as replay would check the
    /// defines (``MetaTable``): no id twice, no name twice, a dictionary's type defined.
    static func decodeMeta(_ r: inout _ByteReader, segments: [Segment], sequence: UInt64) throws(_DecodeError) -> MetaTable {
        var meta = MetaTable()
        let typesAt = r.offset
        let typeCount = try r.uvarint()
        guard typeCount <= UInt64(r.remaining / 2) else { throw _DecodeError("type count \(typeCount) exceeds the file", at: typesAt) }
        for _ in 0..<Int(typeCount) {
            let at = r.offset
            let id = try r.uvarint()
            let name = try r.string()
            guard id >= 1, id <= UInt64(UInt32.max), !name.isEmpty else { throw _DecodeError("type define \(id) is malformed", at: at) }
            do { try meta.defineType(UInt32(id), name: name) } catch { throw _DecodeError("type \(id) is defined twice", at: at) }
        }
        let dictsAt = r.offset
        let dictCount = try r.uvarint()
        guard dictCount <= UInt64(r.remaining / 8) else {
            throw _DecodeError("dictionary count \(dictCount) exceeds the file", at: dictsAt)
        }
        var current: [(UInt32, DictionaryRef)] = []
        for _ in 0..<Int(dictCount) {
            let at = r.offset
            let id = try r.uvarint()
            let typeID = try r.uvarint()
            let isCurrent = try r.u8()
            let segmentIndex = try r.uvarint()
            let offset = try r.uvarint()
            let length = try r.uvarint()
            let seq = try r.uvarint()
            let bytes = Array(try r.lengthPrefixed())
            guard id >= 1, id <= UInt64(UInt32.max), typeID >= 1, typeID <= UInt64(UInt32.max), isCurrent <= 1,
                (1...RecordCodec.maxDictionarySize).contains(bytes.count), seq <= sequence
            else { throw _DecodeError("dictionary define \(id) is malformed", at: at) }
            var location: RecordLocation? = nil
            if segmentIndex < UInt64(segments.count) {
                let segment = segments[Int(segmentIndex)]
                guard offset <= UInt64(UInt32.max), length <= UInt64(UInt32.max), offset + length <= segment.length else {
                    throw _DecodeError("dictionary \(id)'s define lies outside its segment", at: at)
                }
                location = RecordLocation(segment: segment.number, offset: UInt32(offset), length: UInt32(length), sequence: seq)
            }
            let d = DictionaryRef(id: UInt32(id), typeID: UInt32(typeID), bytes: bytes, location: location)
            do { try meta.defineDictionary(d, current: false) } catch {
                throw _DecodeError("dictionary \(id) is defined twice or for an unknown type", at: at)
            }
            if isCurrent == 1 { current.append((UInt32(typeID), d)) }
        }
        for (_, d) in current { try? meta.defineDictionary(d, current: true) }
        guard !r.isAtEnd else { return meta }
        let epochsAt = r.offset
        let epochCount = try r.uvarint()
        let epochSize = 1 + StoreCrypto.saltByteCount + StoreCrypto.macByteCount
        guard epochCount >= 1, epochCount <= UInt64(r.remaining / epochSize) else {
            throw _DecodeError("key epoch count \(epochCount) does not fit the section", at: epochsAt)
        }
        for _ in 0..<Int(epochCount) {
            let at = r.offset
            let id = try RecordCodec.readID(&r, "key epoch")
            let salt = Array(try r.bytes(StoreCrypto.saltByteCount))
            let mac = Array(try r.bytes(StoreCrypto.macByteCount))
            guard meta.epoch(id) == nil else { throw _DecodeError("key epoch \(id) is listed twice", at: at) }
            meta.defineEpoch(KeyEpoch(id: id, salt: salt, mac: mac, location: nil))
        }
        return meta
    }

    /// Appends a segment's define references, pending bytes and, when known, dead bytes:
    ///
    ///     refs  := known:u8 [types:idSet dictionaries:idSet [epochs:idSet]] pending:uvarint [dead:uvarint]
    ///                                                  -- known 0: no sets; 1: types and dictionaries;
    ///                                                  -- 2: key epochs too; dead when counted
    ///     idSet := count:uvarint id:uvarint{count}     -- ascending
    static func encodeRefs(_ s: Segment, into w: inout _ByteWriter) {
        let known: UInt8 = s.refs == nil ? 0 : (s.refs?.epochs.isEmpty ?? true) ? 1 : 2
        w.u8(known)
        if let refs = s.refs {
            for set in known == 2 ? [refs.types, refs.dictionaries, refs.epochs] : [refs.types, refs.dictionaries] {
                w.uvarint(UInt64(set.count))
                for id in set.sorted() { w.uvarint(UInt64(id)) }
            }
        }
        w.uvarint(s.pendingBytes)
        if let dead = s.deadBytes { w.uvarint(dead) }
    }

    /// A segment's define references (version 4): nil when the segment's were not known.
    static func decodeRefs(_ r: inout _ByteReader) throws(_DecodeError) -> DefineRefs? {
        let at = r.offset
        let known = try r.u8()
        guard known <= 2 else { throw _DecodeError("refs flag \(known)", at: at) }
        guard known >= 1 else { return nil }
        var sets: [Set<UInt32>] = []
        for _ in 0..<(known == 2 ? 3 : 2) {
            let countAt = r.offset
            let count = try r.uvarint()
            guard count <= UInt64(r.remaining) else { throw _DecodeError("id count \(count) exceeds the file", at: countAt) }
            var set = Set<UInt32>()
            for _ in 0..<Int(count) {
                let idAt = r.offset
                let id = try r.uvarint()
                guard id >= 1, id <= UInt64(UInt32.max) else { throw _DecodeError("id \(id) out of range", at: idAt) }
                set.insert(UInt32(id))
            }
            sets.append(set)
        }
        return DefineRefs(types: sets[0], dictionaries: sets[1], epochs: sets.count > 2 ? sets[2] : [])
    }
}

extension LogEngine {
    /// The defines of the store's CHECKPOINT, if it decodes (sealed ones with `cipher`, the
    /// store's), is of version 4 and belongs to store `storeId`: salvage starts from them, so that
    /// records whose define was lost with damage in the log keep their type's name. Nil
    /// otherwise; never throws.
    static func checkpointMeta(directory: String, fs: any FileSystem, storeId: StoreID?, cipher: (any StoreCipher)?) -> MetaTable? {
        guard let storeId, let f = try? fs.open(_joinPath(directory, LogStoreFormat.checkpointFileName), mode: .readOnly) else {
            return nil
        }
        defer { try? f.close() }
        guard let size = try? f.size(), size <= UInt64(Int.max), let bytes = try? f.read(at: 0, count: Int(size)) else { return nil }
        let decoded: CheckpointFileV4? = bytes.withUnsafeBytes { buf in
            do throws(_DecodeError) { return try CheckpointFileV4.decode(buf, cipher: cipher) } catch { return nil }
        }
        guard let decoded, decoded.storeId == storeId else { return nil }
        return decoded.meta
    }
}
