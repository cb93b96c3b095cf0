import Foundation
import Synchronization

/// A sealed segment's bytes, mapped (``FileMapping``), and which of its frames this process has
/// checked: a frame's CRC is checked on its first read after the segment was mapped, and not
/// again while the mapping lives (Docs/Design.md, invariant 5), because nothing writes to a sealed
/// segment (invariant 8).
///
/// One bit per `granule` bytes of the segment (the frame header size: no two frames start within
/// one granule), allocated with the mapping: 1/224 of the mapped bytes in format v2. A format 4
/// segment has no bitmap (`granule` nil): its reads check each record's own checksum, not its
/// frame's, so mapping it costs no allocation that grows with its size.
///
/// `@unchecked Sendable`: the bitmap is only accessed through atomic operations, and the mapping
/// is read-only.
final class SealedBytes: @unchecked Sendable {
    let mapping: FileMapping
    private let granule: Int
    private let words: Int
    private let verified: UnsafeMutablePointer<Atomic<UInt64>>

    init(mapping: FileMapping, granule: Int?) {
        self.mapping = mapping
        self.granule = max(granule ?? 1, 1)
        words = granule == nil ? 0 : (mapping.bytes.count / self.granule) / 64 + 1
        verified = .allocate(capacity: words)
        for i in 0..<words { (verified + i).initialize(to: Atomic(0)) }
    }

    deinit {
        verified.deinitialize(count: words)
        verified.deallocate()
    }

    /// The mapped bytes.
    var bytes: UnsafeRawBufferPointer { mapping.bytes }

    /// Whether the frame starting at `offset` passed its CRC check in this process.
    @inline(__always)
    func isVerified(frameAt offset: Int) -> Bool {
        let bit = offset / granule
        guard bit >> 6 < words else { return false }
        return verified[bit >> 6].load(ordering: .relaxed) & (1 << UInt64(bit & 63)) != 0
    }

    /// Records that the frame starting at `offset` passed its CRC check.
    @inline(__always)
    func markVerified(frameAt offset: Int) {
        let bit = offset / granule
        guard bit >> 6 < words else { return }
        verified[bit >> 6].bitwiseOr(1 << UInt64(bit & 63), ordering: .relaxed)
    }
}

/// A frame's raw (decompressed) payload, or a prefix of it, as a read got it: in a sealed
/// segment's mapping (uncompressed frames: no copy) or in an array (decompressed, read with
/// `pread`, or from the ``FrameCache``).
enum FramePayload {
    case mapped(SealedBytes, Range<Int>)
    case owned([UInt8])

    /// Bytes available (the raw payload, or the prefix a partial decompression produced).
    var count: Int {
        switch self {
        case .mapped(_, let r): return r.count
        case .owned(let a): return a.count
        }
    }

    /// Calls `body` with the bytes; they are valid only inside `body`.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self {
        case .mapped(let s, let r):
            return try withExtendedLifetime(s) { try body(UnsafeRawBufferPointer(rebasing: s.bytes[r])) }
        case .owned(let a):
            return try a.withUnsafeBytes(body)
        }
    }

    /// The bytes as an array (a copy unless they are one already).
    var array: [UInt8] {
        switch self {
        case .mapped: return withBytes { Array($0) }
        case .owned(let a): return a
        }
    }
}

extension SegmentFile {
    // MARK: Reading records

    /// Calls `body` with the value bytes of the record at `loc`; they are valid only inside
    /// `body`. A format 4 record is read alone: its bytes in place in the mapping (or read with
    /// `pread`), its checksum and fields checked, and its value handed over in place when stored
    /// raw, else decompressed into a scratch buffer (with its type's dictionary from `meta`).
    /// With `type` and `key`, the record must be a put of that type and key. A legacy location
    /// (``RecordLocation/isLegacy``) is read through its frame (``withLegacyValue(_:cache:_:)``).
    ///
    /// Throws `.corruption` naming the file and the record's offset if the bytes are damaged,
    /// are not the record the index expects, or its value does not decompress to its length;
    /// rethrows what `body` throws.
    @inline(__always)
    func withValue<R>(
        _ loc: RecordLocation, meta: MetaTable, cache: FrameCache?, type: String? = nil, key: RecordKey? = nil,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        if loc.isLegacy { return try withLegacyValue(loc, cache: cache, body) }
        let start = Int(loc.offset)
        let length = Int(loc.length)
        if let sealed = sealedBytes, length <= sealed.bytes.count, start <= sealed.bytes.count - length {
            return try withExtendedLifetime(sealed) {
                try withRecordValue(UnsafeRawBufferPointer(rebasing: sealed.bytes[start..<(start + length)]), loc, meta, type, key, body)
            }
        }
        let bytes: [UInt8]
        do {
            bytes = try file.read(at: UInt64(loc.offset), count: length)
        } catch let e as LogStoreError {
            throw e.withCorruptionNextStep()
        }
        guard bytes.count == length else {
            throw LogStoreError(.corruption, "Segment ends inside an indexed record.", path: path, offset: UInt64(loc.offset))
                .withCorruptionNextStep()
        }
        return try bytes.withUnsafeBytes { try withRecordValue($0, loc, meta, type, key, body) }
    }

