#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a ``RunWriter`` puts its pages: a file (``RunFileSink``) or memory (``RunMemorySink``).
package protocol RunSink: AnyObject {
    /// Stores the 4 KiB page `number`. Pages come in any order, each exactly once.
    func write(page number: UInt32, _ bytes: UnsafeRawBufferPointer) throws
    /// Called once after the last page (the header).
    func finish() throws
}

/// Writes a run's pages to a file, gathering consecutive pages into writes of up to 256 KiB; the
/// header page (page 0, which comes last) joins the pages after it when none was written yet, so
/// a small run takes one write. Does not sync: the caller syncs the file (and its directory)
/// before anything names the run.
package final class RunFileSink: RunSink {
    let file: any FileSystemFile
    private var buffer: [UInt8] = []
    private var bufferStart: UInt32 = 0
    private static let batch = 64

    /// A sink writing `file` (empty, opened for writing).
    package init(file: any FileSystemFile) { self.file = file }

    /// See ``RunSink/write(page:_:)``.
    package func write(page number: UInt32, _ bytes: UnsafeRawBufferPointer) throws {
        if number &+ 1 == bufferStart && !buffer.isEmpty {
            // The page just before the buffered ones (page 0, the header, of a small run) joins
            // them: one write.
            var joined: [UInt8] = []
            joined.reserveCapacity(bytes.count + buffer.count)
            joined.append(contentsOf: bytes)
            joined.append(contentsOf: buffer)
            buffer = joined
            bufferStart = number
            return
        }
        let next = bufferStart &+ UInt32(buffer.count / RunFile.pageSize)
        if !buffer.isEmpty && (number != next || buffer.count >= Self.batch * RunFile.pageSize) { try flush() }
        if buffer.isEmpty { bufferStart = number }
        buffer.append(contentsOf: bytes)
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        try file.write(buffer, at: UInt64(bufferStart) * UInt64(RunFile.pageSize))
        buffer.removeAll(keepingCapacity: true)
    }

    /// See ``RunSink/finish()``.
    package func finish() throws { try flush() }
}

/// Collects a run's pages in memory (tests, fuzzing, and file systems that cannot map files).
package final class RunMemorySink: RunSink {
    /// The run file's bytes so far.
    package private(set) var bytes: [UInt8] = []

    /// An empty sink.
    package init() {}

    /// See ``RunSink/write(page:_:)``.
    package func write(page number: UInt32, _ page: UnsafeRawBufferPointer) throws {
        let start = Int(number) * RunFile.pageSize
        if bytes.count < start + RunFile.pageSize {
            bytes.append(contentsOf: [UInt8](repeating: 0, count: start + RunFile.pageSize - bytes.count))
        }
        bytes.withUnsafeMutableBytes { out in
            guard let base = out.baseAddress, let src = page.baseAddress else { return }
            (base + start).copyMemory(from: src, byteCount: min(page.count, RunFile.pageSize))
        }
    }

    /// See ``RunSink/finish()``.
    package func finish() throws {}
}

