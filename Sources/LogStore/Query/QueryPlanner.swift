import Foundation
import LogStoreEngine

/// How one request is answered on one view: which records are visited, in which order, and what
/// is still checked on each (``QueryPlanner`` makes it, ``QueryExecutor`` runs it).
struct QueryPlan {
    enum Access: Equatable {
        /// Every record of the type, in file order.
        case scan
        /// The primary index in id order (requests without a sort).
        case keyOrder
        /// Ranges of a secondary index, each scanned in entry order (descending with `reverse`).
        case index(name: String, ranges: [IndexEntryRange], reverse: Bool)
    }

    var access: Access
    /// The index used, for `.index`.
    var definition: IndexDefinition? = nil
    /// Readable form of the ranges (`restaurantId == 7, price < 20`), for `explain`.
    var rangeDescription: [String] = []
    /// Entries come out in the request's sort order. `tieGroupComponents`: entries that share
    /// this many leading components tie in that order; each such group is put in id order.
    var sortedByIndex = false
    var tieGroupComponents: Int? = nil
    /// What the ranges do not already enforce, checked on every record visited (with the request's
    /// attribute filter and, where it cannot be decided on bytes, its Swift predicate).
    var residual: QueryCondition = .constant(true)
    /// A count is the sum of the ranges' entry counts: no record is read.
    var countFromIndex = false
    /// The planner's estimate of records visited.
    var estimatedVisits = 0
}

extension QueryPlan {
    /// The public description of this plan, after running it.
    func described(_ stats: QueryExecutor.Stats, resultCount: Int, counting: Bool) -> DataStoreQueryPlan {
        let access: DataStoreQueryPlan.Access
        switch self.access {
        case .scan: access = .scan
        case .keyOrder: access = .idOrder
        case .index(let name, _, _): access = .index(name)
        }
        return DataStoreQueryPlan(
            access: access, index: definition.map(\.description), ranges: rangeDescription, sortedByIndex: sortedByIndex && !counting,
            residual: residual == .constant(true) ? nil : "\(residual)",
            countedFromIndex: counting && countFromIndex && self.access != .scan,
            estimatedCost: estimatedVisits, itemsVisited: stats.visited, itemsDecoded: stats.decoded, resultCount: resultCount)
    }
}

/// Chooses the cheapest way to answer a request from the indexes a view has.
///
/// The predicate (and ``DataStoreRequest/setFilter(whereAttribute:equalsValue:)``) is split into
/// conjuncts (``QueryCondition/conjuncts``). For each secondary index of the type it takes, in
/// the index's column order: equality (`==`, `== nil`, or `IN` with at most 64 combinations) on
/// leading columns, then one range (`<`, `<=`, `>`, `>=`, `!= nil`) on the next column, and checks
/// whether the request's sort is the order of the columns after the equalities (all ascending or
/// all descending). Entry counts of the ranges are exact and O(log n) on committed snapshots, so
/// the estimate compares exact candidate counts, not guesses: an index plan costs its candidates
/// (or, when it delivers the sort and the request has a limit, about `offset + limit` of them);
/// a scan costs the type's count; the id-order walk costs `offset + limit` when there is no
/// sort. Random reads of an index plan weigh three scan reads. Pure; any thread.
enum QueryPlanner {
    /// Random record reads cost more than sequential ones (a frame per record vs. frames shared).
    static let randomReadWeight = 3
    /// At most this many ranges from `IN` lists.
    static let maxRanges = 64

    /// One sort key: the stored attribute and its direction; nil when a descriptor's order is not
    /// an index's (a localized string comparison, a type LogStore does not order itself).
    struct SortKey: Equatable {
        var path: [String]
        var ascending: Bool
    }