    /// The record `record` (exactly the bytes `loc` names) checked, opened when sealed, and its
    /// value handed to `body`.
    private func withRecordValue<R>(
        _ record: UnsafeRawBufferPointer, _ loc: RecordLocation, _ meta: MetaTable, _ type: String?, _ key: RecordKey?,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        let fields: RecordCodec.Fields
        do throws(_DecodeError) {
            fields = try RecordCodec.parse(record, at: 0)
            guard fields.length == record.count else {
                throw _DecodeError("the record is \(fields.length) bytes, the index says \(record.count)", at: 0)
            }
        } catch {
            throw unreadable(error, loc)
        }
        if fields.sealed || meta.cipher != nil {
            do {
                return try RecordCodec.withOpened(record, fields, meta: meta, path: path, offset: UInt64(loc.offset)) {
                    clear, opened in
                    try checkedValue(clear, opened, loc, meta, type, key, body)
                }
            } catch let e as LogStoreError where e.code == .corruption && e.path == path && e.offset == UInt64(loc.offset) {
                throw e.withCorruptionNextStep()
            }
        }
        return try checkedValue(record, fields, loc, meta, type, key, body)
    }

    /// The clear record `record` checked against what the index expects (a put of `type` and
    /// `key`) and its value handed to `body`.
    @inline(__always)
    private func checkedValue<R>(
        _ record: UnsafeRawBufferPointer, _ fields: RecordCodec.Fields, _ loc: RecordLocation, _ meta: MetaTable, _ type: String?,
        _ key: RecordKey?, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        do throws(_DecodeError) {
            guard fields.op == .put else { throw _DecodeError("the index points at a record that is not a put", at: 0) }
            if let type, meta.typeName(fields.typeID) != type {
                throw _DecodeError("the record is of another item type than the index says", at: 0)
            }
            if let key {
                let matches = key.withUnsafeBytes { k in
                    k.count == fields.key.count
                        && (k.count == 0 || memcmp(k.baseAddress!, record.baseAddress! + fields.key.lowerBound, k.count) == 0)
                }
                guard matches else { throw _DecodeError("the record holds another key than the index says", at: 0) }
            }
        } catch {
            throw unreadable(error, loc)
        }
        if fields.codec == .raw { return try body(UnsafeRawBufferPointer(rebasing: record[fields.content])) }
        do {
            return try RecordCodec.withValue(record, fields, meta: meta, path: path, offset: UInt64(loc.offset), body)
        } catch let e as LogStoreError where e.code == .corruption && e.path == path && e.offset == UInt64(loc.offset) {
            throw e.withCorruptionNextStep()
        }
    }

    /// The `.corruption` error of a record at `loc` that does not read as the index expects.
    private func unreadable(_ error: _DecodeError, _ loc: RecordLocation) -> LogStoreError {
        LogStoreError(.corruption, "Record unreadable: \(error.reason).", path: path, offset: UInt64(loc.offset) + UInt64(error.offset))
            .withCorruptionNextStep()
    }

    /// Calls `body` with the value bytes of the legacy (version 1 or 2 frame) record at `loc`;
    /// they are valid only inside `body`. Reads, checks and decompresses only what it must: a
    /// sealed, mapped segment's uncompressed frame is read in place (its CRC once per process), a
    /// compressed one is decompressed up to the value's end (and kept in `cache`); other frames
    /// are read with `pread`, checked and cached whole. Throws `.corruption` naming the file and
    /// offset if the bytes are damaged or the value lies outside its frame; rethrows what `body`
    /// throws.
    func withLegacyValue<R>(_ loc: RecordLocation, cache: FrameCache?, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let start = loc.legacyValueOffset
        let end = start + Int(loc.length)
        let payload: FramePayload
        do {
            payload = try framePayload(loc, through: end, cache: cache)
            guard end <= payload.count else {
                throw LogStoreError(.corruption, "Record value lies outside its frame.", path: path, offset: UInt64(loc.offset))
            }
        } catch let e as LogStoreError {
            throw e.withCorruptionNextStep()
        }
        return try payload.withBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
    }

    /// The value bytes of the record at `loc`, copied (see ``withValue(_:meta:cache:type:key:_:)``).
    func readValue(_ loc: RecordLocation, meta: MetaTable, cache: FrameCache?) throws -> ArraySlice<UInt8> {
        try withValue(loc, meta: meta, cache: cache) { ArraySlice($0) }
    }

    /// The whole raw payload of the legacy frame at `loc`, checked and decompressed, without the
    /// cache (scans and compaction read each frame once). Throws `.corruption` like
    /// ``withLegacyValue(_:cache:_:)``.
    func readFrame(_ loc: RecordLocation) throws -> [UInt8] {
        do {
            return try framePayload(loc, through: .max, cache: nil).array
        } catch let e as LogStoreError {
            throw e.withCorruptionNextStep()
        }
    }

