import Foundation
import XCTest

@testable import LogStore

/// `AttributeValue.compare` is exact and transitive across
/// `.int` and `.double`. (That sorts with a limit return the first results of the full sort, on
/// every backend, is the conformance suite's `order.*` cases.)
final class TotalOrderTests: XCTestCase {
    static let edgeDoubles: [Double] = [
        .nan, -.nan, 0.0 / Double(0), .signalingNaN, .infinity, -.infinity, 0.0, -0.0, 1, -1, 0.5, -0.5,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        9_007_199_254_740_992, 9_007_199_254_740_994, 9_223_372_036_854_775_808, -9_223_372_036_854_775_808,
        9_223_372_036_854_774_784, 1e300, -1e300,
    ]

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
            let a = randomValue(&rng)
            let b = randomValue(&rng)
            let c = randomValue(&rng)
            let ab = AttributeValue.compare(a, b)
            let bc = AttributeValue.compare(b, c)
            let ac = AttributeValue.compare(a, c)
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
