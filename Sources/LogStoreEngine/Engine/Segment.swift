import Synchronization

/// An open segment file. Shared by every snapshot that can read it; the descriptor closes when the
/// last reference goes away, so a segment deleted by compaction stays readable by old snapshots.
///
/// Compaction marks the segments it replaced with ``markObsolete(removingThrough:)``: the file is
/// removed when the last view (engine state or snapshot) that reads it lets go of it. A crash
/// before that leaves an unlisted segment file, which recovery removes.
final class SegmentFile: Sendable {
    let number: UInt32
    let file: any FileSystemFile
    /// From the segment header: the first sequence number the segment may hold.
    let baseSequence: UInt64
    /// From the segment header: written by compaction (`putAt` records only).
    let compacted: Bool
    /// From the segment header: its format version, which decides its frame header layout.
    let version: UInt16
    /// Set once the segment is no longer listed in the manifest: who removes the file on deinit.
    private let removal = Mutex<(any FileSystem)?>(nil)
    /// Set once by ``seal(length:)``: the valid length of the segment, which never changes again.
    private let sealedLength = Atomic<UInt64>(0)
    /// Set by ``reserveMapping(length:)`` while the segment is the tail: how much to map.
    private let reservedLength = Atomic<UInt64>(0)
    /// Set once by the first read, if the file can be mapped: a retained ``SealedBytes`` (its
    /// bytes and which of its frames this process has checked), as `Unmanaged` bits, released on
    /// deinit. (`AtomicLazyReference.load()` is not inlined and costs a point read 160
    /// instructions; this load is one instruction.)
    private let mapped = Atomic<UInt>(0)
    /// Set when mapping failed, so reads stop trying and use `pread`.
    private let mappingFailed = Atomic<Bool>(false)

    init(
        number: UInt32, file: any FileSystemFile, baseSequence: UInt64, compacted: Bool = false,
        version: UInt16 = SegmentHeader.currentVersion
    ) {
        self.number = number
        self.file = file
        self.baseSequence = baseSequence
        self.compacted = compacted
        self.version = version
    }

    /// An open segment described by its decoded header.
    convenience init(number: UInt32, file: any FileSystemFile, header h: SegmentHeader) {
        self.init(number: number, file: file, baseSequence: h.baseSequence, compacted: h.isCompacted, version: h.version)
    }

    /// Where the segment's first frame starts.
    var headerSize: Int { SegmentHeader.size(version: version) }
    var path: String { file.path }

    /// Removes the file once the last reference to this object goes away.
    func markObsolete(removingThrough fs: any FileSystem) { removal.withLock { $0 = fs } }

    /// Declares the segment sealed at `length` bytes: nothing will write to it again (invariant 8).
    /// Called at open for every segment but the tail, at a roll-over for the old tail, and for
    /// each segment a compaction finished. Idempotent; any thread.
    func seal(length: UInt64) {
        _ = sealedLength.compareExchange(expected: 0, desired: length, ordering: .releasing)
    }

    /// Lets reads of the tail map its first `length` bytes (the segment size) before it is
    /// sealed. Safe because a committed frame's bytes never change and are never cut off (a failed
    /// append cuts only its own, unindexed, bytes; recovery cuts a torn tail before any read), and
    /// reads touch only committed frames: pages of the mapping past the end of the file are never
    /// touched. A frame beyond `length` (a transaction larger than the segment size) is read with
    /// `pread`. Any thread.
    func reserveMapping(length: UInt64) {
        _ = reservedLength.compareExchange(expected: 0, desired: length, ordering: .releasing)
    }

