import Foundation
import Logging

/// What one compaction did.
public struct CompactionReport: Sendable, Equatable {
    /// Whether a new generation was written. False when there was nothing to compact (see
    /// ``skippedReason``).
    public var performed: Bool = false
    /// Why nothing was done, when ``performed`` is false.
    public var skippedReason: String? = nil
    /// The segments that were replaced (a prefix of the replay order). Their files are deleted
    /// once no snapshot reads them any more.
    public var replacedSegments: [UInt32] = []
    /// The compacted segments that replaced them.
    public var newSegments: [UInt32] = []
    /// Bytes of the replaced segments.
    public var bytesBefore: UInt64 = 0
    /// Bytes of the new segments.
    public var bytesAfter: UInt64 = 0
    /// Live records copied.
    public var recordsCopied = 0
    /// The manifest generation after the switch.
    public var generation: UInt64 = 0
    /// Whether the checkpoint written after the switch succeeded (if not, the next open replays
    /// the whole log; nothing is lost).
    public var checkpointWritten = false
    /// Wall time the compaction took.
    public var duration: Duration = .zero
    /// How long writers were blocked by the switch (manifest write and re-pointing the index).
    public var writersBlocked: Duration = .zero
}

extension LogEngine {
    /// Compacts the store: rewrites the live records of the sealed segments into new compacted
    /// segments and switches to them atomically (Docs/Compaction.md).
    ///
    /// With `includingTail` (the default, what offline `logstore-compact compact` wants) the tail
    /// segment is sealed first when it holds anything, so every record is rewritten; without it
    /// only segments already sealed are (what background compaction does).
    ///
    /// Runs on the calling thread and may take a while (it reads every live record of the
    /// compacted segments). Readers and writers keep going meanwhile; writers are blocked only
    /// for the switch (a manifest write and re-pointing the index). Snapshots taken before keep
    /// reading the old segments, whose files are deleted when the last such snapshot is released.
    /// A crash at any point leaves the old or the new generation, never a mix. Waits for a
    /// background compaction in progress. Afterwards a checkpoint is written.
    ///
    /// Throws `.reentrantWrite` inside a write block, `.notOpen` after (or during) ``close()``,
    /// `.invalidArgument` in salvage mode, `.storePoisoned` if the store refuses writes, `.corruption`
    /// if a live record cannot be read, and I/O errors (in which case the old generation stays).
    @discardableResult
    public func compact(includingTail: Bool = true) throws -> CompactionReport {
        if writer.heldByCurrentThread {
            throw LogStoreError(.reentrantWrite, "compact() was called from inside a write block of the same store.")
        }
        return try runCompaction(includingTail: includingTail)
    }

    /// Queues a background check of ``compactionDue()`` and a compaction if it says so.
    func scheduleCompactionCheck() {
        guard options.autoCompaction, options.recovery == .strict,
            compactionBackoff.withLock({ $0.allows(ContinuousClock.now) }), background.claim(.compaction)
        else { return }
        background.queue.async { [weak self] in
            guard let self else { return }
            self.background.unclaim(.compaction)
            guard self.background.begin() else { return }
            defer { self.background.end() }
            guard !self.isClosed, self.compactionDue() else { return }
            do {
                let r = try self.runCompaction(includingTail: false)
                self.compactionBackoff.withLock { $0.succeeded() }
                if r.performed {
                    self.logger?.info(
                        "background compaction",
                        metadata: [
                            "store": "\(self.directory)", "replaced": "\(r.replacedSegments)", "new": "\(r.newSegments)",
                            "bytesBefore": "\(r.bytesBefore)", "bytesAfter": "\(r.bytesAfter)",
                        ])
                }
            } catch let e as LogStoreError where e.code == .diskFull {
                let wait = self.compactionBackoff.withLock { $0.failed(at: ContinuousClock.now) }
                self.logger?.warning(
                    "background compaction needs free space; the store is unchanged, next try after a roll-over at least \(wait) from now",
                    metadata: ["store": "\(self.directory)", "error": "\(e)"])
            } catch {
                self.logger?.warning(
                    "background compaction failed; the store is unchanged", metadata: ["store": "\(self.directory)", "error": "\(error)"])
            }
        }
    }

    /// One live record of the segments being compacted.
    struct LiveRecord {
        var type: Int
        var key: RecordKey
        var location: RecordLocation
    }

