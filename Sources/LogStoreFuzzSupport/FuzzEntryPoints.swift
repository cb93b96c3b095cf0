import Foundation
import LogStoreEngine

// Entry points for the fuzz targets (Tests/Fuzz) and for the regression tests that replay the
// inputs they found (Tests/LogStoreEngineTests/FuzzFailCaseTests.swift).
//
// They live in their own module, outside the engine, and reach the engine's internal decoders
// through `package` access (this module is part of the LogStore package), so a release build
// without testability (`--sanitize=fuzzer` builds have no `-enable-testing`) can drive them and no
// user's build compiles them. The module is a product only when LOGSTORE_FUZZ=1 (Package.swift),
// which tools/fuzz sets for the nested fuzz package.
// Docs/Testing.md, "Fuzzing", describes each target and the properties it checks.
//
// Each entry point takes arbitrary bytes, must never trap, hang or leak on any of them, and throws
// a `FuzzPropertyViolation` when a checked property does not hold (the fuzz target turns that into
// a crash; the regression test into a failure). Every input starts with one mode byte that picks
// a variant; the rest is the payload.

/// A property a fuzz entry point checks did not hold: a bug in the engine (or in the check).
public struct FuzzPropertyViolation: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// Creates a violation with a message.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The fuzz targets' entry points. Pure functions of their input (each builds its own in-memory
/// file system); callable from any thread.
public enum FuzzEntryPoints {
    // MARK: Frames and records

    /// The frame decoder: `LogFrame.parse`, `LogFrame.rawPayload` and `DecodedRecord.decodeAll`.
    ///
    /// Input: `mode:u8 bytes`. Mode bits 0-1:
    /// - 0: `bytes` is a run of frames, parsed one after the other as recovery does;
    /// - 1: the same, but each frame's CRC is recomputed first, so the fuzzer gets past the
    ///   checksum to the LZ4 and record decoders;
    /// - 2 and 3: `bytes` is a raw frame payload (records), decoded directly.
    ///
    /// Checks: parsing stays inside the buffer; a parsed frame's payload has its announced raw
    /// length; decoded records lie inside their payload; decode errors are `.corruption`; decoded
    /// records re-encode to a payload that decodes to the same records; that payload, framed with
    /// and without compression, parses back to the same header and payload.
    /// Throws ``FuzzPropertyViolation``.
    public static func frames(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var bytes = Array(data.dropFirst())
        if mode & 2 != 0 {
            try checkPayload(bytes, context: "raw payload")
            return
        }
        if mode & 1 != 0 { fixFrameChecksums(&bytes, from: 0) }
        try bytes.withUnsafeBytes { buf in
            var offset = 0
            var frames = 0
            while offset < buf.count, frames < 64 {
                switch LogFrame.parse(buf, at: offset) {
                case .truncated, .invalid:
                    return
                case .frame(let header, let payloadOffset):
                    frames += 1
                    let end = payloadOffset + header.storedLength
                    guard payloadOffset == offset + LogFrame.headerSize, end <= buf.count, header.storedLength >= 0 else {
                        throw FuzzPropertyViolation("parse accepted a frame at \(offset) whose payload \(payloadOffset)..<\(end) leaves the \(buf.count)-byte buffer")
                    }
                    guard SegmentReader.nextValidFrame(buf, from: offset) != nil else {
                        throw FuzzPropertyViolation("validFrameFollows(from: \(offset)) misses the valid frame that starts there")
                    }
                    let stored = UnsafeRawBufferPointer(rebasing: buf[payloadOffset..<end])
                    let raw: [UInt8]
                    do {
                        raw = try LogFrame.rawPayload(header, stored)
                    } catch {
                        try expectCorruption(error, "rawPayload")
                        offset = end
                        continue
                    }
                    guard raw.count == header.rawLength else {
                        throw FuzzPropertyViolation("rawPayload returned \(raw.count) bytes, the header announces \(header.rawLength)")
                    }
                    try checkPayload(raw, context: "frame at \(offset)")
                    try checkReframing(raw, header: header)
                    offset = end
                }
            }
        }
    }

