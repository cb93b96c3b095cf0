/// Run files (Docs/FileFormat.md, "Run files"): one index, or the changes to one index since its
/// base run, as an immutable static B+tree of 4 KiB pages, built bottom-up and then never changed.
///
///     run-file   := headerPage page{pageCount − 1}                 -- file length = pageCount × 4096
///     headerPage := magic:8 version:u16le=4 flags:u16le storeId:16 runNumber:u32le
///                   kind:u8 layout:u8 levels:u8 cipher:u8 entryCount:u64le pageCount:u32le
///                   rootPage:u32le firstLeaf:u32le leafCount:u32le sequence:u64le salt:16
///                   netCount:i64le reserved:u8{32} crc:u32le        (128 bytes, then zeros to 4096)
///     page       := crc:u32le level:u8 kind:u8 count:u16le firstRank:i64le body
///                                                               -- clear run (cipher 0): 4096 bytes, crc over [4, 4096)
///     sealedPage := ciphertext:4080 tag:16                      -- cipher 1: AES-256-GCM of the page's first 4080 bytes
///                   (a `page` whose body ends at 4080, crc over [4, 4080)) under K_run, nonce
///                   u32le(pageNumber)‖0^8, AAD "LS4P"‖u32le(runNumber)‖u32le(pageNumber)
///
/// In a run of an encrypted store (`cipher` 1) the header page stays clear (it holds counts, no
/// key bytes) and names the cipher and the run's random `salt`; K_run =
/// ``StoreCrypto/runKey(_:storeID:runNumber:salt:)`` of the store's id, the run's number and that
/// salt, derived once per run. Every other page is sealed whole, so keys, fences and locations
/// are unreadable without the key and any changed byte fails the page's tag. A clear run's
/// `cipher` is 0 and its `salt` zeros.
///
/// Leaves come first (with any overflow pages among them), then each inner level bottom-up; the
/// root is the last page. ``RunWriter`` writes them, ``MappedRun`` searches them in place, and
/// ``RunValidator`` checks every page.
package enum RunFile {
    /// Bytes per page.
    package static let pageSize = 4096
    /// `"\x89LSRN\r\n\x1a"`.
    package static let magic: [UInt8] = [0x89, 0x4C, 0x53, 0x52, 0x4E, 0x0D, 0x0A, 0x1A]
    /// The version this build writes and reads.
    package static let currentVersion: UInt16 = 4
    /// Bytes of the header page that the header's CRC covers, plus the CRC.
    package static let headerBytes = 128
    /// Bytes of every page's header (crc, level, kind, count, firstRank).
    package static let pageHeaderSize = 16
    /// The level byte of an overflow page.
    package static let overflowLevel: UInt8 = 0xFF
    /// Keys longer than this (prefix included) keep only the first ``overflowInline`` bytes of
    /// their suffix in their cell; the rest is on overflow pages.
    package static let maxInlineKey = 1024
    /// Bytes of an overflow key's suffix kept in its cell.
    package static let overflowInline = 64
    /// Bytes of a page a sealed run's pages can use: the last 16 of each page on disk are its
    /// AEAD tag (``StoreCrypto/tagByteCount``).
    package static let sealedPageSize = pageSize - StoreCrypto.tagByteCount
    /// The longest page prefix a variable page stores.
    package static let maxPrefix = 256
    /// Most levels a run may have (a fan-out of two at every level reaches 2^32 pages).
    package static let maxLevels = 32
    /// Header flag of delta runs: the index was cleared after its base run (no base entry is
    /// visible).
    package static let flagClears: UInt16 = 1

    /// `NNNNNN.run`.
    package static func fileName(_ number: UInt32) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".run"
    }

    /// Parses `NNNNNN.run`; nil for any other name.
    package static func number(fromFileName name: String) -> UInt32? {
        guard name.hasSuffix(".run"), name.count > 4 else { return nil }
        let digits = name.dropLast(4)
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt32(digits)
    }
}

