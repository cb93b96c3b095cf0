/// Encodes a transaction's operations as format 4 frames of records (``LogFrame``,
/// ``RecordCodec``), and where each put's record lands.
enum TransactionEncoder {
    struct Output {
        var bytes: [UInt8]
        /// Sum of the lengths of its put, delete and deleteAll records (defines, like frame
        /// headers, are overhead: the unit of ``SegmentInfo/rawBytes``).
        var rawBytes: UInt64 = 0
        /// Per operation (puts only meaningful): the record's offset relative to `bytes` and its
        /// length; segment and sequence are the caller's to set.
        var placements: [RecordLocation]
        /// The defines as they are after the transaction: `meta` plus the types it defined.
        var meta: MetaTable
        /// The defines its records use.
        var refs = DefineRefs()
        /// Bytes of its put records not compressed with a dictionary (``SegmentInfo/pendingBytes``).
        var pendingBytes: UInt64 = 0
    }

    /// Encodes `ops` as frames of sequence `sequence`. A type `meta` does not know gets the next
    /// id, and its define record goes into the transaction just before the first record of it;
    /// so do the types of `defining` that `meta` does not know, first.
    ///
    /// `syncedThrough`: how far the tail segment is known durable now (every frame records it).
    /// `commit`: whether the last frame is the transaction's commit frame (false: a chunk of a
    /// large transaction that more frames follow; every frame is a data frame). Values are stored
    /// raw unless ``LogEngineOptions/compression`` and ``LogEngineOptions/compressOnWrite`` are on
    /// and LZ4 (with the type's current dictionary, if it has one) makes one of at least
    /// ``LogEngineOptions/compressionThreshold`` bytes smaller; `compressor` is the caller's
    /// reusable LZ4 state for values of types without a dictionary.
    ///
    /// In an encrypted store (``MetaTable/cipher``) every record is sealed under the writing key
    /// epoch, whose define goes first when `meta` does not know it yet. Throws only the cipher's
    /// errors.
    static func encode(
        _ ops: [RecordOperation], sequence: UInt64, meta: MetaTable, options: LogEngineOptions, syncedThrough: UInt32,
        commit: Bool = true, defining types: [String] = [], compressor: LZ4.Compressor? = nil
    ) throws -> Output {
        var meta = meta
        let cipher = meta.cipher
        var refs = DefineRefs()
        var out: [UInt8] = []
        out.reserveCapacity(ops.reduce(0) { $0 + $1.encodedSizeBound } + LogFrame.headerSizeV4 * 2)
        var placements = [RecordLocation](repeating: RecordLocation(segment: 0, offset: 0, length: 0, sequence: 0), count: ops.count)
        let maxFrame = options.maxFramePayload
        let compress = options.compression && options.compressOnWrite
        var frameStart = -1
        var recordCount = 0
        var rawBytes: UInt64 = 0
        var defineBytes = 0
        var pendingBytes: UInt64 = 0

        func openFrame() {
            frameStart = out.count
            out.append(contentsOf: repeatElement(0, count: LogFrame.headerSizeV4))
            recordCount = 0
        }
        func closeFrame(last: Bool) {
            let payload = out.count - frameStart - LogFrame.headerSizeV4
            rawBytes += UInt64(payload)
            LogFrame.patchHeaderV4(
                &out, at: frameStart, payloadLength: payload, kind: last ? .commit : .data, sequence: sequence, recordCount: recordCount,
                syncedThrough: syncedThrough)
        }
        /// Makes room for a record of at most `bound` bytes: a new frame when this one would
        /// pass the frame size (a record larger than that gets a frame of its own).
        func reserve(_ bound: Int) {
            if frameStart < 0 {
                openFrame()
            } else if recordCount > 0 && out.count - frameStart - LogFrame.headerSizeV4 + bound > maxFrame {
                closeFrame(last: false)
                openFrame()
            }
        }
        func typeID(_ name: String) throws -> UInt32 {
            if let id = meta.typeID(named: name) { return id }
            let id = meta.nextTypeID
            // A name the meta table has never seen cannot clash with a known id or name.
            try? meta.defineType(id, name: name)
            reserve(48 + name.utf8.count)
            let at = out.count
            RecordCodec.appendTypeDefine(into: &out, id: id, name: name)
            defineBytes += try RecordCodec.sealLast(&out, from: at, cipher: cipher)
            recordCount += 1
            return id
        }
        if let epoch = cipher?.writingEpoch {
            refs.epochs.insert(epoch.id)
            if meta.epoch(epoch.id) != epoch {
                meta.defineEpoch(epoch)
                reserve(64)
                defineBytes += RecordCodec.appendEpochDefine(into: &out, epoch: epoch)
                recordCount += 1
            }
        }
        for type in types { refs.types.insert(try typeID(type)) }
        for (i, op) in ops.enumerated() {
            switch op {
            case .put(let type, let key, let value):
                let id = try typeID(type)
                refs.types.insert(id)
                var stored: [UInt8]? = nil
                var codec = RecordCodec.Codec.raw
                var dictionary: DictionaryRef? = nil
                // With a dictionary even small values compress; alone only larger ones do.
                if compress && value.count >= 16 { dictionary = meta.currentDictionary(ofType: id) }
                if compress && (dictionary != nil || value.count >= options.compressionThreshold) {
                    stored = value.withUnsafeBytes { v in
                        if let dictionary { return dictionary.compressor.compress(v) }
                        return compressor?.compress(v) ?? LZ4.compress(v)
                    }
                    if stored != nil { codec = dictionary == nil ? .lz4 : .lz4Dictionary }
                }
                if codec == .lz4Dictionary, let dictionary { refs.dictionaries.insert(dictionary.id) }
                reserve(56 + key.count + (stored?.count ?? value.count))
                let at = out.count
                _ = key.withUnsafeBytes { k in
                    if let stored {
                        return stored.withUnsafeBytes {
                            RecordCodec.appendPut(
                                into: &out, typeID: id, key: k, stored: $0, codec: codec, dictionaryID: dictionary?.id ?? 0,
                                rawLength: value.count)
                        }
                    }
                    return value.withUnsafeBytes { RecordCodec.appendPut(into: &out, typeID: id, key: k, stored: $0) }
                }
                let length = try RecordCodec.sealLast(&out, from: at, cipher: cipher)
                recordCount += 1
                placements[i] = RecordLocation(segment: 0, offset: UInt32(at), length: UInt32(length), sequence: 0)
                if codec != .lz4Dictionary { pendingBytes += UInt64(length) }
            case .delete(let type, let key):
                let id = try typeID(type)
                refs.types.insert(id)
                reserve(56 + key.count)
                let at = out.count
                key.withUnsafeBytes { _ = RecordCodec.appendDelete(into: &out, typeID: id, key: $0) }
                _ = try RecordCodec.sealLast(&out, from: at, cipher: cipher)
                recordCount += 1
            case .deleteAll(let type):
                let id = try typeID(type)
                refs.types.insert(id)
                reserve(48)
                let at = out.count
                RecordCodec.appendDeleteAll(into: &out, typeID: id)
                _ = try RecordCodec.sealLast(&out, from: at, cipher: cipher)
                recordCount += 1
            }
        }
        if frameStart < 0 { openFrame() }
        closeFrame(last: commit)
        return Output(
            bytes: out, rawBytes: rawBytes - UInt64(defineBytes), placements: placements, meta: meta, refs: refs, pendingBytes: pendingBytes
        )
    }
}

