import Foundation
import Logging

/// Compaction (Docs/Compaction.md): copies the live records of the sealed segments into new
/// compacted segments, then switches the store to them in one manifest write.
///
/// Owned by one ``LogEngine``; its state is what belongs to compaction alone: the lock that runs
/// one compaction at a time, the journal limit, and the back-off after a full disk. The engine is
/// passed to each call. Runs on the caller's thread (`compact()`, or the background queue).
final class Compactor: Sendable {
    /// Serializes compactions (one at a time, background or `compact()`).
    let lock = NSLock()
    /// Most index changes a compaction journals while it copies (tests lower it).
    let journalLimit = Protected(IndexJournal.defaultLimit)
    /// When background compaction may run again after failing for lack of space.
    let backoff = Protected(DiskFullBackoff())

    /// Runs one compaction (``LogEngine/compact(includingTail:)``) or, with `recompressing`, one
    /// recompression pass (``LogEngine/recompress(includingTail:)``): the same copy, in which
    /// records that compress better than they are stored are re-encoded (``RecompressionPlan``).
    func run(_ engine: LogEngine, includingTail: Bool, recompressing: Bool = false) throws -> CompactionReport {
        guard engine.options.recovery == .strict else {
            throw LogStoreError(
                .invalidArgument,
                "A store opened in salvage mode is read-only and cannot be compacted. Use `logstore-compact salvage` to copy its data into a new store.",
                path: engine.directory)
        }
        guard engine.background.begin() else { throw LogEngine.closedError() }
        defer { engine.background.end() }
        lock.lock()
        defer { lock.unlock() }
        let clock = ContinuousClock()
        let started = clock.now
        var report = CompactionReport()
        func skipped(_ why: String) -> CompactionReport {
            report.skippedReason = why
            report.generation = engine.state.withLock { $0.log.manifest.generation }
            report.duration = clock.now - started
            return report
        }

        // Under the writer lock: seal the tail if asked, take the state to copy (the head: it
        // includes every transaction of the sealed segments, so each of their records is either
        // live in it or superseded) and start journaling the index changes made after it.
        try engine.writer.acquire()
        let manifest: ManifestFile
        let view: ViewState
        do {
            defer { engine.writer.release() }
            try engine.checkWritable()
            if includingTail {
                let (sequence, offset, tail) = engine.state.withLock { ($0.views.head.index.sequence, $0.log.tailOffset, $0.log.tail) }
                if offset > UInt64(tail.headerSize) { try engine.rollOverLocked(nextSequence: sequence + 1) }
            }
            // Records of legacy segments (a store upgraded from format 3) are re-encoded with
            // their type's id: types known only from such records get one first, in a
            // transaction of defines (under the writer lock, which hands out ids).
            let unnamed = engine.state.withLock { s in
                s.views.head.index.types.keys.filter { s.views.head.index.meta.typeID(named: $0) == nil }.sorted()
            }
            if !unnamed.isEmpty { _ = try engine.appendLocked([], defining: unnamed) }
            (manifest, view) = engine.state.withLock { s in
                s.compactionJournal = IndexJournal(limit: journalLimit.withLock { $0 })
                return (s.log.manifest, s.views.head)
            }
        }
        defer { engine.state.withLock { $0.compactionJournal = nil } }

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

        // The live records of the prefix, in log order.
        var live = try LivePrefix(index: view.index, prefix: prefix)
        let info = engine.state.withLock { $0.log.segmentInfo }
        let rawBefore = prefix.reduce(UInt64(0)) { $0 + (info[$1]?.rawBytes ?? 0) }
        report.bytesBefore = prefix.reduce(UInt64(0)) { $0 + (info[$1]?.length ?? 0) }
        // The defines the output must carry besides those its records use: every one the
        // segments after the prefix may use (their define may be in the prefix).
        let keep = Self.definesNeeded(after: prefix, manifest: manifest, info: info, meta: view.index.meta)
        // A recompression pass trains dictionaries first (reading samples through the view).
        var plan: RecompressionPlan? = nil
        if recompressing && engine.options.compression {
            let nextID = engine.state.withLock { $0.views.head.index.meta.nextDictionaryID }
            plan = try RecompressionPlan(live: live, view: view, nextID: nextID, options: engine.options)
        }
        // One compacted format 4 segment whose records are all live, and that holds no more
        // defines than its records and the later segments need, holds nothing to drop.
        let droppable = view.index.meta.allRefs.dictionaries.subtracting(keep.dictionaries).subtracting(
            prefix.reduce(into: Set<UInt32>()) { $0.formUnion(info[$1]?.refs?.dictionaries ?? view.index.meta.allRefs.dictionaries) })
        if !recompressing && droppable.isEmpty && prefix.count == 1 && oldSegments[0].compacted && oldSegments[0].version >= 4
            && live.legacyRecords == 0,
            live.liveRecordBytes + Self.defineBytes(keep.union(info[prefix[0]]?.refs ?? keep), meta: view.index.meta) >= rawBefore
        {
            return skipped("the sealed segments are already compact")
        }

        // Copy them into new segments (unlisted until the switch: a crash leaves strays that
        // recovery removes), writing on a second thread. Meanwhile, once every frame is read,
        // walk the index for the rebuild.
        let pipeline = CompactionPipeline(CompactionOutput(engine: engine, live: live))
        let out: CompactionOutput
        let counts: CopyCounts
        do {
            let untried = Set(prefix.indices.filter { (info[prefix[$0]]?.pendingBytes ?? 0) > 0 }.map(Int32.init))
            counts = try Self.copy(
                live, from: oldSegments, meta: view.index.meta, keep: keep, recompressing: &plan, untried: untried, to: pipeline,
                engine: engine)
            report.recordsReencoded = counts.recordsReencoded
            report.definesWritten = counts.defines
            if let plan {
                report.recordsRecompressed = plan.recordsRecompressed
                report.recompressedBytesBefore = plan.bytesBefore
                report.recompressedBytesAfter = plan.bytesAfter
                report.dictionariesTrained = plan.trained.filter { counts.emitted.dictionaries.contains($0.id) }.count
            }
            out = try pipeline.finish(marker: marker)
        } catch {
            pipeline.discard()
            throw error
        }
        report.recordsCopied = live.records.count
        report.replacedSegments = prefix
        report.newSegments = out.segments.map(\.segment.number)
        report.bytesAfter = out.segments.reduce(0) { $0 + $1.info.length }

        // Re-point the copied state at the new segments, without any lock (a bottom-up rebuild of
        // each type's tree); the switch replays onto it what was appended since.
        let remapped = live.rebuild(view.index, with: out.locations)
        (report.generation, report.writersBlocked) = try switchGeneration(
            engine, prefix: prefix, oldSegments: oldSegments, output: out, remapped: remapped,
            defines: (emitted: counts.emitted, before: view.index.meta, trained: plan?.trained ?? []))
        report.performed = true
        do {
            try engine.writeCheckpoint()
            report.checkpointWritten = true
        } catch {
            engine.logger?.warning(
                "checkpoint after compaction failed; the next open replays the whole log",
                metadata: ["store": "\(engine.directory)", "error": "\(error)"])
        }
        report.duration = clock.now - started
        return report
    }