/// Builds a run file bottom-up from entries in ascending key order, streaming: leaves are written
/// as they fill, one fence per page is kept for the level above, and the inner levels and the
/// header are written by ``finish()``. Memory: one page per level plus the fences of one level
/// (one key per 4 KiB of the level below).
///
/// With a cipher (a run of an encrypted store) it packs every page into its first
/// ``RunFile/sealedPageSize`` bytes and seals it under the run's key before the sink sees it
/// (``RunFile``); the header page names the cipher and the run's salt.
///
/// Used on one thread at a time. Throws `.invalidArgument` for keys out of order or a payload of
/// the wrong size, the cipher's errors, and the sink's I/O errors.
package final class RunWriter {
    private var header: RunHeader
    private let sink: any RunSink
    private let payloadSize: Int
    private var nextPage: UInt32 = 1
    /// Bytes of each page the tree uses: 4096, or 4080 when pages are sealed.
    private let usable: Int
    /// The run's key K_run when its pages are sealed.
    private let sealKey: (any AEADKey)?

    /// Fences of the level being built: (first key, its overflow page or 0, page, firstRank).
    private var fences: [Fence] = []
    /// The leaf being filled.
    private var leaf: PageBuilder
    private var leafNumber: UInt32 = 0
    private var previousKey: [UInt8] = []
    private var hasPrevious = false
    private var rank: Int64 = 0
    private var entries: UInt64 = 0
    private var leaves: UInt32 = 0
    private var firstLeaf: UInt32 = 0

    struct Fence {
        var key: [UInt8]
        var overflow: UInt32
        var page: UInt32
        var rank: Int64
    }

    /// A writer of a clear run described by `header` (its counts are filled in by ``finish()``).
    package convenience init(header: RunHeader, sink: any RunSink) {
        self.init(header: header, sink: sink, key: nil)
    }

    /// A writer of a run described by `header`, sealed with `cipher` when one is given (an
    /// encrypted store's): the header gets the cipher's id and a new random salt, and the run's
    /// key is derived once, here, from the store id and run number in `header`. Nil: a clear run,
    /// as ``init(header:sink:)``. Throws `.invalidArgument` when the cipher gives a salt of
    /// another length, and the cipher's errors.
    package convenience init(header: RunHeader, sink: any RunSink, cipher: (any StoreCipher)?) throws {
        guard let cipher else {
            self.init(header: header, sink: sink, key: nil)
            return
        }
        var sealed = header
        sealed.cipher = cipher.algorithmID
        sealed.salt = cipher.randomBytes(StoreCrypto.saltByteCount)
        guard sealed.salt.count == StoreCrypto.saltByteCount else {
            throw LogStoreError(.invalidArgument, "A StoreCipher returned \(sealed.salt.count) random bytes for a 16-byte salt.")
        }
        let key = try StoreCrypto.runKey(cipher, storeID: header.storeId, runNumber: header.runNumber, salt: sealed.salt)
        self.init(header: sealed, sink: sink, key: key)
    }

    private init(header: RunHeader, sink: any RunSink, key: (any AEADKey)?) {
        self.header = header
        self.sink = sink
        sealKey = key
        usable = key == nil ? RunFile.pageSize : RunFile.sealedPageSize
        payloadSize = header.kind.payloadSize
        leaf = PageBuilder(layout: header.layout, isLeaf: true, payloadSize: header.kind.payloadSize, usable: usable)
    }

    /// Appends an entry; `key` must be greater than the previous one's and `payload` exactly the
    /// kind's payload size (a delta kind's first byte is its change byte).
    package func append(key: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) throws {
        guard payload.count == payloadSize else { throw LogStoreError(.invalidArgument, "A run entry's payload has the wrong size.") }
        if let w = header.layout.keyWidth, key.count != w {
            throw LogStoreError(.invalidArgument, "A run of \(w)-byte keys was given a key of another length.")
        }
        if hasPrevious {
            guard previousKey.withUnsafeBytes({ RunKeys.compare($0, key) }) < 0 else {
                throw LogStoreError(.invalidArgument, "Run entries must be appended in strictly ascending key order.")
            }
        }
        let contribution: Int64
        if header.kind.isDelta {
            guard let c = RunChange.contribution(payload[0]) else { throw LogStoreError(.invalidArgument, "Unknown change byte.") }
            contribution = Int64(c)
        } else {
            contribution = 1
        }
        var overflow: UInt32 = 0
        let long = key.count > RunFile.maxInlineKey
        if !leaf.fits(keyLength: key.count, sharing: leaf.isEmpty ? key.count : leaf.commonPrefix(with: key)) {
            try startLeaf()
        }
        if leaves == 0 { try startLeaf() }
        if long { overflow = try writeOverflow(key) }
        if leaf.isEmpty { fences.append(Fence(key: Array(key), overflow: overflow, page: leafNumber, rank: rank)) }
        leaf.append(key: key, overflow: overflow, payload: payload, contribution: contribution, rankBefore: rank)
        rank += contribution
        entries += 1
        previousKey.removeAll(keepingCapacity: true)
        previousKey.append(contentsOf: key)
        hasPrevious = true
    }

    /// Appends an entry of a primary kind from its key and location (and change byte for deltas).
    package func append(key: RecordKey, location: RecordLocation, change: UInt8? = nil) throws {
        let size = payloadSize
        try withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { p in
            guard let base = p.baseAddress else { return }
            if let change {
                base.storeBytes(of: change, as: UInt8.self)
                RunLocationCoding.write(location, to: base + 1)
            } else {
                RunLocationCoding.write(location, to: base)
            }
            let payload = UnsafeRawBufferPointer(start: base, count: min(size, 32))
            try key.withUnsafeBytes { try append(key: $0, payload: payload) }
        }
    }

    /// Finishes the leaf level, writes the inner levels and the header page, and hands the sink
    /// its last page. Returns the header as written.
    package func finish() throws -> RunHeader {
        var levels: UInt8 = 0
        var root: UInt32 = 0
        if leaves > 0 {
            try finishLeaf(next: 0)
            levels = 1
            root = fences[0].page
            while fences.count > 1 {
                fences = try writeInnerLevel(fences, level: levels)
                levels += 1
                guard Int(levels) <= RunFile.maxLevels else { throw LogStoreError(.invalidArgument, "A run needs too many levels.") }
                root = fences[0].page
            }
        }
        header.levels = levels
        header.entryCount = entries
        header.pageCount = nextPage
        header.rootPage = root
        header.firstLeaf = firstLeaf
        header.leafCount = leaves
        header.netCount = header.kind.isDelta ? rank : Int64(entries)
        // Copied into a zeroed page, not padded with `append(contentsOf: repeatElement(...))`:
        // unspecialized (debug) builds append that byte by byte through generic code, which made
        // writing small runs most of a checkpoint's time in the test suite.
        let encoded = header.encoded()
        var page = [UInt8](repeating: 0, count: RunFile.pageSize)
        page.withUnsafeMutableBytes { out in
            encoded.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(out.count))) }
        }
        try page.withUnsafeBytes { try sink.write(page: 0, $0) }
        try sink.finish()
        return header
    }

    // MARK: Pages

    private func allocate() -> UInt32 {
        defer { nextPage += 1 }
        return nextPage
    }

    /// Closes the current leaf (if any) and starts the next, giving the closed one its `nextLeaf`.
    private func startLeaf() throws {
        let number = allocate()
        if leaves > 0 { try finishLeaf(next: number) } else { firstLeaf = number }
        leafNumber = number
        leaves += 1
        leaf.reset()
    }

    /// Encodes the current leaf into the pending slot, writing the previous pending leaf first
    /// (its `nextLeaf` is the current one); `next` is the page after the current leaf (0: none).
    private func finishLeaf(next: UInt32) throws {
        guard !leaf.isEmpty else { return }
        var bytes = leaf.encode(level: 0, kind: header.kind)
        RunPage.setNextLeaf(next, in: &bytes)
        try emit(&bytes, number: leafNumber)
        leaf.reset()
    }

    /// Stores the CRC of plaintext page `number` (its first ``usable`` bytes) and hands the sink
    /// the page, sealed when the run is: ciphertext of the first 4080 bytes, then the tag.
    private func emit(_ page: inout [UInt8], number: UInt32) throws {
        RunPage.setChecksum(&page, usable: usable)
        guard let sealKey else {
            try page.withUnsafeBytes { try sink.write(page: number, $0) }
            return
        }
        let aad = StoreCrypto.pageAAD(runNumber: header.runNumber, page: number)
        var out = [UInt8](repeating: 0, count: RunFile.pageSize)
        try page.withUnsafeBytes { plain in
            try aad.withUnsafeBytes { a in
                try out.withUnsafeMutableBytes { o in
                    try sealKey.seal(
                        UnsafeRawBufferPointer(rebasing: plain[0..<RunFile.sealedPageSize]), nonce: StoreCrypto.pageNonce(page: number),
                        aad: a, into: o)
                }
            }
        }
        try out.withUnsafeBytes { try sink.write(page: number, $0) }
    }

    /// Writes `key` whole on a chain of overflow pages; returns the first page's number.
    private func writeOverflow(_ key: UnsafeRawBufferPointer) throws -> UInt32 {
        let capacity = usable - RunPage.overflowDataStart
        let pages = (key.count + capacity - 1) / capacity
        let first = nextPage
        for i in 0..<pages {
            let number = allocate()
            let start = i * capacity
            let end = min(key.count, start + capacity)
            var page = [UInt8](repeating: 0, count: RunFile.pageSize)
            RunPage.writeHeader(&page, level: RunFile.overflowLevel, kind: header.kind, count: end - start, firstRank: 0)
            let next: UInt32 = i + 1 < pages ? number + 1 : 0
            page.withUnsafeMutableBytes { p in
                p.storeBytes(of: next.littleEndian, toByteOffset: RunPage.bodyStart, as: UInt32.self)
                guard let base = p.baseAddress, let src = key.baseAddress else { return }
                (base + RunPage.overflowDataStart).copyMemory(from: src + start, byteCount: end - start)
            }
            try emit(&page, number: number)
        }
        return first
    }

    /// Writes one inner level over `children`; returns the fences of the pages written.
    private func writeInnerLevel(_ children: [Fence], level: UInt8) throws -> [Fence] {
        var out: [Fence] = []
        var page = PageBuilder(layout: header.layout, isLeaf: false, payloadSize: 8, usable: usable)
        var pageRank: Int64 = 0
        func flush() throws {
            guard !page.isEmpty else { return }
            let number = allocate()
            out[out.count - 1].page = number
            var bytes = page.encode(level: level, kind: header.kind)
            try emit(&bytes, number: number)
            page.reset()
        }
        for child in children {
            let fits = child.key.withUnsafeBytes { k in
                page.fits(keyLength: k.count, sharing: page.isEmpty ? k.count : page.commonPrefix(with: k))
            }
            if !fits { try flush() }
            if page.isEmpty {
                pageRank = child.rank
                out.append(Fence(key: child.key, overflow: child.overflow, page: 0, rank: child.rank))
            }
            let delta = child.rank - pageRank
            guard let rankBase = Int32(exactly: delta) else {
                throw LogStoreError(.invalidArgument, "A run is too large for its rank fields.")
            }
            var payload = [UInt8](repeating: 0, count: 8)
            payload.withUnsafeMutableBytes { p in
                p.storeBytes(of: child.page.littleEndian, toByteOffset: 0, as: UInt32.self)
                p.storeBytes(of: rankBase.littleEndian, toByteOffset: 4, as: Int32.self)
            }
            child.key.withUnsafeBytes { k in
                payload.withUnsafeBytes {
                    page.append(key: k, overflow: child.overflow, payload: $0, contribution: 0, rankBefore: pageRank)
                }
            }
        }
        try flush()
        return out
    }
}

