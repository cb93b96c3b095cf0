import Foundation
import LogStoreEngine
import XCTest
import _LogStoreTestSupport

@testable import LogStore

/// The shared predicate analysis: key paths to coding paths, `#Predicate` to ``QueryCondition``,
/// and evaluation on stored bytes that always agrees with `Predicate.evaluate`.
final class PredicateAnalysisTests: XCTestCase {
    enum Status: String, Codable, Sendable { case open, closed, paused }
    struct Address: Codable, Sendable, Equatable {
        var city: String
        var zip: Int
    }
    struct Shop: DataStoreItem, Equatable {
        var id: Int
        var name: String
        var rating: Int
        var score: Double
        var price: Int?
        var isOpen: Bool
        var isNew: Bool
        var status: Status
        var address: Address
        var tags: [String]
        var owner: UUID
        var opened: Date
        var displayName: String { name.uppercased() }

        enum CodingKeys: String, CodingKey {
            case id
            case name = "n"
            case rating, score, price
            case isOpen = "open"
            case isNew, status, address, tags, owner, opened
        }
    }

    // MARK: Key paths

    func testKeyPathsResolveToTheirCodingKeysIncludingRenamedAndNestedOnes() {
        func path(_ k: PartialKeyPath<Shop>) -> [String]? { KeyPathResolver.codingPath(of: k, in: Shop.self) }
        XCTAssertEqual(path(\.id), ["id"])
        XCTAssertEqual(path(\.name), ["n"], "a renamed coding key")
        XCTAssertEqual(path(\.isOpen), ["open"], "one of two Booleans, renamed")
        XCTAssertEqual(path(\.isNew), ["isNew"], "the other Boolean")
        XCTAssertEqual(path(\.price), ["price"], "an optional")
        XCTAssertEqual(path(\.status), ["status"], "an enum that rejects probe strings")
        XCTAssertEqual(path(\.address.city), ["address", "city"], "nested")
        XCTAssertEqual(path(\.address), ["address"])
        XCTAssertEqual(path(\.tags), ["tags"])
        XCTAssertEqual(path(\.owner), ["owner"])
        XCTAssertEqual(path(\.opened), ["opened"])
        XCTAssertEqual(path(\.score), ["score"])
        XCTAssertNil(path(\.displayName), "a computed property is stored nowhere")
        XCTAssertNil(path(\.tags.count), "nor is an array's count")
    }

