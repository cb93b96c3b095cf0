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
// Docs/Fuzzing.md, describes each target and the properties it checks.
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
    /// Input: `mode:u8 bytes`. Mode bit 6 set: version 4 frames and records (``framesV4(_:_:)``
    /// says what the other bits mean). Mode bit 2 set: frames of format version 1, else 2. Mode
    /// bits 0-1:
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
        if mode & 64 != 0 {
            try framesV4(mode, bytes)
            return
        }
        if mode & 2 != 0 {
            try checkPayload(bytes, context: "raw payload")
            return
        }
        let version: UInt16 = mode & 4 != 0 ? 1 : 2
        if mode & 1 != 0 { fixFrameChecksums(&bytes, from: 0, version: version) }
        try bytes.withUnsafeBytes { buf in
            var offset = 0
            var frames = 0
            while offset < buf.count, frames < 64 {
                switch LogFrame.parse(buf, at: offset, version: version) {
                case .truncated, .invalid:
                    return
                case .frame(let header, let payloadOffset):
                    frames += 1
                    let end = payloadOffset + header.storedLength
                    guard payloadOffset == offset + LogFrame.headerSize(version: version), end <= buf.count, header.storedLength >= 0 else {
                        throw FuzzPropertyViolation(
                            "parse accepted a frame at \(offset) whose payload \(payloadOffset)..<\(end) leaves the \(buf.count)-byte buffer"
                        )
                    }
                    guard SegmentReader.nextValidFrame(buf, from: offset, version: version) != nil else {
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
                    try checkReframing(raw, header: header, version: version)
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
                    throw FuzzPropertyViolation(
                        "decodeAll reported a value at \(rec.valueOffset)+\(rec.valueLength) outside the \(buf.count)-byte payload")
                }
                out.append(
                    Record(op: rec.op, type: rec.type, key: rec.key, value: Array(buf[rec.valueOffset..<end]), sequence: rec.sequence))
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
            throw FuzzPropertyViolation(
                "\(context): \(records.count) decoded records re-encode to a payload that does not decode: \(error)")
        }
        guard again == records else {
            throw FuzzPropertyViolation("\(context): records changed in an encode/decode round trip")
        }
    }

    /// Frames `raw` again (plain and LZ4) and checks that both parse back to the same payload.
    static func checkReframing(_ raw: [UInt8], header: LogFrame.Header, version: UInt16) throws {
        for compress in [false, true] {
            var out: [UInt8] = []
            let stored = LogFrame.append(
                into: &out, raw: raw, kind: header.kind, sequence: header.sequence, compress: compress, threshold: 0,
                version: version, syncedThrough: header.syncedThrough)
            let ok: Bool = out.withUnsafeBytes { buf in
                guard case .frame(let h, let p) = LogFrame.parse(buf, at: 0, version: version), h.kind == header.kind,
                    h.sequence == header.sequence,
                    h.syncedThrough == header.syncedThrough,
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
    static func fixFrameChecksums(_ bytes: inout [UInt8], from start: Int, version: UInt16) {
        let headerSize = LogFrame.headerSize(version: version)
        var offset = start
        while bytes.count - offset >= headerSize {
            let length = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian) }
            let end = offset + headerSize + length
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
}
