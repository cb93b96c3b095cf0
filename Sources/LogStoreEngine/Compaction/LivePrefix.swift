/// The index as a compaction sees it: every entry of every type in key order (to rebuild the index
/// from), and among them the live records of the segments it replaces, grouped by the frame that
/// holds them, frames in log order (Docs/Compaction.md, "Copy").
///
/// Built from one walk of the index, type by type. An entry whose location lies in the prefix
/// becomes a ``Record`` whose position in ``records`` is its *ordinal*; the copy sets record `i`'s
/// new location at `locations[i]`, and ``rebuild(_:with:)`` puts it back in its place in key
/// order, without a lookup, then builds each type's tree bottom-up. Frames are found by hashing
/// their id (the last one remembered: neighbouring keys were often written together), then
/// ordered by (segment position, offset): a sort of the frames, never of the records, because log
/// order already is an order.
///
/// Value type, built and used on the compacting thread (read, not written, by the writing one).
struct LivePrefix: Sendable {
    /// One live record of the prefix: where its entry is in ``entries``.
    struct Record: Sendable {
        var type: Int32
        var element: Int32
    }

    /// One frame of the prefix that holds live records.
    struct Frame: Sendable {
        /// Index into the compaction's segment list (replay order).
        var segmentPosition: Int
        var offset: UInt32
        /// The frame's records: `order[recordStart..<recordEnd]`, by value offset.
        var recordStart: Int
        var recordEnd: Int
    }

    /// Every entry of one type, in key order.
    struct TypeEntries: Sendable {
        var type: String
        var elements: [(RecordKey, RecordLocation)]
    }

    /// Per item type (by the `type` index of ``Record``), all of its entries.
    var entries: [TypeEntries] = []
    /// Every live record of the prefix, by ordinal (walk order: types in `entries` order, keys
    /// ascending).
    var records: [Record] = []
    /// Frames in log order.
    var frames: [Frame] = []
    /// Record ordinals grouped by frame (see ``Frame/recordStart``), by value offset in a frame.
    var order: [Int32] = []
    /// Sum of the live records' encoded sizes as `put` records.
    var liveRawBytesAsPut: UInt64 = 0
    /// What the records of compacted segments add as `putAt` records (their sequence numbers).
    /// Which of the two a compacted segment's frame holds only its header says (FileFormat.md §7a).
    var sequenceBytesInCompacted: UInt64 = 0

    /// Walks `index`, collecting the live records that lie in `prefix` (segment numbers in replay
    /// order; `segments[i]` is segment `prefix[i]`). Throws `.corruption` for a damaged index run.
    init(index: IndexState, prefix: [UInt32], segments: [SegmentFile]) throws {
        var position: [UInt32: Int] = [:]
        for (i, n) in prefix.enumerated() { position[n] = i }
        var frameOf: [Int32] = []
        var frameIndex: [UInt64: Int32] = [:]
        var counts: [Int32] = []
        var lastID = UInt64.max
        var lastFrame: Int32 = 0
        for type in index.types.keys.sorted() {
            guard let tree = index.types[type] else { continue }
            let t = Int32(entries.count)
            let typeBytes = type.utf8.count
            var elements: [(RecordKey, RecordLocation)] = []
            elements.reserveCapacity(tree.count)
            try tree.forEach { key, loc in
                defer { elements.append((key, loc)) }
                guard let p = position[loc.segment] else { return true }
                let id = loc.frameID
                let f: Int32
                if id == lastID {
                    f = lastFrame
                } else if let known = frameIndex[id] {
                    f = known
                } else {
                    f = Int32(frames.count)
                    frameIndex[id] = f
                    counts.append(0)
                    frames.append(Frame(segmentPosition: p, offset: loc.frameOffset, recordStart: 0, recordEnd: 0))
                }
                lastID = id
                lastFrame = f
                counts[Int(f)] += 1
                frameOf.append(f)
                records.append(Record(type: t, element: Int32(elements.count)))
                liveRawBytesAsPut += UInt64(
                    LogEngine.recordSize(typeBytes: typeBytes, keyBytes: key.count, location: loc, compacted: false))
                if segments[p].compacted { sequenceBytesInCompacted += UInt64(CompactedRecord.uvarintSize(loc.sequence)) }
                return true
            }
            entries.append(TypeEntries(type: type, elements: elements))
        }
        // Frames in log order; each frame's records after the previous frame's (a counting sort).
        var byLog = Array(frames.indices)
        byLog.sort { a, b in
            let x = frames[a]
            let y = frames[b]
            return x.segmentPosition != y.segmentPosition ? x.segmentPosition < y.segmentPosition : x.offset < y.offset
        }
        var start = [Int](repeating: 0, count: frames.count)
        var next = 0
        for f in byLog {
            start[f] = next
            frames[f].recordStart = next
            next += Int(counts[f])
            frames[f].recordEnd = next
        }
        var order = [Int32](repeating: 0, count: records.count)
        for (i, f) in frameOf.enumerated() {
            order[start[Int(f)]] = Int32(i)
            start[Int(f)] += 1
        }
        frames = byLog.map { frames[$0] }
        for f in frames where f.recordEnd - f.recordStart > 1 {
            order[f.recordStart..<f.recordEnd].sort { location(Int($0)).valueOffset < location(Int($1)).valueOffset }
        }
        self.order = order
    }

    /// The type name of record `i`.
    func type(_ i: Int) -> String { entries[Int(records[i].type)].type }
    /// The key of record `i`.
    func key(_ i: Int) -> RecordKey { entries[Int(records[i].type)].elements[Int(records[i].element)].0 }
    /// The location record `i` has in the prefix.
    func location(_ i: Int) -> RecordLocation { entries[Int(records[i].type)].elements[Int(records[i].element)].1 }

    /// `index` with the prefix's records at `locations` (by ordinal): each type's tree rebuilt
    /// bottom-up (`init(sortedElements:)`) from its entries. Uses up the entries.
    mutating func rebuild(_ index: IndexState, with locations: [RecordLocation]) -> IndexState {
        for (i, r) in records.enumerated() { entries[Int(r.type)].elements[Int(r.element)].1 = locations[i] }
        var out = index
        for t in entries.indices {
            let type = entries[t].type
            // The keys come out of a tree in order, so the build cannot refuse them.
            if let tree = index.types[type], let rebuilt = Swift.type(of: tree).init(sortedElements: entries[t].elements) {
                out.types[type] = rebuilt
            }
            entries[t].elements = []
        }
        return out
    }
}
