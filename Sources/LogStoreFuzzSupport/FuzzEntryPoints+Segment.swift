import Foundation
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Segment scanning (recovery)

    /// The segment scanner behind recovery: the input becomes a segment file of a store on an
    /// ``InMemoryFileSystem``, which is then opened with ``LogEngine/open(directory:fileSystem:options:)``.
    ///
    /// Input: `mode:u8 bytes`. Mode bits: 0 set = the bytes are segment N of a two-segment store
    /// (a sealed segment, followed by a valid segment N+1 holding one transaction), else the only
    /// (last) segment; 1 set = salvage mode, else strict; 2 set = a valid header for segment N is
    /// put before the bytes; 3 set = frame CRCs in the bytes are recomputed (after the header);
    /// 4 set = no MANIFEST (recovery must rebuild it or refuse); 5 set = N is read from the first
    /// four bytes (little-endian), else N = 1; 6 set = format version 1 (v1 MANIFEST, header and
    /// frames; a strict open upgrades it), else version 2 (MANIFEST records the store id and, with
    /// bit 0, segment N's length as sealed); 7 set = the relationship between the files is fuzzed
    /// too: the input's last 9 bytes (taken off the segment) give a signed change to the sealed
    /// length MANIFEST records for segment N and the last sequence it records.
    ///
    /// Checks: open succeeds or throws `.corruption`/`.unsupportedFormatVersion` (never traps); an
    /// opened store reads back every record through point reads and `forEach` alike; in strict
    /// mode, reopening gives the same records with nothing more cut, and a commit appended after
    /// recovery survives a further reopen. Throws ``FuzzPropertyViolation``.
    public static func segmentRecovery(_ data: UnsafeRawBufferPointer) throws {
        try segmentRecovery(data, format4: false)
    }

    /// ``segmentRecovery(_:)`` for a format 4 store: MANIFEST 4, version 4 segment headers,
    /// frames and records (the `segment4` target). The mode bits mean what they mean there,
    /// except bit 6: set = the segment's header has the compacted flag (its frames carry
    /// sequence tables), else a normal segment. CRC fixing (bit 3) fixes record checksums too.
    /// Throws ``FuzzPropertyViolation``.
    public static func segmentRecovery4(_ data: UnsafeRawBufferPointer) throws {
        try segmentRecovery(data, format4: true)
    }

    static func segmentRecovery(_ data: UnsafeRawBufferPointer, format4: Bool) throws {
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
        var lengthDelta = 0
        var recordedLast: UInt64 = 0
        if mode & 128 != 0, bytes.count >= 9 {
            let tail = Array(bytes.suffix(9))
            bytes.removeLast(9)
            lengthDelta = Int(Int8(bitPattern: tail[0]))
            recordedLast = tail[1...].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        let version: UInt16 = format4 ? 4 : mode & 64 != 0 ? 1 : 2
        let compacted = format4 && mode & 64 != 0
        let storeId: StoreID? = version >= 2 ? StoreID(bytes: Array(repeating: 0x5A, count: 16)) : nil
        if mode & 4 != 0 {
            bytes =
                SegmentHeader(
                    version: version, flags: compacted ? SegmentHeader.flagCompacted : 0, segment: number, baseSequence: 1, storeId: storeId
                ).encoded() + bytes
        }
        if mode & 8 != 0 {
            if format4 {
                fixFrameChecksumsV4(&bytes, from: SegmentHeader.size(version: version), compacted: compacted)
            } else {
                fixFrameChecksums(&bytes, from: SegmentHeader.size(version: version), version: version)
            }
        }

        let fs = InMemoryFileSystem()
        let dir = "/store"
        var options = LogEngineOptions()
        options.recovery = salvage ? .salvage : .strict
        options.durability = .none
        do {
            try fs.createDirectory(atPath: dir)
            if withManifest {
                let manifest = ManifestFile(
                    version: version, generation: 1, nextSegment: sealed ? next &+ 1 : next, segments: sealed ? [number, next] : [number],
                    storeId: storeId,
                    sealed: sealed
                        ? [number: .init(length: UInt64(max(bytes.count + lengthDelta, SegmentHeader.sizeV1)), lastSequence: recordedLast)]
                        : [:])
                try writeFile(fs, _joinPath(dir, LogStoreFormat.manifestFileName), manifest.encoded())
            }
            try writeFile(fs, _joinPath(dir, LogStoreFormat.segmentFileName(number)), bytes)
            if sealed {
                // Segment 2: one committed transaction with a high sequence number, so that it
                // follows whatever segment 1 holds unless segment 1 claims even higher ones.
                var seg2 = SegmentHeader(version: version, segment: next, baseSequence: 1 << 40, storeId: storeId).encoded()
                if format4 {
                    // Its type gets an id no small fuzzed store defines.
                    var records: [UInt8] = []
                    RecordCodec.appendTypeDefine(into: &records, id: 0x7FFF_FFF0, name: "sealed-check")
                    let key: [UInt8] = [2]
                    let value: [UInt8] = [0x02, 0x03]
                    _ = key.withUnsafeBytes { k in
                        value.withUnsafeBytes { RecordCodec.appendPut(into: &records, typeID: 0x7FFF_FFF0, key: k, stored: $0) }
                    }
                    _ = records.withUnsafeBytes {
                        LogFrame.appendV4(
                            into: &seg2, records: $0, recordCount: 2, kind: .commit, sequence: 1 << 40,
                            syncedThrough: UInt32(SegmentHeader.sizeV2))
                    }
                } else {
                    var payload = _ByteWriter(capacity: 64)
                    RecordOperation.put(type: "sealed-check", key: RecordKey([2]), value: [0x02, 0x03]).encode(into: &payload)
                    LogFrame.append(
                        into: &seg2, raw: payload.bytes, kind: .commit, sequence: 1 << 40, compress: false, threshold: 0, version: version)
                }
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
            let headers = ((try? fs.contentsOfDirectory(atPath: dir)) ?? []).filter {
                LogStoreFormat.segmentNumber(fromFileName: $0) != nil
            }
            .compactMap { LogEngine.readSegmentHeader(fs, _joinPath(dir, $0)) }
            if !withManifest, headers.isEmpty, (error as? LogStoreError)?.code == .notAStore { return }
            try expectCorruption(error, "open", allowing: [.unsupportedFormatVersion])
            return
        }
        let first = try observe(engine, "after the first open")
        // (Version 1 only: in version 2 the last segment's transaction must follow segment N's last
        // one exactly, which arbitrary bytes rarely allow, and a gap in the last segment is cut.)
        if sealed, !salvage, withManifest, version < 2, first["sealed-check"]?[RecordKey([2])] != [0x02, 0x03] {
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
                    throw FuzzPropertyViolation(
                        "\(when): \(type) has \(snap.count(ofType: type)) indexed records, forEach yields \(records.count)")
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
}
