import Foundation
import LogStoreEngine

extension FuzzEntryPoints {
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
            m.version >= 1, m.version <= ManifestFile.newestReadable
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
        var options = LogEngineOptions()
        options.durability = .none
        options.segmentSize = 64 << 10
        options.compression = false
        do {
            try fs.createDirectory(atPath: dir)
            try writeFile(fs, _joinPath(dir, LogStoreFormat.manifestFileName), bytes)
            for s in m.segments {
                let header = SegmentHeader(version: m.version, segment: s, baseSequence: 1, storeId: m.storeId)
                try writeFile(fs, _joinPath(dir, LogStoreFormat.segmentFileName(s)), header.encoded())
            }
        } catch {
            throw FuzzPropertyViolation("setting up the in-memory store failed: \(error)")
        }
        // Versions 2 and 4 record each sealed segment's length and last sequence: header-only files
        // match only a manifest that says so; any other claim is damage the open must report.
        let consistent = m.version < 2 || m.sealed.values.allSatisfy { $0.length == UInt64(SegmentHeader.sizeV2) && $0.lastSequence == 0 }
        // A store of an older format is upgraded at open: one more segment (unless its counters
        // are at their limit, which the open must report as damage).
        let upgrades = m.version < ManifestFile.currentVersion
        let upgradable = m.nextSegment < UInt32.max && m.generation < UInt64.max
        if !consistent || (upgrades && !upgradable) {
            do {
                let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
                try? e.close()
                throw FuzzPropertyViolation("a store whose MANIFEST contradicts its segment files (or cannot be upgraded) opened")
            } catch let v as FuzzPropertyViolation {
                throw v
            } catch {
                try expectCorruption(error, "open with a contradicting MANIFEST")
                return
            }
        }
        let expected = upgrades ? m.segments + [m.nextSegment] : m.segments
        do {
            let engine = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
            guard engine.manifestInfo.segments == expected else {
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
                guard engine.manifestInfo.segments.count == expected.count + 1 else {
                    throw FuzzPropertyViolation(
                        "a commit larger than the segment size did not roll over (segments \(engine.manifestInfo.segments))")
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
}