    /// The frame at `loc`'s raw payload, or a prefix of at least `end` bytes of it if the frame
    /// holds that many.
    private func framePayload(_ loc: RecordLocation, through end: Int, cache: FrameCache?) throws -> FramePayload {
        if let sealed = sealedBytes, let payload = try mappedPayload(sealed, loc, through: end, cache: cache) { return payload }
        let admitted: Bool
        switch end == .max ? .skip : cache?.lookup(loc.frameID, needing: end) ?? .skip {
        case .hit(let payload): return .owned(payload)
        case .admit: admitted = true
        case .skip: admitted = false
        }
        // The header says how long the frame is; then the whole frame, checked.
        let total = LogFrame.headerSize(version: version) + (try storedFrameLengthRead(at: loc.offset) ?? 0)
        let bytes = try file.read(at: UInt64(loc.offset), count: total)
        let raw: [UInt8] = try bytes.withUnsafeBytes { buf in
            let (header, payloadOffset) = try checkedFrame(LogFrame.parse(buf, at: 0, version: version), loc: loc)
            return try rawPayload(header, buf, payloadOffset, loc: loc)
        }
        if admitted { cache?.insert(loc.frameID, raw) }
        return .owned(raw)
    }

    /// ``framePayload(_:through:cache:)`` in a mapped segment; nil if the frame does not lie in
    /// the mapping (then `pread` reads it, and reports it if it is cut short).
    private func mappedPayload(_ sealed: SealedBytes, _ loc: RecordLocation, through end: Int, cache: FrameCache?) throws -> FramePayload? {
        let offset = Int(loc.offset)
        let verified = sealed.isVerified(frameAt: offset)
        let parsed =
            verified
            ? LogFrame.parseSkippingCRC(sealed.bytes, at: offset, version: version)
            : LogFrame.parse(sealed.bytes, at: offset, version: version)
        if case .truncated = parsed { return nil }
        let (header, payloadOffset) = try checkedFrame(parsed, loc: loc)
        if !verified { sealed.markVerified(frameAt: offset) }
        if !header.compressed { return .mapped(sealed, payloadOffset..<(payloadOffset + header.storedLength)) }
        // Decompressed only up to the value's end (or what the cache asks for, to cache a prefix
        // that serves the next reads of the frame: ``FrameCache``).
        var admitted = false
        var prefix = end
        switch end == .max ? .skip : cache?.lookup(loc.frameID, needing: end) ?? .skip {
        case .hit(let payload): return .owned(payload)
        case .admit(let atLeast):
            admitted = true
            prefix = atLeast
        case .skip: break
        }
        let stored = UnsafeRawBufferPointer(rebasing: sealed.bytes[payloadOffset..<(payloadOffset + header.storedLength)])
        guard let raw = LZ4.decompress(stored, rawLength: header.rawLength, prefix: prefix) else {
            throw LogStoreError(
                .corruption, "LZ4 payload does not decompress to its announced \(header.rawLength) bytes.", path: path,
                offset: UInt64(offset))
        }
        if admitted { cache?.insert(loc.frameID, raw) }
        return .owned(raw)
    }

    /// The stored payload length of the frame at `offset`, from its header (not checked beyond
    /// plausibility: for checkpoints, which record it). Throws `.corruption` if the header is not
    /// there or announces an implausible length, and I/O errors.
    func storedFrameLength(at offset: UInt32) throws -> UInt32 {
        if let sealed = sealedBytes, let n = LogFrame.announcedLength(sealed.bytes, at: Int(offset), version: version) { return UInt32(n) }
        guard let n = try storedFrameLengthRead(at: offset) else {
            throw LogStoreError(.corruption, "Frame header unreadable.", path: path, offset: UInt64(offset))
        }
        return UInt32(n)
    }

    /// The stored payload length the header at `offset` announces, read with `pread`; nil if the
    /// header is cut short or the length implausible.
    private func storedFrameLengthRead(at offset: UInt32) throws -> Int? {
        let head = try file.read(at: UInt64(offset), count: LogFrame.headerSize(version: version))
        return head.withUnsafeBytes { LogFrame.announcedLength($0, at: 0, version: version) }
    }

    /// The frame `parsed`, or `.corruption` naming where `loc` points.
    private func checkedFrame(_ parsed: LogFrame.ParseResult, loc: RecordLocation) throws -> (LogFrame.Header, Int) {
        switch parsed {
        case .frame(let header, let payloadOffset):
            return (header, payloadOffset)
        case .truncated(let why), .invalid(let why):
            throw LogStoreError(.corruption, "Frame unreadable: \(why).", path: path, offset: UInt64(loc.offset))
        }
    }

    /// The raw payload of a checked frame in `buf`.
    private func rawPayload(_ header: LogFrame.Header, _ buf: UnsafeRawBufferPointer, _ payloadOffset: Int, loc: RecordLocation) throws
        -> [UInt8]
    {
        do {
            return try LogFrame.rawPayload(
                header, UnsafeRawBufferPointer(rebasing: buf[payloadOffset..<(payloadOffset + header.storedLength)]))
        } catch var e as LogStoreError {
            e.path = path
            e.offset = UInt64(loc.offset)
            throw e
        }
    }
}
