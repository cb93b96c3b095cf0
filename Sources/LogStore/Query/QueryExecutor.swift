import Foundation
package import LogStoreEngine

/// Runs ``DataStoreRequest``s against any `RecordReader` (a snapshot, a write transaction or a
/// child store's view).
///
/// Plans, cheapest first:
/// 1. no predicate, filter or sort: walk the keys in key order from `offset` (a committed
///    snapshot's ordered index skips to it in O(log n)), stop after `limit`, then read and decode
///    only those items;
/// 2. no sort but a limit: walk keys in key order, stop after `offset + limit` matches;
/// 3. otherwise: scan the type in file order, check the attribute filter on the stored record
///    before decoding, decode, evaluate the predicate, then sort (bounded heap with a limit).
///
/// Its parts (``validate(_:)``, ``Matcher``, ``SortedResults``) are package API: other backends
/// (the SQL ones) filter candidates in their database and use these to give the same answers,
/// in the same order.
package enum QueryExecutor {
    /// Checks offset and limit and resolves the attribute filter: the filter, and how many
    /// results are needed (`offset + limit`, nil without a limit). Throws `.invalidArgument` or
    /// the filter's `.encodingFailed`.
    package static func validate<Item>(_ r: DataStoreRequest<Item>) throws -> (filter: (String, AttributeValue)?, needed: Int?) {
        guard r.offset >= 0 else { throw LogStoreError(.invalidArgument, "DataStoreRequest.offset must not be negative (got \(r.offset)).") }
        if let l = r.limit, l < 0 { throw LogStoreError(.invalidArgument, "DataStoreRequest.limit must not be negative (got \(l)); use nil for no limit.") }
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

    /// Decides whether a stored item matches a request's filter and predicate, decoding it only
    /// when the predicate cannot be decided on its bytes (``ConditionEvaluator``).
    package struct Matcher<Item: DataStoreItem> {
        let filter: (String, AttributeValue)?
        let predicate: Predicate<Item>?
        let evaluator: ConditionEvaluator?

        /// A matcher for `predicate` (analysed with ``PredicateAnalysis``) and `filter`.
        package init(filter: (String, AttributeValue)?, predicate: Predicate<Item>?) {
            self.init(filter: filter, predicate: predicate, condition: predicate.map { PredicateAnalysis.condition(of: $0) })
        }

        /// A matcher for `predicate` whose analysis `condition` the caller already has.
        package init(filter: (String, AttributeValue)?, predicate: Predicate<Item>?, condition: QueryCondition?) {
            self.filter = filter
            self.predicate = predicate
            evaluator = predicate == nil ? nil : condition.map(ConditionEvaluator.init)
        }

        /// Whether nothing is filtered.
        package var matchesEverything: Bool { filter == nil && predicate == nil }

        /// nil: no match. Otherwise a match, with the decoded item if deciding needed it.
        package func match(_ bytes: ArraySlice<UInt8>) throws -> Item?? {
            guard try passesFilter(filter, bytes) else { return nil }
            guard let predicate, let evaluator else { return .some(nil) }
            switch try evaluator.evaluate(bytes) {
            case true?: return .some(nil)
            case false?: return nil
            case nil:
                let item = try decode(Item.self, bytes)
                return try predicate.evaluate(item) ? .some(item) : nil
            }
        }

        /// The matching item, decoded; nil if it does not match.
        package func matchingItem(_ bytes: ArraySlice<UInt8>) throws -> Item? {
            guard let m = try match(bytes) else { return nil }
            return try m ?? decode(Item.self, bytes)
        }
    }

    static func items<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, in view: any RecordReader) throws -> [Item] {
        let (filter, needed) = try validate(request)
        if needed == 0 { return [] }
        let type = Item.itemType
        let matcher = Matcher(filter: filter, predicate: request.predicate)

        // Plan 1 and 2: key order.
        if !request.isSorted {
            if matcher.matchesEverything {
                var keys: [RecordKey] = []
                let wanted = needed.map { $0 - request.offset }
                // `limit: 0` with an offset: nothing (the walk below takes a key before it checks).
                if let wanted, wanted <= 0 { return [] }
                view.forEachKeyInOrder(ofType: type, fromOffset: request.offset) { k in
                    keys.append(k)
                    return wanted.map { keys.count < $0 } ?? true
                }
                return try keys.compactMap { k in try view.value(type: type, key: k).map { try decode(Item.self, $0) } }
            }
            if let needed {
                var out: [Item] = []
                var matched = 0
                try view.forEachKeyInOrder(ofType: type, fromOffset: 0) { k in
                    guard let bytes = try view.value(type: type, key: k), let m = try matcher.match(bytes) else { return true }
                    matched += 1
                    if matched > request.offset { out.append(try m ?? decode(Item.self, bytes)) }
                    return matched < needed
                }
                return out
            }
        }

        // Plan 3: scan, then order.
        var results = SortedResults(request, needed: needed)
        try view.forEach(ofType: type) { key, bytes in
            guard let item = try matcher.matchingItem(bytes) else { return true }
            try results.add(key: key, item: item, bytes: bytes)
            return true
        }
        return try results.items()
    }

    static func count<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, in view: any RecordReader) throws -> Int {
        let (filter, _) = try validate(request)
        let type = Item.itemType
        let matcher = Matcher(filter: filter, predicate: request.predicate)
        if matcher.matchesEverything { return view.count(ofType: type) }
        var n = 0
        try view.forEach(ofType: type) { _, bytes in
            if try matcher.match(bytes) != nil { n += 1 }
            return true
        }
        return n
    }

    static func item<Item: DataStoreItem>(_ type: Item.Type, id: Item.ID, in view: any RecordReader) throws -> Item? {
        let key = try ItemKey.make(id)
        guard let bytes = try view.value(type: Item.itemType, key: key) else { return nil }
        return try decode(Item.self, bytes)
    }
}

/// The matches of a sorted request, kept in its order: its sort descriptors (``NumberOrder`` for
/// numbers and dates) or attribute sort, ties broken by key (id order); with a limit only the
/// best `offset + limit` in a bounded heap (``TopK``). Every backend that sorts in Swift collects
/// through it, so all give the same order. Used on one thread.
package struct SortedResults<Item: DataStoreItem> {
    struct Match {
        var key: RecordKey
        var item: Item
        var sortValue: AttributeValue?
    }

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
            } else {
                for compare in descriptors {
                    switch compare(a.item, b.item) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
            }
            return a.key < b.key
        }
        self.less = less
        top = needed.map { TopK<Match>(k: $0, by: less) }
    }

    /// Adds a matching item stored as `bytes` under `key`. Throws `.corruption` if an attribute
    /// sort cannot read `bytes`.
    package mutating func add(key: RecordKey, item: Item, bytes: ArraySlice<UInt8>) throws {
        var sortValue: AttributeValue? = nil
        if let s = attributeSort {
            sortValue = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(s.attribute, in: $0) }
        }
        let m = Match(key: key, item: item, sortValue: sortValue)
        if top != nil { try top?.insert(m) } else { all.append(m) }
    }

    /// The results in order, after the request's offset.
    package func items() throws -> [Item] {
        let ordered = try top?.sorted() ?? all.sorted(by: less)
        return ordered.dropFirst(offset).map(\.item)
    }
}
