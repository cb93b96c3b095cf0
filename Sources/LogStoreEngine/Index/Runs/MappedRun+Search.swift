extension MappedRun {
    // MARK: Comparing a key with a page's entries

    /// How `query` compares with the prefix every key of a slotted page shares: negative, zero
    /// (it starts with the prefix) or positive. Constant per page, so worked out once per page.
    @inline(__always)
    static func comparePrefix(_ query: UnsafeRawBufferPointer, _ view: RunPageView) -> Int {
        let p = view.prefixLength
        guard p > 0 else { return 0 }
        let n = min(query.count, p)
        if n > 0, let q = query.baseAddress {
            let c = RunKeys.memcompare(q, view.base + view.slottedStart + 2, n)
            if c != 0 { return c }
        }
        return query.count < p ? -1 : 0
    }

    /// How `query` compares with the key of entry `i` of `view` (negative: `query` sorts first).
    /// `prefixOrder` is ``comparePrefix(_:_:)`` for slotted pages. Throws `.corruption` for a
    /// damaged overflow chain.
    @inline(__always)
    func compare(_ query: UnsafeRawBufferPointer, _ view: RunPageView, _ i: Int, prefixOrder: Int) throws -> Int {
        if let w = header.layout.keyWidth {
            return RunKeys.compare(query, UnsafeRawBufferPointer(start: view.fixedKey(i), count: w))
        }
        if prefixOrder != 0 { return prefixOrder }
        let p = view.prefixLength
        let rest = UnsafeRawBufferPointer(rebasing: query[p...])
        let cell = view.cell(i)
        guard cell.overflow != 0 else { return RunKeys.compare(rest, cell.stored) }
        let n = min(rest.count, RunFile.overflowInline)
        if n > 0, let r = rest.baseAddress, let s = cell.stored.baseAddress {
            let c = RunKeys.memcompare(r, s, n)
            if c != 0 { return c }
        }
        if rest.count <= RunFile.overflowInline { return -1 }
        let whole = try overflowKey(first: cell.overflow, length: cell.keyLength)
        return whole.withUnsafeBytes { RunKeys.compare(query, $0) }
    }

    /// The first entry of `view` whose key is `>= query` (`strict`: `> query`).
    @inline(__always)
    func searchPage(_ query: UnsafeRawBufferPointer, _ view: RunPageView, strict: Bool) throws -> Int {
        let order = header.layout == .variable ? Self.comparePrefix(query, view) : 0
        var lo = 0
        var hi = view.count
        if header.layout == .fixed8, query.count == 8, let q = query.baseAddress {
            // The hot path of a point read: keys as big-endian words.
            let k = UInt64(bigEndian: q.loadUnaligned(as: UInt64.self))
            while lo < hi {
                let mid = (lo + hi) &>> 1
                let e = UInt64(bigEndian: view.fixedKey(mid).loadUnaligned(as: UInt64.self))
                if e < k || (strict && e == k) { lo = mid &+ 1 } else { hi = mid }
            }
            return lo
        }
        while lo < hi {
            let mid = (lo + hi) &>> 1
            let c = try compare(query, view, mid, prefixOrder: order)
            if c > 0 || (strict && c == 0) { lo = mid &+ 1 } else { hi = mid }
        }
        return lo
    }

    /// Descends from the root to the leaf that holds `query` (or would), calling `visit` with
    /// each inner page and the child taken. Returns the leaf.
    @inline(__always)
    func descend(to query: UnsafeRawBufferPointer, _ visit: (RunPageView, Int) -> Void = { _, _ in }) throws -> (RunPageView, UInt32) {
        var number = header.rootPage
        var level = header.levels - 1
        while level > 0 {
            let view = RunPageView(try page(number, level: level), run: self, isLeaf: false)
            let c = max(0, try searchPage(query, view, strict: true) - 1)
            visit(view, c)
            number = view.child(c)
            level -= 1
        }
        return (RunPageView(try page(number, level: 0), run: self, isLeaf: true), number)
    }

    // MARK: Lookups

    /// The payload stored under `query` (valid while this run lives), or nil. O(log n): one
    /// page per level. Throws `.corruption` for a damaged page.
    package func find(_ query: UnsafeRawBufferPointer) throws -> UnsafeRawPointer? {
        guard header.levels > 0 else { return nil }
        let (leaf, _) = try descend(to: query)
        let i = try searchPage(query, leaf, strict: false)
        guard i < leaf.count else { return nil }
        let order = header.layout == .variable ? Self.comparePrefix(query, leaf) : 0
        return try compare(query, leaf, i, prefixOrder: order) == 0 ? leaf.payload(i) : nil
    }

    /// Base runs: how many entries are smaller than `query`. Delta runs: the sum of the
    /// contributions (+1, −1, 0) of the entries smaller than it. O(log n) (plus a scan of one
    /// leaf for delta runs).
    package func rank(of query: UnsafeRawBufferPointer) throws -> Int {
        guard header.levels > 0 else { return 0 }
        let (leaf, number) = try descend(to: query)
        let i = try searchPage(query, leaf, strict: false)
        if !header.kind.isDelta { return Int(leaf.firstRank) + i }
        var net = Int(leaf.firstRank)
        for j in 0..<i {
            guard let c = RunChange.contribution(leaf.payload(j).load(as: UInt8.self)) else {
                throw damaged("an unknown change byte", page: number)
            }
            net += c
        }
        return net
    }

    /// A cursor on the first entry whose key is `>= key` (the first entry if nil), or past the
    /// end.
    package func cursor(from key: UnsafeRawBufferPointer?) throws -> RunCursor {
        let c = RunCursor(self)
        try c.seek(atLeast: key)
        return c
    }

    /// A cursor on the last entry whose key is `< key` (the last entry if nil), or before the
    /// start.
    package func cursor(below key: UnsafeRawBufferPointer?) throws -> RunCursor {
        let c = RunCursor(self)
        try c.seek(below: key)
        return c
    }

    /// Base runs: a cursor on the entry at `offset` in key order (past the end when `offset >=
    /// entryCount`). O(log n) from the rank bases.
    package func cursor(atOffset offset: Int) throws -> RunCursor {
        let c = RunCursor(self)
        try c.seek(offset: offset)
        return c
    }
}

