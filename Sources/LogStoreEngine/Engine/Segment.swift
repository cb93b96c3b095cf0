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

    init(number: UInt32, file: any FileSystemFile, baseSequence: UInt64, compacted: Bool = false, version: UInt16 = LogStoreFormat.version) {
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

    deinit {
        if let fs = removal.withLock({ $0 }) {
            try? file.close()
            try? fs.removeFile(atPath: file.path)
        }
    }
}

/// A bounded cache of decompressed frame payloads, keyed by (segment, frame offset).
/// Thread-safe (one mutex); FIFO eviction by bytes.
final class FrameCache: Sendable {
    struct State {
        var frames: [UInt64: [UInt8]] = [:]
        var order: [UInt64] = []
        var head = 0
        var bytes = 0
    }
    let capacity: Int
    let state = Mutex(State())
    init(capacity: Int) { self.capacity = capacity }

    func get(_ id: UInt64) -> [UInt8]? { state.withLock { $0.frames[id] } }

    func put(_ id: UInt64, _ payload: [UInt8]) {
        guard payload.count * 8 <= capacity else { return }
        state.withLock { s in
            if s.frames[id] != nil { return }
            s.frames[id] = payload
            s.order.append(id)
            s.bytes += payload.count
            while s.bytes > capacity, s.head < s.order.count {
                let victim = s.order[s.head]
                s.head += 1
                if let v = s.frames.removeValue(forKey: victim) { s.bytes -= v.count }
            }
            if s.head > 4096 && s.head * 2 > s.order.count {
                s.order.removeFirst(s.head)
                s.head = 0
            }
        }
    }

    func removeAll() { state.withLock { $0 = State() } }
}

extension SegmentFile {
    /// Reads, checks and (if needed) decompresses the frame at `loc`; returns its raw payload.
    /// Throws `.corruption` naming the file and offset if anything is wrong.
    func readFrame(_ loc: RecordLocation, cache: FrameCache?) throws -> [UInt8] {
        if let cache, let hit = cache.get(loc.frameID) { return hit }
        do {
            return try readFrameUncached(loc, cache: cache)
        } catch let e as LogStoreError {
            throw e.withCorruptionNextStep()
        }
    }

    private func readFrameUncached(_ loc: RecordLocation, cache: FrameCache?) throws -> [UInt8] {
        let total = LogFrame.headerSize(version: version) + Int(loc.frameLength)
        let bytes = try file.read(at: UInt64(loc.frameOffset), count: total)
        let raw: [UInt8] = try bytes.withUnsafeBytes { buf in
            switch LogFrame.parse(buf, at: 0, version: version) {
            case .frame(let header, let payloadOffset):
                guard header.storedLength == Int(loc.frameLength) else {
                    throw LogStoreError(.corruption, "Frame length changed since it was indexed.", path: path, offset: UInt64(loc.frameOffset))
                }
                do {
                    return try LogFrame.rawPayload(header, UnsafeRawBufferPointer(rebasing: buf[payloadOffset...]))
                } catch var e as LogStoreError {
                    e.path = path
                    e.offset = UInt64(loc.frameOffset)
                    throw e
                }
            case .truncated(let why), .invalid(let why):
                throw LogStoreError(.corruption, "Frame unreadable: \(why).", path: path, offset: UInt64(loc.frameOffset))
            }
        }
        cache?.put(loc.frameID, raw)
        return raw
    }

    /// The value bytes of the record at `loc`.
    func readValue(_ loc: RecordLocation, cache: FrameCache?) throws -> ArraySlice<UInt8> {
        let raw = try readFrame(loc, cache: cache)
        let start = Int(loc.valueOffset)
        let end = start + Int(loc.valueLength)
        guard end <= raw.count else {
            throw LogStoreError(.corruption, "Record value lies outside its frame.", path: path, offset: UInt64(loc.frameOffset)).withCorruptionNextStep()
        }
        return raw[start..<end]
    }
}

/// What the engine knows about one listed segment's bytes (for storage statistics, compaction
/// decisions and checkpoints).
struct SegmentInfo: Sendable, Equatable {
    /// Valid bytes: the file size of a sealed segment, the append offset of the tail.
    var length: UInt64
    /// Sum of the raw (uncompressed) payload lengths of its committed frames.
    var rawBytes: UInt64
}