/// What a run holds. Part of the file format: never renumber.
package enum RunKind: UInt8, Sendable {
    /// A type's primary index: key → location.
    case primaryBase = 1
    /// Changes to a primary base run: key → change byte and location.
    case primaryDelta = 2
    /// A secondary index: entries, no payload.
    case secondaryBase = 3
    /// Changes to a secondary base run: entry → change byte.
    case secondaryDelta = 4

    /// Bytes of payload after each leaf key.
    package var payloadSize: Int {
        switch self {
        case .primaryBase: return 24
        case .primaryDelta: return 25
        case .secondaryBase: return 0
        case .secondaryDelta: return 1
        }
    }

    /// Whether entries carry a change byte (and ranks are net counts).
    package var isDelta: Bool { self == .primaryDelta || self == .secondaryDelta }

    /// Whether entries are primary-index keys (else secondary entries).
    package var isPrimary: Bool { self == .primaryBase || self == .primaryDelta }
}

/// How leaf keys are laid out. Part of the file format: never renumber.
package enum RunLayout: UInt8, Sendable {
    /// Slotted pages of prefix-compressed keys of any length.
    case variable = 0x00
    /// Keys of exactly 8 bytes, stored whole.
    case fixed8 = 0x08
    /// Keys of exactly 16 bytes, stored whole.
    case fixed16 = 0x10

    /// The key width of a fixed layout, nil for the variable one.
    package var keyWidth: Int? {
        switch self {
        case .variable: return nil
        case .fixed8: return 8
        case .fixed16: return 16
        }
    }
}

/// The change byte of a delta entry: bit 0 a tombstone (the key or entry is removed from the
/// layers below: −1), bit 1 a new key (not in the layers below: +1); neither: a replacement (0).
package enum RunChange {
    /// Bit 0.
    package static let tombstone: UInt8 = 0x01
    /// Bit 1.
    package static let newKey: UInt8 = 0x02

    /// The entry's contribution to counts: +1, −1 or 0. Nil for a byte with both bits or unknown
    /// bits set (damage).
    @inline(__always)
    package static func contribution(_ change: UInt8) -> Int? {
        switch change {
        case 0: return 0
        case tombstone: return -1
        case newKey: return 1
        default: return nil
        }
    }
}