/// One page being filled: its entries' keys and payloads, and an upper bound of its encoded size.
/// It fills the page's first `usable` bytes: 4096, or 4080 in a sealed run (the rest is the tag).
struct PageBuilder {
    let layout: RunLayout
    let isLeaf: Bool
    let payloadSize: Int
    let usable: Int
    private var keys: [UInt8] = []
    private var keyEnds: [Int] = []
    private var overflows: [UInt32] = []
    private var payloads: [UInt8] = []
    private var firstRank: Int64 = 0
    /// Variable layout: the keys' common prefix length so far (capped), and the sum of their
    /// cell sizes without a prefix (upper bounds).
    private var prefix = 0
    private var cellBytes = 0
    private var inlineKeys = 0

    init(layout: RunLayout, isLeaf: Bool, payloadSize: Int, usable: Int) {
        self.layout = layout
        self.isLeaf = isLeaf
        self.payloadSize = payloadSize
        self.usable = usable
    }

    var isEmpty: Bool { keyEnds.isEmpty }
    var count: Int { keyEnds.count }

    mutating func reset() {
        keys.removeAll(keepingCapacity: true)
        keyEnds.removeAll(keepingCapacity: true)
        overflows.removeAll(keepingCapacity: true)
        payloads.removeAll(keepingCapacity: true)
        prefix = 0
        cellBytes = 0
        inlineKeys = 0
    }

