import Foundation

/// Where a store's bytes go: per segment, how much is live and how much compaction could
/// reclaim, item counts, compression, sequence range and the checkpoint's state.
///
/// A value computed by ``LogEngine/storageStats()``; it describes the store at that moment and
/// never changes afterwards. Live bytes are estimated: a live record's share of its segment is
/// its encoded size scaled by the segment's stored/raw payload ratio (so compression and frame
/// headers are spread over the records in proportion).
public struct StorageStats: Sendable, Equatable {
    /// One segment file, in replay order.
    public struct Segment: Sendable, Equatable {
        /// The segment number (file `NNNNNN.log`).
        public var number: UInt32
        /// Valid bytes in the file (header and frames).
        public var fileBytes: UInt64
        /// Uncompressed size of its frames' payloads (every record ever written to it).
        public var rawBytes: UInt64
        /// Records of the current state that live in this segment.
        public var liveRecords: Int
        /// Estimated bytes of the file those records occupy.
        public var liveBytes: UInt64
        /// Estimated bytes of overwritten and deleted records (and tombstones):
        /// `fileBytes - header - liveBytes`.
        public var deadBytes: UInt64
        /// Whether compaction wrote it (it holds only live-at-the-time `putAt` records).
        public var isCompacted: Bool
        /// Whether it is sealed (every segment but the last, which takes appends). Only sealed
        /// segments are compacted in the background.
        public var isSealed: Bool
    }

    /// The CHECKPOINT file the next open would start from.
    public struct Checkpoint: Sendable, Equatable {
        /// The last transaction it includes.
        public var sequence: UInt64
        /// The manifest generation it was written under.
        public var generation: UInt64
        /// When it was written, in milliseconds since 1970.
        public var writtenAtMillis: UInt64
        /// Seconds since it was written (at the time the statistics were taken).
        public var ageSeconds: Double
        /// Size of the CHECKPOINT file.
        public var fileBytes: UInt64
        /// Whether it still matches the log (covers a prefix of the manifest's segments), i.e.
        /// the next open uses it. False after a compaction whose checkpoint failed to write.
        public var matchesLog: Bool
        /// Bytes of log the next open replays after it (nil when it does not match the log).
        public var logBytesAfter: UInt64?
    }

    /// The manifest generation (incremented by every roll-over and compaction).
    public var manifestGeneration: UInt64
    /// The segments in replay order; the last one is the tail.
    public var segments: [Segment]
    /// Bytes of every segment file together.
    public var totalBytes: UInt64
    /// Estimated bytes of live records.
    public var liveBytes: UInt64
    /// Estimated bytes of dead records in every segment.
    public var deadBytes: UInt64
    /// Dead bytes in sealed segments: what compaction can reclaim now.
    public var reclaimableBytes: UInt64
    /// `reclaimableBytes / totalBytes` (0 for an empty store): what
    /// ``LogEngineOptions/compactionThreshold`` is compared with.
    public var reclaimableShare: Double
    /// Uncompressed payload bytes of every frame (compare with ``totalBytes`` for compression).
    public var rawBytes: UInt64
    /// Live records per item type.
    public var itemsPerType: [String: Int]
    /// Live records of every type.
    public var totalItems: Int
    /// The smallest sequence number of a live record, nil for an empty store.
    public var oldestLiveSequence: UInt64?
    /// The sequence number of the last transaction appended.
    public var lastSequence: UInt64
    /// The newest checkpoint on disk, if any.
    public var checkpoint: Checkpoint?
}

