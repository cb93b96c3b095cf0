import Foundation
import LogStoreEngine
import XCTest
import _LogStoreTestSupport

@testable import LogStore

/// Indexed queries return exactly what the unindexed path returns: random items, random writes
/// (inserts, updates, deletes, delete-all), random predicates, sorts, offsets and limits, checked
/// against a model evaluated with the Swift predicate and LogStore's sort order, in committed
/// snapshots, inside write blocks (their own changes included) and in child stores.
final class IndexedQueryEquivalenceTests: XCTestCase {
    struct Shop: DataStoreItem, Equatable {
        var id: Int
        var cuisine: String
        var rating: Int
        var score: Double
        var price: Int?
        var isOpen: Bool
        var name: String
        var opened: Date

        static let indexes: [DataStoreIndex<Shop>] = [
            .init(\.cuisine, \.rating),
            .init(\.rating),
            .init(\.price),
            .init(\.isOpen, \.score),
            .init(\.name),
            .init(\.opened),
        ]
    }

    static let cuisines = ["thai", "lao", "café", "cafe\u{301}", "Zed", ""]
    static let scores: [Double] = [.nan, -0.0, 0.0, 1.5, -3, .infinity, 4, 2.25]
    static let names = ["alpha", "Beta", "beta", "gamma", "é", "zz", "a\u{0}b"]

    static func shop(_ id: Int, _ r: inout SplitMix64) -> Shop {
        Shop(
            id: id, cuisine: cuisines[r.int(in: 0..<cuisines.count)], rating: r.int(in: 0..<6), score: scores[r.int(in: 0..<scores.count)],
            price: r.int(in: 0..<4) == 0 ? nil : r.int(in: 0..<30),
            isOpen: r.int(in: 0..<2) == 0, name: names[r.int(in: 0..<names.count)] + String(r.int(in: 0..<3)),
            opened: Date(timeIntervalSinceReferenceDate: Double(r.int(in: 0..<5))))
    }

    typealias Query = (String, Predicate<Shop>?)

