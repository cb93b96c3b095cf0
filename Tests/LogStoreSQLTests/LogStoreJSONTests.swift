import Foundation
import LogStore
import LogStoreEngine
import XCTest

@testable import LogStoreSQL

/// LogStore JSON (the SQL backends' row format) transcodes exactly both ways, writes what the
/// mapping says, and refuses what is not LogStore JSON with `.corruption`.
final class LogStoreJSONTests: XCTestCase {
    func json(_ v: AttributeValue) throws -> String {
        String(decoding: try LogStoreJSON.encode(v.encoded()), as: UTF8.self)
    }

    func postgresJSON(_ v: AttributeValue) throws -> String {
        String(decoding: try LogStoreJSON.encode(v.encoded(), dialect: .postgres), as: UTF8.self)
    }

    /// Round trips `v` through the JSON of both dialects.
    func assertRoundTrip(_ v: AttributeValue, file: StaticString = #filePath, line: UInt = #line) throws {
        let bytes = v.encoded()
        for dialect in [SQLDialect.sqlite, .postgres] {
            let text = try LogStoreJSON.encode(bytes, dialect: dialect)
            let back = try LogStoreJSON.decode(text)
            XCTAssertEqual(back, bytes, "\(dialect): \(v) -> \(String(decoding: text, as: UTF8.self))", file: file, line: line)
        }
    }

