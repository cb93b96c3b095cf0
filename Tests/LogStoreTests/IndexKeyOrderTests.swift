import Foundation
import LogStoreEngine
import XCTest
import _LogStoreTestSupport

@testable import LogStore

/// Secondary-index entries order as LogStore sorts values (``AttributeValue/compare(_:_:)``):
/// the property the planner relies on when an index delivers a sort or a range.
final class IndexKeyOrderTests: XCTestCase {

    static let edgeNumbers: [AttributeValue] = [
        .int(0), .int(1), .int(-1), .int(2), .int(3), .int(Int64.max), .int(Int64.min), .int(Int64.max - 1), .int(1 << 53),
        .int((1 << 53) + 1),
        .double(0), .double(-0.0), .double(1), .double(-1), .double(0.5), .double(-0.5), .double(3), .double(2.5), .double(.nan),
        .double(-.nan), .double(.infinity), .double(-.infinity), .double(9_223_372_036_854_775_808.0), .double(-9_223_372_036_854_775_808),
        .double(9_007_199_254_740_992), .double(.leastNonzeroMagnitude), .double(-.leastNonzeroMagnitude),
        .double(.greatestFiniteMagnitude),
        .double(-.greatestFiniteMagnitude), .double(.leastNormalMagnitude), .double(.leastNormalMagnitude / 8),
    ]

    static func randomValue(_ r: inout SplitMix64, depth: Int = 0) -> AttributeValue {
        switch r.int(in: 0..<(depth > 1 ? 9 : 10)) {
        case 0: return .null
        case 1: return .bool(r.int(in: 0..<2) == 0)
        case 2: return edgeNumbers[r.int(in: 0..<edgeNumbers.count)]
        case 3: return .int(Int64(bitPattern: r.next()) >> r.int(in: 0..<64))
        case 4: return .double(Double(bitPattern: r.next()))
        case 5:
            let pieces = ["", "a", "b", "\u{0}", "é", "e\u{301}", "z", "\u{FFFF}", "\u{10000}", "A"]
            return .string((0..<r.int(in: 0..<4)).map { _ in pieces[r.int(in: 0..<pieces.count)] }.joined())
        case 6: return .bytes((0..<r.int(in: 0..<4)).map { _ in UInt8([0, 1, 0xFF, 7][r.int(in: 0..<4)]) })
        case 7: return .date(Date(timeIntervalSinceReferenceDate: [0, -0.0, 1.5, -3, .nan, .infinity][r.int(in: 0..<6)]))
        case 8: return .uuid(UUID(uuid: (UInt8(r.int(in: 0..<3)), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(r.int(in: 0..<3)))))
        default: return .array((0..<r.int(in: 0..<3)).map { _ in randomValue(&r, depth: depth + 1) })
        }
    }

    func testEncodedComponentsOrderExactlyAsAttributeValuesCompare() {
        var r = SplitMix64(seed: 2026)
        func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }
        func order(_ a: [UInt8], _ b: [UInt8]) -> Int { a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1) }
        var pairs: [(AttributeValue, AttributeValue)] = []
        for a in Self.edgeNumbers { for b in Self.edgeNumbers { pairs.append((a, b)) } }
        for _ in 0..<20_000 { pairs.append((Self.randomValue(&r), Self.randomValue(&r))) }
        for (a, b) in pairs {
            let want = sign(AttributeValue.compare(a, b))
            let got = order(IndexKeyEncoding.component(a), IndexKeyEncoding.component(b))
            XCTAssertEqual(got, want, "\(a) vs \(b)")
            if got != want { return }
        }
    }

}