extension LogEngine {
    /// Computes ``StorageStats`` for the latest appended state. Runs on the calling thread in
    /// O(records) (it walks the index, reading nothing from disk); takes the state lock only to
    /// copy the state. Works after ``close()`` too (describing the state at close).
    public func storageStats() -> StorageStats {
        let (view, manifest, info, mark) = state.withLock { s in (s.views.head, s.log.manifest, s.log.segmentInfo, s.lastCheckpoint) }
        var position: [UInt32: Int] = [:]
        for (i, n) in manifest.segments.enumerated() { position[n] = i }
        let compacted = manifest.segments.map { view.segments[$0]?.compacted ?? false }
        // (Never stopped: the closure says go on.)
        let walk = Self.walkLiveRecords(view.index, position: position, compacted: compacted) { false }
        let liveRaw = walk?.liveRaw ?? []
        var segments: [StorageStats.Segment] = []
        for (i, n) in manifest.segments.enumerated() {
            let header = UInt64(view.segments[n]?.headerSize ?? SegmentHeader.sizeV2)
            let inf = info[n] ?? SegmentInfo(length: header, rawBytes: 0)
            let (live, dead) = Self.fileBytes(of: inf, header: header, liveRaw: i < liveRaw.count ? liveRaw[i] : 0)
            segments.append(
                StorageStats.Segment(
                    number: n, fileBytes: inf.length, rawBytes: inf.rawBytes, liveRecords: walk?.liveCount[i] ?? 0, liveBytes: live,
                    deadBytes: dead, isCompacted: compacted[i], isSealed: i < manifest.segments.count - 1))
        }
        let total = segments.reduce(0) { $0 + $1.fileBytes }
        let reclaimable = segments.filter(\.isSealed).reduce(0) { $0 + $1.deadBytes }
        var checkpoint: StorageStats.Checkpoint? = nil
        if let mark {
            let matches =
                mark.segments.count <= manifest.segments.count && Array(manifest.segments.prefix(mark.segments.count)) == mark.segments
            var after: UInt64? = nil
            if matches, let last = mark.segments.last, let lastIndex = position[last] {
                var bytes =
                    (info[last]?.length ?? mark.positionOffset) - min(mark.positionOffset, info[last]?.length ?? mark.positionOffset)
                for n in manifest.segments[(lastIndex + 1)...] { bytes += info[n]?.length ?? 0 }
                after = bytes
            }
            let now = Date().timeIntervalSince1970
            checkpoint = StorageStats.Checkpoint(
                sequence: mark.sequence, generation: mark.generation, writtenAtMillis: mark.createdAtMillis,
                ageSeconds: max(0, now - Double(mark.createdAtMillis) / 1000), fileBytes: mark.fileBytes,
                matchesLog: matches, logBytesAfter: after)
        }
        return StorageStats(
            manifestGeneration: manifest.generation, segments: segments, totalBytes: total,
            liveBytes: segments.reduce(0) { $0 + $1.liveBytes }, deadBytes: segments.reduce(0) { $0 + $1.deadBytes },
            reclaimableBytes: reclaimable, reclaimableShare: total == 0 ? 0 : Double(reclaimable) / Double(total),
            rawBytes: segments.reduce(0) { $0 + $1.rawBytes }, itemsPerType: walk?.perType ?? [:], totalItems: view.index.totalCount,
            oldestLiveSequence: walk?.oldest, lastSequence: view.index.sequence, checkpoint: checkpoint)
    }

    /// What a walk of every live record finds: per position in the manifest's segment list, the
    /// raw bytes and count of its live records; records per type; the oldest live sequence.
    struct LiveRecords {
        var liveRaw: [UInt64]
        var liveCount: [Int]
        var perType: [String: Int] = [:]
        var oldest: UInt64? = nil
    }

    /// Walks every entry of `index` (O(records), nothing read from disk), asking `stop` every
    /// 65,536 entries whether to give up (nil then). A damaged index run leaves its entries out
    /// (the statistics are estimates; reads and verify report the damage).
    static func walkLiveRecords(
        _ index: IndexState, position: [UInt32: Int], compacted: [Bool], stop: () -> Bool
    ) -> LiveRecords? {
        var out = LiveRecords(liveRaw: .init(repeating: 0, count: compacted.count), liveCount: .init(repeating: 0, count: compacted.count))
        var visited = 0
        var stopped = false
        for (type, d) in index.types {
            out.perType[type] = d.count
            let typeBytes = type.utf8.count
            try? d.forEach { key, loc in
                visited += 1
                if visited & 0xFFFF == 0, stop() {
                    stopped = true
                    return false
                }
                out.oldest = min(out.oldest ?? loc.sequence, loc.sequence)
                guard let i = position[loc.segment] else { return true }
                out.liveCount[i] += 1
                out.liveRaw[i] += UInt64(recordSize(typeBytes: typeBytes, keyBytes: key.count, location: loc, compacted: compacted[i]))
                return true
            }
            if stopped { return nil }
        }
        return out
    }

    /// A segment's live and dead file bytes, from the raw bytes of its live records: the live
    /// share of its payload is `liveRaw / rawBytes` (compression and frame headers spread over
    /// the records in proportion).
    static func fileBytes(of info: SegmentInfo, header: UInt64, liveRaw: UInt64) -> (live: UInt64, dead: UInt64) {
        let payload = info.length > header ? info.length - header : 0
        guard info.rawBytes > 0 else { return (0, payload) }
        let live = min(UInt64((Double(liveRaw) * Double(payload) / Double(info.rawBytes)).rounded()), payload)
        return (live, payload - live)
    }

