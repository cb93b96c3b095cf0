package import Foundation
package import LogStoreEngine

/// Runs ``DataStoreRequest``s against any `RecordReader` (a snapshot, a write transaction or a
/// child store's view), by the plan ``QueryPlanner`` chooses:
/// - `.keyOrder` (no sort): walk the ids in order from `offset` (a committed snapshot skips to it
///   in O(log n)) or, with a predicate, until `offset + limit` match;
/// - `.index`: visit the ranges of a secondary index; when the index delivers the sort, stop after
///   `offset + limit` matches;
/// - `.scan`: visit every record of the type in file order.
///
/// Every record visited is checked on its stored bytes first (``ConditionEvaluator``: the
/// attribute filter and the part of the predicate the plan's ranges do not enforce) and decoded
/// only if it matches and is returned, or if only the Swift predicate can decide. What is left
/// is ordered by the request's sort (a bounded heap with a limit), ties and unsorted results in id
/// order.
///
/// Its parts (``validate(_:)``, ``Matcher``, ``SortedResults``) are package API: other backends
/// (the SQL ones) filter candidates in their database and use these to give the same answers,
/// in the same order.
package enum QueryExecutor {
    /// What running a plan did (for ``DataStoreReadAccessor/explain(_:)``).
    package struct Stats {
        package var visited = 0
        package var decoded = 0
        package init() {}
    }

    /// A record that matched: decoded when deciding needed it, or later if it is returned.
    struct Match<Item> {
        var key: RecordKey
        var bytes: ArraySlice<UInt8>
        var item: Item?
        var sortValue: AttributeValue? = nil
    }

    /// Checks offset and limit and resolves the attribute filter: the filter, and how many
    /// results are needed (`offset + limit`, nil without a limit). Throws `.invalidArgument` or
    /// the filter's `.encodingFailed`.
    package static func validate<Item>(_ r: DataStoreRequest<Item>) throws -> (filter: (String, AttributeValue)?, needed: Int?) {
        guard r.offset >= 0 else {
            throw LogStoreError(.invalidArgument, "DataStoreRequest.offset must not be negative (got \(r.offset)).")
        }
        if let l = r.limit, l < 0 {
            throw LogStoreError(.invalidArgument, "DataStoreRequest.limit must not be negative (got \(l)); use nil for no limit.")
        }
        let filter: (String, AttributeValue)?
        if let f = r.attributeFilter { filter = (f.attribute, try f.value.get()) } else { filter = nil }
        var needed: Int? = nil
        if let l = r.limit {
            let (sum, overflow) = r.offset.addingReportingOverflow(l)
            needed = overflow ? Int.max : sum
        }
        return (filter, needed)
    }

    /// Decodes an item from its stored bytes. Throws `.decodingFailed` or `.corruption`.
    package static func decode<Item: DataStoreItem>(_ type: Item.Type, _ bytes: ArraySlice<UInt8>) throws -> Item {
        try AttributeCoding.decode(Item.self, fromBytes: bytes)
    }

    static func passesFilter(_ filter: (String, AttributeValue)?, _ bytes: ArraySlice<UInt8>) throws -> Bool {
        guard let (attribute, wanted) = filter else { return true }
        let stored = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(attribute, in: $0) }
        return AttributeValue.filterEquals(stored, wanted)
    }

    /// Decides whether a stored item matches a request's filter and the part of its predicate a
    /// plan leaves (`residual`), decoding it only when that part cannot be decided on its bytes;
    /// then the whole Swift predicate decides.
    package struct Matcher<Item: DataStoreItem> {
        let filter: (String, AttributeValue)?
        let predicate: Predicate<Item>?
        let evaluator: ConditionEvaluator?

        /// A matcher for `predicate` whose part still to check is `residual` (the whole
        /// predicate's ``PredicateAnalysis`` condition when nothing else enforced any of it).
        package init(filter: (String, AttributeValue)?, predicate: Predicate<Item>?, residual: QueryCondition) {
            self.filter = filter
            self.predicate = predicate
            evaluator = predicate == nil || residual == .constant(true) ? nil : ConditionEvaluator(residual)
        }

        /// A matcher for all of `predicate` and `filter`.
        package init(filter: (String, AttributeValue)?, predicate: Predicate<Item>?) {
            self.init(
                filter: filter, predicate: predicate, residual: predicate.map { PredicateAnalysis.condition(of: $0) } ?? .constant(true))
        }

        /// Whether nothing is filtered.
        package var matchesEverything: Bool { filter == nil && evaluator == nil }

        /// nil: no match. Otherwise a match, with the decoded item if deciding needed it.
        package func match(_ bytes: ArraySlice<UInt8>) throws -> Item?? {
            var stats = Stats()
            return try match(bytes, &stats)
        }

        /// The answer the filter and the evaluator give on `bytes` (nil: only the Swift predicate
        /// can tell), counting the visit. Touches no `Item`-dependent type: in code not
        /// specialized for `Item` (a public generic entry point called from another module) each
        /// `Item??` value makes the runtime look its type metadata up, which costs a quarter of
        /// `countItems`' CPU on an unindexed predicate.
        func decide(_ bytes: ArraySlice<UInt8>, _ stats: inout Stats) throws -> Bool? {
            stats.visited += 1
            guard try passesFilter(filter, bytes) else { return false }
            // (No evaluator without a predicate: reading `predicate`, an optional of a generic
            // type, would look its metadata up.)
            guard let evaluator else { return true }
            return try evaluator.evaluate(bytes)
        }

        /// Whether the item stored as `bytes` matches, decoding it only when its bytes cannot
        /// decide; counts what it read and decoded (``decide(_:_:)``, for counting).
        package func matches(_ bytes: ArraySlice<UInt8>, _ stats: inout Stats) throws -> Bool {
            if let decided = try decide(bytes, &stats) { return decided }
            guard let predicate else { return true }
            stats.decoded += 1
            return try predicate.evaluate(decode(Item.self, bytes))
        }

        /// ``match(_:)``, counting what it read and decoded.
        package func match(_ bytes: ArraySlice<UInt8>, _ stats: inout Stats) throws -> Item?? {
            switch try decide(bytes, &stats) {
            case true?: return .some(nil)
            case false?: return nil
            case nil:
                guard let predicate else { return .some(nil) }
                stats.decoded += 1
                let item = try decode(Item.self, bytes)
                return try predicate.evaluate(item) ? .some(item) : nil
            }
        }
    }

    static func items<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, in view: any RecordReader) throws -> [Item] {
        var stats = Stats()
        return try run(request, in: view, stats: &stats).items
    }

    /// Plans and runs `request`; returns the items and the plan used.
    static func run<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, in view: any RecordReader, stats: inout Stats)
        throws -> (items: [Item], plan: QueryPlan)
    {
        let (filter, needed) = try validate(request)
        let condition = request.predicate.map { PredicateAnalysis.condition(of: $0) } ?? .constant(true)
        let plan = try QueryPlanner.plan(request, condition: condition, filter: filter, in: view)
        // `limit: 0`, with or without an offset: nothing.
        if request.limit == 0 { return ([], plan) }
        let matcher = Matcher(filter: filter, predicate: request.predicate, residual: plan.residual)
        let sorted = request.isSorted
        let type = Item.itemType
        var matches: [Match<Item>] = []

        switch plan.access {
        case .keyOrder:
            if matcher.matchesEverything {
                // Nothing to check: skip to the offset in the index, read only what is returned.
                let wanted = needed.map { $0 - request.offset }
                var keys: [RecordKey] = []
                try view.forEachKeyInOrder(ofType: type, fromOffset: request.offset) { k in
                    keys.append(k)
                    return wanted.map { keys.count < $0 } ?? true
                }
                return (
                    try keys.compactMap { k in
                        stats.visited += 1
                        stats.decoded += 1
                        return try view.value(type: type, key: k).map { try decode(Item.self, $0) }
                    }, plan
                )
            }
            try view.forEachKeyInOrder(ofType: type, fromOffset: 0) { k in
                guard let bytes = try view.value(type: type, key: k), let m = try matcher.match(bytes, &stats) else { return true }
                matches.append(Match(key: k, bytes: bytes, item: m))
                return needed.map { matches.count < $0 } ?? true
            }
            return (try finish(Array(matches.dropFirst(request.offset)), &stats), plan)

        case .index(let name, let ranges, let reverse):
            if plan.sortedByIndex && matcher.matchesEverything {
                // Nothing to check: the entries alone give the order, so only the records
                // returned are read (an offset skips index entries, not records).
                let keys = try windowKeys(
                    ranges, index: name, reverse: reverse, tieGroupComponents: plan.tieGroupComponents, needed: needed, in: view, type: type
                )
                return (
                    try keys.dropFirst(request.offset).compactMap { k in
                        stats.visited += 1
                        stats.decoded += 1
                        return try view.value(type: type, key: k).map { try decode(Item.self, $0) }
                    }, plan
                )
            }
            if plan.sortedByIndex {
                let window = try collectInSortOrder(
                    ranges, index: name, reverse: reverse, tieGroupComponents: plan.tieGroupComponents, needed: needed, in: view,
                    type: type, key: \.key
                ) { key -> Match<Item>? in
                    guard let bytes = try view.value(type: type, key: key), let m = try matcher.match(bytes, &stats) else { return nil }
                    return Match(key: key, bytes: bytes, item: m)
                }
                return (try finish(Array(window.dropFirst(request.offset)), &stats), plan)
            }
            for range in ranges {
                try view.forEachIndexEntry(ofType: type, index: name, in: range, reverse: false) { _, key in
                    guard let bytes = try view.value(type: type, key: key) else { return true }
                    if let m = try matcher.match(bytes, &stats) { matches.append(Match(key: key, bytes: bytes, item: m)) }
                    return true
                }
            }

        case .scan:
            try view.forEach(ofType: type) { key, bytes in
                if let m = try matcher.match(bytes, &stats) { matches.append(Match(key: key, bytes: bytes, item: m)) }
                return true
            }
        }

        // Order what matched: by id when unsorted, else by the request's sort (ties by id).
        guard sorted else {
            var top = needed.map { TopK<Match<Item>>(k: $0, by: { $0.key < $1.key }) }
            let ordered: [Match<Item>]
            if top != nil {
                for m in matches { try top?.insert(m) }
                ordered = try top?.sorted() ?? []
            } else {
                ordered = matches.sorted { $0.key < $1.key }
            }
            return (try finish(Array(ordered.dropFirst(request.offset)), &stats), plan)
        }
        var results = SortedResults(request, needed: needed)
        for m in matches { try results.add(key: m.key, bytes: m.bytes, item: m.item, stats: &stats) }
        return (try results.items(stats: &stats), plan)
    }

    /// The record keys of the first `needed` entries (all without a limit) of `ranges` of an index
    /// that delivers the request's sort, each group of entries sharing `tieGroupComponents`
    /// leading components put in id order. Reads no record.
    static func windowKeys(
        _ ranges: [IndexEntryRange], index name: String, reverse: Bool, tieGroupComponents: Int?, needed: Int?, in view: any RecordReader,
        type: String
    ) throws -> [RecordKey] {
        try collectInSortOrder(
            ranges, index: name, reverse: reverse, tieGroupComponents: tieGroupComponents, needed: needed, in: view, type: type,
            key: { $0 }, { $0 })
    }

    /// Walks `ranges` of an index that delivers the request's sort and returns the first `needed`
    /// elements (all without a limit) that `element` makes of the entries' record keys (nil: the
    /// entry is skipped, as a record that does not match), in the request's order.
    ///
    /// Entries that share `tieGroupComponents` leading components (a tie group: equal on every
    /// sorted attribute, which the index orders by something other than the id) are collected
    /// whole and put in id order (`key`), which is how ties are broken; the walk stops at the
    /// first tie group boundary once `needed` elements are in. Without tie groups (the index
    /// order already breaks ties by id) it stops at the `needed`th element.
    static func collectInSortOrder<Element>(
        _ ranges: [IndexEntryRange], index name: String, reverse: Bool, tieGroupComponents: Int?, needed: Int?, in view: any RecordReader,
        type: String, key: (Element) -> RecordKey, _ element: (RecordKey) throws -> Element?
    ) throws -> [Element] {
        var collected: [Element] = []
        var group: [Element] = []
        var groupPrefix: [UInt8]? = nil
        var done = false
        func flush() {
            group.sort { key($0) < key($1) }
            collected.append(contentsOf: group)
            group.removeAll(keepingCapacity: true)
            if let needed, collected.count >= needed { done = true }
        }
        for range in ranges where !done {
            try view.forEachIndexEntry(ofType: type, index: name, in: range, reverse: reverse) { entry, recordKey in
                guard let n = tieGroupComponents else {
                    if let e = try element(recordKey) { collected.append(e) }
                    if let needed, collected.count >= needed { done = true }
                    return !done
                }
                let prefix = entry.withUnsafeBytes { raw in
                    IndexKeyEncoding.prefixLength(ofEntry: raw, componentCount: n).map { Array(raw[..<$0]) }
                }
                if prefix != groupPrefix {
                    flush()
                    if done { return false }
                    groupPrefix = prefix
                }
                if let e = try element(recordKey) { group.append(e) }
                return true
            }
            flush()
        }
        return needed.map { Array(collected.prefix($0)) } ?? collected
    }

    /// The items of `matches`, decoding those not decoded yet.
    static func finish<Item: DataStoreItem>(_ matches: [Match<Item>], _ stats: inout Stats) throws -> [Item] {
        try matches.map { m in
            if let item = m.item { return item }
            stats.decoded += 1
            return try decode(Item.self, m.bytes)
        }
    }

    static func count<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, in view: any RecordReader) throws -> Int {
        var stats = Stats()
        return try count(request, in: view, stats: &stats).count
    }

    /// Counts the items `request` matches (ignoring its offset, limit and sort), from index entry
    /// counts when the plan's ranges decide everything.
    static func count<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, in view: any RecordReader, stats: inout Stats)
        throws -> (count: Int, plan: QueryPlan)
    {
        let (filter, _) = try validate(request)
        var unsorted = request
        unsorted.sortDescriptors = []
        unsorted.offset = 0
        unsorted.limit = nil
        let condition = request.predicate.map { PredicateAnalysis.condition(of: $0) } ?? .constant(true)
        let plan = try QueryPlanner.plan(unsorted, condition: condition, filter: filter, in: view)
        let matcher = Matcher(filter: filter, predicate: request.predicate, residual: plan.residual)
        let type = Item.itemType
        if request.predicate == nil && filter == nil { return (try view.count(ofType: type), plan) }
        var n = 0
        if case .index(let name, let ranges, _) = plan.access {
            for range in ranges {
                if plan.countFromIndex {
                    n += try view.countIndexEntries(ofType: type, index: name, in: range)
                    continue
                }
                try view.forEachIndexEntry(ofType: type, index: name, in: range, reverse: false) { _, key in
                    if let bytes = try view.value(type: type, key: key), try matcher.matches(bytes, &stats) { n += 1 }
                    return true
                }
            }
            return (n, plan)
        }
        try view.forEach(ofType: type) { _, bytes in
            if try matcher.matches(bytes, &stats) { n += 1 }
            return true
        }
        return (n, plan)
    }

    /// The item `id`, decoded in place from the reader's bytes (no copy of a record stored raw in
    /// a mapped segment: the decoder reads it there, within the read, and the item owns its
    /// storage).
    static func item<Item: DataStoreItem>(_ type: Item.Type, id: Item.ID, in view: any RecordReader) throws -> Item? {
        let key = try ItemKey.make(id)
        return try view.withValue(type: Item.itemType, key: key) { bytes in
            guard let bytes else { return nil }
            return try AttributeCoding.decode(Item.self, fromRaw: bytes)
        }
    }
}