    func testPostgresDialectWritesOnlyWhatJsonbKeeps() throws {
        // jsonb keeps a number's digits but turns 1e+300 into 1000...0 (an integer to a reader)
        // and -0.0 into 0.0, and refuses \u0000.
        XCTAssertEqual(try postgresJSON(.double(1)), "1.0")
        XCTAssertEqual(try postgresJSON(.double(0.1)), "0.1")
        XCTAssertEqual(try postgresJSON(.double(-1.5e-7)), "-0.00000015")
        XCTAssertEqual(try postgresJSON(.double(1e16)), "10000000000000000.0")
        XCTAssertEqual(try postgresJSON(.double(1e300)), "1" + String(repeating: "0", count: 300) + ".0")
        XCTAssertEqual(try postgresJSON(.double(1.25e20)), "125000000000000000000.0")
        XCTAssertEqual(try postgresJSON(.double(.leastNonzeroMagnitude)), "0." + String(repeating: "0", count: 323) + "5")
        XCTAssertEqual(try postgresJSON(.double(-0.0)), #"{"$double":"-0.0"}"#)
        XCTAssertEqual(try postgresJSON(.double(0)), "0.0")
        XCTAssertEqual(try postgresJSON(.double(.nan)), #"{"$double":"NaN"}"#)
        XCTAssertEqual(try postgresJSON(.date(Date(timeIntervalSinceReferenceDate: -0.0))), #"{"$date":"-0.0"}"#)
        XCTAssertEqual(try postgresJSON(.date(Date(timeIntervalSinceReferenceDate: 1e-5))), #"{"$date":0.00001}"#)
        XCTAssertEqual(try postgresJSON(.string("a\u{0}b")), #"{"$utf8":"YQBi"}"#)
        XCTAssertEqual(try postgresJSON(.string("cafe\u{301}")), "{\"$string\":\"cafe\u{301}\"}", "not NFC: wrapped as in SQLite")
        XCTAssertEqual(try postgresJSON(.int(-42)), "-42")
        for d in Self.edgeDoubles where d.isFinite && !(d == 0 && d.sign == .minus) {
            let text = try postgresJSON(.double(d))
            XCTAssertFalse(text.contains("e") || text.contains("E"), text)
            XCTAssertTrue(text.contains("."), text)
            XCTAssertEqual(Double(text), d, text)
        }
        // What jsonb gives back (keys by length first, spaces after separators) reads the same.
        XCTAssertEqual(
            try LogStoreJSON.decode(Array(#"{"b": 1, "ab": [1.0, {"$date": 0.5}]}"#.utf8)),
            AttributeValue.map(["b": .int(1), "ab": .array([.double(1), .date(Date(timeIntervalSinceReferenceDate: 0.5))])]).encoded())
        XCTAssertThrowsError(try LogStoreJSON.decode(Array(#"{"$utf8":"/w=="}"#.utf8)), "not UTF-8") {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption)
        }
    }

    func testScalarsAreWrittenAsTheMappingSays() throws {
        XCTAssertEqual(try json(.null), "null")
        XCTAssertEqual(try json(.bool(true)), "true")
        XCTAssertEqual(try json(.int(-42)), "-42")
        XCTAssertEqual(try json(.int(.min)), "-9223372036854775808")
        XCTAssertEqual(try json(.double(1)), "1.0")
        XCTAssertEqual(try json(.double(-0.0)), "-0.0")
        XCTAssertEqual(try json(.double(0.1)), "0.1")
        XCTAssertEqual(try json(.double(1e300)), "1e+300")
        XCTAssertEqual(try json(.double(.nan)), #"{"$double":"NaN"}"#)
        XCTAssertEqual(try json(.double(-.infinity)), #"{"$double":"-Infinity"}"#)
        XCTAssertEqual(try json(.double(-.nan)), #"{"$double":"0xfff8000000000000"}"#)
        XCTAssertEqual(try json(.string("a\"b\\c\n\u{1}")), #""a\"b\\c\n\u0001""#)
        XCTAssertEqual(try json(.string("a\u{0}b")), #"{"$string":"a\u0000b"}"#, "SQLite's JSON functions cut strings at NUL: wrapped")
        XCTAssertEqual(try json(.string("caf\u{E9}")), "\"caf\u{E9}\"")
        XCTAssertEqual(try json(.string("cafe\u{301}")), "{\"$string\":\"cafe\u{301}\"}", "not NFC: wrapped")
        XCTAssertEqual(try json(.string("\u{212A}")), "{\"$string\":\"\u{212A}\"}", "the Kelvin sign's NFC is K")
        XCTAssertEqual(try json(.string("日本語")), "\"日本語\"")
        XCTAssertEqual(try json(.bytes([0, 1, 255])), #"{"$bytes":"AAH/"}"#)
        XCTAssertEqual(try json(.date(Date(timeIntervalSinceReferenceDate: 12.5))), #"{"$date":12.5}"#)
        XCTAssertEqual(
            try json(.uuid(UUID(uuidString: "E621E1F8-C36C-4951-B6B5-7A5F2B6A1C3F")!)), #"{"$uuid":"E621E1F8-C36C-4951-B6B5-7A5F2B6A1C3F"}"#
        )
        XCTAssertEqual(
            try json(.map(["b": .int(1), "a": .array([.null, .bool(false)]), "$date": .int(2), "$": .int(3)])),
            #"{"$$":3,"$$date":2,"a":[null,false],"b":1}"#)
    }

    static let edgeDoubles: [Double] = [
        0, -0.0, 1, -1, 0.1, 1.0 / 3, .pi, 1e-300, .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
        -.greatestFiniteMagnitude,
        9_007_199_254_740_992.0.nextUp, 1e16, 123_456_789_012_345_680, .infinity, -.infinity, .nan, -.nan, .signalingNaN,
        Double(bitPattern: 0x7FF0_0000_0000_0001),
    ]

    func testEdgeValuesRoundTripExactly() throws {
        for d in Self.edgeDoubles {
            try assertRoundTrip(.double(d))
            try assertRoundTrip(.date(Date(timeIntervalSinceReferenceDate: d)))
        }
        for i: Int64 in [0, 1, -1, .max, .min, 1 << 53, -(1 << 53) - 1] { try assertRoundTrip(.int(i)) }
        for s in [
            "", "plain", "caf\u{E9}", "cafe\u{301}", "\u{212A}", "\u{0}\u{1F}\u{7F}\"\\/", "😀🇫🇷", "e\u{301}\u{301}", "\u{FFFF}",
            "\u{10FFFF}",
        ] {
            try assertRoundTrip(.string(s))
            try assertRoundTrip(.map([s: .string(s), "$" + s: .null]))
        }
        try assertRoundTrip(.bytes([]))
        try assertRoundTrip(.bytes(Array(0...255)))
        try assertRoundTrip(.uuid(UUID()))
        try assertRoundTrip(.array([]))
        try assertRoundTrip(.map([:]))
    }

    func randomValue(_ rng: inout SystemRandomNumberGenerator, depth: Int) -> AttributeValue {
        let strings = ["", "a", "$x", "$$y", "caf\u{E9}", "cafe\u{301}", "\u{212B}", "\u{0}", "日本", "\"\\"]
        switch Int.random(in: 0..<(depth > 4 ? 9 : 11), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: .min ... .max, using: &rng))
        case 3: return .double(Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng)))
        case 4: return .double(Self.edgeDoubles.randomElement(using: &rng)!)
        case 5: return .string(strings.randomElement(using: &rng)! + String(Int.random(in: 0..<100, using: &rng)))
        case 6: return .bytes((0..<Int.random(in: 0..<20, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng))))
        case 8: return .uuid(UUID())
        case 9: return .array((0..<Int.random(in: 0..<5, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            var m: [String: AttributeValue] = [:]
            for _ in 0..<Int.random(in: 0..<5, using: &rng) {
                m[strings.randomElement(using: &rng)! + String(Int.random(in: 0..<3, using: &rng))] = randomValue(&rng, depth: depth + 1)
            }
            // No two keys equal as Swift strings (the grammar forbids it).
            var seen = Set<String>()
            return .map(m.filter { seen.insert($0.key).inserted })
        }
    }

    func testRandomValuesRoundTripExactly() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let v = randomValue(&rng, depth: 0)
            if case .map(let m) = v, Set(m.keys.map { $0 }).count != m.count { continue }
            try assertRoundTrip(v)
        }
    }

    func testDeepNestingAtTheLimitRoundTripsAndBeyondIsRefused() throws {
        var v = AttributeValue.int(1)
        for _ in 0..<(AttributeValue.maxDepth - 1) { v = .array([v]) }
        try assertRoundTrip(v)
        let tooDeep =
            String(repeating: "[", count: AttributeValue.maxDepth + 1) + "1" + String(repeating: "]", count: AttributeValue.maxDepth + 1)
        XCTAssertThrowsError(try LogStoreJSON.decode(Array(tooDeep.utf8))) { XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption) }
    }

    func testForeignButValidJSONIsReadCanonically() throws {
        // Spaces, unsorted keys, escapes, integers where doubles would do: still one canonical value.
        let text = #" { "b" : [ 1 , 2.50 ] , "a" : "\u00e9\/" , "$$k" : { "$date" : 5 } } "#
        let bytes = try LogStoreJSON.decode(Array(text.utf8))
        XCTAssertEqual(
            try AttributeValue.decode(bytes),
            .map(["a": .string("\u{E9}/"), "b": .array([.int(1), .double(2.5)]), "$k": .date(Date(timeIntervalSinceReferenceDate: 5))]))
        XCTAssertEqual(
            bytes,
            AttributeValue.map([
                "a": .string("\u{E9}/"), "b": .array([.int(1), .double(2.5)]), "$k": .date(Date(timeIntervalSinceReferenceDate: 5)),
            ]).encoded())
    }

    func testKeysInJsonbOrderAreSortedAndDuplicatesRefused() throws {
        // PostgreSQL's jsonb hands keys out shortest first: the same canonical bytes as sorted keys.
        let value = AttributeValue.map([
            "id": .int(5), "date": .date(Date(timeIntervalSinceReferenceDate: 1.5)), "name": .string("n"),
            "tags": .array([.string("a")]), "group": .map(["zz": .int(1), "b": .null, "aaa": .bool(true)]), "rating": .double(0.5),
        ])
        let jsonb =
            #"{"id": 5, "date": {"$date": 1.5}, "name": "n", "tags": ["a"], "group": {"b": null, "zz": 1, "aaa": true}, "rating": 0.5}"#
        XCTAssertEqual(try LogStoreJSON.decode(Array(jsonb.utf8)), value.encoded())
        // Out of order and then a key the general path takes: still sorted.
        XCTAssertEqual(
            try LogStoreJSON.decode(Array(#"{"b": 1, "a": 2, "$$c": 3, "é": 4}"#.utf8)),
            AttributeValue.map(["a": .int(2), "b": .int(1), "$c": .int(3), "é": .int(4)]).encoded())
        for text in [#"{"b": 1, "a": 2, "b": 3}"#, #"{"b": 1, "a": 2, "a": 3}"#, #"{"b": 1, "a": 2, "b": 3, "é": 4}"#] {
            XCTAssertThrowsError(try LogStoreJSON.decode(Array(text.utf8)), text) {
                XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption, text)
            }
        }
    }

    func testWhatIsNotLogStoreJSONIsCorruption() {
        let bad = [
            "", "nul", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "-", "1e", "NaN", "Infinity", "[1 2]", "\"abc", "\"\\x\"",
            "\"\\ud800\"",
            "\"\u{1}\"", "{\"a\":1,\"a\":2}", "{\"$nope\":1}", "{\"$date\":1,\"b\":2}", "{\"$uuid\":\"not\"}", "{\"$bytes\":\"***\"}",
            "{\"$double\":\"1.5\"}", "{\"$x\":1}", "{\"b\":1,\"$a\":2}", "9223372036854775808", "-9223372036854775809", "1e999", "[1] 2",
            "{\"caf\u{E9}\":1,\"cafe\u{301}\":2}",
        ]
        for text in bad {
            XCTAssertThrowsError(try LogStoreJSON.decode(Array(text.utf8)), text) {
                XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption, text)
            }
        }
        for bad: [UInt8] in [
            [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82], [0xF0, 0x8F, 0xBF, 0xBF], [0x80],
        ] {
            // In a value (the direct path) and in a key (the general path).
            XCTAssertThrowsError(try LogStoreJSON.decode([0x22] + bad + [0x22]), "invalid UTF-8 \(bad)") {
                XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption)
            }
            XCTAssertThrowsError(try LogStoreJSON.decode(Array("{\"".utf8) + bad + Array("\":1}".utf8)), "invalid UTF-8 key \(bad)") {
                XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption)
            }
        }
        for good in ["é", "€", "😀", "\u{10FFFF}", "\u{FFFF}"] {
            XCTAssertEqual(try LogStoreJSON.decode(Array("[\"\(good)\"]".utf8)), AttributeValue.array([.string(good)]).encoded())
        }
        XCTAssertThrowsError(try LogStoreJSON.encode([0xEE]), "an unknown tag") {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption)
        }
        XCTAssertThrowsError(try LogStoreJSON.encode([AttributeValue.Tag.string.rawValue, 2, 0xC3]), "truncated") {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption)
        }
    }
}
