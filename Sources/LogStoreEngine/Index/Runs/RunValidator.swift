/// Checks a whole run file (`logstore-compact verify`, the fuzz target, tests): every page's CRC
/// and structure, keys strictly ascending inside each page and across leaves, every fence equal to
/// the first key of its child, rank bases and first ranks consistent with the entries, the leaves'
/// `nextLeaf` chain in key order, and the header's counts equal to what the pages hold. Reads every
/// page; never traps on any bytes.
package enum RunValidator {
    /// What a valid run holds.
    package struct Summary: Equatable, Sendable {
        /// Entries in the leaves.
        package var entries: Int
        /// Their summed contributions (the entry count for base runs).
        package var net: Int
        /// Pages of the tree (leaves and inner pages).
        package var treePages: Int
        /// Overflow pages.
        package var overflowPages: Int
    }

    /// Validates `run`; throws `.corruption` naming the first problem and its page.
    package static func validate(_ run: MappedRun) throws -> Summary {
        let h = run.header
        guard h.levels > 0 else { return Summary(entries: 0, net: 0, treePages: 0, overflowPages: 0) }
        var state = Walk(run: run)
        let top = try state.visit(h.rootPage, level: Int(h.levels) - 1, expectedRank: 0)
        guard top.firstKey == nil || state.leafOrder.first == h.firstLeaf else {
            throw run.damaged("the header's first leaf is not the tree's first leaf", page: h.firstLeaf)
        }
        guard state.leafOrder.count == Int(h.leafCount) else {
            throw run.damaged("the header counts \(h.leafCount) leaves, the tree holds \(state.leafOrder.count)", page: 0)
        }
        guard state.entries == Int(h.entryCount), state.net == Int(h.netCount) else {
            throw run.damaged("the header's entry or net count differs from the leaves'", page: 0)
        }
        // The leaves' links visit them in key order.
        for (i, number) in state.leafOrder.enumerated() {
            let view = RunPageView(try run.page(number, level: 0), run: run, isLeaf: true)
            let expected: UInt32 = i + 1 < state.leafOrder.count ? state.leafOrder[i + 1] : 0
            guard view.nextLeaf == expected else { throw run.damaged("a leaf linked out of key order", page: number) }
        }
        guard state.treePages + state.overflow.count == Int(h.pageCount) - 1 else {
            throw run.damaged("pages that belong to no entry", page: 0)
        }
        return Summary(entries: state.entries, net: state.net, treePages: state.treePages, overflowPages: state.overflow.count)
    }

    /// The key of entry `i` of `view`, whole.
    static func key(_ run: MappedRun, _ view: RunPageView, _ i: Int) throws -> [UInt8] {
        if let w = run.header.layout.keyWidth { return Array(UnsafeRawBufferPointer(start: view.fixedKey(i), count: w)) }
        let cell = view.cell(i)
        if cell.overflow != 0 {
            let whole = try run.overflowKey(first: cell.overflow, length: cell.keyLength)
            guard whole.count == cell.keyLength, whole.starts(with: view.prefix),
                whole.dropFirst(view.prefixLength).starts(with: cell.stored)
            else { throw run.damaged("an overflow key that differs from its cell", page: cell.overflow) }
            return whole
        }
        return Array(view.prefix) + Array(cell.stored)
    }

    private struct Walk {
        let run: MappedRun
        var seen = Set<UInt32>()
        var overflow = Set<UInt32>()
        var leafOrder: [UInt32] = []
        var entries = 0
        var net = 0
        var treePages = 0
        var lastKey: [UInt8]? = nil

        init(run: MappedRun) { self.run = run }

        /// Visits the subtree at `number`; returns its first key.
        mutating func visit(_ number: UInt32, level: Int, expectedRank: Int64) throws -> (firstKey: [UInt8]?, rank: Int64) {
            guard seen.insert(number).inserted, !overflow.contains(number) else { throw run.damaged("a page reached twice", page: number) }
            treePages += 1
            let view = RunPageView(try run.page(number, level: UInt8(level)), run: run, isLeaf: level == 0)
            guard view.firstRank == expectedRank else {
                throw run.damaged("a first rank that differs from the entries before it", page: number)
            }
            var first: [UInt8]? = nil
            if level == 0 {
                leafOrder.append(number)
                var rank = view.firstRank
                for i in 0..<view.count {
                    let k = try key(run, view, i)
                    try noteOverflow(view, i)
                    if let lastKey {
                        guard RunKeys.compareArrays(lastKey, k) < 0 else { throw run.damaged("keys out of order", page: number) }
                    }
                    lastKey = k
                    if i == 0 { first = k }
                    let c: Int
                    if run.header.kind.isDelta {
                        let change = view.payload(i).load(as: UInt8.self)
                        guard let contribution = RunChange.contribution(change), run.header.kind.isPrimary || contribution != 0 else {
                            throw run.damaged("an unknown change byte", page: number)
                        }
                        c = contribution
                    } else {
                        c = 1
                    }
                    rank += Int64(c)
                    net += c
                    entries += 1
                }
                return (first, rank)
            }
            var rank = view.firstRank
            for i in 0..<view.count {
                let fence = try key(run, view, i)
                try noteOverflow(view, i)
                let childRank = view.firstRank + Int64(view.rankBase(i))
                guard childRank == rank else { throw run.damaged("a rank base that differs from its child", page: number) }
                let (childFirst, after) = try visit(view.child(i), level: level - 1, expectedRank: childRank)
                guard let childFirst, childFirst == fence else {
                    throw run.damaged("a fence that differs from its child's first key", page: number)
                }
                if i == 0 { first = fence }
                rank = after
            }
            return (first, rank)
        }

        mutating func noteOverflow(_ view: RunPageView, _ i: Int) throws {
            guard run.header.layout == .variable else { return }
            let cell = view.cell(i)
            guard cell.overflow != 0 else { return }
            // Inner fences share their leaf key's chain.
            var page = cell.overflow
            while page != 0, !overflow.contains(page) {
                guard !seen.contains(page) else { throw run.damaged("an overflow chain through a tree page", page: page) }
                overflow.insert(page)
                let p = try run.page(page, level: RunFile.overflowLevel)
                page = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: RunPage.bodyStart, as: UInt32.self))
            }
        }
    }
}

extension RunKeys {
    /// ``compare(_:_:)`` of two arrays.
    static func compareArrays(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in compare(x, y) } }
    }
}