    /// The length of the prefix `key` shares with the page's first key (capped).
    func commonPrefix(with key: UnsafeRawBufferPointer) -> Int {
        let first = keyEnds.isEmpty ? 0 : keyEnds[0]
        let n = min(first, key.count, RunFile.maxPrefix)
        var i = 0
        while i < n && keys[i] == key[i] { i += 1 }
        return i
    }

    /// Bytes of a cell for a key of `length` (prefix excluded from the key when it is inline).
    static func cellSize(keyLength length: Int, payload: Int, prefix: Int) -> Int {
        let suffix = length - prefix
        let stored = length > RunFile.maxInlineKey ? RunFile.overflowInline + 4 : suffix
        return RunKeys.varintSize(UInt64(length)) + stored + payload
    }

    /// Whether one more entry with a key of `length` bytes (sharing `shared` bytes with the first
    /// key) fits in the page.
    func fits(keyLength length: Int, sharing shared: Int) -> Bool {
        if isEmpty { return true }
        if let w = layout.keyWidth {
            let entry = isLeaf ? w + payloadSize : w + 8
            let start = isLeaf ? RunPage.bodyStart + 4 : RunPage.bodyStart
            return start + (count + 1) * entry <= usable
        }
        let p = min(prefix, shared)
        // Cell sizes were summed without a prefix; every inline key saves `p` bytes.
        let withNew =
            cellBytes - inlineKeys * p
            + Self.cellSize(keyLength: length, payload: payloadSize, prefix: length > RunFile.maxInlineKey ? 0 : p)
        let start = RunPage.bodyStart + (isLeaf ? 4 : 0) + 2 + p
        return start + (count + 1) * 2 + withNew <= usable
    }