/// The matches of a sorted request, kept in its order: its sort descriptors (``NumberOrder`` for
/// numbers, dates and strings) or attribute sort, ties broken by key (id order); with a limit only
/// the best `offset + limit` in a bounded heap (``TopK``). Every backend that sorts in Swift
/// collects through it, so all give the same order. Used on one thread.
package struct SortedResults<Item: DataStoreItem> {
    typealias Match = QueryExecutor.Match<Item>

    let offset: Int
    let attributeSort: (attribute: String, ascending: Bool)?
    let less: (Match, Match) throws -> Bool
    var all: [Match] = []
    var top: TopK<Match>?

    /// Results for `request`; `needed` is ``QueryExecutor/validate(_:)``'s.
    package init(_ request: DataStoreRequest<Item>, needed: Int?) {
        offset = request.offset
        let descriptors = request.sortDescriptors.map(NumberOrder.comparator)
        let attributeSort = request.attributeSort
        self.attributeSort = attributeSort
        let less: (Match, Match) throws -> Bool = { a, b in
            if let s = attributeSort {
                let c = AttributeValue.compare(a.sortValue, b.sortValue)
                if c != 0 { return s.ascending ? c < 0 : c > 0 }
            } else if let x = a.item, let y = b.item, let before = NumberOrder.precedes(x, y, by: descriptors) {
                return before
            }
            return a.key < b.key
        }
        self.less = less
        top = needed.map { TopK<Match>(k: $0, by: less) }
    }

    /// Adds a matching item stored as `bytes` under `key` (decoded already, or now if its sort
    /// descriptors need it). Throws `.corruption` if an attribute sort cannot read `bytes`, or
    /// the item's decoding errors.
    package mutating func add(key: RecordKey, bytes: ArraySlice<UInt8>, item: Item?, stats: inout QueryExecutor.Stats) throws {
        var m = Match(key: key, bytes: bytes, item: item)
        if let s = attributeSort {
            m.sortValue = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(s.attribute, in: $0) }
        } else if m.item == nil {
            stats.decoded += 1
            m.item = try QueryExecutor.decode(Item.self, bytes)
        }
        if top != nil { try top?.insert(m) } else { all.append(m) }
    }

    /// Adds a decoded matching item stored as `bytes` under `key`.
    package mutating func add(key: RecordKey, item: Item, bytes: ArraySlice<UInt8>) throws {
        var stats = QueryExecutor.Stats()
        try add(key: key, bytes: bytes, item: item, stats: &stats)
    }

    /// The results in order, after the request's offset (decoding those not decoded yet).
    package func items(stats: inout QueryExecutor.Stats) throws -> [Item] {
        let ordered = try top?.sorted() ?? all.sorted(by: less)
        return try QueryExecutor.finish(Array(ordered.dropFirst(offset)), &stats)
    }

    /// The results in order, after the request's offset.
    package func items() throws -> [Item] {
        var stats = QueryExecutor.Stats()
        return try items(stats: &stats)
    }
}
