/// The index as a compaction sees it: every entry of every type in key order (to rebuild the index
/// from), and among them the live records of the segments it replaces, in log order
/// (Docs/Compaction.md, "Copy").
///
/// Built from one walk of the index, type by type. An entry whose location lies in the prefix
/// becomes a ``Record`` whose position in ``records`` is its *ordinal*; the copy sets record `i`'s
/// new location at `locations[i]`, and ``rebuild(_:with:)`` puts it back in its place in key
/// order, without a lookup, then builds each type's tree bottom-up.
///
/// The copy reads the prefix in ``units``, in log order: a format 4 record is a unit of its own
/// (every record moves alone); the live records of a version 1 or 2 frame form one unit, since
/// the frame is read (decompressed) once for all of them. Legacy frames are found by hashing
/// their id (the last one remembered: neighbouring keys were often written together).
///
/// Value type, built and used on the compacting thread (read, not written, by the writing one).
struct LivePrefix: Sendable {
    /// One live record of the prefix: where its entry is in ``entries``.
    struct Record: Sendable {
        var type: Int32
        var element: Int32
    }

    /// What the copy reads at once: one format 4 record, or a legacy frame's live records.
    struct Unit: Sendable {
        /// Index into the compaction's segment list (replay order).
        var segmentPosition: Int32
        /// The record's (or the legacy frame's) file offset.
        var offset: UInt32
        /// The unit's records: `order[recordStart..<recordEnd]` (a legacy frame's by value offset).
        var recordStart: Int
        var recordEnd: Int
        /// Whether the unit is a legacy frame.
        var isLegacy: Bool
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
    /// Units in log order.
    var units: [Unit] = []
    /// Record ordinals grouped by unit (see ``Unit/recordStart``).
    var order: [Int32] = []
    /// Bytes of the live format 4 records (their whole lengths).
    var liveRecordBytes: UInt64 = 0
    /// Live records in legacy frames (each is re-encoded once).
    var legacyRecords = 0

    /// Walks `index`, collecting the live records that lie in `prefix` (segment numbers in replay
    /// order). Throws `.corruption` for a damaged index run.
    init(index: IndexState, prefix: [UInt32]) throws {
        var position: [UInt32: Int32] = [:]
        for (i, n) in prefix.enumerated() { position[n] = Int32(i) }
        var unitOf: [Int32] = []
        var frameIndex: [UInt64: Int32] = [:]
        var counts: [Int32] = []
        var lastID = UInt64.max
        var lastFrame: Int32 = 0
        for type in index.types.keys.sorted() {
            guard let tree = index.types[type] else { continue }
            let t = Int32(entries.count)
            var elements: [(RecordKey, RecordLocation)] = []
            elements.reserveCapacity(tree.count)
            try tree.forEach { key, loc in
                defer { elements.append((key, loc)) }
                guard let p = position[loc.segment] else { return true }
                let u: Int32
                if !loc.isLegacy {
                    u = Int32(units.count)
                    counts.append(0)
                    units.append(Unit(segmentPosition: p, offset: loc.offset, recordStart: 0, recordEnd: 0, isLegacy: false))
                    liveRecordBytes += UInt64(loc.length)
                } else {
                    let id = loc.frameID
                    if id == lastID {
                        u = lastFrame
                    } else if let known = frameIndex[id] {
                        u = known
                    } else {
                        u = Int32(units.count)
                        frameIndex[id] = u
                        counts.append(0)
                        units.append(Unit(segmentPosition: p, offset: loc.offset, recordStart: 0, recordEnd: 0, isLegacy: true))
                    }
                    lastID = id
                    lastFrame = u
                    legacyRecords += 1
                }
                counts[Int(u)] += 1
                unitOf.append(u)
                records.append(Record(type: t, element: Int32(elements.count)))
                return true
            }
            entries.append(TypeEntries(type: type, elements: elements))
        }
        // Units in log order; each unit's records after the previous unit's (a counting sort).
        var byLog = Array(units.indices)
        byLog.sort { a, b in
            let x = units[a]
            let y = units[b]
            return x.segmentPosition != y.segmentPosition ? x.segmentPosition < y.segmentPosition : x.offset < y.offset
        }
        var start = [Int](repeating: 0, count: units.count)
        var next = 0
        for u in byLog {
            start[u] = next
            units[u].recordStart = next
            next += Int(counts[u])
            units[u].recordEnd = next
        }
        var order = [Int32](repeating: 0, count: records.count)
        for (i, u) in unitOf.enumerated() {
            order[start[Int(u)]] = Int32(i)
            start[Int(u)] += 1
        }
        units = byLog.map { units[$0] }
        for u in units where u.recordEnd - u.recordStart > 1 {
            order[u.recordStart..<u.recordEnd].sort { location(Int($0)).legacyValueOffset < location(Int($1)).legacyValueOffset }
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