    struct Validated: DataStoreItem {
        var id: Int
        var email: String
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try c.decode(Int.self, forKey: .id)
            email = try c.decode(String.self, forKey: .email)
            guard email.contains("@") else {
                throw DecodingError.dataCorruptedError(forKey: .email, in: c, debugDescription: "not an email")
            }
        }
    }

    func testATypeThatRejectsProbeValuesLeavesItsKeyPathsUnresolved() {
        XCTAssertNil(KeyPathResolver.codingPath(of: \Validated.email, in: Validated.self))
    }

    // MARK: Analysis

    func condition(_ p: Predicate<Shop>) -> String { "\(PredicateAnalysis.condition(of: p))" }

    func testPredicateShapesBecomeConditions() {
        let x = 3
        let cuisines = ["thai", "lao"]
        XCTAssertEqual(condition(#Predicate { $0.rating >= 4 }), "rating >= 4")
        XCTAssertEqual(condition(#Predicate { 4 < $0.rating }), "rating > 4", "a constant on the left swaps the operator")
        XCTAssertEqual(condition(#Predicate { $0.rating == x && $0.isOpen }), "rating == 3 AND open == true")
        XCTAssertEqual(condition(#Predicate { !$0.isOpen || $0.name == "a" }), "NOT (open == true) OR n == \"a\"")
        XCTAssertEqual(condition(#Predicate { $0.price == nil }), "price == nil")
        XCTAssertEqual(condition(#Predicate { $0.price.flatMap { $0 > 3 } ?? false }), "price != nil AND price > 3")
        XCTAssertEqual(condition(#Predicate { $0.price.flatMap { $0 > 3 } ?? true }), "price == nil OR price > 3")
        XCTAssertEqual(condition(#Predicate { $0.price! < 3 }), "price < 3")
        XCTAssertEqual(condition(#Predicate { cuisines.contains($0.name) }), "n IN [\"thai\", \"lao\"]")
        XCTAssertEqual(condition(#Predicate { $0.tags.contains("veg") }), "tags CONTAINS \"veg\"")
        XCTAssertEqual(condition(#Predicate { $0.address.city == "Rome" }), "address.city == \"Rome\"")
        let open = Status.open
        XCTAssertEqual(condition(#Predicate { $0.status == open }), "status == \"open\"")
        XCTAssertEqual(
            condition(#Predicate { $0.name.contains("x") }), "<evaluated on the decoded item>", "String.contains is not an array's")
        XCTAssertEqual(condition(#Predicate { $0.rating + 1 > 3 && $0.isNew }), "<evaluated on the decoded item> AND isNew == true")
    }

    // MARK: Evaluation on bytes

    static func shop(_ i: Int, _ rng: inout SplitMix64) -> Shop {
        let names = ["café", "cafe\u{301}", "Zed", "alpha", "", "thai", "lao", "b"]
        let scores: [Double] = [.nan, -0.0, 0.0, 1.5, -3, .infinity, 4]
        return Shop(
            id: i, name: names[Int(rng.next() % UInt64(names.count))], rating: Int(rng.next() % 6),
            score: scores[Int(rng.next() % UInt64(scores.count))],
            price: rng.next() % 3 == 0 ? nil : Int(rng.next() % 6), isOpen: rng.next() % 2 == 0, isNew: rng.next() % 2 == 0,
            status: [.open, .closed, .paused][Int(rng.next() % 3)],
            address: Address(city: ["Rome", "Oslo"][Int(rng.next() % 2)], zip: Int(rng.next() % 3)),
            tags: Array(["veg", "hot", "thai"].prefix(Int(rng.next() % 4))),
            owner: UUID(uuid: (UInt8(rng.next() % 2), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
            opened: Date(timeIntervalSinceReferenceDate: Double(rng.next() % 3)))
    }

    func testEvaluationOnBytesAgreesWithSwiftOnEveryItem() throws {
        let cafe = "café"
        let owner = UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        let t1 = Date(timeIntervalSinceReferenceDate: 1)
        let names = ["thai", "lao"]
        let paused = Status.paused
        let open = Status.open
        let predicates: [Predicate<Shop>] = [
            #Predicate { $0.rating >= 4 }, #Predicate { $0.rating != 2 }, #Predicate { $0.score > 0 }, #Predicate { $0.score <= 0 },
            #Predicate { $0.score == 0 }, #Predicate { $0.score != 1.5 }, #Predicate { !($0.score < 1.5) },
            #Predicate { $0.name == cafe }, #Predicate { $0.name < "b" }, #Predicate { $0.name >= "Zed" },
            #Predicate { $0.price == nil }, #Predicate { $0.price != nil }, #Predicate { $0.price == 3 }, #Predicate { $0.price != 3 },
            #Predicate { $0.price.flatMap { $0 >= 3 } ?? false }, #Predicate { $0.price.flatMap { $0 != 3 } ?? true },
            #Predicate { $0.isOpen && !$0.isNew }, #Predicate { $0.isOpen || $0.rating > 3 }, #Predicate { $0.status == paused },
            #Predicate { $0.status != open }, #Predicate { $0.address.city == "Rome" && $0.address.zip > 0 },
            #Predicate { $0.tags.contains("thai") }, #Predicate { names.contains($0.name) }, #Predicate { $0.owner == owner },
            #Predicate { $0.opened > t1 }, #Predicate { $0.opened == t1 || $0.name.count > 3 }, #Predicate { $0.rating * 2 > 5 },
        ]
        var rng = SplitMix64(seed: 42)
        let items = (0..<400).map { Self.shop($0, &rng) }
        for (n, p) in predicates.enumerated() {
            let evaluator = ConditionEvaluator(PredicateAnalysis.condition(of: p))
            var decided = 0
            for item in items {
                let bytes = try AttributeCoding.encodeBytes(item)
                let swift = try p.evaluate(item)
                if let onBytes = try evaluator.evaluate(bytes[...]) {
                    decided += 1
                    XCTAssertEqual(onBytes, swift, "predicate \(n) (\(evaluator.condition)) on \(item)")
                }
            }
            if !evaluator.condition.needsDecodedItem {
                XCTAssertEqual(decided, items.count, "predicate \(n) (\(evaluator.condition)) is decided on bytes for every item")
            }
        }
    }
}
