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
        var liveRaw = [UInt64](repeating: 0, count: manifest.segments.count)
        var liveCount = [Int](repeating: 0, count: manifest.segments.count)
        let compacted = manifest.segments.map { view.segments[$0]?.compacted ?? false }
        var perType: [String: Int] = [:]
        var oldest: UInt64? = nil
        for (type, d) in view.index.types {
            perType[type] = d.count
            let typeBytes = type.utf8.count
            // A damaged index run leaves its entries out (the statistics are estimates; reads
            // and verify report the damage).
            try? d.forEach { key, loc in
                oldest = min(oldest ?? loc.sequence, loc.sequence)
                guard let i = position[loc.segment] else { return true }
                liveCount[i] += 1
                liveRaw[i] += UInt64(Self.recordSize(typeBytes: typeBytes, keyBytes: key.count, location: loc, compacted: compacted[i]))
                return true
            }
        }
        var segments: [StorageStats.Segment] = []
        for (i, n) in manifest.segments.enumerated() {
            let header = UInt64(view.segments[n]?.headerSize ?? SegmentHeader.sizeV2)
            let inf = info[n] ?? SegmentInfo(length: header, rawBytes: 0)
            let payload = inf.length > header ? inf.length - header : 0
            var live: UInt64 = 0
            if inf.rawBytes > 0 {
                live = UInt64((Double(liveRaw[i]) * Double(payload) / Double(inf.rawBytes)).rounded())
                live = min(live, payload)
            }
            segments.append(
                StorageStats.Segment(
                    number: n, fileBytes: inf.length, rawBytes: inf.rawBytes, liveRecords: liveCount[i], liveBytes: live,
                    deadBytes: payload - live, isCompacted: compacted[i], isSealed: i < manifest.segments.count - 1))
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
            rawBytes: segments.reduce(0) { $0 + $1.rawBytes }, itemsPerType: perType, totalItems: view.index.totalCount,
            oldestLiveSequence: oldest, lastSequence: view.index.sequence, checkpoint: checkpoint)
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
    func compactionDue() -> Bool {
        let stats = storageStats()
        return stats.reclaimableBytes > 0
            && stats.reclaimableBytes >= UInt64(options.compactionMinimumDeadBytes)
            && stats.reclaimableShare >= options.compactionThreshold
    }
}