    mutating func append(
        key: UnsafeRawBufferPointer, overflow: UInt32, payload: UnsafeRawBufferPointer, contribution: Int64, rankBefore: Int64
    ) {
        if isEmpty {
            firstRank = rankBefore
            prefix = min(key.count, RunFile.maxPrefix)
        } else {
            prefix = min(prefix, commonPrefix(with: key))
        }
        keys.append(contentsOf: key)
        keyEnds.append(keys.count)
        overflows.append(overflow)
        payloads.append(contentsOf: payload)
        cellBytes += Self.cellSize(keyLength: key.count, payload: payloadSize, prefix: 0)
        if key.count <= RunFile.maxInlineKey { inlineKeys += 1 }
    }

    /// The page's bytes (CRC and, for leaves, `nextLeaf` still to be set).
    func encode(level: UInt8, kind: RunKind) -> [UInt8] {
        var page = [UInt8](repeating: 0, count: RunFile.pageSize)
        RunPage.writeHeader(&page, level: level, kind: kind, count: count, firstRank: firstRank)
        page.withUnsafeMutableBytes { p in
            guard let base = p.baseAddress else { return }
            keys.withUnsafeBytes { kb in
                payloads.withUnsafeBytes { vb in
                    // Empty buffers (no key bytes, no payloads) are read through a dummy base.
                    let k = kb.baseAddress ?? UnsafeRawPointer(base)
                    let v = vb.baseAddress ?? UnsafeRawPointer(base)
                    if let w = layout.keyWidth {
                        var at = RunPage.bodyStart + (isLeaf ? 4 : 0)
                        for i in 0..<count {
                            (base + at).copyMemory(from: k + i * w, byteCount: w)
                            if payloadSize > 0 { (base + at + w).copyMemory(from: v + i * payloadSize, byteCount: payloadSize) }
                            at += w + payloadSize
                        }
                        return
                    }
                    let p0 = min(prefix, RunFile.maxPrefix)
                    var at = RunPage.bodyStart + (isLeaf ? 4 : 0)
                    p.storeBytes(of: UInt16(p0).littleEndian, toByteOffset: at, as: UInt16.self)
                    at += 2
                    if p0 > 0 { (base + at).copyMemory(from: k, byteCount: p0) }
                    at += p0
                    let slots = at
                    var end = usable
                    for i in 0..<count {
                        let start = i == 0 ? 0 : keyEnds[i - 1]
                        let length = keyEnds[i] - start
                        let suffix = length - p0
                        let long = length > RunFile.maxInlineKey
                        let stored = long ? RunFile.overflowInline + 4 : suffix
                        let size = RunKeys.varintSize(UInt64(suffix)) + stored + payloadSize
                        end -= size
                        p.storeBytes(of: UInt16(end).littleEndian, toByteOffset: slots + 2 * i, as: UInt16.self)
                        var c = end + RunKeys.writeVarint(UInt64(suffix), to: base + end)
                        let inline = long ? RunFile.overflowInline : suffix
                        if inline > 0 { (base + c).copyMemory(from: k + start + p0, byteCount: inline) }
                        c += inline
                        if long {
                            p.storeBytes(of: overflows[i].littleEndian, toByteOffset: c, as: UInt32.self)
                            c += 4
                        }
                        if payloadSize > 0 { (base + c).copyMemory(from: v + i * payloadSize, byteCount: payloadSize) }
                    }
                }
            }
        }
        return page
    }
}