    func runCompaction(includingTail: Bool) throws -> CompactionReport {
        guard options.recovery == .strict else {
            throw LogStoreError(
                .invalidArgument,
                "A store opened in salvage mode is read-only and cannot be compacted. Use `logstore-compact salvage` to copy its data into a new store.",
                path: directory)
        }
        guard background.begin() else { throw Self.closedError() }
        defer { background.end() }
        compactionLock.lock()
        defer { compactionLock.unlock() }
        let clock = ContinuousClock()
        let started = clock.now
        var report = CompactionReport()
        func skipped(_ why: String) -> CompactionReport {
            report.skippedReason = why
            report.generation = state.withLock { $0.manifest.generation }
            report.duration = clock.now - started
            return report
        }

        // Under the writer lock: seal the tail if asked, take the state to copy (the head: it
        // includes every transaction of the sealed segments, so each of their records is either
        // live in it or superseded) and start journaling the index changes made after it.
        try writer.acquire()
        let manifest: ManifestFile
        let view: ViewState
        do {
            defer { writer.release() }
            try checkWritable()
            if includingTail {
                let (sequence, offset) = state.withLock { ($0.head.index.sequence, $0.tailOffset) }
                if offset > UInt64(SegmentHeader.size) { try rollOverLocked(nextSequence: sequence + 1) }
            }
            (manifest, view) = state.withLock { s in
                s.compactionJournal = IndexJournal(limit: journalLimit.withLock { $0 })
                return (s.manifest, s.head)
            }
        }
        defer { state.withLock { $0.compactionJournal = nil } }

        // The input: every sealed segment, a prefix of the replay order. Only compaction removes
        // segments and it runs one at a time, so this prefix stays in place until the switch.
        let prefix = Array(manifest.segments.dropLast())
        guard !prefix.isEmpty, let firstKept = view.segments[manifest.segments[prefix.count]] else {
            return skipped("no sealed segment to compact")
        }
        // The last transaction the prefix can hold (the output carries it even if every record is dead).
        let marker = firstKept.baseSequence > 0 ? firstKept.baseSequence - 1 : 0
        let oldSegments = prefix.compactMap { view.segments[$0] }
        guard oldSegments.count == prefix.count else { return skipped("a sealed segment is not readable in the published state") }

        // Collect the live records of the prefix, in ascending sequence order (ties in file order).
        var position: [UInt32: Int] = [:]
        for (i, n) in prefix.enumerated() { position[n] = i }
        var types: [String] = []
        var records: [LiveRecord] = []
        var liveRaw: UInt64 = 0
        for (type, d) in view.index.types {
            let t = types.count
            types.append(type)
            let typeBytes = type.utf8.count
            for (key, loc) in d {
                guard let i = position[loc.segment] else { continue }
                records.append(LiveRecord(type: t, key: key, location: loc))
                liveRaw += UInt64(
                    Self.recordSize(typeBytes: typeBytes, keyBytes: key.count, location: loc, compacted: oldSegments[i].compacted))
            }
        }
        let info = state.withLock { $0.segmentInfo }
        let rawBefore = prefix.reduce(UInt64(0)) { $0 + (info[$1]?.rawBytes ?? 0) }
        report.bytesBefore = prefix.reduce(UInt64(0)) { $0 + (info[$1]?.length ?? 0) }
        if prefix.count == 1 && oldSegments[0].compacted && liveRaw == rawBefore {
            return skipped("the sealed segments are already compact")
        }
        records.sort { a, b in
            let x = a.location
            let y = b.location
            if x.sequence != y.sequence { return x.sequence < y.sequence }
            if x.segment != y.segment { return (position[x.segment] ?? 0) < (position[y.segment] ?? 0) }
            if x.frameOffset != y.frameOffset { return x.frameOffset < y.frameOffset }
            return x.valueOffset < y.valueOffset
        }

        // Copy them into new segments (unlisted until the switch: a crash leaves strays that
        // recovery removes).
        var out = CompactionOutput(engine: self, count: records.count)
        do {
            var frameID: UInt64 = .max
            var raw: [UInt8] = []
            for (i, rec) in records.enumerated() {
                if i & 4095 == 0 && background.isClosing { throw Self.closedError() }
                let loc = rec.location
                if loc.frameID != frameID {
                    guard let seg = view.segments[loc.segment] else {
                        throw LogStoreError(.corruption, "Index points at segment \(loc.segment), which is not part of the store.")
                    }
                    raw = try seg.readFrame(loc, cache: nil)
                    frameID = loc.frameID
                }
                let start = Int(loc.valueOffset)
                let end = start + Int(loc.valueLength)
                guard end <= raw.count else {
                    throw LogStoreError(
                        .corruption, "Record value lies outside its frame.", path: view.segments[loc.segment]?.path,
                        offset: UInt64(loc.frameOffset))
                }
                try raw[start..<end].withUnsafeBytes { value in
                    try out.add(index: i, type: types[rec.type], key: rec.key, sequence: loc.sequence, value: value)
                }
            }
            try out.finish(marker: marker)
        } catch {
            out.discard()
            throw error
        }
        report.recordsCopied = records.count
        report.replacedSegments = prefix
        report.newSegments = out.segments.map(\.segment.number)
        report.bytesAfter = out.segments.reduce(0) { $0 + $1.info.length }

        // Re-point the copied state at the new segments, without any lock; the switch replays
        // onto it what was appended since.
        var byType = [[Int]](repeating: [], count: types.count)
        for (i, rec) in records.enumerated() { byType[rec.type].append(i) }
        var remapped = view.index
        Self.repoint(&remapped, records: records, types: types, byType: byType, to: out.locations)
        (report.generation, report.writersBlocked) = try switchGeneration(
            prefix: prefix, oldSegments: oldSegments, output: out, remapped: remapped,
            records: records, types: types, byType: byType)
        report.performed = true
        do {
            try writeCheckpoint()
            report.checkpointWritten = true
        } catch {
            logger?.warning(
                "checkpoint after compaction failed; the next open replays the whole log",
                metadata: ["store": "\(directory)", "error": "\(error)"])
        }
        report.duration = clock.now - started
        return report
    }

