import Synchronization

/// A run file's bytes: mapped read-only (``FileMapping``), or copied into memory when the file
/// system cannot map files. Immutable; valid until the last reference goes away.
package final class RunBytes: @unchecked Sendable {
    /// The bytes, `pageCount × 4096` of them.
    package let bytes: UnsafeRawBufferPointer
    private let mapping: FileMapping?
    private let owned: UnsafeMutableRawBufferPointer?

    /// Bytes held by a mapping.
    init(mapping: FileMapping) {
        self.mapping = mapping
        owned = nil
        bytes = mapping.bytes
    }

    /// A copy of `array`.
    package init(copying array: [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(array.count, 1), alignment: 16)
        array.withUnsafeBytes { src in
            if let b = src.baseAddress, let d = buffer.baseAddress { d.copyMemory(from: b, byteCount: src.count) }
        }
        owned = buffer
        mapping = nil
        bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: array.count)
    }

    deinit { owned?.deallocate() }
}

/// A run file opened for searching in place (Docs/FileFormat.md, "Run files"): opening maps it
/// and checks its header page, nothing else. Pages are checked on their first use in this
/// process (CRC, then their structure, so that no later read of them can leave the page), and the
/// result is remembered in a bitmap; a page that fails makes the read throw `.corruption`.
///
/// Lookups, ranks and cursors (``RunCursor``) read the mapped pages directly. Immutable and
/// `Sendable`: the mapping is read-only and the bitmap is only touched atomically. Once open, it
/// never reads its file again, so the file may be removed (a newer checkpoint no longer names it)
/// while views still search it.
///
/// A sealed run (an encrypted store's, ``RunFile``) is searched in a heap copy of the same
/// geometry, allocated (not touched) at open: a page's first use opens it with the run's key into
/// its place in the copy, under a lock, then checks it as a clear page and sets its bit; later
/// uses read the copy without the lock, like a clear run's mapping. A page that does not
/// authenticate is `.corruption` naming the run file and the page's offset.
package final class MappedRun: @unchecked Sendable {
    /// The checked header.
    package let header: RunHeader
    /// The file's path (for errors).
    package let path: String
    let data: RunBytes
    private let words: Int
    private let verified: UnsafeMutablePointer<Atomic<UInt64>>
    /// Where page 0 of the searched bytes is: the mapping, or a sealed run's plaintext copy.
    private let pages: UnsafeRawPointer
    /// Bytes of each page the tree uses: 4096, or 4080 in a sealed run.
    let usable: Int
    /// A sealed run's key and plaintext copy; nil for a clear run.
    private let sealed: SealedPages?

    /// A clear run over `data` (tests, tools): ``init(data:path:cipher:storeId:)`` without a cipher.
    package convenience init(data: RunBytes, path: String) throws {
        try self.init(data: data, path: path, cipher: nil, storeId: StoreID(bytes: []))
    }

    /// A run over `data`, whose header page must decode (``RunHeader/decode(_:)``), whose length
    /// must be its page count times 4096, and whose cipher must be `cipher`'s (0 when `cipher` is
    /// nil: a clear store's). A sealed run's key is derived here from `storeId` (the store's),
    /// the header's run number and salt. Throws `.corruption` for a damaged header, a wrong
    /// length or another cipher, and the cipher's errors.
    package init(data: RunBytes, path: String, cipher: (any StoreCipher)?, storeId: StoreID) throws {
        let header: RunHeader
        do throws(_DecodeError) {
            header = try RunHeader.decode(data.bytes)
        } catch {
            throw LogStoreError(.corruption, "Run file header is damaged: \(error.reason).", path: path, offset: UInt64(error.offset))
        }
        guard UInt64(data.bytes.count) == UInt64(header.pageCount) * UInt64(RunFile.pageSize), let base = data.bytes.baseAddress else {
            throw LogStoreError(
                .corruption, "Run file holds \(data.bytes.count) bytes, its header says \(header.pageCount) pages.", path: path)
        }
        let expected = cipher?.algorithmID ?? StoreCipherAlgorithm.none
        guard header.cipher == expected else {
            throw LogStoreError(
                .corruption,
                header.cipher == StoreCipherAlgorithm.none
                    ? "Run file is in the clear, but the store is encrypted."
                    : expected == StoreCipherAlgorithm.none
                        ? "Run file is sealed (cipher \(header.cipher)), but the store is not encrypted."
                        : "Run file is sealed with cipher \(header.cipher), the store with cipher \(expected).",
                path: path, offset: 35)
        }
        if let cipher {
            let key = try StoreCrypto.runKey(cipher, storeID: storeId, runNumber: header.runNumber, salt: header.salt)
            let copy = SealedPages(key: key, byteCount: data.bytes.count)
            sealed = copy
            pages = UnsafeRawPointer(copy.plain)
            usable = RunFile.sealedPageSize
        } else {
            sealed = nil
            pages = base
            usable = RunFile.pageSize
        }
        self.header = header
        self.path = path
        self.data = data
        words = Int(header.pageCount) / 64 + 1
        verified = .allocate(capacity: words)
        for i in 0..<words { (verified + i).initialize(to: Atomic(0)) }
    }

    /// A clear run at `path` (tests, tools): ``open(path:fs:cipher:storeId:)`` without a cipher.
    package static func open(path: String, fs: any FileSystem) throws -> MappedRun {
        try open(path: path, fs: fs, cipher: nil, storeId: StoreID(bytes: []))
    }

    /// Opens the run file at `path`: maps it (or reads it whole on a file system that cannot
    /// map) and checks its header, whose cipher must be `cipher`'s (nil: a clear store's; the
    /// store's id `storeId` enters a sealed run's key). Throws `.corruption` for a damaged or short
    /// file or another cipher, `.io` when it cannot be opened, and the cipher's errors.
    package static func open(path: String, fs: any FileSystem, cipher: (any StoreCipher)?, storeId: StoreID) throws -> MappedRun {
        let file = try fs.open(path, mode: .readOnly)
        defer { try? file.close() }
        let size = try file.size()
        let head = try file.read(at: 0, count: RunFile.headerBytes)
        let decoded: Result<RunHeader, _DecodeError> = head.withUnsafeBytes { b in
            do throws(_DecodeError) { return .success(try RunHeader.decode(b)) } catch { return .failure(error) }
        }
        let header: RunHeader
        switch decoded {
        case .success(let h): header = h
        case .failure(let error):
            throw LogStoreError(.corruption, "Run file header is damaged: \(error.reason).", path: path, offset: UInt64(error.offset))
        }
        let expected = UInt64(header.pageCount) * UInt64(RunFile.pageSize)
        guard size == expected, expected <= UInt64(Int.max) else {
            throw LogStoreError(.corruption, "Run file holds \(size) bytes, its header says \(header.pageCount) pages.", path: path)
        }
        if let mappable = file as? any MappableFile, let mapping = try? mappable.mapReadOnly(length: Int(expected)) {
            return try MappedRun(data: RunBytes(mapping: mapping), path: path, cipher: cipher, storeId: storeId)
        }
        return try MappedRun(
            data: RunBytes(copying: try file.read(at: 0, count: Int(expected))), path: path, cipher: cipher, storeId: storeId)
    }

    deinit {
        verified.deinitialize(count: words)
        verified.deallocate()
    }

    /// The number of entries.
    package var entryCount: Int { Int(header.entryCount) }

    /// Base runs: the entry count; delta runs: entries added minus removed relative to the layers
    /// below.
    package var netCount: Int { Int(header.netCount) }

    // MARK: Pages

    /// The page `number`, checked (CRC, structure) on its first use: `level` is the level the
    /// caller expects it at (``RunFile/overflowLevel`` for overflow pages). A sealed run's page is
    /// opened on its first use. Throws `.corruption`.
    ///
    /// The bit is read with acquiring and set with releasing order, so a thread that sees it set
    /// also sees the plaintext another thread wrote before setting it (on x86 both are plain
    /// loads and stores, as the relaxed ones were).
    @inline(__always)
    func page(_ number: UInt32, level: UInt8) throws -> UnsafeRawPointer {
        guard number >= 1, number < header.pageCount else {
            throw damaged("a reference to page \(number) outside the run", page: 0)
        }
        let p = pages + Int(number) * RunFile.pageSize
        let w = Int(number) >> 6
        let bit = UInt64(1) << UInt64(number & 63)
        if verified[w].load(ordering: .acquiring) & bit == 0 {
            try firstUse(p, number: number, word: w, bit: bit)
        }
        guard p.load(fromByteOffset: 4, as: UInt8.self) == level else {
            throw damaged("page at level \(p.load(fromByteOffset: 4, as: UInt8.self)) where level \(level) was expected", page: number)
        }
        return p
    }

    /// Whether page `number` was checked in this process (tests).
    package func isChecked(page number: UInt32) -> Bool {
        guard number < header.pageCount else { return false }
        return verified[Int(number) >> 6].load(ordering: .relaxed) & (UInt64(1) << UInt64(number & 63)) != 0
    }

    func damaged(_ reason: String, page: UInt32) -> LogStoreError {
        LogStoreError(
            .corruption, "Run file page \(page) is damaged: \(reason). The index is rebuilt from the log when the store is opened again.",
            path: path, offset: UInt64(page) * UInt64(RunFile.pageSize))
    }

    /// A page's first use: checks it (a sealed run's: opens it into its place in the copy first,
    /// under the lock, so that no two threads write one page) and sets its bit. Throws
    /// `.corruption`.
    private func firstUse(_ p: UnsafeRawPointer, number: UInt32, word w: Int, bit: UInt64) throws {
        guard let sealed else {
            try check(p, number: number)
            verified[w].bitwiseOr(bit, ordering: .releasing)
            return
        }
        try sealed.lock.withLock { _ throws(any Error) in
            // Another thread may have opened it while this one waited.
            guard verified[w].load(ordering: .acquiring) & bit == 0, let source = data.bytes.baseAddress else { return }
            let out = UnsafeMutableRawPointer(mutating: p)
            let aad = StoreCrypto.pageAAD(runNumber: header.runNumber, page: number)
            let ok = try aad.withUnsafeBytes { a in
                try sealed.key.open(
                    UnsafeRawBufferPointer(start: source + Int(number) * RunFile.pageSize, count: RunFile.pageSize),
                    nonce: StoreCrypto.pageNonce(page: number), aad: a,
                    into: UnsafeMutableRawBufferPointer(start: out, count: RunFile.sealedPageSize))
            }
            // The tag's place in the copy: zeros, never read as page bytes (checks stop at 4080).
            (out + RunFile.sealedPageSize).initializeMemory(as: UInt8.self, repeating: 0, count: StoreCrypto.tagByteCount)
            guard ok else { throw damaged("it does not authenticate (altered bytes, or another store's or run's page)", page: number) }
            try check(p, number: number)
            verified[w].bitwiseOr(bit, ordering: .releasing)
        }
    }

    /// Checks one page: its CRC, its kind, and that every count, offset and page number it holds
    /// stays inside the page's ``usable`` bytes and the run.
    private func check(_ p: UnsafeRawPointer, number: UInt32) throws {
        let stored = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(start: p + 4, count: usable - 4))) == stored else {
            throw damaged("checksum mismatch", page: number)
        }
        guard p.load(fromByteOffset: 5, as: UInt8.self) == header.kind.rawValue else {
            throw damaged("a page of another kind", page: number)
        }
        let level = p.load(fromByteOffset: 4, as: UInt8.self)
        let count = Int(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        if level == RunFile.overflowLevel {
            let next = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: RunPage.bodyStart, as: UInt32.self))
            guard count >= 1, count <= usable - RunPage.overflowDataStart, next < header.pageCount else {
                throw damaged("an overflow page with a bad length or link", page: number)
            }
            return
        }
        guard Int(level) < Int(header.levels), count >= 1 else { throw damaged("a page with no entries or a bad level", page: number) }
        let isLeaf = level == 0
        if isLeaf {
            let next = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: RunPage.bodyStart, as: UInt32.self))
            guard next < header.pageCount else { throw damaged("a leaf linked to a page outside the run", page: number) }
        }
        let view = RunPageView(p, run: self, isLeaf: isLeaf)
        if let w = header.layout.keyWidth {
            guard view.fixedStart + count * (w + view.payloadSize) <= usable else {
                throw damaged("more entries than the page holds", page: number)
            }
        } else {
            try checkSlotted(view, number: number)
        }
        if !isLeaf {
            for i in 0..<count {
                let child = view.child(i)
                guard child >= 1, child < header.pageCount, header.kind.isDelta || view.rankBase(i) >= 0 else {
                    throw damaged("an inner entry pointing outside the run", page: number)
                }
            }
        }
    }

    /// The slotted layout's checks: prefix, slots and every cell inside the page.
    private func checkSlotted(_ view: RunPageView, number: UInt32) throws {
        let start = view.slottedStart
        guard start + 2 <= usable else { throw damaged("no room for the prefix length", page: number) }
        let prefix = view.prefixLength
        let slots = start + 2 + prefix
        guard prefix <= RunFile.maxPrefix, slots + 2 * view.count <= usable else {
            throw damaged("prefix or slots beyond the page", page: number)
        }
        for i in 0..<view.count {
            let cell = view.slot(i)
            guard cell >= slots + 2 * view.count, cell < usable else { throw damaged("a slot outside the cells", page: number) }
            var at = cell
            guard let suffix = RunPageView.readVarint(view.base, &at, limit: usable), suffix <= UInt64(UInt32.max) else {
                throw damaged("a cell's length runs off the page", page: number)
            }
            let total = prefix + Int(suffix)
            if total > RunFile.maxInlineKey {
                guard at + RunFile.overflowInline + 4 + view.payloadSize <= usable, Int(suffix) >= RunFile.overflowInline else {
                    throw damaged("an overflow cell runs off the page", page: number)
                }
                let overflow = UInt32(littleEndian: view.base.loadUnaligned(fromByteOffset: at + RunFile.overflowInline, as: UInt32.self))
                guard overflow >= 1, overflow < header.pageCount else { throw damaged("an overflow link outside the run", page: number) }
            } else {
                guard at + Int(suffix) + view.payloadSize <= usable else {
                    throw damaged("a cell runs off the page", page: number)
                }
            }
        }
    }

    /// The whole key of an overflow cell (`length` bytes on the chain starting at `first`).
    func overflowKey(first: UInt32, length: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(min(length, 1 << 20))
        var page = first
        let capacity = usable - RunPage.overflowDataStart
        var chained = 0
        while out.count < length {
            chained += 1
            guard page != 0, chained <= length / capacity + 1 else { throw damaged("an overflow chain shorter than its key", page: page) }
            let p = try self.page(page, level: RunFile.overflowLevel)
            let n = Int(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
            guard n <= length - out.count else { throw damaged("an overflow chain longer than its key", page: page) }
            out.append(contentsOf: UnsafeRawBufferPointer(start: p + RunPage.overflowDataStart, count: n))
            page = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: RunPage.bodyStart, as: UInt32.self))
        }
        return out
    }
}

