import HashTreeCollections

/// A consistent, immutable view of a store at one sequence number.
///
/// Cheap to take (O(1)) and safe to use from any thread. It stays valid, and keeps reading the
/// same data, for as long as you hold it, even while writers commit and compaction replaces
/// segments (the files it needs stay open until the snapshot is released).
public struct EngineSnapshot: RecordReader, Sendable {
    package let index: IndexState
    let segments: [UInt32: SegmentFile]
    let cache: FrameCache?

    /// See ``RecordReader/sequence``.
    public var sequence: UInt64 { index.sequence }

    /// See ``RecordReader/itemTypes``.
    public var itemTypes: [String] { Array(index.types.keys) }

    /// See ``RecordReader/count(ofType:)``.
    public func count(ofType type: String) -> Int { index.count(type) }

    /// The total number of records of every type.
    public var totalCount: Int { index.totalCount }

    /// See ``RecordReader/contains(type:key:)``. Throws `.corruption` for a damaged index run.
    public func contains(type: String, key: RecordKey) throws -> Bool { try index.location(type, key) != nil }

    /// Where the record is stored, or nil. Throws `.corruption` for a damaged index run.
    public func location(type: String, key: RecordKey) throws -> RecordLocation? { try index.location(type, key) }

    /// See ``RecordReader/value(type:key:)``.
    public func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>? {
        guard let loc = try index.location(type, key) else { return nil }
        return try read(loc)
    }

    package func read(_ loc: RecordLocation) throws -> ArraySlice<UInt8> {
        try segment(loc).readValue(loc, meta: index.meta, cache: cache)
    }

    /// Calls `body` with the value bytes of the record at `loc` (one this snapshot's index
    /// holds), in place where the store allows; valid only inside `body`.
    package func withValue<R>(at loc: RecordLocation, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try segment(loc).withValue(loc, meta: index.meta, cache: cache, body)
    }

    /// Calls `body` with the value bytes of record `key` of `type` (nil if there is none) without
    /// copying them where the store allows (a format 4 record stored raw is read in place in the
    /// mapped segment; a compressed one is decompressed into a scratch buffer); the bytes are valid
    /// only inside `body`, and nothing may keep a pointer into them. Checks that the record is the
    /// one the index names (its type and key). Throws `.corruption` like ``value(type:key:)``;
    /// rethrows what `body` throws.
    public func withValue<R>(type: String, key: RecordKey, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        guard let loc = try index.location(type, key) else { return try body(nil) }
        return try segment(loc).withValue(loc, meta: index.meta, cache: cache, type: type, key: key) { try body($0) }
    }

    private func segment(_ loc: RecordLocation) throws -> SegmentFile {
        guard let seg = segments[loc.segment] else {
            throw LogStoreError(.corruption, "Index points at segment \(loc.segment), which is not part of the store.")
                .withCorruptionNextStep()
        }
        return seg
    }

    /// See ``RecordReader/keys(ofType:)``. In key order. Throws `.corruption` for a damaged
    /// index run.
    public func keys(ofType type: String) throws -> [RecordKey] {
        try index.types[type]?.keys() ?? []
    }

    /// See ``RecordReader/forEachKeyInOrder(ofType:fromOffset:_:)``: walks the ordered index from
    /// `offset` (whole subtrees before it are skipped by their counts).
    public func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws {
        try index.types[type]?.forEach(fromOffset: offset) { k, _ in try body(k) }
    }

    /// See ``RecordReader/forEachRecordInKeyOrder(ofType:after:_:)``: walks the ordered index from
    /// the first key after `key` (O(log n) to start), reading each value from the location the
    /// walk holds (no second index lookup per key). Throws `.corruption` or `body`'s error.
    public func forEachRecordInKeyOrder(
        ofType type: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool
    ) throws {
        guard let t = index.types[type] else { return }
        let offset = try key.map { k in try t.rank(of: k) + (try t.location(k) == nil ? 0 : 1) } ?? 0
        try t.forEach(fromOffset: offset) { k, loc in try body(k, try read(loc)) }
    }

    /// Every (key, location) of `type`, in key order. Throws `.corruption` for a damaged index run.
    public func locations(ofType type: String) throws -> [(key: RecordKey, location: RecordLocation)] {
        guard let d = index.types[type] else { return [] }
        return try d.elements().map { ($0.key, $0.value) }
    }

    /// See ``RecordReader/forEach(ofType:_:)``. Reads in file order: each format 4 record alone,
    /// each legacy frame once for all its records. The values are copied into shared buffers of
    /// about 8 KiB and handed out as slices of them, one allocation per buffer rather than per
    /// value. A slice the caller keeps keeps its buffer alive: 8 KiB, the default frame size,
    /// bounds that as a format 3 frame did. A buffer is filled before any of its slices is handed
    /// out, so no slice is ever copied again.
    public func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        let capacity = 8 << 10
        var batch: [UInt8] = []
        var pending: [(key: RecordKey, range: Range<Int>)] = []
        var stopped = false
        func flush() throws {
            defer {
                batch = []
                pending.removeAll(keepingCapacity: true)
            }
            for p in pending where try !body(p.key, batch[p.range]) {
                stopped = true
                return
            }
        }
        try forEachValue(ofType: type) { key, value in
            if !pending.isEmpty && batch.count + value.count > capacity {
                try flush()
                if stopped { return false }
            }
            if batch.isEmpty { batch.reserveCapacity(max(capacity, value.count)) }
            let start = batch.count
            batch.append(contentsOf: value)
            pending.append((key, start..<batch.count))
            return true
        }
        if !stopped { try flush() }
    }

    /// ``forEach(ofType:_:)`` without copying values: `body` gets each value's bytes in place
    /// where the store allows, valid only while it runs.
    public func forEachValue(ofType type: String, _ body: (RecordKey, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let d = index.types[type] else { return }
        var entries = try d.elements()
        entries.sort { ($0.value.logPosition, $0.value.legacy) < ($1.value.logPosition, $1.value.legacy) }
        var currentFrame: UInt64 = .max
        var raw: [UInt8] = []
        let meta = index.meta
        for (key, loc) in entries {
            guard let seg = segments[loc.segment] else {
                throw LogStoreError(.corruption, "Index points at segment \(loc.segment), which is not part of the store.")
                    .withCorruptionNextStep()
            }
            if !loc.isLegacy {
                if try !seg.withValue(loc, meta: meta, cache: nil, { try body(key, $0) }) { return }
                continue
            }
            if loc.frameID != currentFrame {
                raw = try seg.readFrame(loc)
                currentFrame = loc.frameID
            }
            let start = loc.legacyValueOffset
            let end = start + Int(loc.length)
            guard end <= raw.count else {
                throw LogStoreError(.corruption, "Record value lies outside its frame.", path: seg.path, offset: UInt64(loc.offset))
                    .withCorruptionNextStep()
            }
            if try !raw.withUnsafeBytes({ try body(key, UnsafeRawBufferPointer(rebasing: $0[start..<end])) }) { return }
        }
    }

    /// The segment numbers this snapshot reads.
    public var segmentNumbers: [UInt32] { segments.keys.sorted() }
}