    /// Throws if the store is closed or poisoned.
    func checkWritable() throws {
        try state.withLock { s in
            if s.closed { throw Self.closedError() }
            if let p = s.poisoned { throw p }
        }
    }

    /// Points every record of `index` that is still at its copied location at its copy; records
    /// overwritten or deleted since keep their newer state.
    static func repoint(
        _ index: inout IndexState, records: [LiveRecord], types: [String], byType: [[Int]],
        to locations: [RecordLocation]
    ) {
        for (t, indices) in byType.enumerated() where !indices.isEmpty {
            guard var d = index.types.removeValue(forKey: types[t]) else { continue }
            for i in indices {
                let r = records[i]
                if d[r.key] == r.location { d[r.key] = locations[i] }
            }
            index.types[types[t]] = d
        }
    }

    /// The atomic switch: under the writer lock, make the tail durable, write the new manifest
    /// (new segments + the segments after the prefix), install the re-pointed index (the
    /// copied state re-pointed at the copies, plus the journal of what was appended since) and
    /// mark the replaced segments obsolete. Discards the output on any failure before the
    /// manifest rename. Returns the new generation and how long the writer lock was held.
    func switchGeneration(
        prefix: [UInt32], oldSegments: [SegmentFile], output out: CompactionOutput,
        remapped: IndexState,
        records: [LiveRecord], types: [String], byType: [[Int]]
    ) throws -> (UInt64, Duration) {
        do {
            try writer.acquire()
        } catch {
            out.discard()
            throw error
        }
        let clock = ContinuousClock()
        let locked = clock.now
        defer { writer.release() }
        let (manifest, tail, head, journal) = state.withLock { ($0.manifest, $0.tail, $0.head, $0.compactionJournal) }
        do {
            try checkWritable()
            guard manifest.segments.count > prefix.count, Array(manifest.segments.prefix(prefix.count)) == prefix else {
                throw LogStoreError(.io, "The manifest changed under compaction; nothing was switched.", path: directory)
            }
        } catch {
            out.discard()
            throw error
        }
        // Everything the copied state depends on (deletes and overwrites in later segments) must
        // be durable before the records they superseded disappear from the log.
        do {
            try tail.file.sync()
        } catch {
            out.discard()
            let p = LogStoreError(
                .storePoisoned, "fdatasync of the tail failed before a compaction switch; reopen the store.", path: tail.path,
                underlying: error)
            state.withLock { if $0.poisoned == nil { $0.poisoned = p } }
            group.fail(p)
            throw p
        }
        var next = manifest
        next.generation += 1
        next.segments = out.segments.map(\.segment.number) + manifest.segments.dropFirst(prefix.count)
        let manifestPath = _joinPath(directory, LogStoreFormat.manifestFileName)
        let tmp = manifestPath + ".tmp"
        do {
            let f = try fileSystem.open(tmp, mode: .createOrTruncate)
            do {
                try f.write(next.encoded(), at: 0)
                try f.sync()
                try f.close()
            } catch {
                try? f.close()
                throw error
            }
            try fileSystem.rename(from: tmp, to: manifestPath)
        } catch {
            try? fileSystem.removeFile(atPath: tmp)
            out.discard()
            throw error
        }
        // From here the file system shows the new generation: adopt it whatever happens next.
        var dirError: (any Error)? = nil
        do { try fileSystem.syncDirectory(atPath: directory) } catch { dirError = error }

        var newHead = head
        if let journal, !journal.overflowed {
            newHead.index = remapped
            journal.apply(to: &newHead.index)
            newHead.index.sequence = head.index.sequence
        } else {
            // Too many writes during the copy to journal: re-point the head itself.
            Self.repoint(&newHead.index, records: records, types: types, byType: byType, to: out.locations)
        }
        newHead.index._checkInvariants()
        for n in prefix { newHead.segments[n] = nil }
        for o in out.segments { newHead.segments[o.segment.number] = o.segment }
        state.withLock { s in
            next.nextSegment = max(next.nextSegment, s.manifest.nextSegment)
            s.manifest = next
            for n in prefix { s.segmentInfo[n] = nil }
            for o in out.segments { s.segmentInfo[o.segment.number] = o.info }
            // Older published/pending states keep the old segments (and their files) until
            // they are replaced; the ones equal to the head switch now.
            if s.published.index.sequence == head.index.sequence { s.published = newHead }
            for i in s.pending.indices where s.pending[i].0 == head.index.sequence { s.pending[i].1 = newHead }
            s.head = newHead
        }
        if let dirError {
            // The rename may not be durable: keep both generations' files (recovery removes the
            // unlisted ones) and refuse writes until the store is reopened.
            let p = LogStoreError(
                .storePoisoned, "fsync of the store directory failed after a compaction switch; reopen the store.", path: directory,
                underlying: dirError)
            state.withLock { if $0.poisoned == nil { $0.poisoned = p } }
            group.fail(p)
            throw p
        }
        for seg in oldSegments { seg.markObsolete(removingThrough: fileSystem) }
        logger?.debug(
            "compaction switched generation",
            metadata: ["store": "\(directory)", "generation": "\(next.generation)", "segments": "\(next.segments)"])
        return (next.generation, clock.now - locked)
    }
}