/// A run file's header page (page 0): what it holds and how to find it. Everything in it is in
/// the clear and covered by its own CRC; CHECKPOINT names each run with a copy of its run number,
/// page count, root page, entry count and header CRC (``RunWitness``).
package struct RunHeader: Equatable, Sendable {
    /// Bit 0: ``RunFile/flagClears`` (delta runs).
    package var flags: UInt16 = 0
    package var storeId: StoreID
    package var runNumber: UInt32
    package var kind: RunKind
    package var layout: RunLayout
    /// Levels of the tree (leaves are level 0, the root is level `levels − 1`); 0 for a run with
    /// no entries, which has no page but the header.
    package var levels: UInt8 = 0
    /// 0: clear pages; ``StoreCipherAlgorithm/aes256GCM`` (1): every page but the header is
    /// sealed (``RunFile``).
    package var cipher: UInt8 = 0
    /// The random salt of a sealed run's key (16 bytes); zeros in a clear run.
    package var salt: [UInt8] = [UInt8](repeating: 0, count: StoreCrypto.saltByteCount)
    package var entryCount: UInt64 = 0
    package var pageCount: UInt32 = 1
    package var rootPage: UInt32 = 0
    package var firstLeaf: UInt32 = 0
    package var leafCount: UInt32 = 0
    /// The sequence of the last commit the run includes.
    package var sequence: UInt64 = 0
    /// Delta runs: entries added minus entries removed relative to the layers below; base runs:
    /// ``entryCount``.
    package var netCount: Int64 = 0

    /// A header with no entries yet (``RunWriter`` fills in the counts).
    package init(storeId: StoreID, runNumber: UInt32, kind: RunKind, layout: RunLayout, sequence: UInt64, flags: UInt16 = 0) {
        self.storeId = storeId
        self.runNumber = runNumber
        self.kind = kind
        self.layout = layout
        self.sequence = sequence
        self.flags = flags
    }

    /// Whether the run (a delta run) hides every entry of the base run below it.
    package var clears: Bool { flags & RunFile.flagClears != 0 }

    /// The 128 header bytes, CRC included.
    package func encoded() -> [UInt8] {
        var w = _ByteWriter(capacity: RunFile.headerBytes)
        w.append(contentsOf: RunFile.magic)
        w.u16(RunFile.currentVersion)
        w.u16(flags)
        w.append(contentsOf: storeId.bytes.count == 16 ? storeId.bytes : [UInt8](repeating: 0, count: 16))
        w.u32(runNumber)
        w.u8(kind.rawValue)
        w.u8(layout.rawValue)
        w.u8(levels)
        w.u8(cipher)
        w.u64(entryCount)
        w.u32(pageCount)
        w.u32(rootPage)
        w.u32(firstLeaf)
        w.u32(leafCount)
        w.u64(sequence)
        w.append(contentsOf: salt.count == 16 ? salt : [UInt8](repeating: 0, count: 16))
        w.u64(UInt64(bitPattern: netCount))
        w.append(contentsOf: [UInt8](repeating: 0, count: 32))
        let crc = w.bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum($0)) }
        w.u32(crc)
        return w.bytes
    }

    /// The header's CRC (as stored in its last four bytes).
    package var crc: UInt32 {
        let bytes = encoded()
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: RunFile.headerBytes - 4, as: UInt32.self).littleEndian }
    }

    /// Decodes and checks a header page's first 128 bytes: magic, version, CRC, known kind,
    /// layout and cipher, and counts that agree with each other. Throws `_DecodeError` for
    /// anything else; never traps.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(_DecodeError) -> RunHeader {
        guard bytes.count >= RunFile.headerBytes else { throw _DecodeError("run header is \(bytes.count) bytes", at: 0) }
        guard bytes.prefix(8).elementsEqual(RunFile.magic) else { throw _DecodeError("bad run magic", at: 0) }
        let stored = bytes.loadUnaligned(fromByteOffset: RunFile.headerBytes - 4, as: UInt32.self).littleEndian
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<(RunFile.headerBytes - 4)]))) == stored else {
            throw _DecodeError("run header checksum mismatch", at: RunFile.headerBytes - 4)
        }
        var r = _ByteReader(UnsafeRawBufferPointer(rebasing: bytes[0..<(RunFile.headerBytes - 4)]), offset: 8)
        let version = try r.u16()
        guard version == RunFile.currentVersion else {
            throw _DecodeError("run format version \(version) (this build reads \(RunFile.currentVersion))", at: 8)
        }
        let flags = try r.u16()
        let storeId = StoreID(bytes: Array(try r.bytes(16)))
        let runNumber = try r.u32()
        let kindAt = r.offset
        guard let kind = RunKind(rawValue: try r.u8()) else { throw _DecodeError("unknown run kind", at: kindAt) }
        guard let layout = RunLayout(rawValue: try r.u8()) else { throw _DecodeError("unknown run layout", at: kindAt + 1) }
        let levels = try r.u8()
        let cipher = try r.u8()
        guard cipher == StoreCipherAlgorithm.none || cipher == StoreCipherAlgorithm.aes256GCM else {
            throw _DecodeError("run cipher \(cipher) is not supported by this build", at: kindAt + 3)
        }
        guard flags & ~RunFile.flagClears == 0, kind.isDelta || flags == 0 else {
            throw _DecodeError("unknown run flags 0x\(String(flags, radix: 16))", at: 10)
        }
        guard !kind.isPrimary ? layout == .variable : true else { throw _DecodeError("secondary run with a fixed layout", at: kindAt + 1) }
        var h = RunHeader(storeId: storeId, runNumber: runNumber, kind: kind, layout: layout, sequence: 0, flags: flags)
        h.levels = levels
        h.cipher = cipher
        h.entryCount = try r.u64()
        h.pageCount = try r.u32()
        h.rootPage = try r.u32()
        h.firstLeaf = try r.u32()
        h.leafCount = try r.u32()
        h.sequence = try r.u64()
        h.salt = Array(try r.bytes(16))
        h.netCount = Int64(bitPattern: try r.u64())
        guard h.pageCount >= 1, Int(h.levels) <= RunFile.maxLevels else { throw _DecodeError("implausible page count or levels", at: 34) }
        if h.levels == 0 {
            guard h.entryCount == 0, h.pageCount == 1, h.rootPage == 0, h.firstLeaf == 0, h.leafCount == 0 else {
                throw _DecodeError("a run without levels that claims entries or pages", at: 36)
            }
        } else {
            guard h.entryCount > 0, h.rootPage >= 1, h.rootPage < h.pageCount, h.firstLeaf >= 1, h.firstLeaf < h.pageCount,
                h.leafCount >= 1,
                h.leafCount < h.pageCount, h.entryCount <= UInt64(h.pageCount) * UInt64(RunFile.pageSize)
            else { throw _DecodeError("run counts disagree with each other", at: 36) }
        }
        if !kind.isDelta {
            guard h.netCount == Int64(bitPattern: h.entryCount) else {
                throw _DecodeError("base run net count differs from its entries", at: 84)
            }
        } else {
            guard h.netCount.magnitude <= h.entryCount else { throw _DecodeError("delta run net count exceeds its entries", at: 84) }
        }
        return h
    }
}