/// A position in a ``MappedRun``, moving forward or backward entry by entry. Holds the path from
/// the root, so moving to a neighbouring leaf reads no page twice. Its ``key`` and ``payload``
/// are valid until it moves. One thread at a time.
package final class RunCursor {
    package let run: MappedRun
    private var pages: [RunPageView] = []
    private var numbers: [UInt32] = []
    private var indexes: [Int] = []
    private var keyStorage: UnsafeMutableRawPointer
    private var keyCapacity = 64
    private var keyLength = 0
    /// Where the current entry's payload starts (valid while the run lives).
    package private(set) var payload: UnsafeRawPointer
    /// Whether the cursor is on an entry.
    package private(set) var isValid = false

    init(_ run: MappedRun) {
        self.run = run
        keyStorage = .allocate(byteCount: 64, alignment: 8)
        payload = UnsafeRawPointer(keyStorage)
        pages.reserveCapacity(Int(run.header.levels))
    }

    deinit { keyStorage.deallocate() }

    /// The current entry's key (valid until the cursor moves).
    package var key: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: keyStorage, count: keyLength) }

    /// A delta run's current change byte.
    package var change: UInt8 { payload.load(as: UInt8.self) }

    private func view(_ number: UInt32, level: Int) throws -> RunPageView {
        RunPageView(try run.page(number, level: UInt8(level)), run: run, isLeaf: level == 0)
    }

    /// Descends from the root choosing, at each inner page, the child `choose` gives; at the
    /// leaf, the entry `leafIndex` gives (which may be `count`: past its end, or −1).
    private func descend(_ choose: (RunPageView) throws -> Int, leafIndex: (RunPageView) throws -> Int) throws {
        pages.removeAll(keepingCapacity: true)
        numbers.removeAll(keepingCapacity: true)
        indexes.removeAll(keepingCapacity: true)
        isValid = false
        guard run.header.levels > 0 else { return }
        var number = run.header.rootPage
        var level = Int(run.header.levels) - 1
        while level >= 0 {
            let v = try view(number, level: level)
            pages.append(v)
            numbers.append(number)
            if level == 0 {
                indexes.append(try leafIndex(v))
            } else {
                let c = try choose(v)
                indexes.append(c)
                number = v.child(c)
            }
            level -= 1
        }
    }

    /// Moves to the first entry `>= key` (the first entry if nil).
    package func seek(atLeast key: UnsafeRawBufferPointer?) throws {
        if let key {
            try descend(
                { max(0, try run.searchPage(key, $0, strict: true) - 1) }, leafIndex: { try run.searchPage(key, $0, strict: false) })
        } else {
            try descend({ _ in 0 }, leafIndex: { _ in 0 })
        }
        try settleForward()
    }

    /// Moves to the last entry `< key` (the last entry if nil).
    package func seek(below key: UnsafeRawBufferPointer?) throws {
        if let key {
            try descend(
                { max(0, try run.searchPage(key, $0, strict: false) - 1) }, leafIndex: { try run.searchPage(key, $0, strict: false) - 1 })
        } else {
            try descend({ $0.count - 1 }, leafIndex: { $0.count - 1 })
        }
        try settleBackward()
    }

    /// Moves to the entry at `offset` (base runs).
    package func seek(offset: Int) throws {
        guard offset >= 0, offset < run.entryCount else {
            pages.removeAll(keepingCapacity: true)
            numbers.removeAll(keepingCapacity: true)
            indexes.removeAll(keepingCapacity: true)
            isValid = false
            return
        }
        let target = Int64(offset)
        try descend(
            { v in
                // The last child whose first rank is at most the target.
                var lo = 0
                var hi = v.count
                while lo < hi {
                    let mid = (lo + hi) &>> 1
                    if v.firstRank + Int64(v.rankBase(mid)) <= target { lo = mid + 1 } else { hi = mid }
                }
                return max(0, lo - 1)
            },
            leafIndex: { v in
                let i = Int(target - v.firstRank)
                guard i >= 0, i < v.count else { throw run.damaged("rank bases that disagree with the leaves", page: 0) }
                return i
            })
        try settleForward()
    }

    /// After a descent or a step: if the leaf index is past the leaf's end, climbs to the next
    /// leaf; loads the key of the entry it lands on.
    private func settleForward() throws {
        guard let leaf = pages.last, var i = indexes.last else { return }
        if i < leaf.count {
            try loadKey()
            return
        }
        // Climb until a page has a next child, then take the leftmost path down.
        var level = 1
        while level < pages.count {
            let d = pages.count - 1 - level
            if indexes[d] + 1 < pages[d].count {
                indexes[d] += 1
                var number = pages[d].child(indexes[d])
                var depth = d + 1
                while depth < pages.count {
                    let lv = pages.count - 1 - depth
                    let v = try view(number, level: lv)
                    pages[depth] = v
                    numbers[depth] = number
                    indexes[depth] = 0
                    if lv > 0 { number = v.child(0) }
                    depth += 1
                }
                try loadKey()
                return
            }
            level += 1
        }
        i = leaf.count
        indexes[indexes.count - 1] = i
        isValid = false
    }

    /// The backward twin of ``settleForward()``: from index −1, climbs to the previous leaf.
    private func settleBackward() throws {
        guard let i = indexes.last else { return }
        if i >= 0 {
            try loadKey()
            return
        }
        var level = 1
        while level < pages.count {
            let d = pages.count - 1 - level
            if indexes[d] > 0 {
                indexes[d] -= 1
                var number = pages[d].child(indexes[d])
                var depth = d + 1
                while depth < pages.count {
                    let lv = pages.count - 1 - depth
                    let v = try view(number, level: lv)
                    pages[depth] = v
                    numbers[depth] = number
                    indexes[depth] = v.count - 1
                    if lv > 0 { number = v.child(v.count - 1) }
                    depth += 1
                }
                try loadKey()
                return
            }
            level += 1
        }
        isValid = false
    }

    /// Moves to the next entry; returns whether there is one.
    @discardableResult
    package func next() throws -> Bool {
        guard isValid else { return false }
        indexes[indexes.count - 1] += 1
        try settleForward()
        return isValid
    }

    /// Moves to the previous entry; returns whether there is one.
    @discardableResult
    package func previous() throws -> Bool {
        guard isValid else { return false }
        indexes[indexes.count - 1] -= 1
        try settleBackward()
        return isValid
    }

    private func loadKey() throws {
        guard let leaf = pages.last, let i = indexes.last else { return }
        isValid = true
        payload = leaf.payload(i)
        if let w = run.header.layout.keyWidth {
            reserve(w)
            keyStorage.copyMemory(from: leaf.fixedKey(i), byteCount: w)
            keyLength = w
            return
        }
        let cell = leaf.cell(i)
        if cell.overflow != 0 {
            let whole = try run.overflowKey(first: cell.overflow, length: cell.keyLength)
            reserve(whole.count)
            whole.withUnsafeBytes { if let b = $0.baseAddress { keyStorage.copyMemory(from: b, byteCount: $0.count) } }
            keyLength = whole.count
            return
        }
        let p = leaf.prefixLength
        reserve(p + cell.stored.count)
        if p > 0 { keyStorage.copyMemory(from: leaf.base + leaf.slottedStart + 2, byteCount: p) }
        if let s = cell.stored.baseAddress, cell.stored.count > 0 { (keyStorage + p).copyMemory(from: s, byteCount: cell.stored.count) }
        keyLength = p + cell.stored.count
    }

    private func reserve(_ n: Int) {
        guard n > keyCapacity else { return }
        keyStorage.deallocate()
        keyCapacity = max(n, keyCapacity * 2)
        keyStorage = .allocate(byteCount: keyCapacity, alignment: 8)
    }
}