/// Writes compacted segments: `putAt` records in ascending sequence order, grouped into commit
/// frames of at most `maxFramePayload` raw bytes (LZ4-compressed when that is smaller), each
/// frame's sequence the largest of its records; segments roll over at `segmentSize`.
/// Not thread-safe; used by one compaction.
struct CompactionOutput {
    let engine: LogEngine
    /// Finished segments with their info, in order.
    var segments: [(segment: SegmentFile, info: SegmentInfo)] = []
    /// New location per copied record (by record index).
    var locations: [RecordLocation]
    private var current: SegmentFile? = nil
    private var currentInfo = SegmentInfo(length: 0, rawBytes: 0)
    private var buffer: [UInt8] = []
    private var bufferStart: UInt64 = 0
    private var frame = _ByteWriter()
    private var frameRecords: [(index: Int, valueOffset: Int, sequence: UInt64, valueLength: Int)] = []
    private var lastFrameSequence: UInt64 = 0
    private var created: [SegmentFile] = []

    init(engine: LogEngine, count: Int) {
        self.engine = engine
        locations = [RecordLocation](
            repeating: RecordLocation(segment: 0, frameOffset: 0, frameLength: 0, valueOffset: 0, sequence: 0, valueLength: 0),
            count: count)
        frame = _ByteWriter(capacity: min(engine.options.maxFramePayload, 64 << 10))
    }

    mutating func add(index: Int, type: String, key: RecordKey, sequence: UInt64, value: UnsafeRawBufferPointer) throws {
        let size = CompactedRecord.size(typeBytes: type.utf8.count, keyBytes: key.count, sequence: sequence, valueBytes: value.count)
        if frame.count > 0 && frame.count + size > engine.options.maxFramePayload { try flushFrame() }
        let at = CompactedRecord.encode(type: type, key: key, sequence: sequence, value: value, into: &frame)
        frameRecords.append((index, at, sequence, value.count))
    }

