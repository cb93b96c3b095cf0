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
package final class MappedRun: @unchecked Sendable {
    /// The checked header.
    package let header: RunHeader
    /// The file's path (for errors).
    package let path: String
    let data: RunBytes
    private let words: Int
    private let verified: UnsafeMutablePointer<Atomic<UInt64>>

    /// A run over `data`, whose header page must decode (``RunHeader/decode(_:)``) and whose
    /// length must be its page count times 4096. Throws `.corruption` otherwise.
    package init(data: RunBytes, path: String) throws {
        let header: RunHeader
        do throws(_DecodeError) {
            header = try RunHeader.decode(data.bytes)
        } catch {
            throw LogStoreError(.corruption, "Run file header is damaged: \(error.reason).", path: path, offset: UInt64(error.offset))
        }
        guard UInt64(data.bytes.count) == UInt64(header.pageCount) * UInt64(RunFile.pageSize) else {
            throw LogStoreError(
                .corruption, "Run file holds \(data.bytes.count) bytes, its header says \(header.pageCount) pages.", path: path)
        }
        self.header = header
        self.path = path
        self.data = data
        words = Int(header.pageCount) / 64 + 1
        verified = .allocate(capacity: words)
        for i in 0..<words { (verified + i).initialize(to: Atomic(0)) }
    }

    /// Opens the run file at `path`: maps it (or reads it whole on a file system that cannot
    /// map) and checks its header. Throws `.corruption` for a damaged or short file, `.io` when
    /// it cannot be opened.
    package static func open(path: String, fs: any FileSystem) throws -> MappedRun {
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
            return try MappedRun(data: RunBytes(mapping: mapping), path: path)
        }
        return try MappedRun(data: RunBytes(copying: try file.read(at: 0, count: Int(expected))), path: path)
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
    /// caller expects it at (``RunFile/overflowLevel`` for overflow pages). Throws `.corruption`.
    @inline(__always)
    func page(_ number: UInt32, level: UInt8) throws -> UnsafeRawPointer {
        guard number >= 1, number < header.pageCount, let base = data.bytes.baseAddress else {
            throw damaged("a reference to page \(number) outside the run", page: 0)
        }
        let p = base + Int(number) * RunFile.pageSize
        let w = Int(number) >> 6
        let bit = UInt64(1) << UInt64(number & 63)
        if verified[w].load(ordering: .relaxed) & bit == 0 {
            try check(p, number: number)
            verified[w].bitwiseOr(bit, ordering: .relaxed)
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

    /// Checks one page: its CRC, its kind, and that every count, offset and page number it holds
    /// stays inside the page and the run.
    private func check(_ p: UnsafeRawPointer, number: UInt32) throws {
        let stored = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
        guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(start: p + 4, count: RunFile.pageSize - 4))) == stored else {
            throw damaged("checksum mismatch", page: number)
        }
        guard p.load(fromByteOffset: 5, as: UInt8.self) == header.kind.rawValue else {
            throw damaged("a page of another kind", page: number)
        }
        let level = p.load(fromByteOffset: 4, as: UInt8.self)
        let count = Int(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        if level == RunFile.overflowLevel {
            let next = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: RunPage.bodyStart, as: UInt32.self))
            guard count >= 1, count <= RunFile.pageSize - RunPage.overflowDataStart, next < header.pageCount else {
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
            guard view.fixedStart + count * (w + view.payloadSize) <= RunFile.pageSize else {
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
        guard start + 2 <= RunFile.pageSize else { throw damaged("no room for the prefix length", page: number) }
        let prefix = view.prefixLength
        let slots = start + 2 + prefix
        guard prefix <= RunFile.maxPrefix, slots + 2 * view.count <= RunFile.pageSize else {
            throw damaged("prefix or slots beyond the page", page: number)
        }
        for i in 0..<view.count {
            let cell = view.slot(i)
            guard cell >= slots + 2 * view.count, cell < RunFile.pageSize else { throw damaged("a slot outside the cells", page: number) }
            var at = cell
            guard let suffix = RunPageView.readVarint(view.base, &at), suffix <= UInt64(UInt32.max) else {
                throw damaged("a cell's length runs off the page", page: number)
            }
            let total = prefix + Int(suffix)
            if total > RunFile.maxInlineKey {
                guard at + RunFile.overflowInline + 4 + view.payloadSize <= RunFile.pageSize, Int(suffix) >= RunFile.overflowInline else {
                    throw damaged("an overflow cell runs off the page", page: number)
                }
                let overflow = UInt32(littleEndian: view.base.loadUnaligned(fromByteOffset: at + RunFile.overflowInline, as: UInt32.self))
                guard overflow >= 1, overflow < header.pageCount else { throw damaged("an overflow link outside the run", page: number) }
            } else {
                guard at + Int(suffix) + view.payloadSize <= RunFile.pageSize else {
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
        let capacity = RunFile.pageSize - RunPage.overflowDataStart
        var pages = 0
        while out.count < length {
            pages += 1
            guard page != 0, pages <= length / capacity + 1 else { throw damaged("an overflow chain shorter than its key", page: page) }
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

    /// LEB128 at `at` inside the page (nil if it runs off the page or past 10 bytes).
    static func readVarint(_ base: UnsafeRawPointer, _ at: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while at < RunFile.pageSize, shift < 64 {
            let b = base.load(fromByteOffset: at, as: UInt8.self)
            at += 1
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }
}