    static func randomPredicate(_ r: inout SplitMix64) -> Query {
        let c = r.int(in: 0..<6)
        let c2 = r.int(in: 0..<6)
        let s = cuisines[r.int(in: 0..<cuisines.count)]
        let s2 = cuisines[r.int(in: 0..<cuisines.count)]
        let d = scores[r.int(in: 0..<scores.count)]
        let n = names[r.int(in: 0..<names.count)]
        let p = r.int(in: 0..<30)
        let t = Date(timeIntervalSinceReferenceDate: Double(r.int(in: 0..<5)))
        let list = [s, s2]
        switch r.int(in: 0..<18) {
        case 0: return ("none", nil)
        case 1: return ("rating >= \(c)", #Predicate { $0.rating >= c })
        case 2: return ("cuisine == \(s) && rating == \(c)", #Predicate { $0.cuisine == s && $0.rating == c })
        case 3: return ("cuisine == \(s)", #Predicate { $0.cuisine == s })
        case 4: return ("price == nil", #Predicate { $0.price == nil })
        case 5: return ("price < \(p)", #Predicate { $0.price.flatMap { $0 < p } ?? false })
        case 6: return ("isOpen && score > \(d)", #Predicate { $0.isOpen && $0.score > d })
        case 7: return ("cuisine IN \(list)", #Predicate { list.contains($0.cuisine) })
        case 8: return ("rating > \(c) || price == nil", #Predicate { $0.rating > c || $0.price == nil })
        case 9: return ("opened > \(t)", #Predicate { $0.opened > t })
        case 10: return ("name < \(n)", #Predicate { $0.name < n })
        case 11: return ("!(rating == \(c))", #Predicate { !($0.rating == c) })
        case 12: return ("cuisine == \(s) && \(c) <= rating < \(c2)", #Predicate { $0.cuisine == s && $0.rating >= c && $0.rating < c2 })
        case 13: return ("price != nil && rating <= \(c)", #Predicate { $0.price != nil && $0.rating <= c })
        case 14: return ("isOpen == false && score <= \(d)", #Predicate { !$0.isOpen && $0.score <= d })
        case 15: return ("score == \(d)", #Predicate { $0.score == d })
        case 16: return ("rating * 2 > \(c) (opaque)", #Predicate { $0.rating * 2 > c })
        default: return ("name >= \(n) && cuisine != \(s)", #Predicate { $0.name >= n && $0.cuisine != s })
        }
    }

    static func randomSort(_ r: inout SplitMix64) -> (String, [SortDescriptor<Shop>]) {
        switch r.int(in: 0..<10) {
        case 0, 1: return ("none", [])
        case 2: return ("rating", [SortDescriptor(\.rating)])
        case 3: return ("rating desc", [SortDescriptor(\.rating, order: .reverse)])
        case 4: return ("cuisine, rating", [SortDescriptor(\.cuisine), SortDescriptor(\.rating)])
        case 5: return ("score", [SortDescriptor(\.score)])
        case 6: return ("price", [SortDescriptor(\.price)])
        case 7: return ("name desc", [SortDescriptor(\.name, order: .reverse)])
        case 8: return ("opened", [SortDescriptor(\.opened)])
        default:
            return ("cuisine desc, rating desc", [SortDescriptor(\.cuisine, order: .reverse), SortDescriptor(\.rating, order: .reverse)])
        }
    }

    /// What the request returns, by the Swift predicate and LogStore's sort order on the model.
    static func expected(_ model: [Int: Shop], _ request: DataStoreRequest<Shop>) throws -> [Shop] {
        var items = try model.values.filter { try request.predicate?.evaluate($0) ?? true }
        let comparators = request.sortDescriptors.map(NumberOrder.comparator)
        items.sort { a, b in
            for c in comparators {
                switch c(a, b) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return a.id < b.id
        }
        let rest = items.dropFirst(request.offset)
        return Array(request.limit.map { rest.prefix($0) } ?? rest)
    }

    final class Usage {
        var queries = 0
        var indexed = 0
        var counted = 0
    }

    func check(_ a: any DataStoreReadAccessor, _ model: [Int: Shop], _ r: inout SplitMix64, _ usage: Usage, _ context: String) throws {
        for _ in 0..<4 {
            let (pname, predicate) = Self.randomPredicate(&r)
            let (sname, sort) = Self.randomSort(&r)
            var request = DataStoreRequest(itemType: Shop.self)
            request.predicate = predicate
            request.sortDescriptors = sort
            request.offset = r.int(in: 0..<3) == 0 ? r.int(in: 0..<5) : 0
            request.limit = r.int(in: 0..<2) == 0 ? r.int(in: 0..<8) : nil
            let what = "\(context): \(pname), sort \(sname), offset \(request.offset), limit \(request.limit.map(String.init) ?? "nil")"
            let want = try Self.expected(model, request)
            let plan = try a.explain(request)
            let got = try a.items(forRequest: request)
            XCTAssertEqual(got.map(\.id), want.map(\.id), "\(what); plan \(plan)")
            XCTAssertEqual(got.map { "\($0)" }, want.map { "\($0)" }, "values (NaN-tolerant): \(what)")
            if got.map(\.id) != want.map(\.id) { throw CancellationError() }
            XCTAssertEqual(plan.resultCount, want.count, what)
            XCTAssertEqual(
                try a.countItems(forRequest: request),
                try Self.expected(
                    model,
                    {
                        var c = request
                        c.offset = 0
                        c.limit = nil
                        return c
                    }()
                ).count, "count: \(what)")
            usage.queries += 1
            if case .index = plan.access { usage.indexed += 1 }
            if try a.explainCount(request).countedFromIndex { usage.counted += 1 }
        }
    }

    func randomWrite(_ a: any DataStoreReadWriteAccessor, _ model: inout [Int: Shop], _ r: inout SplitMix64) throws {
        for _ in 0..<(1 + r.int(in: 0..<6)) {
            let id = r.int(in: 0..<60)
            switch r.int(in: 0..<12) {
            case 0:
                try a.deleteItem(ofType: Shop.self, id: id)
                model[id] = nil
            case 1 where r.int(in: 0..<20) == 0:
                try a.deleteAllItems(ofType: Shop.self)
                model = [:]
            default:
                let s = Self.shop(id, &r)
                try a.insert(s)
                model[id] = s
            }
        }
    }

    func testIndexedResultsEqualTheUnindexedOnesInOrderAndContent() throws {
        for (kind, store) in [("memory", LogDataStore.inMemory()), ("disk", diskStore())] {
            try store.setup()
            var r = SplitMix64(seed: 20_261_125)
            var model: [Int: Shop] = [:]
            let usage = Usage()
            try store.writeSync { a in
                for i in 0..<40 {
                    let s = Self.shop(i, &r)
                    try a.insert(s)
                    model[i] = s
                }
            }
            for round in 0..<120 {
                try store.writeSync { a in try self.randomWrite(a, &model, &r) }
                try store.read { a in try self.check(a, model, &r, usage, "\(kind) round \(round) snapshot") }
                if round % 5 == 0 {
                    // Inside a write block: the block's own changes are part of every answer.
                    try store.writeSync { a in
                        try self.randomWrite(a, &model, &r)
                        try self.check(a, model, &r, usage, "\(kind) round \(round) write block")
                    }
                }
                if round % 7 == 0 {
                    let child = try store.makeChildDataStore()
                    var childModel = model
                    try child.writeSync { a in try self.randomWrite(a, &childModel, &r) }
                    try child.read { a in try self.check(a, childModel, &r, usage, "\(kind) round \(round) child") }
                    if round % 14 == 0 {
                        try store.merge(child)
                        model = childModel
                    }
                }
                if round == 60, kind == "disk" {
                    try store.tearDown()
                    try store.setup()
                }
            }
            try store.tearDown()
            XCTAssertGreaterThan(
                usage.indexed * 3, usage.queries,
                "\(kind): indexes served at least a third of the requests (\(usage.indexed) of \(usage.queries))")
            XCTAssertGreaterThan(usage.counted, 0, "\(kind): some counts came from index entry counts alone")
        }
    }

    func diskStore() -> LogDataStore {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-indexed-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return LogDataStore(directory: dir)
    }
}