    /// Points every entry of `head` that lies in `prefix` at its copy, the location `remapped` (the
    /// copied state, re-pointed) holds for its key: an entry still in the prefix was not written
    /// since the copied state was taken (new writes never go to the prefix), so it is the record
    /// that was copied. For the head after a journal overflow, where writes during the copy
    /// changed the index: one walk, a lookup per moved entry, a bottom-up build per changed type.
    static func repoint(_ head: inout IndexState, using remapped: IndexState, prefix: [UInt32]) throws {
        let inPrefix = Set(prefix)
        for (type, tree) in head.types {
            var elements: [(RecordKey, RecordLocation)] = []
            elements.reserveCapacity(tree.count)
            var changed = false
            try tree.forEach { key, loc in
                if inPrefix.contains(loc.segment), let moved = try remapped.types[type]?.location(key) {
                    elements.append((key, moved))
                    changed = true
                } else {
                    elements.append((key, loc))
                }
                return true
            }
            if changed, let rebuilt = Swift.type(of: tree).init(sortedElements: elements) { head.types[type] = rebuilt }
        }
    }

    /// The atomic switch: under the writer lock, make the tail durable, write the new manifest
    /// (new segments + the segments after the prefix), install the re-pointed index (the
    /// copied state re-pointed at the copies, plus the journal of what was appended since) and
    /// mark the replaced segments obsolete. Discards the output on any failure before the
    /// manifest rename. Returns the new generation and how long the writer lock was held.
    func switchGeneration(
        _ engine: LogEngine, prefix: [UInt32], oldSegments: [SegmentFile], output out: CompactionOutput,
        remapped: IndexState, defines: (emitted: DefineRefs, before: MetaTable, trained: [DictionaryRef])
    ) throws -> (UInt64, Duration) {
        do {
            try engine.writer.acquire()
        } catch {
            out.discard()
            throw error
        }
        let clock = ContinuousClock()
        let locked = clock.now
        defer { engine.writer.release() }
        let (manifest, tail, head, journal) = engine.state.withLock { ($0.log.manifest, $0.log.tail, $0.views.head, $0.compactionJournal) }
        do {
            try engine.checkWritable()
            guard manifest.segments.count > prefix.count, Array(manifest.segments.prefix(prefix.count)) == prefix else {
                throw LogStoreError(.io, "The manifest changed under compaction; nothing was switched.", path: engine.directory)
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
            throw engine.poison(
                LogStoreError(
                    .storePoisoned, "fdatasync of the tail failed before a compaction switch; reopen the store.", path: tail.path,
                    underlying: error))
        }
        // The re-pointed head, before anything is switched (a damaged index run stops it here).
        var newHead = head
        var dead: DeadBytes? = nil
        do {
            if let journal, !journal.overflowed {
                newHead.index = remapped
                var replaced = DeadBytes()
                try journal.apply(to: &newHead.index, dead: &replaced)
                dead = replaced
                newHead.index.sequence = head.index.sequence
            } else {
                // Too many writes during the copy to journal: re-point the head itself.
                try Self.repoint(&newHead.index, using: remapped, prefix: prefix)
            }
        } catch {
            out.discard()
            throw error
        }
        // The head's defines (writers may have defined types during the copy), with the
        // dictionaries' define records where the output put them.
        newHead.index.meta = Self.meta(after: head.index.meta, defines: defines, moved: out.dictionaryDefines)
        newHead.index._checkInvariants()
        var next = manifest
        next.generation += 1
        next.segments = out.segments.map(\.segment.number) + manifest.segments.dropFirst(prefix.count)
        for n in prefix { next.sealed[n] = nil }
        for o in out.segments { next.sealed[o.segment.number] = ManifestFile.Sealed(length: o.info.length, lastSequence: o.lastSequence) }
        // From a rename on, the file system may show the new generation: adopt it whatever
        // happens next, and keep both generations' files if it is not known to be durable.
        var notDurable: (any Error)? = nil
        switch engine.log.installManifest(next, replacing: manifest) {
        case .success: break
        case .failure(.notInstalled(let e)):
            out.discard()
            throw e
        case .failure(.mayBeInstalled(let e)): notDurable = e
        }

        for n in prefix { newHead.segments[n] = nil }
        for o in out.segments { newHead.segments[o.segment.number] = o.segment }
        engine.state.withLock { s in
            s.log.compacted(to: next, removing: prefix, adding: out.segments, dead: dead)
            s.views.install(compacted: newHead)
        }
        if let notDurable {
            // The new MANIFEST may not survive a power loss (or may not be in place): keep both
            // generations' files (recovery removes the unlisted ones) and refuse writes until the
            // store is reopened.
            throw engine.poison(
                LogStoreError(
                    .storePoisoned, "MANIFEST could not be made durable after a compaction switch; reopen the store.",
                    path: _joinPath(engine.directory, LogStoreFormat.manifestFileName), underlying: notDurable))
        }
        for seg in oldSegments { seg.markObsolete(removingThrough: engine.fileSystem) }
        engine.logger?.debug(
            "compaction switched generation",
            metadata: ["store": "\(engine.directory)", "generation": "\(next.generation)", "segments": "\(next.segments)"])
        return (next.generation, clock.now - locked)
    }
}

extension Compactor {
    /// The defines a compaction of `prefix` must write into its output whether or not a copied
    /// record uses them. Every type define (a few bytes each): a writer may use any type id it
    /// knows, during the copy too. The dictionaries the segments after the prefix use (their define
    /// may lie in the prefix, and replay reads the output first; all of `meta`'s when a later
    /// segment's references are not known), and each type's current one (what writers compress
    /// with). Writers never use another dictionary, so one that no copied record and none of these
    /// need is dropped. Key epochs: those the later segments use, and the writing epoch once the
    /// head knows it (writers seal under it without writing its define again).
    static func definesNeeded(after prefix: [UInt32], manifest: ManifestFile, info: [UInt32: SegmentInfo], meta: MetaTable) -> DefineRefs {
        var refs = DefineRefs(types: meta.allRefs.types)
        // The writing key epoch: commits after the copy's snapshot seal under it without writing
        // its define again (the head knows it), so the output must carry it.
        if let writing = meta.cipher?.writingEpoch, meta.epoch(writing.id) == writing { refs.epochs.insert(writing.id) }
        for n in manifest.segments.dropFirst(prefix.count) {
            guard let r = info[n]?.refs else { return meta.allRefs }
            refs.dictionaries.formUnion(r.dictionaries)
            refs.epochs.formUnion(r.epochs)
        }
        refs.dictionaries.formUnion(meta.currentDictionaryIDs)
        return refs
    }

