import Foundation
@testable import LogStore
import XCTest

struct Measured: DataStoreItem, Equatable {
    var id: Int
    var value: Double
    var single: Float
    var maybe: Double?

    static func == (a: Measured, b: Measured) -> Bool {
        a.id == b.id && a.value.bitPattern == b.value.bitPattern && a.single.bitPattern == b.single.bitPattern
            && a.maybe?.bitPattern == b.maybe?.bitPattern
    }
}

/// Issue 20 item 6 and issue 12 item 6: one total order for numbers, so a sort with a limit
/// returns the first results of the full sort, and `AttributeValue.compare` is exact and
/// transitive across `.int` and `.double`.
final class TotalOrderTests: StoreTestCase {
    static let edgeDoubles: [Double] = [
        .nan, -.nan, 0.0 / Double(0), .signalingNaN, .infinity, -.infinity, 0.0, -0.0, 1, -1, 0.5, -0.5,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        9_007_199_254_740_992, 9_007_199_254_740_994, 9_223_372_036_854_775_808, -9_223_372_036_854_775_808,
        9_223_372_036_854_774_784, 1e300, -1e300,
    ]

    func seedMeasured(_ store: LogDataStore) throws -> [Measured] {
        var items: [Measured] = []
        for (i, d) in Self.edgeDoubles.enumerated() {
            items.append(Measured(id: i, value: d, single: Float(d), maybe: i % 3 == 0 ? nil : d))
            items.append(Measured(id: 100 + i, value: d, single: Float(d), maybe: d))  // ties, broken by id
        }
        try store.writeSync { a in for m in items { try a.insert(m) } }
        return items
    }

    func assertEveryLimitIsAPrefixOfTheFullSort(_ store: LogDataStore, _ request: DataStoreRequest<Measured>, _ what: String) throws {
        let full = try store.read { try $0.items(forRequest: request) }
        for limit in 1...full.count {
            var limited = request
            limited.limit = limit
            XCTAssertEqual(try store.read { try $0.items(forRequest: limited) }.map(\.id), full.prefix(limit).map(\.id), "\(what), limit \(limit)")
            limited.offset = 3
            XCTAssertEqual(try store.read { try $0.items(forRequest: limited) }.map(\.id), full.dropFirst(3).prefix(limit).map(\.id), "\(what), offset 3, limit \(limit)")
        }
    }

    func testSortWithLimitGivesFirstResultsOfFullSortWithNaNInfinityAndNegativeZero() throws {
        try forEachKind { _, store in
            _ = try seedMeasured(store)
            var request = DataStoreRequest(itemType: Measured.self)
            for order in [SortOrder.forward, .reverse] {
                request.sortDescriptors = [SortDescriptor(\.value, order: order)]
                try assertEveryLimitIsAPrefixOfTheFullSort(store, request, "Double \(order)")
                request.sortDescriptors = [SortDescriptor(\.single, order: order)]
                try assertEveryLimitIsAPrefixOfTheFullSort(store, request, "Float \(order)")
                request.sortDescriptors = [SortDescriptor(\.maybe, order: order)]
                try assertEveryLimitIsAPrefixOfTheFullSort(store, request, "Double? \(order)")
            }
            for ascending in [true, false] {
                request.setSort(whereAttribute: "value", ascending: ascending)
                try assertEveryLimitIsAPrefixOfTheFullSort(store, request, "attribute sort ascending: \(ascending)")
            }
        }
    }

    func testSortedDoublesFollowTheDocumentedTotalOrder() throws {
        try forEachKind { _, store in
            let items = try seedMeasured(store)
            var request = DataStoreRequest(itemType: Measured.self)
            request.sortDescriptors = [SortDescriptor(\.value)]
            let ascending = try store.read { try $0.items(forRequest: request) }
            let nans = items.filter(\.value.isNaN).count
            XCTAssertTrue(ascending.suffix(nans).allSatisfy(\.value.isNaN), "every NaN sorts last ascending")
            XCTAssertEqual(ascending.first?.value, -.infinity)
            let numbers = ascending.dropLast(nans).map(\.value)
            XCTAssertEqual(numbers, numbers.sorted(), "numbers ascending")
            // -0.0 and +0.0 are equal: their items are ordered by id alone.
            let zeros = ascending.filter { $0.value == 0 }.map(\.id)
            XCTAssertEqual(zeros, zeros.sorted())
            request.sortDescriptors = [SortDescriptor(\.value, order: .reverse)]
            let descending = try store.read { try $0.items(forRequest: request) }
            XCTAssertTrue(descending.prefix(nans).allSatisfy(\.value.isNaN), "every NaN sorts first descending")
            // Same order as the attribute sort.
            request.setSort(whereAttribute: "value", ascending: true)
            XCTAssertEqual(try store.read { try $0.items(forRequest: request) }.map(\.id), ascending.map(\.id))
        }
    }