/// One checked page of a run, read in place.
struct RunPageView {
    let base: UnsafeRawPointer
    let layout: RunLayout
    let isLeaf: Bool
    /// Leaf payload bytes, or 8 (child and rank base) in inner pages.
    let payloadSize: Int

    init(_ base: UnsafeRawPointer, run: MappedRun, isLeaf: Bool) {
        self.base = base
        layout = run.header.layout
        self.isLeaf = isLeaf
        payloadSize = isLeaf ? run.header.kind.payloadSize : 8
    }

    var count: Int { Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 6, as: UInt16.self))) }
    var firstRank: Int64 { Int64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: Int64.self)) }
    var nextLeaf: UInt32 { UInt32(littleEndian: base.loadUnaligned(fromByteOffset: RunPage.bodyStart, as: UInt32.self)) }

    // Fixed layouts.
    var fixedStart: Int { RunPage.bodyStart + (isLeaf ? 4 : 0) }
    var width: Int { layout.keyWidth ?? 0 }
    @inline(__always) func fixedKey(_ i: Int) -> UnsafeRawPointer { base + fixedStart + i * (width + payloadSize) }

    // Slotted layout.
    var slottedStart: Int { RunPage.bodyStart + (isLeaf ? 4 : 0) }
    var prefixLength: Int { Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: slottedStart, as: UInt16.self))) }
    var prefix: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base + slottedStart + 2, count: prefixLength) }
    @inline(__always) func slot(_ i: Int) -> Int {
        Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: slottedStart + 2 + prefixLength + 2 * i, as: UInt16.self)))
    }

    /// A cell of the slotted layout: its stored suffix bytes, its full key length, its overflow
    /// page (0 when inline) and where its payload starts.
    struct Cell {
        var stored: UnsafeRawBufferPointer
        var keyLength: Int
        var overflow: UInt32
        var payload: Int
    }

    @inline(__always) func cell(_ i: Int) -> Cell {
        var at = slot(i)
        let suffix = Int(Self.readVarint(base, &at) ?? 0)
        let p = prefixLength
        if p + suffix > RunFile.maxInlineKey {
            let overflow = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: at + RunFile.overflowInline, as: UInt32.self))
            return Cell(
                stored: UnsafeRawBufferPointer(start: base + at, count: RunFile.overflowInline), keyLength: p + suffix, overflow: overflow,
                payload: at + RunFile.overflowInline + 4)
        }
        return Cell(
            stored: UnsafeRawBufferPointer(start: base + at, count: suffix), keyLength: p + suffix, overflow: 0, payload: at + suffix)
    }

    /// Where entry `i`'s payload starts.
    @inline(__always) func payload(_ i: Int) -> UnsafeRawPointer {
        if layout.keyWidth != nil { return fixedKey(i) + width }
        return base + cell(i).payload
    }

    /// Inner pages: the child page of entry `i`.
    @inline(__always) func child(_ i: Int) -> UInt32 { UInt32(littleEndian: payload(i).loadUnaligned(as: UInt32.self)) }
    /// Inner pages: the rank base of entry `i`.
    @inline(__always) func rankBase(_ i: Int) -> Int32 { Int32(littleEndian: payload(i).loadUnaligned(fromByteOffset: 4, as: Int32.self)) }

    /// LEB128 at `at` inside the page's first `limit` bytes (nil if it runs past them or past 10
    /// bytes).
    static func readVarint(_ base: UnsafeRawPointer, _ at: inout Int, limit: Int = RunFile.pageSize) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while at < limit, shift < 64 {
            let b = base.load(fromByteOffset: at, as: UInt8.self)
            at += 1
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }
}

/// A sealed run's key and the heap copy its pages are opened into: `pageCount × 4096` bytes,
/// allocated at open and written page by page on first use (the memory of a page never used is
/// never touched), under `lock`. Lives as long as its ``MappedRun``.
final class SealedPages: @unchecked Sendable {
    /// K_run.
    let key: any AEADKey
    /// The copy, page `n` at `n × 4096` (page 0, the header, is never written).
    let plain: UnsafeMutableRawPointer
    /// Held while a page is opened into the copy.
    let lock = Mutex<Void>(())

    init(key: any AEADKey, byteCount: Int) {
        self.key = key
        plain = .allocate(byteCount: max(byteCount, 1), alignment: 16)
    }

    deinit { plain.deallocate() }
}