    /// One decoded record with its value bytes (for comparisons).
    struct Record: Equatable {
        var op: RecordOperation.Tag
        var type: String
        var key: RecordKey
        var value: [UInt8]
        /// The original sequence number of a `putAt` (0 for the other kinds).
        var sequence: UInt64

        /// Appends the record as the engine writes it: `RecordOperation.encode` for the kinds a
        /// transaction writes, `CompactedRecord.encode` for compaction's `putAt`.
        func encode(into w: inout _ByteWriter) {
            switch op {
            case .put: RecordOperation.put(type: type, key: key, value: value).encode(into: &w)
            case .delete: RecordOperation.delete(type: type, key: key).encode(into: &w)
            case .deleteAll: RecordOperation.deleteAll(type: type).encode(into: &w)
            case .putAt:
                _ = value.withUnsafeBytes { CompactedRecord.encode(type: type, key: key, sequence: sequence, value: $0, into: &w) }
            }
        }
    }

    static func decodeRecords(_ payload: [UInt8]) throws -> [Record] {
        try payload.withUnsafeBytes { buf in
            var out: [Record] = []
            try DecodedRecord.decodeAll(buf) { rec in
                let end = rec.valueOffset + rec.valueLength
                guard rec.valueOffset >= 0, rec.valueLength >= 0, end <= buf.count else {
                    throw FuzzPropertyViolation("decodeAll reported a value at \(rec.valueOffset)+\(rec.valueLength) outside the \(buf.count)-byte payload")
                }
                out.append(Record(op: rec.op, type: rec.type, key: rec.key, value: Array(buf[rec.valueOffset..<end]), sequence: rec.sequence))
            }
            return out
        }
    }

    /// Decodes a payload; if it decodes, re-encodes the records and checks they decode the same.
    static func checkPayload(_ payload: [UInt8], context: String) throws {
        let records: [Record]
        do {
            records = try decodeRecords(payload)
        } catch let v as FuzzPropertyViolation {
            throw FuzzPropertyViolation("\(context): \(v.message)")
        } catch {
            try expectCorruption(error, "\(context): decodeAll")
            return
        }
        var w = _ByteWriter(capacity: payload.count + 16)
        for r in records { r.encode(into: &w) }
        let again: [Record]
        do {
            again = try decodeRecords(w.bytes)
        } catch {
            throw FuzzPropertyViolation("\(context): \(records.count) decoded records re-encode to a payload that does not decode: \(error)")
        }
        guard again == records else {
            throw FuzzPropertyViolation("\(context): records changed in an encode/decode round trip")
        }
    }

    /// Frames `raw` again (plain and LZ4) and checks that both parse back to the same payload.
    static func checkReframing(_ raw: [UInt8], header: LogFrame.Header) throws {
        for compress in [false, true] {
            var out: [UInt8] = []
            let stored = LogFrame.append(into: &out, raw: raw, kind: header.kind, sequence: header.sequence, compress: compress, threshold: 0)
            let ok: Bool = out.withUnsafeBytes { buf in
                guard case .frame(let h, let p) = LogFrame.parse(buf, at: 0), h.kind == header.kind, h.sequence == header.sequence,
                    h.rawLength == raw.count, h.storedLength == stored, p + stored == buf.count,
                    let back = try? LogFrame.rawPayload(h, UnsafeRawBufferPointer(rebasing: buf[p...]))
                else { return false }
                return back == raw
            }
            guard ok else {
                throw FuzzPropertyViolation("a \(raw.count)-byte payload framed with compress=\(compress) does not parse back to itself")
            }
        }
    }