/// Page-level helpers shared by the writer, the reader and the validator.
enum RunPage {
    /// Where every page's body starts.
    static let bodyStart = RunFile.pageHeaderSize
    /// Where an overflow page's data starts (after its `next` field).
    static let overflowDataStart = RunFile.pageHeaderSize + 4

    static func writeHeader(_ page: inout [UInt8], level: UInt8, kind: RunKind, count: Int, firstRank: Int64) {
        page.withUnsafeMutableBytes { p in
            p.storeBytes(of: level, toByteOffset: 4, as: UInt8.self)
            p.storeBytes(of: kind.rawValue, toByteOffset: 5, as: UInt8.self)
            p.storeBytes(of: UInt16(truncatingIfNeeded: count).littleEndian, toByteOffset: 6, as: UInt16.self)
            p.storeBytes(of: firstRank.littleEndian, toByteOffset: 8, as: Int64.self)
        }
    }

    static func setNextLeaf(_ next: UInt32, in page: inout [UInt8]) {
        page.withUnsafeMutableBytes { $0.storeBytes(of: next.littleEndian, toByteOffset: bodyStart, as: UInt32.self) }
    }

    /// Stores the page's CRC: masked CRC-32C of bytes 4..<`usable` (4096 in a clear run, 4080 in
    /// the plaintext of a sealed one).
    static func setChecksum(_ page: inout [UInt8], usable: Int) {
        let crc = page.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4..<usable]))) }
        page.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self) }
    }
}

/// Byte-string helpers: comparison and varints over raw buffers.
enum RunKeys {
    /// Negative, zero or positive as `a` sorts before, equal to or after `b` (bytes unsigned,
    /// lexicographic, a prefix first).
    @inline(__always)
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        if n > 0, let x = a.baseAddress, let y = b.baseAddress {
            let c = memcmp(x, y, n)
            if c != 0 { return Int(c) }
        }
        return a.count - b.count
    }

    /// `memcmp` of `n` bytes.
    @inline(__always)
    static func memcompare(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Int { Int(memcmp(a, b, n)) }

    static func varintSize(_ v: UInt64) -> Int {
        var v = v
        var n = 1
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }

    /// Writes `v` as LEB128 at `p`; returns the bytes written.
    static func writeVarint(_ v: UInt64, to p: UnsafeMutableRawPointer) -> Int {
        var v = v
        var n = 0
        while v >= 0x80 {
            p.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: n, as: UInt8.self)
            v >>= 7
            n += 1
        }
        p.storeBytes(of: UInt8(v), toByteOffset: n, as: UInt8.self)
        return n + 1
    }
}
