import Foundation
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Format 4 records

    /// The bytes of dictionary 1 of the record targets' meta table (type 1 `T`, dictionary 1 of
    /// type 1), so that codec 2 records reach the dictionary decompressor; the seed corpus
    /// compresses against it. Constant.
    public static let fuzzDictionary: [UInt8] = Array("{\"name\":\"menu item\",\"price\":1250,\"tags\":[\"vegan\",\"spicy\"]}".utf8)

    static func fuzzMeta() throws -> MetaTable {
        var meta = MetaTable()
        try meta.defineType(1, name: "T")
        try meta.defineDictionary(DictionaryRef(id: 1, typeID: 1, bytes: fuzzDictionary, location: nil))
        return meta
    }

    /// The format 4 record decoder: `RecordCodec.parse` and the value it hands over
    /// (`RecordCodec.withValue`: LZ4 alone or against a dictionary).
    ///
    /// Input: `mode:u8 bytes`. Mode bit 0 set: `bytes` is a record body, given its size field and
    /// a correct checksum (so the fuzzer gets past the checksum to the fields); else `bytes` is
    /// a whole record. Bit 1 set: the meta table is empty (every dictionary is unknown); else it
    /// defines type 1 and dictionary 1 (``fuzzDictionary``).
    ///
    /// Checks: parsing throws only `_DecodeError`; an accepted record's parts lie inside it; it
    /// encodes back (through the writer's `RecordCodec.append*`) to a record that parses to the
    /// same fields and content (byte for byte when its varints are minimal); a put's value is
    /// handed over with exactly its raw length, or refused as `.corruption`; a define applies to a
    /// meta table or is refused as `.corruption`. Throws ``FuzzPropertyViolation``.
    public static func record(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var bytes = Array(data.dropFirst())
        if mode & 1 != 0 {
            var wrapped: [UInt8] = []
            wrapped.appendUVarint(UInt64(bytes.count))
            let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum($0)) }
            wrapped += withUnsafeBytes(of: crc.littleEndian) { Array($0) }
            bytes = wrapped + bytes
        }
        let meta = mode & 2 != 0 ? MetaTable() : try fuzzMeta()
        try bytes.withUnsafeBytes { buf in
            let fields: RecordCodec.Fields
            do throws(_DecodeError) {
                fields = try RecordCodec.parse(buf, at: 0)
            } catch {
                guard error.offset >= 0, error.offset <= buf.count else {
                    throw FuzzPropertyViolation("parse reported offset \(error.offset) outside the \(buf.count)-byte input")
                }
                return
            }
            try checkRecord(UnsafeRawBufferPointer(rebasing: buf[0..<min(fields.length, buf.count)]), fields, meta: meta, context: "record")
        }
    }

    /// The checks of ``record(_:)`` on one accepted record (`record`: exactly its bytes).
    static func checkRecord(_ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, meta: MetaTable, context: String) throws {
        let n = record.count
        guard fields.length == n, fields.bodyOffset > 0, fields.bodyOffset <= n,
            fields.key.lowerBound >= fields.bodyOffset || fields.key.isEmpty, fields.key.upperBound <= n,
            fields.content.lowerBound >= fields.bodyOffset || fields.content.isEmpty, fields.content.upperBound <= n
        else {
            throw FuzzPropertyViolation("\(context): an accepted record's parts leave its \(n) bytes: \(fields)")
        }
        if fields.sealed { return try checkSealed(record, fields, meta: meta, context: context) }
        let key = UnsafeRawBufferPointer(rebasing: record[fields.key])
        let content = UnsafeRawBufferPointer(rebasing: record[fields.content])
        var again: [UInt8] = []
        switch fields.op {
        case .put:
            RecordCodec.appendPut(
                into: &again, typeID: fields.typeID, key: key, stored: content, codec: fields.codec, dictionaryID: fields.dictionaryID,
                rawLength: fields.rawLength)
        case .delete: RecordCodec.appendDelete(into: &again, typeID: fields.typeID, key: key)
        case .deleteAll: RecordCodec.appendDeleteAll(into: &again, typeID: fields.typeID)
        case .define:
            switch fields.defineKind {
            case .type?: RecordCodec.appendTypeDefine(into: &again, id: fields.defineID, name: String(decoding: content, as: UTF8.self))
            case .dictionary?:
                RecordCodec.appendDictionaryDefine(into: &again, id: fields.defineID, typeID: fields.typeID, dictionary: content)
            case .keyEpoch?:
                RecordCodec.appendEpochDefine(
                    into: &again,
                    epoch: KeyEpoch(
                        id: fields.defineID, salt: Array(content[0..<StoreCrypto.saltByteCount]),
                        mac: Array(content[StoreCrypto.saltByteCount...]), location: nil))
            case nil:
                throw FuzzPropertyViolation("\(context): parse accepted a define of no kind")
            }
        }
        try again.withUnsafeBytes { a in
            let back: RecordCodec.Fields
            do throws(_DecodeError) {
                back = try RecordCodec.parse(a, at: 0)
            } catch {
                throw FuzzPropertyViolation("\(context): an accepted record re-encodes to one that does not parse: \(error.reason)")
            }
            guard back.op == fields.op, back.codec == fields.codec, back.typeID == fields.typeID, back.defineKind == fields.defineKind,
                back.defineID == fields.defineID, back.dictionaryID == fields.dictionaryID, back.rawLength == fields.rawLength,
                a[back.key].elementsEqual(key), a[back.content].elementsEqual(content), back.length == a.count
            else {
                throw FuzzPropertyViolation("\(context): a record changed in an encode/parse round trip")
            }
            // Minimal varints (what writers produce) give the same bytes.
            if a.count == n && !a.elementsEqual(record) {
                throw FuzzPropertyViolation("\(context): a record re-encodes to other bytes of the same length")
            }
        }
        switch fields.op {
        case .put:
            do {
                let got = try RecordCodec.withValue(record, fields, meta: meta, path: nil, offset: 0) { $0.count }
                guard got == fields.rawLength else {
                    throw FuzzPropertyViolation("\(context): a value of \(got) bytes, the record announces \(fields.rawLength)")
                }
            } catch let v as FuzzPropertyViolation {
                throw v
            } catch {
                try expectCorruption(error, "\(context): withValue")
            }
        case .define:
            var m = meta
            do {
                try m.apply(fields, record: record, location: RecordLocation(segment: 1, offset: 48, length: UInt32(n), sequence: 1))
            } catch {
                try expectCorruption(error, "\(context): MetaTable.apply")
            }
        case .delete, .deleteAll:
            break
        }
    }

    // MARK: Format 4 frames

    /// The version 4 frame decoder: `LogFrame.parse` (header checksum, sequence table, record
    /// chain and record checksums) and `LogFrame.forEachRecord`. Called by ``frames(_:)`` for a
    /// mode with bit 6 set.
    ///
    /// Mode bits: 0 set = each frame's header checksum and its records' checksums are recomputed
    /// first; 1 set = `bytes` is a run of records (a frame's payload), each checked as
    /// ``record(_:)`` checks one; 4 set = the frames are a compacted segment's (sequence tables).
    ///
    /// Checks: parsing stays inside the buffer; an accepted frame's records fill its payload and
    /// decode (each as ``record(_:)`` checks), each with its frame's sequence (a compacted
    /// frame's puts: from the table, between 1 and the frame's); the
    /// next-valid-frame search finds an accepted frame where it starts.
    static func framesV4(_ mode: UInt8, _ input: [UInt8]) throws {
        var bytes = input
        let meta = try fuzzMeta()
        let compacted = mode & 16 != 0
        if mode & 2 != 0 {
            try bytes.withUnsafeBytes { buf in
                var at = 0
                var count = 0
                while at < buf.count, count < 256 {
                    guard let fields = try? RecordCodec.parse(buf, at: at) else { return }
                    guard fields.length > 0, at + fields.length <= buf.count else {
                        throw FuzzPropertyViolation("a record at \(at) of \(fields.length) bytes leaves the \(buf.count)-byte payload")
                    }
                    try checkRecord(
                        UnsafeRawBufferPointer(rebasing: buf[at..<(at + fields.length)]), fields, meta: meta, context: "record at \(at)")
                    at += fields.length
                    count += 1
                }
            }
            return
        }
        if mode & 1 != 0 { fixFrameChecksumsV4(&bytes, from: 0, compacted: compacted) }
        try bytes.withUnsafeBytes { buf in
            var offset = 0
            var frames = 0
            while offset < buf.count, frames < 64 {
                guard case .frame(let header, let payloadOffset) = LogFrame.parse(buf, at: offset, version: 4, compacted: compacted) else {
                    return
                }
                frames += 1
                let end = payloadOffset + header.storedLength
                guard payloadOffset == offset + LogFrame.headerSizeV4, end <= buf.count,
                    header.sequenceTableLength + header.rawLength == header.storedLength
                else {
                    throw FuzzPropertyViolation(
                        "parse accepted a frame at \(offset) whose payload \(payloadOffset)..<\(end) is inconsistent")
                }
                guard SegmentReader.nextValidFrame(buf, from: offset, version: 4, compacted: compacted) == offset else {
                    throw FuzzPropertyViolation("nextValidFrame(from: \(offset)) misses the valid frame that starts there")
                }
                let payload = UnsafeRawBufferPointer(rebasing: buf[payloadOffset..<end])
                var count = 0
                do {
                    try LogFrame.forEachRecord(payload, header) { fields, at, sequence in
                        count += 1
                        guard at + fields.length <= payload.count else {
                            throw FuzzPropertyViolation("forEachRecord reported a record outside its frame's payload")
                        }
                        // A normal frame's records take its sequence (whether it follows the log's
                        // is replay's check); a compacted frame's puts get theirs from the table,
                        // at least 1.
                        let fromTable = header.sequenceTableLength > 0 && fields.op != .define
                        guard sequence <= header.sequence, fromTable ? sequence >= 1 : sequence == header.sequence else {
                            throw FuzzPropertyViolation("a record's sequence \(sequence) is not one its frame (\(header.sequence)) allows")
                        }
                        try checkRecord(
                            UnsafeRawBufferPointer(rebasing: payload[at..<(at + fields.length)]), fields, meta: meta,
                            context: "frame at \(offset)")
                    }
                } catch let v as FuzzPropertyViolation {
                    throw v
                } catch is _DecodeError {
                    // A frame whose records pass their checksums but do not decode: replay's
                    // corruption. Nothing more to check in it.
                    count = header.recordCount
                } catch {
                    throw FuzzPropertyViolation("forEachRecord threw \(error), expected a decode error")
                }
                guard count == header.recordCount else {
                    throw FuzzPropertyViolation("a frame of \(header.recordCount) records yields \(count)")
                }
                offset = end
            }
        }
    }

    /// Recomputes, frame by frame from `start` (version 4 layout), each record's checksum (as far
    /// as the size fields lead) and then the frame's header checksum (header and sequence table).
    static func fixFrameChecksumsV4(_ bytes: inout [UInt8], from start: Int, compacted: Bool) {
        var offset = start
        while bytes.count - offset >= LogFrame.headerSizeV4 {
            let (length, count) = bytes.withUnsafeBytes {
                (
                    Int($0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian),
                    Int($0.loadUnaligned(fromByteOffset: offset + 20, as: UInt32.self).littleEndian)
                )
            }
            let payloadStart = offset + LogFrame.headerSizeV4
            let end = payloadStart + length
            guard length <= LogFrame.maxPayload, end <= bytes.count else { return }
            // A compacted frame's sequence table: one varint per record, before the records.
            var table = 0
            if compacted {
                var at = payloadStart
                for _ in 0..<min(count, length) { guard uvarint(bytes, &at, end: end) != nil else { break } }
                table = at - payloadStart
            }
            var at = payloadStart + table
            while at < end {
                var next = at
                guard let size = uvarint(bytes, &next, end: end), size <= UInt64(end - at) else { break }
                let parsed = (body: next - at, size: Int(size))
                guard at + parsed.body + 4 + parsed.size <= end else { break }
                let bodyStart = at + parsed.body + 4
                let crc = bytes.withUnsafeBytes {
                    CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[bodyStart..<(bodyStart + parsed.size)])))
                }
                for i in 0..<4 { bytes[at + parsed.body + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
                at = bodyStart + parsed.size
            }
            var crc = bytes.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<payloadStart])) }
            crc = bytes.withUnsafeBytes { CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: $0[payloadStart..<(payloadStart + table)])) }
            let masked = CRC32C.mask(crc)
            for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: masked >> (8 * UInt32(i))) }
            offset = end
        }
    }

    /// The unsigned LEB128 varint at `at` of `bytes` (before `end`), advancing `at`; nil if it
    /// runs past `end` or is longer than 10 bytes.
    static func uvarint(_ bytes: [UInt8], _ at: inout Int, end: Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while at < end, shift < 64 {
            let b = bytes[at]
            at += 1
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }

    // MARK: Dictionaries

    /// LZ4 against a dictionary, and the dictionary trainer.
    ///
    /// Input: `mode:u8 dictLength:u16le dictionary rawLength:u16le rest` (each field as far as the
    /// input reaches; `dictLength` is clamped to what is there).
    /// - Always: `rest` decompressed as an LZ4 block with the dictionary into a buffer of
    ///   `rawLength` bytes: it succeeds with exactly that many bytes or fails; never reads or
    ///   writes outside the buffers (ASan); the same with no dictionary.
    /// - Mode bit 0: `rest` compressed against the dictionary (fast LZ4 when bits 2-5 are 0, else
    ///   LZ4HC at that level) decompresses with it to `rest`.
    /// - Mode bit 1: `rest` split at zero bytes into samples; a dictionary trained on them is at
    ///   most the size asked for (the `rawLength` field, at least 1), and every sample compressed
    ///   against it decompresses back.
    ///
    /// Throws ``FuzzPropertyViolation``.
    public static func dictionary(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var r = Array(data.dropFirst())[...]
        func u16() -> Int {
            let v = r.prefix(2).reversed().reduce(0) { $0 << 8 | Int($1) }
            r = r.dropFirst(2)
            return v
        }
        let dictionary = Array(r.prefix(u16()))
        r = r.dropFirst(dictionary.count)
        let rawLength = u16()
        let rest = Array(r)
        // Any block against any dictionary: a success or a failure, nothing outside the buffers.
        for dict in [dictionary, []] {
            _ = withUnsafeTemporaryAllocation(byteCount: max(rawLength, 1), alignment: 16) { out in
                rest.withUnsafeBytes { input in
                    dict.withUnsafeBytes {
                        LZ4.decompress(input, into: UnsafeMutableRawBufferPointer(rebasing: out[0..<rawLength]), dictionary: $0)
                    }
                }
            }
        }
        if mode & 1 != 0 {
            let level = Int(mode >> 2) & 0x0F
            try roundTrip(rest, compressor: LZ4.DictionaryCompressor(dictionary: dictionary), level: level, context: "level \(level)")
        }
        if mode & 2 != 0 {
            let samples = rest.split(separator: 0, omittingEmptySubsequences: true).prefix(512).map { Array($0) }
            let size = max(1, min(rawLength, RecordCodec.maxDictionarySize))
            let trained = DictionaryTrainer.train(samples, size: size)
            guard trained.count <= size else {
                throw FuzzPropertyViolation("a dictionary trained for \(size) bytes has \(trained.count)")
            }
            let compressor = LZ4.DictionaryCompressor(dictionary: trained)
            for (i, s) in samples.prefix(16).enumerated() { try roundTrip(s, compressor: compressor, level: 0, context: "sample \(i)") }
        }
    }

    /// `value` compressed with `compressor` (if that makes it smaller) decompresses with its
    /// dictionary to `value`.
    static func roundTrip(_ value: [UInt8], compressor: LZ4.DictionaryCompressor, level: Int, context: String) throws {
        guard let block = value.withUnsafeBytes({ compressor.compress($0, level: level) }) else { return }
        guard block.count < value.count else {
            throw FuzzPropertyViolation("\(context): compress returned \(block.count) bytes for \(value.count)")
        }
        var back = [UInt8](repeating: 0, count: value.count)
        let ok = back.withUnsafeMutableBytes { out in block.withUnsafeBytes { LZ4.decompress($0, into: out, dictionary: compressor.bytes) }
        }
        guard ok, back == value else {
            throw FuzzPropertyViolation("\(context): a \(value.count)-byte value compressed against a dictionary does not come back")
        }
    }

    // MARK: Seeds

    /// Seed inputs of format 4 records, frames and dictionaries: for `frame` (mode bit 6:
    /// version 4 frames and records), `record` and `dict`, each with its mode byte apart. Built
    /// from a small store on an ``InMemoryFileSystem`` and the record writer; deterministic. The
    /// seed corpus tool writes them into Tests/Fuzz/Corpus, and FuzzFailCaseTests replays them.
    /// Throws what the engine throws.
    public static func format4Seeds() throws -> [(target: String, name: String, mode: UInt8, bytes: [UInt8])] {
        var seeds: [(target: String, name: String, mode: UInt8, bytes: [UInt8])] = []
        func write(_ target: String, _ name: String, _ mode: UInt8, _ bytes: [UInt8]) { seeds.append((target, name, mode, bytes)) }
        let headerV4 = SegmentHeader.sizeV2
        let (segment, compactedSegment, compactedNumber) = try seedSegments()
        let frames = Array(segment.dropFirst(headerV4))
        write("frame", "v4-frames", 0x40, frames)
        write("frame", "v4-frames-fixcrc", 0x41, frames)
        // The first frame's records (after its 28-byte header) as a run of records.
        let payloadLength = Int(frames[4]) | Int(frames[5]) << 8
        write("frame", "v4-records", 0x42, Array(frames[28..<min(frames.count, 28 + payloadLength)]))
        let compacted = Array(compactedSegment.dropFirst(headerV4))
        write("frame", "v4-compacted", 0x50, compacted)
        write("frame", "v4-compacted-fixcrc", 0x51, compacted)

        // record: one record of each kind and codec, whole (mode 0) and as a body (mode 1).
        let value = Array(#"{"name":"menu item","price":990,"tags":["vegan"]}"#.utf8)
        var records: [(String, [UInt8])] = []
        func record(_ name: String, _ build: (inout [UInt8]) -> Void) {
            var r: [UInt8] = []
            build(&r)
            records.append((name, r))
        }
        func key(_ n: UInt8) -> [UInt8] { [7, n] }
        record("put-raw") { r in
            _ = value.withUnsafeBytes { v in key(1).withUnsafeBytes { RecordCodec.appendPut(into: &r, typeID: 1, key: $0, stored: v) } }
        }
        record("put-lz4") { r in
            let repeated = value + value + value
            let block = repeated.withUnsafeBytes { LZ4.compress($0) } ?? []
            _ = block.withUnsafeBytes { b in
                key(2).withUnsafeBytes {
                    RecordCodec.appendPut(into: &r, typeID: 1, key: $0, stored: b, codec: .lz4, rawLength: repeated.count)
                }
            }
        }
        record("put-dictionary") { r in
            let block = value.withUnsafeBytes { LZ4.DictionaryCompressor(dictionary: FuzzEntryPoints.fuzzDictionary).compress($0) } ?? []
            _ = block.withUnsafeBytes { b in
                key(3).withUnsafeBytes {
                    RecordCodec.appendPut(
                        into: &r, typeID: 1, key: $0, stored: b, codec: .lz4Dictionary, dictionaryID: 1, rawLength: value.count)
                }
            }
        }
        record("delete") { r in _ = key(4).withUnsafeBytes { RecordCodec.appendDelete(into: &r, typeID: 1, key: $0) } }
        record("delete-all") { r in RecordCodec.appendDeleteAll(into: &r, typeID: 2) }
        record("define-type") { r in RecordCodec.appendTypeDefine(into: &r, id: 2, name: "MenuItem") }
        record("define-dictionary") { r in
            _ = FuzzEntryPoints.fuzzDictionary.withUnsafeBytes {
                RecordCodec.appendDictionaryDefine(into: &r, id: 2, typeID: 1, dictionary: $0)
            }
        }
        for (name, r) in records {
            write("record", name, 0, r)
            // The body alone: after the size varint and the 4-byte checksum.
            let sizeBytes = r.firstIndex { $0 & 0x80 == 0 }.map { $0 + 1 } ?? 1
            write("record", name + "-body", 1, Array(r.dropFirst(sizeBytes + 4)))
        }
        write("record", "put-dictionary-unknown", 2, records[2].1)

        // dict: mode dictLength:u16le dictionary rawLength:u16le rest.
        func le16(_ n: Int) -> [UInt8] { [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF)] }
        let dict = FuzzEntryPoints.fuzzDictionary
        let block = value.withUnsafeBytes { LZ4.DictionaryCompressor(dictionary: dict).compress($0) } ?? []
        write("dict", "decompress", 0, le16(dict.count) + dict + le16(value.count) + block)
        write("dict", "round-trip-fast", 1, le16(dict.count) + dict + le16(0) + value + value)
        write("dict", "round-trip-hc9", 1 | 9 << 2, le16(dict.count) + dict + le16(0) + value + value)
        let samples: [UInt8] = (0..<24).flatMap { (i: Int) -> [UInt8] in
            Array("{\"id\":\(i),\"name\":\"dish \(i)\",\"price\":\(100 + i)}".utf8) + [0]
        }
        write("dict", "train", 2, le16(0) + le16(512) + samples)

        // segment4: whole segment files as the last and as a sealed segment, strict and salvage.
        write("segment4", "last-strict", 0, segment)
        write("segment4", "sealed-strict", 1, segment)
        write("segment4", "last-salvage", 2, segment)
        write("segment4", "sealed-salvage", 3, segment)
        write("segment4", "torn-tail", 0, Array(segment.prefix(segment.count - 7)))
        write("segment4", "body-with-header-fixcrc", 4 | 8, frames)
        // (Mode bit 5: the segment's number, little-endian, first.)
        let number = withUnsafeBytes(of: compactedNumber.littleEndian) { Array($0) }
        write("segment4", "compacted", 64 | 32, number + compactedSegment)
        write("segment4", "compacted-sealed", 1 | 64 | 32, number + compactedSegment)
        return seeds
    }

    /// A small store's one segment, and the compacted segment of the same store after a
    /// compaction (and its number), both with the store id the segment targets give their stores.
    static func seedSegments() throws -> ([UInt8], [UInt8], UInt32) {
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions()
        options.durability = .none
        options.maxFramePayload = 512
        options.autoCompaction = false
        options.autoRecompression = false
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try engine.commit((0..<6).map { .put(type: "T", key: RecordKey([UInt8($0)]), value: AttributeValue.int(Int64($0)).encoded()) })
        try engine.commit([
            .delete(type: "T", key: RecordKey([1])), .put(type: "T", key: RecordKey([2]), value: AttributeValue.string("two").encoded()),
            .deleteAll(type: "Gone"),
        ])
        try engine.commit((10..<40).map { .put(type: "U", key: RecordKey([UInt8($0)]), value: [UInt8](repeating: UInt8($0), count: 40)) })
        func read(_ n: UInt32) throws -> [UInt8] {
            let f = try fs.open("/s/" + LogStoreFormat.segmentFileName(n), mode: .readOnly)
            defer { try? f.close() }
            return try f.read(at: 0, count: Int(try f.size()))
        }
        let before = try read(1)
        let report = try engine.compact(includingTail: true)
        let compacted = try read(report.newSegments[0])
        try engine.close()
        return (withFuzzStoreID(before), withFuzzStoreID(compacted), report.newSegments[0])
    }

    /// `segment` (version 2 or 4: the same header layout) with the store id the segment targets
    /// give their store (`0x5A` sixteen times) and its header checksum made right again.
    static func withFuzzStoreID(_ segment: [UInt8]) -> [UInt8] {
        guard segment.count >= SegmentHeader.sizeV2 else { return segment }
        var s = segment
        for i in 24..<40 { s[i] = 0x5A }
        let crc = CRC32C.mask(CRC32C.checksum(Array(s[0..<44])))
        for i in 0..<4 { s[44 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        return s
    }

}