    /// Recomputes the CRC of each frame in `bytes` starting at `from`, following the length fields,
    /// as far as whole frames fit.
    static func fixFrameChecksums(_ bytes: inout [UInt8], from start: Int) {
        var offset = start
        while bytes.count - offset >= LogFrame.headerSize {
            let length = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian) }
            let end = offset + LogFrame.headerSize + length
            guard length <= LogFrame.maxPayload, end <= bytes.count else { return }
            let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<end]))) }
            for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
            offset = end
        }
    }

    static func expectCorruption(_ error: any Error, _ what: String, allowing extra: [LogStoreError.Code] = []) throws {
        guard let e = error as? LogStoreError else {
            throw FuzzPropertyViolation("\(what) threw a non-LogStoreError: \(error)")
        }
        guard e.code == .corruption || extra.contains(e.code) else {
            throw FuzzPropertyViolation("\(what) threw \(e.code), expected corruption: \(e)")
        }
    }

    // MARK: Segment scanning (recovery)

    /// The segment scanner behind recovery: the input becomes a segment file of a store on an
    /// ``InMemoryFileSystem``, which is then opened with ``LogEngine/open(directory:fileSystem:options:)``.
    ///
    /// Input: `mode:u8 bytes`. Mode bits: 0 set = the bytes are segment N of a two-segment store
    /// (a sealed segment, followed by a valid segment N+1 holding one transaction), else the only
    /// (last) segment; 1 set = salvage mode, else strict; 2 set = a valid header for segment N is
    /// put before the bytes; 3 set = frame CRCs in the bytes are recomputed (after the header);
    /// 4 set = no MANIFEST (recovery must rebuild it or refuse); 5 set = N is read from the first
    /// four bytes (big-endian), else N = 1.
    ///
    /// Checks: open succeeds or throws `.corruption`/`.unsupportedFormatVersion` (never traps); an
    /// opened store reads back every record through point reads and `forEach` alike; in strict
    /// mode, reopening gives the same records with nothing more cut, and a commit appended after
    /// recovery survives a further reopen. Throws ``FuzzPropertyViolation``.
    public static func segmentRecovery(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        let sealed = mode & 1 != 0
        let salvage = mode & 2 != 0
        let withManifest = mode & 16 == 0
        var bytes = Array(data.dropFirst())
        var number: UInt32 = 1
        if mode & 32 != 0 {
            number = bytes.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
            bytes = Array(bytes.dropFirst(4))
        }
        let next = number &+ 1
        if mode & 4 != 0 { bytes = SegmentHeader(segment: number, baseSequence: 1).encoded() + bytes }
        if mode & 8 != 0 { fixFrameChecksums(&bytes, from: SegmentHeader.size) }

        let fs = InMemoryFileSystem()
        let dir = "/store"
        var options = LogStoreOptions()
        options.recovery = salvage ? .salvage : .strict
        options.durability = .none
        do {
            try fs.createDirectory(atPath: dir)
            if withManifest {
                let manifest = ManifestFile(generation: 1, nextSegment: sealed ? next &+ 1 : next, segments: sealed ? [number, next] : [number])
                try writeFile(fs, _joinPath(dir, LogStoreFormat.manifestFileName), manifest.encoded())
            }
            try writeFile(fs, _joinPath(dir, LogStoreFormat.segmentFileName(number)), bytes)
            if sealed {
                // Segment 2: one committed transaction with a high sequence number, so that it
                // follows whatever segment 1 holds unless segment 1 claims even higher ones.
                var seg2 = SegmentHeader(segment: next, baseSequence: 1 << 40).encoded()
                var payload = _ByteWriter(capacity: 64)
                RecordOperation.put(type: "sealed-check", key: RecordKey([2]), value: [0x02, 0x03]).encode(into: &payload)
                LogFrame.append(into: &seg2, raw: payload.bytes, kind: .commit, sequence: 1 << 40, compress: false, threshold: 0)
                try writeFile(fs, _joinPath(dir, LogStoreFormat.segmentFileName(next)), seg2)
            }
        } catch {
            throw FuzzPropertyViolation("setting up the in-memory store failed: \(error)")
        }

        let engine: LogEngine
        do {
            engine = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        } catch {
            // Without MANIFEST, a directory whose segment-named files carry no LogStore segment
            // header was not written by LogStore: `.notAStore`, and only then.
            let headers = ((try? fs.contentsOfDirectory(atPath: dir)) ?? []).filter { LogStoreFormat.segmentNumber(fromFileName: $0) != nil }
                .compactMap { LogEngine.readSegmentHeader(fs, _joinPath(dir, $0)) }
            if !withManifest, headers.isEmpty, (error as? LogStoreError)?.code == .notAStore { return }
            try expectCorruption(error, "open", allowing: [.unsupportedFormatVersion])
            return
        }
        let first = try observe(engine, "after the first open")
        if sealed, !salvage, withManifest, first["sealed-check"]?[RecordKey([2])] != [0x02, 0x03] {
            throw FuzzPropertyViolation("strict open succeeded but lost the transaction of the valid last segment")
        }
        do { try engine.close() } catch { throw FuzzPropertyViolation("close failed: \(error)") }

        // Recovery is idempotent: a second open finds what the first left, with nothing to cut.
        let second: LogEngine
        do {
            second = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        } catch {
            throw FuzzPropertyViolation("the first open succeeded but reopening failed: \(error)")
        }
        if !salvage, let t = second.recoveryReport.truncatedTail {
            throw FuzzPropertyViolation("reopening after recovery cut a torn tail again: \(t)")
        }
        let again = try observe(second, "after reopening")
        guard again == first else {
            throw FuzzPropertyViolation("reopening changed the records: \(first.count) types before, \(again.count) after")
        }
        if salvage {
            try? second.close()
            return
        }
        // The recovered log is appendable: a new commit survives a reopen (unless the log's
        // sequence numbers are used up, which the commit must report as damage).
        do {
            try second.commit([.put(type: "fuzz-append", key: RecordKey([1]), value: [0x05, 0x06])])
            try second.close()
        } catch let e as LogStoreError where e.code == .corruption && second.recoveryReport.lastSequence == UInt64.max {
            try? second.close()
            return
        } catch {
            throw FuzzPropertyViolation("a commit after recovery failed: \(error)")
        }
        let third: LogEngine
        do {
            third = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        } catch {
            throw FuzzPropertyViolation("reopening after a commit that followed recovery failed: \(error)")
        }
        var expected = first
        expected["fuzz-append", default: [:]][RecordKey([1])] = [0x05, 0x06]
        let last = try observe(third, "after a commit and a reopen")
        try? third.close()
        guard last == expected else {
            throw FuzzPropertyViolation("a commit after recovery did not survive a reopen (or changed other records)")
        }
    }

    static func writeFile(_ fs: any FileSystem, _ path: String, _ bytes: [UInt8]) throws {
        let f = try fs.open(path, mode: .createOrTruncate)
        try f.write(bytes, at: 0)
        try f.close()
    }

    /// Every record of the engine's published state, read through `forEach` and point reads.
    static func observe(_ engine: LogEngine, _ when: String) throws -> [String: [RecordKey: [UInt8]]] {
        do {
            let snap = try engine.snapshot()
            var state: [String: [RecordKey: [UInt8]]] = [:]
            for type in snap.itemTypes {
                var records: [RecordKey: [UInt8]] = [:]
                try snap.forEach(ofType: type) { k, v in
                    records[k] = Array(v)
                    return true
                }
                guard records.count == snap.count(ofType: type), !records.isEmpty else {
                    throw FuzzPropertyViolation("\(when): \(type) has \(snap.count(ofType: type)) indexed records, forEach yields \(records.count)")
                }
                for (k, v) in records {
                    guard let point = try snap.value(type: type, key: k), point.elementsEqual(v) else {
                        throw FuzzPropertyViolation("\(when): point read of \(type)/\(k) differs from forEach")
                    }
                }
                state[type] = records
            }
            return state
        } catch let v as FuzzPropertyViolation {
            throw v
        } catch {
            throw FuzzPropertyViolation("\(when): reading an opened store failed: \(error)")
        }
    }

    // MARK: Values

    /// The value codec, ``AttributeValue``.
    ///
    /// Input: `mode:u8 bytes`. Mode bit 0 clear: `bytes` is decoded; if it decodes to `v`, then
    /// `v.encoded()` must decode to a value identical to `v` (doubles compared by bit pattern) and
    /// re-encode to the same bytes, and for a map every attribute must read the same through
    /// ``AttributeValue/lookupAttribute(_:in:)``. Lookups on any bytes never trap. Bit 0 set:
    /// `bytes` is a recipe for a value (see `buildValue`); encoding it and decoding the result
    /// must give the same value back, and decoding must fail exactly when the value nests deeper
    /// than ``AttributeValue/maxDepth``. Throws ``FuzzPropertyViolation``.
    public static func attributeValue(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        let bytes = Array(data.dropFirst())
        if mode & 1 != 0 {
            var recipe = Recipe(bytes: bytes)
            let v = buildValue(&recipe, depth: 1)
            let encoded = v.encoded()
            let depth = nesting(v)
            do {
                let back = try AttributeValue.decode(encoded)
                guard depth <= AttributeValue.maxDepth else {
                    throw FuzzPropertyViolation("a value nested \(depth) deep decoded, the limit is \(AttributeValue.maxDepth)")
                }
                guard identical(back, v) else { throw FuzzPropertyViolation("encode/decode changed a value: \(v) became \(back)") }
                guard back.encoded() == encoded else { throw FuzzPropertyViolation("a decoded value re-encodes differently") }
            } catch let e as FuzzPropertyViolation {
                throw e
            } catch {
                guard depth > AttributeValue.maxDepth else {
                    throw FuzzPropertyViolation("a value built in memory (nesting \(depth)) encodes to bytes that do not decode: \(error)")
                }
                try expectCorruption(error, "decode")
            }
            return
        }

        // Lookups must never trap, whatever the bytes; they only throw `.corruption`.
        let probe = probeKey(bytes)
        do {
            _ = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(probe, in: $0) }
        } catch {
            try expectCorruption(error, "lookupAttribute")
        }
        let v: AttributeValue
        do {
            v = try AttributeValue.decode(bytes)
        } catch {
            try expectCorruption(error, "decode")
            return
        }
        let encoded = v.encoded()
        let back: AttributeValue
        do {
            back = try AttributeValue.decode(encoded)
        } catch {
            throw FuzzPropertyViolation("decode(x) succeeded but decode(encode(decode(x))) failed: \(error)")
        }
        guard identical(back, v) else { throw FuzzPropertyViolation("decode(encode(v)) differs from v = \(v): \(back)") }
        guard back.encoded() == encoded else { throw FuzzPropertyViolation("encoding is not a fixpoint after one round trip") }
        if case .map(let m) = v {
            for (k, expected) in m {
                let found: AttributeValue?
                do {
                    found = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(k, in: $0) }
                } catch {
                    throw FuzzPropertyViolation("lookupAttribute(\(k)) threw on bytes that decode: \(error)")
                }
                guard let found, identical(found, expected) else {
                    throw FuzzPropertyViolation("lookupAttribute(\(k)) returned \(String(describing: found)), decode gives \(expected)")
                }
            }
            if m[probe] == nil {
                if let found = (try? bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(probe, in: $0) }) ?? nil {
                    _ = found
                    throw FuzzPropertyViolation("lookupAttribute found \(probe), which the decoded map does not hold")
                }
            }
        }
    }

    /// A short key derived from the input, to probe lookups of absent and present attributes.
    static func probeKey(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.suffix(2).map { 0x61 + $0 % 4 }, as: UTF8.self)
    }

    /// Reads a value recipe: every byte consumed picks the next choice; missing bytes read as 0.
    struct Recipe {
        var bytes: [UInt8]
        var at = 0
        var budget = 4096

        mutating func next() -> UInt8 {
            budget -= 1
            defer { at += 1 }
            return at < bytes.count ? bytes[at] : 0
        }
        mutating func u64() -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(next()) << (8 * UInt64(i)) }
            return v
        }
        var isExhausted: Bool { at >= bytes.count || budget <= 0 }
    }

    /// Builds a value from a recipe: tag byte, then the body's bytes (lengths are one byte).
    static func buildValue(_ r: inout Recipe, depth: Int) -> AttributeValue {
        let tag = r.next() % 12
        switch tag {
        case 0: return .null
        case 1: return .bool(r.next() & 1 != 0)
        case 2: return .int(Int64(bitPattern: r.u64()))
        case 3: return .int(Int64(Int8(bitPattern: r.next())))
        case 4: return .double(Double(bitPattern: r.u64()))
        case 5: return .string(recipeString(&r))
        case 6:
            let n = Int(r.next() % 32)
            return .bytes((0..<n).map { _ in r.next() })
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: r.u64())))
        case 8:
            let b = (0..<16).map { _ in r.next() }
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case 9, 10:
            // Deep chains are cheap to describe: a count byte of 0xFF means one element, nested.
            let count = r.next()
            let n = count == 0xFF ? 1 : Int(count % 8)
            var elements: [AttributeValue] = []
            for _ in 0..<n where !r.isExhausted || elements.isEmpty {
                elements.append(depth > 300 ? .null : buildValue(&r, depth: depth + 1))
            }
            if tag == 10 {
                var m: [String: AttributeValue] = [:]
                for (i, e) in elements.enumerated() { m[recipeString(&r) + (i % 2 == 0 ? "" : "\u{e9}")] = e }
                return .map(m)
            }
            return .array(elements)
        default:
            return .string(String(decoding: (0..<Int(r.next() % 8)).map { _ in r.next() }, as: UTF8.self))
        }
    }

    /// A string of 0-7 characters drawn from a small alphabet that includes multi-byte UTF-8.
    static func recipeString(_ r: inout Recipe) -> String {
        let alphabet: [String] = ["a", "b", "z", "A", "0", " ", "\u{0}", "\u{e9}", "\u{20ac}", "\u{1f600}", "\u{fffd}", "/"]
        return (0..<Int(r.next() % 8)).map { _ in alphabet[Int(r.next()) % alphabet.count] }.joined()
    }

    /// Nesting levels: 1 for a scalar, 1 + the deepest element for arrays and maps.
    static func nesting(_ v: AttributeValue) -> Int {
        switch v {
        case .array(let a): return 1 + (a.map(nesting).max() ?? 0)
        case .map(let m): return 1 + (m.values.map(nesting).max() ?? 0)
        default: return 1
        }
    }

    /// Structural equality with doubles and dates compared by bit pattern (NaN equals itself).
    static func identical(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.date(let x), .date(let y)): return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.map(let x), .map(let y)):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { identical(v, $0) } ?? false }
        default: return a == b
        }
    }

    // MARK: Manifest

    /// The manifest reader, `ManifestFile.decode`.
    ///
    /// Input: `mode:u8 bytes`. Mode bits: 0 set = the last 4 bytes are replaced by the right
    /// checksum; 1 set = the magic is put before the bytes; 2 set = the store opened with the
    /// manifest also rolls over to a new segment.
    ///
    /// Checks: decode throws only `.corruption`, `.notAStore` or `.unsupportedFormatVersion`; a
    /// decoded manifest is well formed (a known format version, segments listed once, each below
    /// `nextSegment`) and survives an encode/decode round trip; a store with that manifest and
    /// valid empty segment files opens in strict mode, takes commits (and a roll-over) and reopens
    /// with them.
    /// Throws ``FuzzPropertyViolation``.
    public static func manifest(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var bytes = Array(data.dropFirst())
        if mode & 2 != 0 { bytes = ManifestFile.magic + bytes }
        if mode & 1 != 0, bytes.count >= 4 {
            let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)]))) }
            for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        }
        let m: ManifestFile
        do {
            m = try ManifestFile.decode(bytes, path: "/store/MANIFEST")
        } catch {
            try expectCorruption(error, "ManifestFile.decode", allowing: [.notAStore, .unsupportedFormatVersion])
            return
        }
        guard !m.segments.isEmpty, Set(m.segments).count == m.segments.count, m.segments.allSatisfy({ $0 < m.nextSegment }),
            m.version >= 1, m.version <= LogStoreFormat.version
        else {
            throw FuzzPropertyViolation("decode accepted a malformed manifest: \(m)")
        }
        let again: ManifestFile
        do {
            again = try ManifestFile.decode(m.encoded(), path: "/store/MANIFEST")
        } catch {
            throw FuzzPropertyViolation("a decoded manifest re-encodes to bytes that do not decode: \(error)")
        }
        guard again == m else { throw FuzzPropertyViolation("manifest changed in an encode/decode round trip") }

        // A store whose manifest this is, with every listed segment present and empty, opens.
        guard m.segments.count <= 8 else { return }
        let fs = InMemoryFileSystem()
        let dir = "/store"
        var options = LogStoreOptions()
        options.durability = .none
        options.segmentSize = 64 << 10
        options.compression = false
        do {
            try fs.createDirectory(atPath: dir)
            try writeFile(fs, _joinPath(dir, LogStoreFormat.manifestFileName), bytes)
            for s in m.segments {
                try writeFile(fs, _joinPath(dir, LogStoreFormat.segmentFileName(s)), SegmentHeader(segment: s, baseSequence: 1).encoded())
            }
        } catch {
            throw FuzzPropertyViolation("setting up the in-memory store failed: \(error)")
        }
        do {
            let engine = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
            guard engine.manifestInfo.segments == m.segments else {
                throw FuzzPropertyViolation("the open store lists segments \(engine.manifestInfo.segments), its MANIFEST \(m.segments)")
            }
            try engine.commit([.put(type: "t", key: RecordKey([1]), value: [1])])
            let rollOver = mode & 4 != 0
            if rollOver {
                // A value larger than the segment size makes the next append start a new segment.
                do {
                    try engine.commit([.put(type: "t", key: RecordKey([2]), value: [UInt8](repeating: 7, count: options.segmentSize))])
                } catch let e as LogStoreError where e.code == .invalidArgument || e.code == .corruption {
                    // A manifest whose nextSegment cannot grow may refuse the roll-over, typed.
                    try engine.close()
                    return
                }
                guard engine.manifestInfo.segments.count == m.segments.count + 1 else {
                    throw FuzzPropertyViolation("a commit larger than the segment size did not roll over (segments \(engine.manifestInfo.segments))")
                }
            }
            try engine.close()
            let reopened = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
            defer { try? reopened.close() }
            let snap = try reopened.snapshot()
            let bigCount = rollOver ? try snap.value(type: "t", key: RecordKey([2]))?.count : options.segmentSize
            guard try snap.value(type: "t", key: RecordKey([1])) == [1], bigCount == options.segmentSize else {
                throw FuzzPropertyViolation("a commit to a store opened with this manifest was lost on reopen")
            }
        } catch let v as FuzzPropertyViolation {
            throw v
        } catch {
            throw FuzzPropertyViolation("a store with a valid MANIFEST and empty segments failed: \(error)")
        }
    }

    // MARK: Checkpoint

    /// The checkpoint reader, `CheckpointFile.decode`, and the engine's use of a checkpoint file.
    ///
    /// Input: `mode:u8 bytes`. Mode bits: 0 set = the last 4 bytes are replaced by the right
    /// checksum; 1 set = the bytes also become the CHECKPOINT file of a small store (one
    /// segment, two committed transactions), which is then opened.
    ///
    /// Checks: decode fails only with a decode error (never traps); a decoded checkpoint has
    /// every location inside the segments it lists and re-encodes to a checkpoint that decodes to
    /// the same generation, sequence, segments and index; a store with the checkpoint file opens
    /// or throws a `LogStoreError`, and every record it indexes reads back or throws a
    /// `LogStoreError`. Throws ``FuzzPropertyViolation``.
    public static func checkpoint(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var bytes = Array(data.dropFirst())
        if mode & 1 != 0, bytes.count >= 4 {
            let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)]))) }
            for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        }
        let decoded: CheckpointFile? = bytes.withUnsafeBytes { try? CheckpointFile.decode($0) }
        if let cp = decoded {
            let numbers = Set(cp.segments.map(\.number))
            for (type, d) in cp.index.types {
                guard !d.isEmpty else { throw FuzzPropertyViolation("checkpoint decoded an empty type \(type)") }
                for (_, loc) in d where !numbers.contains(loc.segment) || loc.sequence > cp.sequence {
                    throw FuzzPropertyViolation("checkpoint decoded a location outside its segments or newer than its sequence: \(loc)")
                }
            }
            let again = CheckpointFile.encode(generation: cp.generation, createdAtMillis: cp.createdAtMillis, segments: cp.segments, index: cp.index)
            let back: CheckpointFile
            do {
                back = try again.withUnsafeBytes { (b) throws(_DecodeError) in try CheckpointFile.decode(b) }
            } catch {
                throw FuzzPropertyViolation("a decoded checkpoint re-encodes to bytes that do not decode: \(error)")
            }
            guard back.generation == cp.generation, back.sequence == cp.sequence, back.segments == cp.segments,
                back.index.types == cp.index.types, back.index.sequence == cp.index.sequence
            else {
                throw FuzzPropertyViolation("checkpoint changed in an encode/decode round trip")
            }
        }
        guard mode & 2 != 0 else { return }

        let fs = InMemoryFileSystem()
        var options = LogStoreOptions()
        options.durability = .none
        options.checkpointOnClose = false
        do {
            let engine = try LogEngine.open(directory: "/store", fileSystem: fs, options: options)
            try engine.commit([.put(type: "a", key: RecordKey([1]), value: [1, 1]), .put(type: "b", key: RecordKey([2]), value: [2])])
            try engine.commit([.put(type: "a", key: RecordKey([3]), value: [3]), .delete(type: "b", key: RecordKey([2]))])
            try engine.close()
            try writeFile(fs, _joinPath("/store", LogStoreFormat.checkpointFileName), bytes)
        } catch {
            throw FuzzPropertyViolation("setting up the in-memory store failed: \(error)")
        }
        let engine: LogEngine
        do {
            engine = try LogEngine.open(directory: "/store", fileSystem: fs, options: options)
        } catch {
            guard error is LogStoreError else { throw FuzzPropertyViolation("open threw a non-LogStoreError: \(error)") }
            return
        }
        defer { try? engine.close() }
        func read(_ body: () throws -> Void) throws {
            do { try body() } catch {
                guard error is LogStoreError else { throw FuzzPropertyViolation("reading threw a non-LogStoreError: \(error)") }
            }
        }
        let snap: EngineSnapshot
        do { snap = try engine.snapshot() } catch { throw FuzzPropertyViolation("snapshot of an open store failed: \(error)") }
        for type in snap.itemTypes {
            for key in snap.keys(ofType: type) { try read { _ = try snap.value(type: type, key: key) } }
            try read { try snap.forEach(ofType: type) { _, _ in true } }
        }
    }
}