extension LogFrame {
    /// Writes the version 4 header of a normal frame (no sequence table) at `offset` of `out`,
    /// whose `payloadLength` bytes of records follow it there.
    static func patchHeaderV4(
        _ out: inout [UInt8], at offset: Int, payloadLength: Int, kind: Kind, sequence: UInt64, recordCount: Int, syncedThrough: UInt32
    ) {
        out.withUnsafeMutableBytes { b in
            b.storeBytes(of: UInt32(payloadLength).littleEndian, toByteOffset: offset + 4, as: UInt32.self)
            b[offset + 8] = kind.rawValue
            b[offset + 9] = 0
            b.storeBytes(of: UInt16(0), toByteOffset: offset + 10, as: UInt16.self)
            b.storeBytes(of: sequence.littleEndian, toByteOffset: offset + 12, as: UInt64.self)
            b.storeBytes(of: UInt32(recordCount).littleEndian, toByteOffset: offset + 20, as: UInt32.self)
            b.storeBytes(of: syncedThrough.littleEndian, toByteOffset: offset + 24, as: UInt32.self)
            let crc = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: b[(offset + 4)..<(offset + headerSizeV4)])))
            b.storeBytes(of: crc.littleEndian, toByteOffset: offset, as: UInt32.self)
        }
    }
}