/// What CHECKPOINT records about each run it names, checked against the run's header at open: a
/// run that disagrees is not the one the checkpoint was written with.
package struct RunWitness: Equatable, Sendable {
    package var runNumber: UInt32
    package var pageCount: UInt32
    package var rootPage: UInt32
    package var entryCount: UInt64
    package var headerCrc: UInt32

    /// The witness of `header`.
    package init(_ header: RunHeader) {
        runNumber = header.runNumber
        pageCount = header.pageCount
        rootPage = header.rootPage
        entryCount = header.entryCount
        headerCrc = header.crc
    }

    /// A witness from its fields (decoders).
    package init(runNumber: UInt32, pageCount: UInt32, rootPage: UInt32, entryCount: UInt64, headerCrc: UInt32) {
        self.runNumber = runNumber
        self.pageCount = pageCount
        self.rootPage = rootPage
        self.entryCount = entryCount
        self.headerCrc = headerCrc
    }
}

/// The 24 bytes of a ``RecordLocation`` in run entries and checkpoints:
/// `segment:u32le offset:u32le length:u32le legacy:u32le sequence:u64le`.
package enum RunLocationCoding {
    /// Bytes per location.
    package static let size = 24

    /// Writes `location` at `p` (24 bytes).
    @inline(__always)
    package static func write(_ location: RecordLocation, to p: UnsafeMutableRawPointer) {
        p.storeBytes(of: location.segment.littleEndian, toByteOffset: 0, as: UInt32.self)
        p.storeBytes(of: location.offset.littleEndian, toByteOffset: 4, as: UInt32.self)
        p.storeBytes(of: location.length.littleEndian, toByteOffset: 8, as: UInt32.self)
        p.storeBytes(of: location.legacy.littleEndian, toByteOffset: 12, as: UInt32.self)
        p.storeBytes(of: location.sequence.littleEndian, toByteOffset: 16, as: UInt64.self)
    }

    /// Reads the location at `p` (24 bytes, any alignment).
    @inline(__always)
    package static func read(_ p: UnsafeRawPointer) -> RecordLocation {
        RecordLocation(
            segment: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 0, as: UInt32.self)),
            offset: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
            length: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
            legacy: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 12, as: UInt32.self)),
            sequence: UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
    }

    /// The 24 bytes of `location`.
    package static func bytes(_ location: RecordLocation) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        out.withUnsafeMutableBytes { if let base = $0.baseAddress { write(location, to: base) } }
        return out
    }
}