    /// The segment's bytes mapped, mapping them on first use (the larger of the sealed and the
    /// reserved length); nil before either is set, or if the file system cannot map files (reads
    /// then use `pread`).
    var sealedBytes: SealedBytes? {
        let bits = mapped.load(ordering: .acquiring)
        if bits != 0, let p = UnsafeRawPointer(bitPattern: bits) { return Unmanaged<SealedBytes>.fromOpaque(p).takeUnretainedValue() }
        let sealed = sealedLength.load(ordering: .acquiring)
        let length = max(sealed, reservedLength.load(ordering: .acquiring))
        guard length > UInt64(headerSize), !mappingFailed.load(ordering: .relaxed), let f = file as? any MappableFile else { return nil }
        do {
            // A sealed file shorter than its sealed length was damaged after open: `pread` reports
            // that as a typed error, where touching the missing pages of a mapping is SIGBUS.
            guard length <= UInt64(Int.max), try f.size() >= sealed else { throw LogStoreError(.io, "short segment") }
            let m = SealedBytes(
                mapping: try f.mapReadOnly(length: Int(length)), granule: version < 4 ? LogFrame.headerSize(version: version) : nil)
            let mine = UInt(bitPattern: Unmanaged.passRetained(m).toOpaque())
            let (won, winner) = mapped.compareExchange(expected: 0, desired: mine, ordering: .acquiringAndReleasing)
            if won { return m }
            Unmanaged.passUnretained(m).release()
            return UnsafeRawPointer(bitPattern: winner).map { Unmanaged<SealedBytes>.fromOpaque($0).takeUnretainedValue() }
        } catch {
            mappingFailed.store(true, ordering: .relaxed)
            return nil
        }
    }

    deinit {
        if let p = UnsafeRawPointer(bitPattern: mapped.load(ordering: .acquiring)) { Unmanaged<SealedBytes>.fromOpaque(p).release() }
        if let fs = removal.withLock({ $0 }) {
            try? file.close()
            try? fs.removeFile(atPath: file.path)
        }
    }
}

/// What the engine knows about one listed segment's bytes (for storage statistics, compaction
/// decisions and checkpoints).
struct SegmentInfo: Sendable, Equatable {
    /// Valid bytes: the file size of a sealed segment, the append offset of the tail.
    var length: UInt64
    /// Sum of the raw (uncompressed) payload lengths of its committed frames (format 4: of its
    /// records' lengths).
    var rawBytes: UInt64
    /// The defines its records use (format 4 segments), so that compaction keeps them; nil when
    /// not known (a segment a checkpoint covered, or a legacy one): then it may use any.
    var refs: DefineRefs? = nil
    /// Bytes of its put records that the recompression pass has not tried to compress with their
    /// type's dictionary yet (written raw or alone; a legacy segment's every record): what
    /// background recompression waits for.
    var pendingBytes: UInt64 = 0
    /// Bytes of its records that later commits replaced or deleted (in ``rawBytes``' unit), kept
    /// up to date by every commit, replay and compaction switch (``DeadBytes``): what background
    /// compaction decides from without walking the index. Always counted; trusted only when
    /// ``deadKnown``.
    var deadBytes: UInt64 = 0
    /// Whether ``deadBytes`` counts every dead record of the segment: false for a segment a
    /// checkpoint covered without recording it, or after a delete-all (whose records are not
    /// counted one by one), until a walk of the index counts them (``LogEngine/compactionDue()``).
    var deadKnown = true
}

/// What one commit, replay or journal replay made dead: per segment, the bytes of the records it
/// replaced or deleted (``SegmentInfo/deadBytes``). A delete-all is not counted record by record
/// (that would walk the type inside the commit); it sets ``unknown`` instead.
struct DeadBytes: Sendable {
    private(set) var bySegment: [(segment: UInt32, bytes: UInt64)] = []
    /// A delete-all was applied: every segment's count is incomplete.
    var unknown = false

    /// Counts `old`, the location a put or delete of `key` of `type` replaced (nothing when nil).
    mutating func add(_ old: RecordLocation?, type: String, key: RecordKey) {
        guard let old else { return }
        add(LogEngine.recordSize(typeBytes: type.utf8.count, keyBytes: key.count, location: old, compacted: false), in: old.segment)
    }

    /// Counts `bytes` of records dead from the start in `segment`: deletes and delete-alls, which
    /// no read ever needs.
    mutating func add(_ bytes: Int, in segment: UInt32) {
        guard bytes > 0 else { return }
        if let i = bySegment.firstIndex(where: { $0.segment == segment }) {
            bySegment[i].bytes += UInt64(bytes)
        } else {
            bySegment.append((segment, UInt64(bytes)))
        }
    }

    /// Adds this count to `info`'s segments (those it no longer lists are skipped).
    func fold(into info: inout [UInt32: SegmentInfo]) {
        for (n, b) in bySegment { info[n]?.deadBytes += b }
        if unknown { for n in info.keys { info[n]?.deadKnown = false } }
    }
}