    func testFilterOnNegativeZeroMatchesPositiveZero() throws {
        try forEachKind { _, store in
            _ = try seedMeasured(store)
            var request = DataStoreRequest(itemType: Measured.self)
            request.setFilter(whereAttribute: "value", equalsValue: -0.0)
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: request) }, 4)
            request.setFilter(whereAttribute: "value", equalsValue: 9_007_199_254_740_993 as Int64)
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: request) }, 0, "2^53 + 1 is not the double 2^53")
            request.setFilter(whereAttribute: "value", equalsValue: 9_007_199_254_740_992 as Int64)
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: request) }, 2)
        }
    }

    // MARK: AttributeValue.compare

    static let edgeInts: [Int64] = [
        0, 1, -1, .max, .min, .max - 1, .min + 1, 1 << 53, (1 << 53) + 1, (1 << 53) - 1, -(1 << 53) - 1,
        1 << 62, 9_223_372_036_854_774_784, 9_223_372_036_854_774_783, 9_223_372_036_854_775_807,
    ]

    func randomValue(_ rng: inout SystemRandomNumberGenerator) -> AttributeValue {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return .int(Self.edgeInts.randomElement(using: &rng)!)
        case 1: return .double(Self.edgeDoubles.randomElement(using: &rng)!)
        case 2:
            let i = Self.edgeInts.randomElement(using: &rng)! &+ Int64.random(in: -3...3, using: &rng)
            return Bool.random(using: &rng) ? .int(i) : .double(Double(i))
        case 3: return .double(Double(Self.edgeInts.randomElement(using: &rng)!).nextUp)
        case 4: return .int(Int64.random(in: .min ... .max, using: &rng))
        default: return .double(Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng)))
        }
    }

    func testAttributeCompareOfIntsAndDoublesIsExactAndTransitive() {
        // Exact at the 2^53 boundary and near Int64's ends.
        XCTAssertEqual(AttributeValue.compare(.int((1 << 53) + 1), .double(9_007_199_254_740_992)), 1)
        XCTAssertEqual(AttributeValue.compare(.double(9_007_199_254_740_992), .int((1 << 53) + 1)), -1)
        XCTAssertEqual(AttributeValue.compare(.int(.max), .double(9_223_372_036_854_775_808)), -1)
        XCTAssertEqual(AttributeValue.compare(.int(.min), .double(-9_223_372_036_854_775_808)), 0)
        XCTAssertEqual(AttributeValue.compare(.int(.min), .double((-9_223_372_036_854_775_808.0).nextDown)), 1)
        XCTAssertEqual(AttributeValue.compare(.int(0), .double(-0.0)), 0)
        XCTAssertEqual(AttributeValue.compare(.int(1), .double(0.5)), 1)
        XCTAssertEqual(AttributeValue.compare(.int(-1), .double(-0.5)), -1)
        XCTAssertEqual(AttributeValue.compare(.int(.max), .double(.nan)), -1)
        XCTAssertEqual(AttributeValue.compare(.double(-.nan), .double(.infinity)), 1)

        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let a = randomValue(&rng), b = randomValue(&rng), c = randomValue(&rng)
            let ab = AttributeValue.compare(a, b), bc = AttributeValue.compare(b, c), ac = AttributeValue.compare(a, c)
            XCTAssertEqual(ab, -AttributeValue.compare(b, a), "antisymmetry: \(a) \(b)")
            if ab <= 0 && bc <= 0 { XCTAssertLessThanOrEqual(ac, 0, "transitivity: \(a) <= \(b) <= \(c)") }
            if ab == 0 && bc == 0 { XCTAssertEqual(ac, 0, "equality is transitive: \(a) \(b) \(c)") }
            if ab < 0 && bc <= 0 || ab <= 0 && bc < 0 { XCTAssertLessThan(ac, 0, "strict transitivity: \(a) \(b) \(c)") }
        }
    }

    func testNumberOrderMatchesDocumentedSequence() {
        let ordered: [Double] = [-.infinity, -1e300, -1, -.leastNonzeroMagnitude, -0.0, .leastNonzeroMagnitude, 1, .infinity, .nan]
        for (i, x) in ordered.enumerated() {
            for (j, y) in ordered.enumerated() {
                let expected = (x == 0 && y == 0) ? 0 : (i < j ? -1 : (i == j ? 0 : 1))
                XCTAssertEqual(NumberOrder.compare(x, y), expected, "\(x) vs \(y)")
            }
        }
        XCTAssertEqual(NumberOrder.compare(-Double.nan, .nan), 0)
        XCTAssertEqual(NumberOrder.compare(Float.nan, -Float.infinity), 1)
    }
}
