import Foundation

/// The recompression pass's plan (Docs/Compaction.md, "Recompression"): a compaction whose copy
/// re-encodes the records that compress better than they are stored. Before the copy it trains a
/// dictionary for each item type of the prefix that has enough live values and no dictionary yet,
/// or whose new dictionary compresses a held-out sample at least 5 % smaller than the current
/// one; during the copy ``reencode(_:_:into:)`` compresses a record with its type's current
/// dictionary (LZ4HC at ``LogEngineOptions/recompressionLevel``) and keeps the result when it is
/// smaller than what is stored. Every other record is copied as it is, so a second pass over
/// the same records costs only a copy.
///
/// Built and used on the compacting thread.
struct RecompressionPlan {
    /// The copied view's defines plus the dictionaries trained for this pass (each its type's
    /// current one).
    var meta: MetaTable
    /// The dictionaries this pass trained (not in the store until the switch).
    var trained: [DictionaryRef] = []
    let level: Int
    let threshold: Int
    /// Records re-encoded, and the bytes they took before and after.
    var recordsRecompressed = 0
    var bytesBefore: UInt64 = 0
    var bytesAfter: UInt64 = 0
    private let plainCompressor: LZ4.Compressor

    /// The plan for compacting `live` out of `view`: samples each type's live values in the
    /// prefix (read through the view), trains and keeps the dictionaries that pay. `nextID` is the
    /// first dictionary id free in the store. Throws `.corruption` when a sampled record cannot be
    /// read.
    init(live: LivePrefix, view: ViewState, nextID: UInt32, options: LogEngineOptions) throws {
        meta = view.index.meta
        level = options.recompressionLevel
        threshold = options.compressionThreshold
        plainCompressor = LZ4.Compressor(level: options.recompressionLevel)
        let snapshot = EngineSnapshot(index: view.index, segments: view.segments, cache: nil)
        var next = max(nextID, meta.nextDictionaryID)
        // The records of one type are contiguous in walk order.
        var start = 0
        while start < live.records.count {
            let t = live.records[start].type
            var end = start
            var bytes = 0
            while end < live.records.count && live.records[end].type == t {
                bytes += Int(live.location(end).length)
                end += 1
            }
            defer { start = end }
            let name = live.type(start)
            guard bytes >= options.dictionaryTrainingMinimumBytes, let typeID = meta.typeID(named: name) else { continue }
            // About 1 MiB of samples, every `stride`-th record; a tenth held out to judge.
            let stride = max(1, bytes / (1 << 20))
            var samples: [[UInt8]] = []
            var heldOut: [[UInt8]] = []
            var i = start
            while i < end {
                let value = try snapshot.withValue(at: live.location(i)) { Array($0) }
                if (i - start) / stride % 10 == 9 { heldOut.append(value) } else { samples.append(value) }
                i += stride
            }
            guard samples.count >= 64, !heldOut.isEmpty else { continue }
            let current = meta.currentDictionary(ofType: typeID)
            let baseline = DictionaryTrainer.storedSize(heldOut, dictionary: current?.bytes, level: 0)
            var best: (size: Int, bytes: [UInt8])? = nil
            for candidate in [DictionaryTrainer.train(samples), DictionaryTrainer.concatenate(samples)] where !candidate.isEmpty {
                let size = DictionaryTrainer.storedSize(heldOut, dictionary: candidate, level: 0)
                if size < best?.size ?? .max { best = (size, candidate) }
            }
            guard let best, best.size * 100 <= baseline * 95 else { continue }
            let d = DictionaryRef(id: next, typeID: typeID, bytes: best.bytes, location: nil)
            try meta.defineDictionary(d, current: true)
            trained.append(d)
            next += 1
        }
    }

