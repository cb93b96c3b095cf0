import Foundation
import Synchronization

/// A checkpoint: the in-memory indexes as of one point of the log, so that opening a store
/// replays only the log written after it (Docs/FileFormat.md, "Checkpoint"; Docs/Compaction.md).
///
/// Byte grammar (all integers little-endian; `uvarint` is LEB128, `string`/`bytes` are
/// uvarint-length-prefixed):
///
///     checkpoint := header section* end crc
///     header     := magic:8 = 89 'L' 'S' 'C' 'P' 0D 0A 1A   version:u16le   flags:u16le = 0
///                   generation:u64le   sequence:u64le   createdAtMillis:u64le
///     section    := 0x01 segments          -- exactly once, before every type section
///                 | 0x02 type              -- once per item type that has records
///                 | 0x03 store             -- version 2: exactly once, first
///                 | 0x04 index             -- version 3: once per secondary index, after every
///                                          -- type section
///     store      := storeId:16             -- the store's id (MANIFEST, segment headers)
///     segments   := count:uvarint (segment:u32le length:u64le rawBytes:u64le) * count
///     type       := name:string count:uvarint entry * count            (count >= 1)
///     entry      := key:bytes segmentIndex:uvarint frameOffset:uvarint frameLength:uvarint
///                   valueOffset:uvarint valueLength:uvarint sequence:uvarint
///     index      := type:string definition hash:u64le count:uvarint entry:bytes * count
///     definition := name:string unique:u8 attributeCount:uvarint (keyCount:uvarint key:string*)*
///                   -- count = the type's records; entries strictly ascending (IndexKeyEncoding);
///                   -- hash = the definition's FNV-1a hash (IndexDefinition.definitionHash)
///     end        := 0xFF entryCount:u64le      -- entries of type sections
///     crc        := u32le, masked CRC-32C of every byte before it
///
/// `generation` is the manifest generation the checkpoint was taken under and `sequence` the last
/// transaction it includes. `segments` is the prefix of the manifest's replay order the index
/// covers, each with its valid length and raw payload bytes at that moment; replay resumes in the
/// last one at its `length`. `segmentIndex` indexes `segments`.
///
/// The decoder accepts any bytes without trapping: every read is bounds-checked, every count is
/// checked against the bytes left before anything is allocated, and every location must lie
/// inside the segment prefix the checkpoint itself declares. Section tags are part of the file
/// format: never renumber or reuse them.
package struct CheckpointFile {
    package static let magic: [UInt8] = [0x89, 0x4C, 0x53, 0x43, 0x50, 0x0D, 0x0A, 0x1A]
    package static let headerSize = 8 + 2 + 2 + 8 + 8 + 8
    /// Section tags. Part of the file format: never renumber or reuse.
    package enum Tag: UInt8 {
        case segments = 0x01
        case type = 0x02
        case store = 0x03
        case index = 0x04
        case end = 0xFF
    }

    /// The version this build writes: 3, whose index sections hold the secondary indexes. Stores
    /// read checkpoints of versions 1 to 3; an older build refuses a version-3 checkpoint and
    /// replays the log instead (a checkpoint is only an accelerator).
    package static let currentVersion: UInt16 = 3

    /// One segment a checkpoint covers.
    package struct Segment: Equatable, Sendable {
        /// The segment's number.
        package var number: UInt32
        /// Its valid length when the checkpoint was taken.
        package var length: UInt64
        /// Raw (uncompressed) payload bytes of its frames.
        package var rawBytes: UInt64
        /// Version 4: the defines the segment's records use, when known.
        package var refs: DefineRefs? = nil
        /// Version 4: bytes of its records the recompression pass has not tried yet.
        package var pendingBytes: UInt64 = 0
        /// Version 4: bytes of its records later transactions replaced or deleted, in
        /// ``rawBytes``' unit; nil when not known (a walk of the index counts them).
        package var deadBytes: UInt64? = nil
        /// A segment entry.
        package init(
            number: UInt32, length: UInt64, rawBytes: UInt64, refs: DefineRefs? = nil, pendingBytes: UInt64 = 0, deadBytes: UInt64? = nil
        ) {
            self.number = number
            self.length = length
            self.rawBytes = rawBytes
            self.refs = refs
            self.pendingBytes = pendingBytes
            self.deadBytes = deadBytes
        }
    }

    package var version: UInt16 = CheckpointFile.currentVersion
    package var generation: UInt64
    package var sequence: UInt64
    package var createdAtMillis: UInt64
    package var segments: [Segment]
    package var index: IndexState
    /// Version 2: the store this checkpoint belongs to (nil in version 1 checkpoints).
    package var storeId: StoreID? = nil
    /// Version 4: the runs it names (``CheckpointFileV4``), before they are opened.
    package var runReferences: CheckpointFileV4? = nil
    /// Version 4, once loaded: the opened runs by number.
    package var runs: [UInt32: MappedRun] = [:]

    /// What the engine remembers about a checkpoint it wrote or loaded.
    func mark(fileBytes: UInt64) -> CheckpointMark {
        CheckpointMark(
            generation: generation, sequence: sequence, createdAtMillis: createdAtMillis,
            segments: segments.map(\.number), positionOffset: segments.last?.length ?? 0, fileBytes: fileBytes)
    }

    /// Encodes a version 3 checkpoint of `index` (whose locations must all lie in `segments` and be
    /// legacy ones, in version 1 or 2 frames: tests and fuzz targets forge format 3 stores' files
    /// with it; stores write ``CheckpointFileV4``). The index does
    /// not keep frame lengths (``RecordLocation``): `frameLength` gives the stored length of the
    /// frame a location points into (the engine reads it from the frame's header); its errors are
    /// rethrown, as are `.corruption` errors of a damaged index run.
    package static func encode(
        generation: UInt64, createdAtMillis: UInt64, segments: [Segment], index: IndexState, storeId: StoreID,
        frameLength: (RecordLocation) throws -> UInt32
    ) throws -> [UInt8] {
        let total = index.totalCount
        var w = _ByteWriter(capacity: 64 + segments.count * 20 + total * 24)
        w.append(contentsOf: magic)
        w.u16(currentVersion)
        w.u16(0)
        w.u64(generation)
        w.u64(index.sequence)
        w.u64(createdAtMillis)
        w.u8(Tag.store.rawValue)
        w.append(contentsOf: storeId.bytes)
        w.u8(Tag.segments.rawValue)
        w.uvarint(UInt64(segments.count))
        var position: [UInt32: UInt64] = [:]
        for (i, s) in segments.enumerated() {
            w.u32(s.number)
            w.u64(s.length)
            w.u64(s.rawBytes)
            position[s.number] = UInt64(i)
        }
        for type in index.types.keys.sorted() {
            guard let d = index.types[type], !d.isEmpty else { continue }
            w.u8(Tag.type.rawValue)
            w.string(type)
            w.uvarint(UInt64(d.count))
            // Neighbouring keys usually share a frame: look each frame's length up once in a row.
            var lastFrame: (id: UInt64, length: UInt32) = (.max, 0)
            try d.forEach { key, loc in
                if loc.frameID != lastFrame.id { lastFrame = (loc.frameID, try frameLength(loc)) }
                key.withUnsafeBytes { w.lengthPrefixed($0) }
                w.uvarint(position[loc.segment] ?? UInt64(segments.count))
                w.uvarint(UInt64(loc.offset))
                w.uvarint(UInt64(lastFrame.length))
                w.uvarint(UInt64(loc.legacyValueOffset))
                w.uvarint(UInt64(loc.length))
                w.uvarint(loc.sequence)
                return true
            }
        }
        for type in index.secondary.keys.sorted() {
            for (name, secondary) in index.secondaryIndexes(ofType: type).sorted(by: { $0.key < $1.key }) {
                guard name == secondary.definition.name else { continue }
                w.u8(Tag.index.rawValue)
                w.string(type)
                secondary.definition.encode(into: &w)
                w.u64(secondary.definition.definitionHash)
                w.uvarint(UInt64(secondary.entries.count))
                try secondary.entries.forEach { entry in
                    entry.withUnsafeBytes { w.lengthPrefixed($0) }
                    return true
                }
            }
        }
        w.u8(Tag.end.rawValue)
        w.u64(UInt64(total))
        let crc = w.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        w.u32(CRC32C.mask(crc))
        return w.bytes
    }

    /// Decodes and checks a checkpoint. Throws `_DecodeError` (what is wrong and at which offset)
    /// for anything that is not a well-formed checkpoint of this format version or older.
    package static func decode(_ buf: UnsafeRawBufferPointer) throws(_DecodeError) -> CheckpointFile {
        guard buf.count >= headerSize + 1 + 9 + 4 else {
            throw _DecodeError("file is \(buf.count) bytes, too short for a checkpoint", at: 0)
        }
        guard buf.prefix(8).elementsEqual(magic) else { throw _DecodeError("bad magic", at: 0) }
        let bodyEnd = buf.count - 4
        let stored = buf.loadUnaligned(fromByteOffset: bodyEnd, as: UInt32.self).littleEndian
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<bodyEnd]))) == stored else {
            throw _DecodeError("checksum mismatch", at: bodyEnd)
        }
        var r = _ByteReader(UnsafeRawBufferPointer(rebasing: buf[0..<bodyEnd]), offset: 8)
        let version = try r.u16()
        guard version >= 1, version <= currentVersion else {
            throw _DecodeError("format version \(version) (this build reads 1...\(currentVersion))", at: 8)
        }
        let flags = try r.u16()
        guard flags == 0 else { throw _DecodeError("unknown flags 0x\(String(flags, radix: 16))", at: 10) }
        let generation = try r.u64()
        let sequence = try r.u64()
        let createdAt = try r.u64()

        var segments: [Segment] = []
        var storeId: StoreID? = nil
        var sawSegments = false
        var index = IndexState()
        index.sequence = sequence
        var entries: UInt64 = 0
        while true {
            let tagAt = r.offset
            let raw = try r.u8()
            guard let tag = Tag(rawValue: raw) else { throw _DecodeError("unknown section tag 0x\(String(raw, radix: 16))", at: tagAt) }
            switch tag {
            case .store:
                guard version >= 2, storeId == nil, !sawSegments else { throw _DecodeError("store section out of place", at: tagAt) }
                storeId = StoreID(bytes: Array(try r.bytes(16)))
            case .segments:
                guard version < 2 || storeId != nil else { throw _DecodeError("version 2 checkpoint without a store section", at: tagAt) }
                guard !sawSegments else { throw _DecodeError("second segments section", at: tagAt) }
                sawSegments = true
                let countAt = r.offset
                let count = try r.uvarint()
                guard count >= 1, count <= UInt64(ManifestFile.maxSegments), count <= UInt64(r.remaining / 20) else {
                    throw _DecodeError("segment count \(count) is zero or exceeds the file", at: countAt)
                }
                var seen = Set<UInt32>()
                for _ in 0..<Int(count) {
                    let at = r.offset
                    let s = Segment(number: try r.u32(), length: try r.u64(), rawBytes: try r.u64())
                    guard seen.insert(s.number).inserted else { throw _DecodeError("segment \(s.number) listed twice", at: at) }
                    guard s.length >= UInt64(SegmentHeader.sizeV1), s.length <= UInt64(UInt32.max) + UInt64(LogFrame.maxPayload) else {
                        throw _DecodeError("segment \(s.number) length \(s.length) is implausible", at: at)
                    }
                    segments.append(s)
                }
            case .type:
                guard sawSegments else { throw _DecodeError("type section before the segments section", at: tagAt) }
                guard index.secondary.isEmpty else { throw _DecodeError("type section after an index section", at: tagAt) }
                let nameAt = r.offset
                let name = try r.string()
                guard !name.isEmpty else { throw _DecodeError("empty type name", at: nameAt) }
                guard index.types[name] == nil else { throw _DecodeError("type \(name) appears twice", at: nameAt) }
                let countAt = r.offset
                let count = try r.uvarint()
                // An entry takes at least 7 bytes: this bounds the loop by the file's size.
                guard count >= 1, count <= UInt64(r.remaining / 7) else {
                    throw _DecodeError("entry count \(count) of type \(name) is zero or exceeds the file", at: countAt)
                }
                var keys = DecodedKeys()
                var locations: [RecordLocation] = []
                keys.reserveCapacity(Int(count))
                locations.reserveCapacity(Int(count))
                for _ in 0..<Int(count) {
                    let at = r.offset
                    keys.append(try r.lengthPrefixed())
                    locations.append(try decodeLocation(&r, segments: segments, sequence: sequence, at: at))
                }
                guard let d = keys.index(locations) else { throw _DecodeError("a key of type \(name) appears twice", at: countAt) }
                index.types[name] = d
                entries += count
            case .index:
                guard version >= 3, sawSegments else { throw _DecodeError("index section out of place", at: tagAt) }
                let secondary = try decodeIndexSection(&r, index: index)
                index.secondary[secondary.type, default: [:]][secondary.index.definition.name] = secondary.index
            case .end:
                let totalAt = r.offset
                let total = try r.u64()
                guard total == entries else {
                    throw _DecodeError("end section counts \(total) entries, the sections hold \(entries)", at: totalAt)
                }
                guard r.isAtEnd else { throw _DecodeError("bytes after the end section", at: r.offset) }
                guard sawSegments else { throw _DecodeError("no segments section", at: tagAt) }
                return CheckpointFile(
                    version: version, generation: generation, sequence: sequence, createdAtMillis: createdAt,
                    segments: segments, index: index, storeId: storeId)
            }
        }
    }

    /// One index section (after its tag), checked against the type sections before it.
    static func decodeIndexSection(_ r: inout _ByteReader, index: IndexState) throws(_DecodeError) -> (type: String, index: SecondaryIndex)
    {
        let at = r.offset
        let type = try r.string()
        guard !type.isEmpty else { throw _DecodeError("index section of an empty type name", at: at) }
        let definition = try IndexDefinition.decode(from: &r)
        let hashAt = r.offset
        guard try r.u64() == definition.definitionHash else {
            throw _DecodeError("index \(definition.name) of \(type): definition hash mismatch", at: hashAt)
        }
        guard index.secondary[type]?[definition.name] == nil else {
            throw _DecodeError("index \(definition.name) of \(type) appears twice", at: at)
        }
        let countAt = r.offset
        let count = try r.uvarint()
        // Every record has exactly one entry in each index of its type.
        guard count == UInt64(index.count(type)) else {
            throw _DecodeError("index \(definition.name) of \(type) has \(count) entries for \(index.count(type)) records", at: countAt)
        }
        // Entries go straight into the narrow form while they fit it (no array of wide entries
        // to convert), into the wide one from the first that does not.
        var narrow: [IndexEntry24] = []
        var wide: [IndexEntry] = []
        var isWide = false
        narrow.reserveCapacity(Int(count))
        let n = definition.attributes.count
        for _ in 0..<Int(count) {
            let entryAt = r.offset
            let raw = try r.lengthPrefixed()
            // The record key is what follows the components (parsed in place: no key is made).
            guard let keyStart = IndexKeyEncoding.prefixLength(ofEntry: raw, componentCount: n),
                keyStart < raw.count || (try? index.location(type, RecordKey([UInt8]()))) != nil
            else {
                throw _DecodeError("malformed entry in index \(definition.name) of \(type)", at: entryAt)
            }
            let entry = IndexEntry(raw)
            if !isWide, let e = IndexEntry24(entry) {
                narrow.append(e)
                continue
            }
            if !isWide {
                isWide = true
                wide.reserveCapacity(Int(count))
                wide.append(contentsOf: narrow.lazy.map(\.entry))
                narrow = []
            }
            wide.append(entry)
        }
        // Built from the arrays (no per-entry copy into a sequence of pairs).
        guard let tree = isWide ? SecondaryEntries(sortedKeys: wide) : SecondaryEntries(sortedNarrow: narrow) else {
            throw _DecodeError("entries of index \(definition.name) of \(type) are not strictly ascending", at: countAt)
        }
        return (type, SecondaryIndex(definition: definition, entries: tree))
    }

    static func decodeLocation(_ r: inout _ByteReader, segments: [Segment], sequence: UInt64, at: Int) throws(_DecodeError)
        -> RecordLocation
    {
        let segmentIndex = try r.uvarint()
        let frameOffset = try r.uvarint()
        let frameLength = try r.uvarint()
        let valueOffset = try r.uvarint()
        let valueLength = try r.uvarint()
        let seq = try r.uvarint()
        guard segmentIndex < UInt64(segments.count) else {
            throw _DecodeError("location names segment index \(segmentIndex) of \(segments.count)", at: at)
        }
        let segment = segments[Int(segmentIndex)]
        let limit = UInt64(UInt32.max)
        guard frameOffset >= UInt64(SegmentHeader.sizeV1), frameOffset <= limit, frameLength <= UInt64(LogFrame.maxPayload),
            frameOffset + UInt64(LogFrame.headerSizeV1) + frameLength <= segment.length
        else {
            throw _DecodeError(
                "frame \(frameOffset)+\(frameLength) lies outside segment \(segment.number)'s \(segment.length) bytes", at: at)
        }
        guard valueOffset <= UInt64(LogFrame.maxPayload), valueLength <= UInt64(LogFrame.maxPayload),
            valueOffset + valueLength <= UInt64(LogFrame.maxPayload)
        else { throw _DecodeError("value \(valueOffset)+\(valueLength) is implausible", at: at) }
        guard seq >= 1, seq <= sequence else { throw _DecodeError("record sequence \(seq) is outside 1...\(sequence)", at: at) }
        return RecordLocation(
            segment: segment.number, frameOffset: UInt32(frameOffset), valueOffset: UInt32(valueOffset), valueLength: UInt32(valueLength),
            sequence: seq)
    }
}

/// The engine's memory of the newest checkpoint on disk (for statistics and to skip rewriting an
/// unchanged one).
struct CheckpointMark: Sendable, Equatable {
    package var generation: UInt64
    package var sequence: UInt64
    package var createdAtMillis: UInt64
    /// The manifest prefix it covers; replay resumes in the last one at `positionOffset`.
    package var segments: [UInt32]
    package var positionOffset: UInt64
    /// Size of the CHECKPOINT file.
    package var fileBytes: UInt64
}