    /// The encoded size of the record at `loc` (format 4: its length; legacy: a `put`, or a `putAt`
    /// in a compacted segment): the unit of the segments' `rawBytes`.
    static func recordSize(typeBytes: Int, keyBytes: Int, location loc: RecordLocation, compacted: Bool) -> Int {
        if !loc.isLegacy { return Int(loc.length) }
        let valueBytes = Int(loc.length)
        if compacted {
            return CompactedRecord.size(typeBytes: typeBytes, keyBytes: keyBytes, sequence: loc.sequence, valueBytes: valueBytes)
        }
        return 1 + CompactedRecord.uvarintSize(UInt64(typeBytes)) + typeBytes + CompactedRecord.uvarintSize(UInt64(keyBytes))
            + keyBytes + CompactedRecord.uvarintSize(UInt64(valueBytes)) + valueBytes
    }

    /// Whether background compaction should run: enough dead bytes in sealed segments, both as a
    /// share of the store (``LogEngineOptions/compactionThreshold``) and in absolute terms
    /// (``LogEngineOptions/compactionMinimumDeadBytes``). (Compaction copies records as they are;
    /// compressing them is the recompression pass's.)
    ///
    /// Decided from the segments' dead-byte counts in O(segments), which commits, replay and
    /// checkpoints keep; when a sealed segment's count is not known (a checkpoint without it, a
    /// delete-all), one walk of the index counts them first (``countDeadBytes()``), given up
    /// once ``close()`` begins (then: not due).
    func compactionDue(counting: Bool = true) -> Bool {
        let (manifest, info, view) = state.withLock { ($0.log.manifest, $0.log.segmentInfo, $0.views.head) }
        let sealed = manifest.segments.dropLast()
        guard !sealed.isEmpty else { return false }
        if sealed.contains(where: { info[$0]?.deadKnown != true }) {
            guard counting, countDeadBytes() else { return false }
            return compactionDue(counting: false)
        }
        var total: UInt64 = 0
        var reclaimable: UInt64 = 0
        for n in manifest.segments {
            let inf = info[n] ?? SegmentInfo(length: 0, rawBytes: 0)
            total += inf.length
            guard n != manifest.segments.last else { continue }
            let header = UInt64(view.segments[n]?.headerSize ?? SegmentHeader.sizeV2)
            let liveRaw = inf.rawBytes > inf.deadBytes ? inf.rawBytes - inf.deadBytes : 0
            reclaimable += Self.fileBytes(of: inf, header: header, liveRaw: liveRaw).dead
        }
        let share = total == 0 ? 0 : Double(reclaimable) / Double(total)
        return reclaimable > 0 && reclaimable >= UInt64(options.compactionMinimumDeadBytes) && share >= options.compactionThreshold
    }

    /// Counts every segment's dead bytes by one walk of the index, for the segments whose count
    /// is not known, and makes them known (adding what commits counted during the walk). Runs on
    /// the calling thread (the background queue) in O(records); false when it gave up because
    /// ``close()`` began, or when a delete-all during the walk made the counts unknown again.
    func countDeadBytes() -> Bool {
        let (view, manifest, info, marks) = state.withLock { s in (s.views.head, s.log.manifest, s.log.segmentInfo, s.log.deadUnknownMarks)
        }
        var position: [UInt32: Int] = [:]
        for (i, n) in manifest.segments.enumerated() { position[n] = i }
        let compacted = manifest.segments.map { view.segments[$0]?.compacted ?? false }
        guard let walk = Self.walkLiveRecords(view.index, position: position, compacted: compacted, stop: { self.background.isClosing })
        else {
            return false
        }
        var counted: [UInt32: (snapshot: UInt64, dead: UInt64)] = [:]
        for (i, n) in manifest.segments.enumerated() {
            guard let inf = info[n], !inf.deadKnown else { continue }
            let dead = inf.rawBytes > walk.liveRaw[i] ? inf.rawBytes - walk.liveRaw[i] : 0
            counted[n] = (inf.deadBytes, dead)
        }
        return state.withLock { $0.log.adoptDeadCounts(counted, marks: marks) }
    }
}