    private mutating func flushFrame() throws {
        guard let last = frameRecords.last else { return }
        var bytes: [UInt8] = []
        let stored = LogFrame.append(
            into: &bytes, raw: frame.bytes, kind: .commit, sequence: last.sequence,
            compress: engine.options.compression, threshold: engine.options.compressionThreshold)
        let (segment, offset) = try place(bytes, rawBytes: frame.count, baseSequence: frameRecords[0].sequence)
        for r in frameRecords {
            locations[r.index] = RecordLocation(
                segment: segment, frameOffset: offset, frameLength: UInt32(stored), valueOffset: UInt32(r.valueOffset),
                sequence: r.sequence, valueLength: UInt32(r.valueLength))
        }
        lastFrameSequence = last.sequence
        frameRecords.removeAll(keepingCapacity: true)
        frame = _ByteWriter(capacity: min(engine.options.maxFramePayload, 64 << 10))
    }

    /// Appends a frame to the current segment (starting a new one when it would pass the
    /// segment size); returns where it landed.
    private mutating func place(_ bytes: [UInt8], rawBytes: Int, baseSequence: UInt64) throws -> (UInt32, UInt32) {
        if current != nil, currentInfo.length > UInt64(SegmentHeader.size),
            currentInfo.length + UInt64(bytes.count) > UInt64(engine.options.segmentSize)
        {
            try finishSegment()
        }
        let segment: SegmentFile
        if let current {
            segment = current
        } else {
            let number = engine.state.withLock { s -> UInt32 in
                defer { s.manifest.nextSegment += 1 }
                return s.manifest.nextSegment
            }
            segment = try LogEngine.createSegment(
                number, baseSequence: baseSequence, directory: engine.directory, fs: engine.fileSystem,
                flags: SegmentHeader.flagCompacted)
            created.append(segment)
            current = segment
            currentInfo = SegmentInfo(length: UInt64(SegmentHeader.size), rawBytes: 0)
            bufferStart = UInt64(SegmentHeader.size)
        }
        let offset = currentInfo.length
        buffer.append(contentsOf: bytes)
        currentInfo.length += UInt64(bytes.count)
        currentInfo.rawBytes += UInt64(rawBytes)
        if buffer.count >= 1 << 20 { try flushBuffer() }
        return (segment.number, UInt32(offset))
    }

    private mutating func flushBuffer() throws {
        guard let current, !buffer.isEmpty else { return }
        try current.file.write(buffer, at: bufferStart)
        bufferStart += UInt64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }

    private mutating func finishSegment() throws {
        guard let segment = current else { return }
        try flushBuffer()
        try segment.file.sync()
        segments.append((segment, currentInfo))
        current = nil
    }

    /// Writes the last frame and, if the records do not reach it, an empty commit frame carrying
    /// `marker` (the last sequence number the replaced segments covered, so that recovery's
    /// sequence never goes backwards even when every record was dead); syncs the last segment.
    mutating func finish(marker: UInt64) throws {
        try flushFrame()
        if marker > lastFrameSequence {
            var bytes: [UInt8] = []
            LogFrame.append(into: &bytes, raw: [], kind: .commit, sequence: marker, compress: false, threshold: 0)
            _ = try place(bytes, rawBytes: 0, baseSequence: marker)
            lastFrameSequence = marker
        }
        try finishSegment()
    }

    /// Removes every segment this output created (they are not listed in any manifest).
    func discard() {
        for s in created {
            try? s.file.close()
            try? engine.fileSystem.removeFile(atPath: s.path)
        }
    }
}

/// The index changes appended while a compaction copies (`EngineState.compactionJournal`), in
/// order. Replaying them onto the copied state gives the head state.
struct IndexJournal: Sendable {
    enum Change: Sendable {
        case put(String, RecordKey, RecordLocation)
        case delete(String, RecordKey)
        case deleteAll(String)
    }
    /// The default `limit`.
    static let defaultLimit = 1 << 22
    /// Beyond this many changes the journal gives up (memory) and the switch re-points the head.
    let limit: Int
    private(set) var changes: [Change] = []
    private(set) var overflowed = false

    init(limit: Int = defaultLimit) { self.limit = limit }

    mutating func record(_ c: [Change]) {
        if overflowed { return }
        if changes.count + c.count > limit {
            overflowed = true
            changes = []
            return
        }
        changes.append(contentsOf: c)
    }

    func apply(to index: inout IndexState) {
        for c in changes {
            switch c {
            case .put(let t, let k, let loc): index.put(t, k, loc)
            case .delete(let t, let k): index.delete(t, k)
            case .deleteAll(let t): index.deleteAll(t)
            }
        }
    }
}