    /// The format 4 record `record` (fields `fields`) re-encoded into `out` when compressing it
    /// (again) pays: stored raw, or compressed without a dictionary or with one that is no longer
    /// its type's current, and smaller once compressed with its type's current dictionary (or,
    /// without one, alone, for values of at least ``LogEngineOptions/compressionThreshold``
    /// bytes). Returns the dictionary used, or nil with `out` untouched when the record is best
    /// copied as it is. Throws `.corruption` when the record's value cannot be read.
    ///
    /// A sealed record (an encrypted store's) is opened, re-encoded and sealed again under the
    /// writing epoch.
    mutating func reencode(_ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, into out: inout [UInt8]) throws
        -> (DictionaryRef?, Bool)
    {
        guard fields.sealed else { return try reencodeClear(record, fields, into: &out) }
        guard fields.op == .put else { return (nil, false) }
        // What the clear header tells, before paying for opening it.
        let dictionary = meta.currentDictionary(ofType: fields.typeID)
        if fields.codec == .lz4Dictionary && fields.dictionaryID == dictionary?.id { return (nil, false) }
        if fields.codec == .lz4 && dictionary == nil { return (nil, false) }
        let meta = self.meta
        let start = out.count
        let before = bytesAfter
        let result = try RecordCodec.withOpenedSealed(record, fields, meta: meta, path: nil, offset: 0) { clear, opened in
            try reencodeClear(clear, opened, into: &out)
        }
        if result.1 {
            let length = try RecordCodec.sealLast(&out, from: start, cipher: meta.cipher)
            bytesAfter = before + UInt64(length)
        }
        return result
    }

    /// ``reencode(_:_:into:)`` of a clear record.
    private mutating func reencodeClear(_ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, into out: inout [UInt8]) throws
        -> (DictionaryRef?, Bool)
    {
        guard fields.op == .put else { return (nil, false) }
        let dictionary = meta.currentDictionary(ofType: fields.typeID)
        switch fields.codec {
        case .lz4Dictionary where fields.dictionaryID == dictionary?.id: return (nil, false)
        case .lz4 where dictionary == nil: return (nil, false)
        case .raw where dictionary == nil && fields.rawLength < threshold: return (nil, false)
        default: break
        }
        let stored = fields.content.count
        let key = UnsafeRawBufferPointer(rebasing: record[fields.key])
        let result: (done: Bool, dictionary: DictionaryRef?) = try RecordCodec.withValue(
            record, fields, meta: meta, path: nil, offset: 0
        ) { plain in
            guard let compressed = dictionary.map({ $0.compressor.compress(plain, level: level) }) ?? plainCompressor.compress(plain),
                compressed.count < stored
            else { return (false, nil) }
            compressed.withUnsafeBytes {
                _ = RecordCodec.appendPut(
                    into: &out, typeID: fields.typeID, key: key, stored: $0, codec: dictionary == nil ? .lz4 : .lz4Dictionary,
                    dictionaryID: dictionary?.id ?? 0, rawLength: plain.count)
            }
            return (true, dictionary)
        }
        if result.done {
            recordsRecompressed += 1
            bytesBefore += UInt64(fields.length)
            bytesAfter += UInt64(out.count)
        }
        return (result.dictionary, result.done)
    }

    /// A legacy record's value encoded into `out` as a format 4 put of type `typeID`: compressed
    /// as ``reencode(_:_:into:)`` would, else raw. Returns the dictionary used, if any.
    mutating func encode(value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, typeID: UInt32, into out: inout [UInt8])
        -> DictionaryRef?
    {
        let dictionary = meta.currentDictionary(ofType: typeID)
        if dictionary != nil || value.count >= threshold,
            let compressed = dictionary.map({ $0.compressor.compress(value, level: level) }) ?? plainCompressor.compress(value)
        {
            compressed.withUnsafeBytes {
                _ = RecordCodec.appendPut(
                    into: &out, typeID: typeID, key: key, stored: $0, codec: dictionary == nil ? .lz4 : .lz4Dictionary,
                    dictionaryID: dictionary?.id ?? 0, rawLength: value.count)
            }
            return dictionary
        }
        RecordCodec.appendPut(into: &out, typeID: typeID, key: key, stored: value)
        return nil
    }
}
