/// How a store answered a request: the plan it chose and what running it cost, like SQLite's
/// `EXPLAIN QUERY PLAN` with the counts of `EXPLAIN ANALYZE`
/// (``DataStoreReadAccessor/explain(_:)``).
///
/// For tests and tuning: assert plans, not timings. A value; any thread.
public struct DataStoreQueryPlan: Sendable, Equatable, CustomStringConvertible {
    /// How the candidates were found.
    public enum Access: Sendable, Equatable {
        /// Every item of the type was visited.
        case scan
        /// Items were visited in id order (no sort), stopping at `offset + limit`.
        case idOrder
        /// Ranges of the named secondary index were visited.
        case index(String)
        /// The backend does not describe its plans.
        case unknown
    }

    /// How the candidates were found.
    public var access: Access
    /// The index's definition, when one was used: `restaurantId,category,name(restaurantId, category, name)`.
    public var index: String?
    /// The conditions the index ranges enforce (`restaurantId == 7`, `price < 20`).
    public var ranges: [String]
    /// Whether the index delivered the requested order (so a `limit` stopped the walk early).
    public var sortedByIndex: Bool
    /// What was checked on each item visited (nil: nothing beyond the ranges).
    public var residual: String?
    /// Whether the count came from index entry counts alone (``DataStoreReadAccessor/countItems(forRequest:)``).
    public var countedFromIndex: Bool
    /// The planner's estimate of items visited (weighted: a random read counts 3).
    public var estimatedCost: Int
    /// Items visited (read from the store and checked).
    public var itemsVisited: Int
    /// Items decoded into Swift values (matches returned, and candidates only the Swift predicate could decide).
    public var itemsDecoded: Int
    /// Items returned.
    public var resultCount: Int

    /// A plan with every field given.
    public init(
        access: Access, index: String? = nil, ranges: [String] = [], sortedByIndex: Bool = false, residual: String? = nil,
        countedFromIndex: Bool = false, estimatedCost: Int = 0, itemsVisited: Int = 0, itemsDecoded: Int = 0, resultCount: Int = 0
    ) {
        self.access = access
        self.index = index
        self.ranges = ranges
        self.sortedByIndex = sortedByIndex
        self.residual = residual
        self.countedFromIndex = countedFromIndex
        self.estimatedCost = estimatedCost
        self.itemsVisited = itemsVisited
        self.itemsDecoded = itemsDecoded
        self.resultCount = resultCount
    }

    /// One line: `INDEX cuisine,rating (cuisine == "thai", rating >= 4) sorted; check isOpen == true; visited 12, decoded 12, returned 12`.
    public var description: String {
        var s: String
        switch access {
        case .scan: s = "SCAN"
        case .idOrder: s = "ID ORDER"
        case .index(let name): s = "INDEX \(name)" + (ranges.isEmpty ? "" : " (\(ranges.joined(separator: ", ")))")
        case .unknown: s = "UNKNOWN"
        }
        if sortedByIndex { s += " sorted" }
        if countedFromIndex { s += "; counted from the index" }
        if let residual { s += "; check \(residual)" }
        return s + "; estimated \(estimatedCost), visited \(itemsVisited), decoded \(itemsDecoded), returned \(resultCount)"
    }
}

extension DataStoreReadAccessor {
    /// See ``DataStoreReadAccessor/explain(_:)``: a backend that does not describe its plans runs
    /// the request and reports `.unknown` with the result count.
    public func explain<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        DataStoreQueryPlan(access: .unknown, resultCount: try items(forRequest: request).count)
    }

    /// See ``DataStoreReadAccessor/explainCount(_:)``: reports `.unknown` with the count.
    public func explainCount<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        DataStoreQueryPlan(access: .unknown, resultCount: try countItems(forRequest: request))
    }
}