    /// The head's defines once the output replaces the prefix: the head's own (writers may have
    /// defined types during the copy), minus the dictionaries of the copied view the output did
    /// not carry (no record uses them any more), plus the dictionaries the pass trained and wrote;
    /// each dictionary written at its new place (`moved`).
    static func meta(
        after head: MetaTable, defines: (emitted: DefineRefs, before: MetaTable, trained: [DictionaryRef]), moved: [UInt32: RecordLocation]
    ) -> MetaTable {
        var meta = head
        let dropped = Set(defines.before.allRefs.dictionaries).subtracting(defines.emitted.dictionaries)
        var keep = meta.allRefs
        keep.dictionaries.subtract(dropped)
        // Key epochs likewise: those of the copied view the output did not carry (an epoch defined
        // after the snapshot, or the writing one, which the output always carries, stays).
        keep.epochs.subtract(Set(defines.before.allRefs.epochs).subtracting(defines.emitted.epochs))
        meta.retain(keep)
        // Records the pass sealed again under the writing epoch need its define in the head even
        // before the writer's first commit writes it.
        if let writing = meta.cipher?.writingEpoch, defines.emitted.epochs.contains(writing.id), meta.epoch(writing.id) == nil {
            meta.defineEpoch(writing)
        }
        for d in defines.trained {
            guard let location = moved[d.id] else { continue }
            try? meta.defineDictionary(d.moved(to: location), current: true)
        }
        for (id, location) in moved { meta.relocate(dictionary: id, to: location) }
        return meta
    }

    /// The bytes the define records of `refs` take (as `meta` defines them).
    static func defineBytes(_ refs: DefineRefs, meta: MetaTable) -> UInt64 {
        var n: UInt64 = 0
        for id in refs.types {
            guard let name = meta.typeName(id) else { continue }
            let body = 3 + RecordCodec.uvarintSize(UInt64(id)) + RecordCodec.uvarintSize(UInt64(name.utf8.count)) + name.utf8.count
            n += UInt64(RecordCodec.recordLength(bodySize: body))
        }
        for id in refs.epochs where meta.epoch(id) != nil {
            let body = 3 + RecordCodec.uvarintSize(UInt64(id)) + StoreCrypto.saltByteCount + StoreCrypto.macByteCount
            n += UInt64(RecordCodec.recordLength(bodySize: body))
        }
        for id in refs.dictionaries {
            guard let d = meta.dictionary(id) else { continue }
            let body = 3 + RecordCodec.uvarintSize(UInt64(id)) + RecordCodec.uvarintSize(UInt64(d.typeID)) + d.bytes.count
            n += UInt64(RecordCodec.recordLength(bodySize: body))
        }
        return n
    }
}