    static func sortKeys<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) -> [SortKey]? {
        if let s = request.attributeSort { return [SortKey(path: [s.attribute], ascending: s.ascending)] }
        var keys: [SortKey] = []
        for d in request.sortDescriptors {
            guard let kp = d.keyPath, indexOrdered(type(of: kp).valueType, d),
                let path = KeyPathResolver.codingPath(of: kp, in: Item.self)
            else { return nil }
            keys.append(SortKey(path: path, ascending: d.order == .forward))
        }
        return keys
    }

    /// Whether sorting by a value of `type` with `descriptor` gives the order an index keeps.
    static func indexOrdered<Item>(_ type: Any.Type, _ descriptor: SortDescriptor<Item>) -> Bool {
        let ordered: [Any.Type] = [
            Int.self, Int8.self, Int16.self, Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self, UInt32.self, UInt64.self,
            Double.self, Float.self, Date.self, UUID.self,
            Int?.self, Int8?.self, Int16?.self, Int32?.self, Int64?.self, UInt?.self, UInt8?.self, UInt16?.self, UInt32?.self,
            UInt64?.self, Double?.self, Float?.self, Date?.self, UUID?.self,
        ]
        if type == String.self || type == String?.self { return NumberOrder.usesStringOrder(descriptor) }
        return ordered.contains { $0 == type }
    }

    /// The plan for `request` (whose predicate analyses to `condition`) on `view`.
    static func plan<Item: DataStoreItem>(
        _ request: DataStoreRequest<Item>, condition: QueryCondition, filter: (String, AttributeValue)?, in view: any RecordReader
    ) throws -> QueryPlan {
        var conjuncts = condition.conjuncts
        if let (attribute, value) = filter {
            conjuncts.append(.comparison(QueryAttribute(keyPath: nil, codingPath: [attribute]), .equal, value))
        }
        let sorted = request.isSorted
        let needed = request.limit.map { request.offset.addingReportingOverflow($0).overflow ? Int.max : request.offset + $0 }
        let total = try view.count(ofType: Item.itemType)
        let everything = QueryCondition.all(conjuncts)

        // Without indexes: a scan, or the id-order walk for unsorted requests.
        var best = QueryPlan(access: .scan, residual: everything, estimatedVisits: total + (sorted ? sortCost(total) : 0))
        if !sorted {
            let walk = needed.map { min(total, everything == .constant(true) ? $0 : $0 * 4) } ?? total
            if walk * randomReadWeight < best.estimatedVisits || (everything == .constant(true)) {
                best = QueryPlan(access: .keyOrder, residual: everything, estimatedVisits: walk * randomReadWeight)
            }
        }
        let keys = sorted ? sortKeys(request) : []
        for (name, definition) in try view.secondaryIndexes(ofType: Item.itemType).sorted(by: { $0.key < $1.key }) {
            guard
                let candidate = try indexPlan(
                    name, definition, conjuncts, keys, sorted: sorted, needed: needed, type: Item.itemType, in: view)
            else { continue }
            // On a tie the index reads no more items than the scan and checks fewer.
            if candidate.estimatedVisits < best.estimatedVisits
                || (candidate.estimatedVisits == best.estimatedVisits && best.access == .scan)
            {
                best = candidate
            }
        }
        return best
    }

    static func sortCost(_ n: Int) -> Int { n <= 1 ? 0 : n * max(1, Int(log2(Double(n)))) / 8 }

    /// What `definition` can do for the request: nil when it neither narrows the candidates nor
    /// delivers the sort.
    static func indexPlan(
        _ name: String, _ definition: IndexDefinition, _ conjuncts: [QueryCondition], _ sortKeys: [SortKey]?,
        sorted: Bool, needed: Int?, type: String, in view: any RecordReader
    ) throws -> QueryPlan? {
        var used = Set<Int>()
        var prefixes: [[UInt8]] = [[]]
        var described: [String] = []
        var column = 0
        // Equality on leading columns.
        while column < definition.attributes.count {
            let path = definition.attributes[column]
            guard let (i, values) = equality(on: path, in: conjuncts, excluding: used),
                prefixes.count * values.count <= maxRanges
            else { break }
            used.insert(i)
            prefixes = prefixes.flatMap { p in values.map { p + IndexKeyEncoding.component($0) } }
            described.append(
                values.count == 1 ? "\(path.joined(separator: ".")) == \(values[0])" : "\(path.joined(separator: ".")) IN \(values)")
            column += 1
        }
        // One range on the next column.
        var lowerTail: [UInt8]? = nil
        var upperTail: [UInt8]? = nil
        var rangeIsExact = true
        if column < definition.attributes.count {
            let path = definition.attributes[column]
            if let r = range(on: path, in: conjuncts, excluding: used) {
                (lowerTail, upperTail) = (r.lower, r.upper)
                used.formUnion(r.used)
                rangeIsExact = r.exact
                described.append(r.description)
            }
        }
        // The sort, by the columns after the equalities.
        var sortedByIndex = false
        var reverse = false
        var tieGroup: Int? = nil
        if sorted, let sortKeys, !sortKeys.isEmpty, prefixes.count == 1 {
            let rest = Array(definition.attributes.dropFirst(column))
            if sortKeys.count <= rest.count, zip(sortKeys, rest).allSatisfy({ $0.path == $1 }),
                Set(sortKeys.map(\.ascending)).count == 1
            {
                sortedByIndex = true
                reverse = !sortKeys[0].ascending
                // Ties in the sort come in the order of the remaining columns (or of ids, but
                // descending when scanning backwards): each group of ties is put in id order.
                if reverse || sortKeys.count < rest.count { tieGroup = column + sortKeys.count }
            }
        }
        guard !used.isEmpty || sortedByIndex else { return nil }

        let ranges: [IndexEntryRange] = prefixes.map { prefix in
            let lower = prefix + (lowerTail ?? [])
            let upper: [UInt8]? = upperTail.map { prefix + $0 } ?? IndexKeyEncoding.successor(ofPrefix: prefix)
            return IndexEntryRange(lower: lower, upper: prefix.isEmpty && upperTail == nil ? nil : upper)
        }
        var candidates = 0
        for r in ranges { candidates += try view.countIndexEntries(ofType: type, index: name, in: r) }
        let residualParts = conjuncts.indices.filter { !used.contains($0) || (!rangeIsExact && isRangeConjunct(conjuncts[$0])) }.map {
            conjuncts[$0]
        }
        let residual = QueryCondition.all(residualParts)
        let visits: Int
        if sortedByIndex, let needed {
            visits = min(candidates, residual == .constant(true) ? needed : needed.multipliedReportingOverflow(by: 4).partialValue)
        } else {
            visits = candidates + (sorted && !sortedByIndex || !sorted ? sortCost(candidates) : 0)
        }
        return QueryPlan(
            access: .index(name: name, ranges: ranges, reverse: reverse), definition: definition, rangeDescription: described,
            sortedByIndex: sortedByIndex, tieGroupComponents: tieGroup, residual: residual,
            countFromIndex: residual == .constant(true), estimatedVisits: visits * randomReadWeight)
    }

    static func isRangeConjunct(_ c: QueryCondition) -> Bool {
        if case .comparison(_, let op, _) = c { return op != .equal && op != .notEqual }
        return false
    }

    /// A conjunct that fixes `path` to one value or to one of a list (usable as leading index
    /// columns): `== v` (not NaN), `== nil`, `IN [...]`, or `== a || == b ...` on that one path.
    static func equality(on path: [String], in conjuncts: [QueryCondition], excluding used: Set<Int>) -> (Int, [AttributeValue])? {
        for (i, c) in conjuncts.enumerated() where !used.contains(i) {
            switch c {
            case .comparison(let a, .equal, let v) where a.codingPath == path && !isNaN(v):
                return (i, [v])
            case .or(let parts)
            where !parts.isEmpty
                && parts.allSatisfy({ part in
                    if case .comparison(let a, .equal, let v) = part { return a.codingPath == path && !isNaN(v) }
                    return false
                }):
                // `x == a || x == b`: a union of equality ranges, like `IN`.
                var seen = Set<[UInt8]>()
                let values = parts.compactMap { part -> AttributeValue? in
                    guard case .comparison(_, _, let v) = part, seen.insert(IndexKeyEncoding.component(v)).inserted else { return nil }
                    return v
                }
                return (i, values.sorted { IndexKeyEncoding.component($0).lexicographicallyPrecedes(IndexKeyEncoding.component($1)) })
            case .oneOf(let a, let vs) where a.codingPath == path:
                // NaN equals nothing; equal values (one entry order) once.
                var seen = Set<[UInt8]>()
                let values = vs.filter { !isNaN($0) && seen.insert(IndexKeyEncoding.component($0)).inserted }
                return (i, values.sorted { IndexKeyEncoding.component($0).lexicographicallyPrecedes(IndexKeyEncoding.component($1)) })
            default: continue
            }
        }
        return nil
    }

    static func isNaN(_ v: AttributeValue) -> Bool {
        switch v {
        case .double(let d): return d.isNaN
        case .date(let d): return d.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }

    /// The range the ordering comparisons (and `!= nil`) on `path` allow, as entry bytes after the
    /// equality prefix; `exact` is false for strings, whose range is checked again with Swift's
    /// `<` on each candidate (it and the index's NFC order differ on rare combining sequences).
    static func range(on path: [String], in conjuncts: [QueryCondition], excluding used: Set<Int>)
        -> (lower: [UInt8], upper: [UInt8]?, used: Set<Int>, exact: Bool, description: String)?
    {
        var lower: [UInt8]? = nil
        var upper: [UInt8]? = nil
        var kind: AttributeValue? = nil
        var usedHere = Set<Int>()
        var parts: [String] = []
        var exact = true
        // Each comparison can only narrow the range: the larger lower bound and the smaller upper
        // bound win.
        func tightenLower(_ b: [UInt8]) { if lower.map({ $0.lexicographicallyPrecedes(b) }) ?? true { lower = b } }
        func tightenUpper(_ b: [UInt8]) { if upper.map({ b.lexicographicallyPrecedes($0) }) ?? true { upper = b } }
        for (i, c) in conjuncts.enumerated() where !used.contains(i) {
            guard case .comparison(let a, let op, let v) = c, a.codingPath == path else { continue }
            if op == .notEqual, v == .null {
                tightenLower([IndexKeyEncoding.kindBounds(of: .bool(false)).lower[0]])  // everything after null
                usedHere.insert(i)
                parts.append("\(path.joined(separator: ".")) != nil")
                continue
            }
            guard op != .equal, op != .notEqual, v != .null, !isNaN(v) else { continue }
            switch v {
            case .int, .double, .date, .string, .uuid, .bytes: break
            default: continue
            }
            if let k = kind, IndexKeyEncoding.kindBounds(of: k) != IndexKeyEncoding.kindBounds(of: v) { continue }
            kind = v
            if case .string = v { exact = false }
            let component = IndexKeyEncoding.component(v)
            switch op {
            case .greater: if let s = IndexKeyEncoding.successor(ofPrefix: component) { tightenLower(s) }
            case .greaterOrEqual: tightenLower(component)
            case .less: tightenUpper(component)
            case .lessOrEqual: if let s = IndexKeyEncoding.successor(ofPrefix: component) { tightenUpper(s) }
            default: continue
            }
            usedHere.insert(i)
            parts.append("\(path.joined(separator: ".")) \(op.rawValue) \(v)")
        }
        guard !usedHere.isEmpty else { return nil }
        if let kind {
            // A comparison never matches another kind (nor NaN): stay within this one.
            let bounds = IndexKeyEncoding.kindBounds(of: kind)
            tightenLower(bounds.lower)
            tightenUpper(bounds.upper)
        }
        return (lower ?? [], upper, usedHere, exact, parts.joined(separator: ", "))
    }
}
