import Foundation
import LogStoreEngine
import Synchronization
import XCTest
import _LogStoreTestSupport

@testable import LogStore

// MARK: - Fixtures

private struct Address: Codable, Equatable {
    var street: String
    var zip: Int
}

private struct Person: Codable, Equatable {
    var id: UUID
    var name: String
    var age: Int
    var born: Date
    var avatar: Data
    var homepage: URL?
    var balance: Decimal
    var address: Address
    var tags: [String]
    var nickname: String?
}

private enum Color: String, Codable, Equatable { case red, green, blue }
private enum Level: Int, Codable, Equatable {
    case low = 1
    case high = 10
}

private enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rect(Double, Double)
    case labeled(String, color: Color)
    case empty
}

private class Animal: Codable {
    var name: String
    init(name: String) { self.name = name }
}

/// Encodes its superclass through `superEncoder()` (the nested "super" map).
private final class Dog: Animal {
    var breed: String
    init(name: String, breed: String) {
        self.breed = breed
        super.init(name: name)
    }
    private enum CodingKeys: String, CodingKey { case breed }
    required init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        breed = try c.decode(String.self, forKey: .breed)
        try super.init(from: c.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(breed, forKey: .breed)
        try super.encode(to: c.superEncoder())
    }
}

/// Encodes its superclass into the same keyed container (shared encoder).
private final class Cat: Animal {
    var lives: Int
    init(name: String, lives: Int) {
        self.lives = lives
        super.init(name: name)
    }
    private enum CodingKeys: String, CodingKey { case lives }
    required init(from decoder: any Decoder) throws {
        lives = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .lives)
        try super.init(from: decoder)
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(lives, forKey: .lives)
        try super.encode(to: encoder)
    }
}

private struct Widths: Codable, Equatable {
    var i: Int, i8: Int8, i16: Int16, i32: Int32, i64: Int64
    var u: UInt, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64
    static let min = Widths(i: .min, i8: .min, i16: .min, i32: .min, i64: .min, u: .min, u8: .min, u16: .min, u32: .min, u64: .min)
    static let max = Widths(i: .max, i8: .max, i16: .max, i32: .max, i64: .max, u: .max, u8: .max, u16: .max, u32: .max, u64: .max)
}

private struct Floats: Codable {
    var d: Double
    var f: Float
}

private struct Box<T: Codable & Equatable>: Codable, Equatable { var value: T }

private struct OptionalBox: Codable, Equatable {
    var a: Int?
    var b: String?
    var c: Address?
    var d: [Int?]
}

// Model evolution: V1 is what was stored; V2 adds an optional property; V0 knows fewer.
private struct ItemV1: Codable, Equatable {
    var id: Int
    var title: String
    var price: Double
    var tags: [String]
}

private struct ItemV2: Codable, Equatable {
    var id: Int
    var title: String
    var price: Double
    var tags: [String]
    var discount: Double?
    var vendor: Address?
}

private struct ItemV0: Codable, Equatable {
    var id: Int
    var title: String
}

private struct ItemNeedsRating: Codable {
    var id: Int
    var rating: Int
}

private indirect enum Chain: Codable, Equatable {
    case end
    case link(Chain)
    static func depth(_ n: Int) -> Chain { (0..<n).reduce(.end) { c, _ in .link(c) } }
}

private final class Node: Encodable {
    var next: Node?
}

private struct Failing: Encodable {
    struct Oops: Error {}
    func encode(to encoder: any Encoder) throws { throw Oops() }
}

private struct UserInfoProbe: Codable, Equatable {
    static let key = CodingUserInfoKey(rawValue: "probe")!
    var seen: String
    init(seen: String) { self.seen = seen }
    init(from decoder: any Decoder) throws { seen = decoder.userInfo[Self.key] as? String ?? "none" }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(encoder.userInfo[Self.key] as? String ?? "none")
    }
}

// MARK: - Tests

final class CodingTests: XCTestCase {
    let encoder = AttributeEncoder()
    let decoder = AttributeDecoder()

    /// Round-trips `value` through the tree API and the byte fast paths, and checks that both
    /// produce the same bytes as the engine's `AttributeValue.encoded()`.
    @discardableResult
    private func roundTrip<T: Codable & Equatable>(
        _ value: T, file: StaticString = #filePath, line: UInt = #line
    ) throws -> AttributeValue {
        let tree = try encoder.encode(value)
        XCTAssertEqual(try decoder.decode(T.self, from: tree), value, "tree round trip", file: file, line: line)
        let bytes = try AttributeCoding.encodeBytes(value)
        XCTAssertEqual(bytes, tree.encoded(), "fast-path bytes differ from AttributeValue.encoded()", file: file, line: line)
        XCTAssertEqual(try AttributeValue.decode(bytes), tree, "engine reads the fast-path bytes", file: file, line: line)
        XCTAssertEqual(try AttributeCoding.decode(T.self, fromBytes: bytes[...]), value, "bytes round trip", file: file, line: line)
        return tree
    }

    private func decodingError<T: Decodable>(
        _ type: T.Type, from value: AttributeValue, file: StaticString = #filePath, line: UInt = #line
    ) -> LogStoreError? {
        do {
            _ = try decoder.decode(T.self, from: value)
            XCTFail("decoding \(T.self) unexpectedly succeeded", file: file, line: line)
        } catch let e as LogStoreError {
            XCTAssertEqual(e.code, .decodingFailed, file: file, line: line)
            // The byte fast path reports the same failure.
            do {
                _ = try AttributeCoding.decode(T.self, fromBytes: value.encoded()[...])
                XCTFail("byte decoding unexpectedly succeeded", file: file, line: line)
            } catch let b as LogStoreError {
                XCTAssertEqual(b.code, .decodingFailed, file: file, line: line)
                XCTAssertEqual(b.message, e.message, file: file, line: line)
            } catch {
                XCTFail("unexpected error \(error)", file: file, line: line)
            }
            return e
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
        return nil
    }

    func testItemTypeDefaultsToTypeName() {
        XCTAssertEqual(Restaurant.itemType, "Restaurant")
        XCTAssertEqual(Tagged.itemType, "tagged-items")
        // Remembered per metatype: each specialization of a generic type keeps its own name,
        // the same on every call and from every thread.
        let names = (0..<64).map { i in i % 2 == 0 ? Boxed<Int>.itemType : Boxed<String>.itemType }
        XCTAssertEqual(Set(names), ["Boxed<Int>", "Boxed<String>"])
        let concurrent = Mutex<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            let name = i % 2 == 0 ? Boxed<Double>.itemType : Boxed<Bool>.itemType
            concurrent.withLock { _ = $0.insert(name) }
        }
        XCTAssertEqual(concurrent.withLock { $0 }, ["Boxed<Double>", "Boxed<Bool>"])
    }

    struct Boxed<Value: Codable & Sendable>: DataStoreItem {
        var id: Int
        var value: Value
    }

    func testBoolAndStringRoundTrip() throws {
        XCTAssertEqual(try roundTrip(true), .bool(true))
        XCTAssertEqual(try roundTrip(false), .bool(false))
        for s in ["", "a", "héllo wörld", "🧪🧬 emoji", String(repeating: "x", count: 10_000), "nul\0inside"] {
            XCTAssertEqual(try roundTrip(s), .string(s))
        }
    }

    func testEveryIntegerWidthRoundTripsAtItsLimits() throws {
        try roundTrip(Widths.min)
        try roundTrip(Widths.max)
        try roundTrip(
            Widths(i: -1, i8: -1, i16: 300, i32: -70_000, i64: 1 << 40, u: 7, u8: 200, u16: 60_000, u32: 4_000_000_000, u64: 1 << 63))
        for v in [Int64.min, -1, 0, 1, Int64.max] { XCTAssertEqual(try roundTrip(v), .int(v)) }
        for v in [UInt8.min, 1, UInt8.max] { try roundTrip(v) }
        for v in [Int8.min, 0, Int8.max] { try roundTrip(v) }
        for v in [UInt32.max, 0] { try roundTrip(v) }
    }

    func testUInt64MaxIsStoredByBitPatternInInt() throws {
        XCTAssertEqual(try roundTrip(UInt64.max), .int(-1))
        XCTAssertEqual(try roundTrip(UInt.max), .int(-1))
        XCTAssertEqual(try roundTrip(UInt64(Int64.max) + 1), .int(.min))
    }

    func testDoubleAndFloatRoundTripExactlyIncludingSpecialValues() throws {
        for d in [
            0.0, -0.0, 1.5, -Double.leastNormalMagnitude / 3, .pi, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
        ] {
            XCTAssertEqual(try roundTrip(d).encoded(), AttributeValue.double(d).encoded())
            XCTAssertEqual(try decoder.decode(Double.self, from: encoder.encode(d)).bitPattern, d.bitPattern)
        }
        for f: Float in [0, -0.0, 1.1, .pi, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude] {
            XCTAssertEqual(try decoder.decode(Float.self, from: encoder.encode(f)).bitPattern, f.bitPattern)
        }
        // NaN (including its payload) survives, in and out of a struct.
        let nan = Double(nan: 0x1234, signaling: false)
        XCTAssertEqual(try decoder.decode(Double.self, from: encoder.encode(nan)).bitPattern, nan.bitPattern)
        let fs = try decoder.decode(Floats.self, from: encoder.encode(Floats(d: -.nan, f: .nan)))
        XCTAssertTrue(fs.d.isNaN && fs.d.sign == .minus)
        XCTAssertTrue(fs.f.isNaN)
        let negZero = try AttributeCoding.decode(Floats.self, fromBytes: AttributeCoding.encodeBytes(Floats(d: -0.0, f: -0.0))[...])
        XCTAssertEqual(negZero.d.sign, .minus)
        XCTAssertEqual(negZero.f.sign, .minus)
    }

    func testFoundationTypesMapToNativeAttributes() throws {
        let u = UUID()
        XCTAssertEqual(try roundTrip(u), .uuid(u))
        let d = Data([0, 1, 2, 255])
        XCTAssertEqual(try roundTrip(d), .bytes([0, 1, 2, 255]))
        XCTAssertEqual(try roundTrip(Data()), .bytes([]))
        let date = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345)
        XCTAssertEqual(try roundTrip(date), .date(date))
        XCTAssertEqual(try roundTrip(URL(string: "https://example.com/a?b=c")!), .string("https://example.com/a?b=c"))
        XCTAssertEqual(try roundTrip(Decimal(string: "12.50")!), .string("12.5"))
        // Inside containers too.
        XCTAssertEqual(try encoder.encode(Box(value: u)), .map(["value": .uuid(u)]))
        XCTAssertEqual(try encoder.encode([date]), .array([.date(date)]))
        XCTAssertEqual(try encoder.encode(["k": d]), .map(["k": .bytes([0, 1, 2, 255])]))
    }

    func testDateRoundTripIsExact() throws {
        let dates = [
            Date(), Date.distantPast, Date.distantFuture, Date(timeIntervalSince1970: 0),
            Date(timeIntervalSinceReferenceDate: 0.1 + 0.2), Date(timeIntervalSinceReferenceDate: -1e-9),
            Date(timeIntervalSinceReferenceDate: .leastNonzeroMagnitude),
        ]
        for date in dates {
            let back = try decoder.decode(Box<Date>.self, from: encoder.encode(Box(value: date)))
            XCTAssertEqual(back.value.timeIntervalSinceReferenceDate.bitPattern, date.timeIntervalSinceReferenceDate.bitPattern)
        }
        // Date also decodes from plain numbers (seconds since 2001), as Date's own Codable writes them.
        XCTAssertEqual(try decoder.decode(Date.self, from: .double(10.5)), Date(timeIntervalSinceReferenceDate: 10.5))
        XCTAssertEqual(try decoder.decode(Date.self, from: .int(10)), Date(timeIntervalSinceReferenceDate: 10))
    }

    func testURLRoundTripsToAnIdenticalURL() throws {
        let urls =
            [
                "https://example.com/a%20b?x=1&y=%C3%A9#frag", "mailto:someone@example.com", "file:///tmp/x%20y",
                "HTTP://Example.COM:8080/%7e", "urn:isbn:0451450523", "relative/path",
            ].map { URL(string: $0)! } + [URL(fileURLWithPath: "/tmp/a b"), URL(fileURLWithPath: "/tmp/dir/", isDirectory: true)]
        for url in urls {
            try roundTrip(url)
            try roundTrip(Box(value: url))
        }
        // A URL relative to a base is stored as its absolute string (as JSONEncoder does).
        let relative = URL(string: "b/c", relativeTo: URL(string: "https://h.com/a/"))!
        XCTAssertEqual(try encoder.encode(relative), .string("https://h.com/a/b/c"))
        XCTAssertEqual(try decoder.decode(URL.self, from: encoder.encode(relative)).absoluteString, relative.absoluteString)
        XCTAssertEqual(decodingError(URL.self, from: .string(""))?.underlyingError is CodingFailure, true)
    }

    func testDecimalRoundTripIsExactAndAcceptsNumbers() throws {
        let decimals =
            [
                "0", "3.14", "-0.000001", "123456789012345678901234567890123456.78", "1e100", "-1e-100",
                "0.33333333333333333333333333333333333333",
            ].map { Decimal(string: $0)! } + [.greatestFiniteMagnitude, .leastNonzeroMagnitude, Decimal(Int64.min)]
        for d in decimals {
            let tree = try roundTrip(d)
            XCTAssertEqual(tree, .string(d.description))
            try roundTrip(Box(value: d))
        }
        XCTAssertTrue(try decoder.decode(Decimal.self, from: encoder.encode(Decimal.nan)).isNaN)
        XCTAssertEqual(try decoder.decode(Decimal.self, from: .int(-42)), Decimal(-42))
        XCTAssertEqual(try decoder.decode(Decimal.self, from: .double(0.5)), Decimal(string: "0.5"))
        XCTAssertNotNil(decodingError(Decimal.self, from: .string("twelve")))
    }

    func testOptionalNilIsAnAbsentKeyAndAbsentOrNullDecodeAsNil() throws {
        let empty = OptionalBox(a: nil, b: nil, c: nil, d: [1, nil, 3])
        XCTAssertEqual(try roundTrip(empty), .map(["d": .array([.int(1), .null, .int(3)])]))
        try roundTrip(OptionalBox(a: 1, b: "b", c: Address(street: "s", zip: 1), d: []))
        // Explicit nulls decode as nil too.
        let nulls: AttributeValue = .map(["a": .null, "b": .null, "c": .null, "d": .array([])])
        XCTAssertEqual(try decoder.decode(OptionalBox.self, from: nulls), OptionalBox(a: nil, b: nil, c: nil, d: []))
        XCTAssertEqual(
            try AttributeCoding.decode(OptionalBox.self, fromBytes: nulls.encoded()[...]), OptionalBox(a: nil, b: nil, c: nil, d: []))
        // Top-level optionals.
        XCTAssertEqual(try roundTrip(Int?.none), .null)
        XCTAssertEqual(try roundTrip(Int?.some(4)), .int(4))
    }

    func testArraysSetsAndDictionariesRoundTrip() throws {
        try roundTrip([Int]())
        XCTAssertEqual(try roundTrip([1, 2, 3]), .array([.int(1), .int(2), .int(3)]))
        try roundTrip([[1.5], [], [2.5, 3.5]])
        try roundTrip(Set(["a", "b", "c"]))
        try roundTrip(Set(0..<100))
        XCTAssertEqual(try roundTrip(["b": 2, "a": 1]), .map(["a": .int(1), "b": .int(2)]))
        try roundTrip(["é": 1, "e\u{301}x": 2, "z": 3, "": 4, "Z": 5, "😀": 6])
        try roundTrip([String: Address]())
        try roundTrip(["home": Address(street: "Main", zip: 1), "work": Address(street: "Side", zip: 2)])
        try roundTrip([[String: [Int]]](arrayLiteral: ["x": [1]], [:]))
        // Int keys become string keys of a map (as Codable's keyed dictionary encoding does).
        XCTAssertEqual(try roundTrip([1: "one", -2: "minus two"]), .map(["1": .string("one"), "-2": .string("minus two")]))
        let byteKeys: [UInt8: [Bool]] = [0: [true], 255: []]
        try roundTrip(byteKeys)
        // Enum keys with String raw values.
        try roundTrip([Color.red: 1, .blue: 2])
    }

    func testLargeDictionaryRoundTripsAndLooksUpKeysOutOfOrder() throws {
        var dict: [String: Int] = [:]
        for i in 0..<2_000 { dict["key-\(i * 7919 % 2_000)-\(i)"] = i }
        try roundTrip(dict)
        // A keyed type reading a large map in an order unrelated to the stored order.
        struct Sparse: Decodable {
            var values: [Int] = []
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: PathKey.self)
                for i in stride(from: 1_999, through: 0, by: -37) {
                    values.append(try c.decode(Int.self, forKey: PathKey(stringValue: "k\(i)")))
                }
                XCTAssertFalse(c.contains(PathKey(stringValue: "k2000")))
                XCTAssertFalse(c.contains(PathKey(stringValue: "")))
            }
        }
        var stored: [String: AttributeValue] = [:]
        for i in 0..<2_000 { stored["k\(i)"] = .int(Int64(i)) }
        let sparse = try AttributeCoding.decode(Sparse.self, fromBytes: AttributeValue.map(stored).encoded()[...])
        XCTAssertEqual(sparse.values, Array(stride(from: 1_999, through: 0, by: -37)))
    }

    func testNestedStructsRoundTrip() throws {
        let p = Person(
            id: UUID(), name: "Ada", age: 36, born: Date(timeIntervalSince1970: -4_000_000_000),
            avatar: Data(repeating: 7, count: 300), homepage: URL(string: "https://ada.example"),
            balance: Decimal(string: "1234.5678")!, address: Address(street: "Main St", zip: 12345),
            tags: ["math", "engines"], nickname: nil)
        let tree = try roundTrip(p)
        XCTAssertEqual(tree["address"], .map(["street": .string("Main St"), "zip": .int(12345)]))
        XCTAssertNil(tree["nickname"])
        try roundTrip([p, p])
        try roundTrip(["people": [p]])
    }

    func testEnumsWithRawValuesRoundTrip() throws {
        XCTAssertEqual(try roundTrip(Color.green), .string("green"))
        XCTAssertEqual(try roundTrip(Level.high), .int(10))
        try roundTrip([Color.red, .blue])
        try roundTrip(Box(value: Level.low))
        let e = decodingError(Color.self, from: .string("purple"))
        XCTAssertNotNil(e)
    }

    func testEnumsWithAssociatedValuesRoundTrip() throws {
        XCTAssertEqual(try roundTrip(Shape.circle(radius: 2)), .map(["circle": .map(["radius": .double(2)])]))
        XCTAssertEqual(try roundTrip(Shape.rect(1, 2)), .map(["rect": .map(["_0": .double(1), "_1": .double(2)])]))
        try roundTrip(Shape.labeled("x", color: .red))
        try roundTrip(Shape.empty)
        try roundTrip([Shape.empty, .circle(radius: .infinity), .rect(-0.0, 5)])
        try roundTrip(Chain.depth(20))
    }

    func testClassesWithSuperclassEncodingRoundTrip() throws {
        let dog = Dog(name: "Rex", breed: "Collie")
        let tree = try encoder.encode(dog)
        XCTAssertEqual(tree, .map(["breed": .string("Collie"), "super": .map(["name": .string("Rex")])]))
        XCTAssertEqual(try AttributeCoding.encodeBytes(dog), tree.encoded())
        let back = try AttributeCoding.decode(Dog.self, fromBytes: tree.encoded()[...])
        XCTAssertEqual(back.name, "Rex")
        XCTAssertEqual(back.breed, "Collie")

        let cat = Cat(name: "Tom", lives: 9)
        let catTree = try encoder.encode(cat)
        XCTAssertEqual(catTree, .map(["lives": .int(9), "name": .string("Tom")]))
        let catBack = try decoder.decode(Cat.self, from: catTree)
        XCTAssertEqual(catBack.name, "Tom")
        XCTAssertEqual(catBack.lives, 9)
    }

    func testTopLevelUnkeyedAndSingleValuesWork() throws {
        XCTAssertEqual(try roundTrip(5), .int(5))
        XCTAssertEqual(try roundTrip("text"), .string("text"))
        XCTAssertEqual(try roundTrip([true, false]), .array([.bool(true), .bool(false)]))
        XCTAssertEqual(try roundTrip(Box(value: 1)), .map(["value": .int(1)]))
        XCTAssertEqual(try decoder.decode(Int.self, from: .int(5)), 5)
    }

    func testExtraStoredAttributesAreIgnored() throws {
        var stored = try encoder.encode(Address(street: "s", zip: 9))
        guard case .map(var m) = stored else { return XCTFail("expected a map") }
        m["legacy"] = .array([.string("old"), .map(["deep": .null])])
        m["aaa"] = .bytes([1, 2, 3])
        stored = .map(m)
        XCTAssertEqual(try decoder.decode(Address.self, from: stored), Address(street: "s", zip: 9))
        XCTAssertEqual(try AttributeCoding.decode(Address.self, fromBytes: stored.encoded()[...]), Address(street: "s", zip: 9))
    }

    func testModelEvolutionDecodesOlderAndNewerShapes() throws {
        let v1 = ItemV1(id: 7, title: "Lamp", price: 19.99, tags: ["home", "light"])
        let bytes = try AttributeCoding.encodeBytes(v1)
        // V2 added optional properties: they decode as nil with no migration.
        let v2 = try AttributeCoding.decode(ItemV2.self, fromBytes: bytes[...])
        XCTAssertEqual(v2, ItemV2(id: 7, title: "Lamp", price: 19.99, tags: ["home", "light"], discount: nil, vendor: nil))
        // V0 knows fewer properties: the extra attributes are ignored.
        XCTAssertEqual(try AttributeCoding.decode(ItemV0.self, fromBytes: bytes[...]), ItemV0(id: 7, title: "Lamp"))
        // Going forward and back again: a V2 item with values still reads as V1.
        let newer = ItemV2(id: 8, title: "Desk", price: 100, tags: [], discount: 0.1, vendor: Address(street: "x", zip: 2))
        XCTAssertEqual(
            try AttributeCoding.decode(ItemV1.self, fromBytes: AttributeCoding.encodeBytes(newer)[...]),
            ItemV1(id: 8, title: "Desk", price: 100, tags: []))
        // The tree API behaves the same.
        XCTAssertEqual(try decoder.decode(ItemV2.self, from: encoder.encode(v1)).discount, nil)
    }

    func testMissingNonOptionalPropertyFailsNamingTheKey() throws {
        let stored = try encoder.encode(ItemV0(id: 1, title: "t"))
        let e = try XCTUnwrap(decodingError(ItemNeedsRating.self, from: stored))
        XCTAssertTrue(e.message.contains("`rating`"), e.message)
        XCTAssertTrue(e.message.contains("Optional"), e.message)
        let failure = try XCTUnwrap(e.underlyingError as? CodingFailure, "the error's cause is its path and reason, as text")
        XCTAssertEqual(failure.codingPath, "rating")
        XCTAssertEqual(failure.reason, "missing")
    }

    func testMissingNestedPropertyNamesTheFullCodingPath() throws {
        let stored: AttributeValue = .map([
            "value": .array([.map(["street": .string("a"), "zip": .int(1)]), .map(["street": .string("b")])])
        ])
        let e = try XCTUnwrap(decodingError(Box<[Address]>.self, from: stored))
        XCTAssertTrue(e.message.contains("`value[1].zip`"), e.message)
    }

    func testTypeMismatchFailsWithCodingPath() throws {
        let stored: AttributeValue = .map(["street": .string("s"), "zip": .string("12345")])
        let e = try XCTUnwrap(decodingError(Address.self, from: stored))
        XCTAssertTrue(e.message.contains("`zip`"), e.message)
        XCTAssertEqual((e.underlyingError as? CodingFailure)?.codingPath, "zip")
        XCTAssertFalse(e.description.contains("12345"), "an error never holds the stored value: \(e)")
        // A scalar where a struct is expected, and the other way round.
        XCTAssertNotNil(decodingError(Address.self, from: .int(3)))
        XCTAssertNotNil(decodingError(Int.self, from: .map([:])))
        XCTAssertNotNil(decodingError([Int].self, from: .string("x")))
        XCTAssertNotNil(decodingError(Bool.self, from: .int(1)))
        XCTAssertNotNil(decodingError(UUID.self, from: .string("not-a-uuid")))
        XCTAssertNotNil(decodingError(Data.self, from: .string("x")))
    }

    func testNullForNonOptionalIsValueNotFound() throws {
        let e = try XCTUnwrap(decodingError(Address.self, from: .map(["street": .null, "zip": .int(1)])))
        XCTAssertEqual((e.underlyingError as? CodingFailure)?.codingPath, "street")
        XCTAssertTrue(e.message.contains("`street`") && e.message.contains("null"), e.message)
    }

    func testIntegerOverflowIsADecodingErrorNotATrap() throws {
        let e = try XCTUnwrap(decodingError(UInt8.self, from: .int(300)))
        XCTAssertTrue(e.message.contains("UInt8"), e.message)
        XCTAssertFalse(e.description.contains("300"), "an error never holds the stored value: \(e)")
        XCTAssertNotNil(decodingError(UInt8.self, from: .int(-1)))
        XCTAssertNotNil(decodingError(Int8.self, from: .int(128)))
        XCTAssertNotNil(decodingError(Int16.self, from: .int(-40_000)))
        XCTAssertNotNil(decodingError(UInt32.self, from: .int(-1)))
        XCTAssertNotNil(decodingError(Int32.self, from: .int(Int64.max)))
        XCTAssertNotNil(decodingError(Box<UInt16>.self, from: .map(["value": .int(70_000)])))
        XCTAssertNotNil(decodingError([UInt8].self, from: .array([.int(1), .int(256)])))
        XCTAssertNotNil(decodingError(Float.self, from: .double(1e300)))
        XCTAssertTrue(decodingError(UInt8.self, from: .int(300))?.underlyingError is CodingFailure)
    }

    func testIntegersDecodeFromExactDoublesOnlyAndDoublesFromIntegers() throws {
        XCTAssertEqual(try decoder.decode(Int.self, from: .double(42)), 42)
        XCTAssertEqual(try decoder.decode(UInt8.self, from: .double(255)), 255)
        XCTAssertEqual(try decoder.decode(Box<Int64>.self, from: .map(["value": .double(-8)])), Box(value: -8))
        XCTAssertNotNil(decodingError(Int.self, from: .double(42.5)))
        XCTAssertNotNil(decodingError(Int.self, from: .double(.nan)))
        XCTAssertNotNil(decodingError(Int.self, from: .double(.infinity)))
        XCTAssertNotNil(decodingError(Int64.self, from: .double(1e19)))
        XCTAssertNotNil(decodingError(UInt8.self, from: .double(256)))
        XCTAssertEqual(try decoder.decode(Double.self, from: .int(-3)), -3)
        XCTAssertEqual(try decoder.decode(Float.self, from: .int(7)), 7)
        XCTAssertEqual(try decoder.decode(Box<Double>.self, from: .map(["value": .int(1 << 53)])), Box(value: 9_007_199_254_740_992))
        XCTAssertEqual(try decoder.decode([Double].self, from: .array([.int(1), .double(2.5)])), [1, 2.5])
    }

    func testByteFastPathReadsArraySlicesWithAnOffset() throws {
        let value = Person(
            id: UUID(), name: "n", age: 1, born: Date(timeIntervalSinceReferenceDate: 5), avatar: Data([1]), homepage: nil,
            balance: 1, address: Address(street: "a", zip: 2), tags: ["t"], nickname: "nick")
        let bytes = try AttributeCoding.encodeBytes(value)
        let framed = [0xAA, 0xBB, 0xCC] + bytes + [0xDD]
        let slice = framed[3..<(3 + bytes.count)]
        XCTAssertEqual(try AttributeCoding.decode(Person.self, fromBytes: slice), value)
    }

    func testMalformedBytesThrowCorruptionAndNeverTrap() throws {
        let good = try AttributeCoding.encodeBytes(
            ItemV2(id: 1, title: "title", price: 2, tags: ["a", "b"], discount: 0.5, vendor: Address(street: "s", zip: 3)))
        // Every truncation.
        for n in 0..<good.count {
            XCTAssertThrowsError(try AttributeCoding.decode(ItemV2.self, fromBytes: good[0..<n])) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
            }
        }
        // Unsorted map keys.
        let unsorted: [UInt8] = [TagByte.map, 2, 1, UInt8(ascii: "b"), TagByte.null, 1, UInt8(ascii: "a"), TagByte.null]
        XCTAssertThrowsError(try AttributeCoding.decode([String: Int?].self, fromBytes: unsorted[...])) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
        // Unknown tag, invalid UTF-8, absurd lengths.
        for bad: [UInt8] in [
            [0x7F], [TagByte.string, 2, 0xFF, 0xFE], [TagByte.array, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], [TagByte.int, 0x80],
        ] {
            XCTAssertThrowsError(try AttributeCoding.decode([String].self, fromBytes: bad[...]))
            XCTAssertThrowsError(try AttributeCoding.decode(String.self, fromBytes: bad[...]))
        }
        // Random byte flips: any outcome but a trap.
        var rng = SplitMix64(seed: 42)
        for _ in 0..<3_000 {
            var b = good
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                b[Int(rng.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            _ = try? AttributeCoding.decode(ItemV2.self, fromBytes: b[...])
            _ = try? AttributeCoding.decode([String: [Int]].self, fromBytes: b[...])
        }
    }

    /// A map whose keys differ in bytes but are equal as Swift strings (NFC and
    /// NFD "é") is decoded deterministically: as corruption, by the typed decoder as by
    /// `AttributeValue.decode`; and the encoder refuses to write one.
    func testMapKeysEqualAsSwiftStringsButDifferentInBytesAreRejected() throws {
        let nfd = Array("e\u{301}".utf8)
        let nfc = Array("\u{E9}".utf8)
        let bytes: [UInt8] = [TagByte.map, 2, UInt8(nfd.count)] + nfd + [TagByte.int, 2, UInt8(nfc.count)] + nfc + [TagByte.int, 4]
        XCTAssertThrowsError(try AttributeCoding.decode([String: Int].self, fromBytes: bytes[...])) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
        XCTAssertThrowsError(try AttributeValue.decode(bytes)) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        struct TwoSpellings: Encodable {
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(1, forKey: Key(stringValue: "caf\u{E9}"))
                try c.encode(2, forKey: Key(stringValue: "cafe\u{301}"))
            }
        }
        XCTAssertThrowsError(try AttributeCoding.encodeBytes(TwoSpellings())) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .encodingFailed, "\(error)")
        }
        XCTAssertThrowsError(try AttributeEncoder().encode(TwoSpellings())) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .encodingFailed, "\(error)")
        }
        // One spelling alone keeps its bytes.
        let single = try AttributeCoding.encodeBytes(["cafe\u{301}": 1])
        XCTAssertEqual(
            Array(try AttributeCoding.decode([String: Int].self, fromBytes: single[...]).keys.first!.utf8), Array("cafe\u{301}".utf8))
    }

    func testDeeplyNestedBytesAreRejectedNotRecursedWithoutBound() throws {
        var bytes = [UInt8](repeating: TagByte.array, count: 0)
        for _ in 0..<10_000 { bytes += [TagByte.array, 1] }
        bytes.append(TagByte.null)
        XCTAssertThrowsError(try AttributeCoding.decode([[[Int]]].self, fromBytes: bytes[...])) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
    }

    func testRepeatedKeysKeepTheLastValue() throws {
        struct Twice: Encodable {
            enum K: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: K.self)
                try c.encode(1, forKey: .b)
                try c.encode(1, forKey: .a)
                try c.encode(2, forKey: .b)
            }
        }
        let tree = try encoder.encode(Twice())
        XCTAssertEqual(tree, .map(["a": .int(1), "b": .int(2)]))
        XCTAssertEqual(try AttributeCoding.encodeBytes(Twice()), tree.encoded())
    }

    func testNestingDeeperThanMaxDepthFailsToEncode() throws {
        XCTAssertNoThrow(try roundTrip(Chain.depth(AttributeValue.maxDepth / 2 - 1)))
        for deep in [Chain.depth(AttributeValue.maxDepth), Chain.depth(5_000)] {
            XCTAssertThrowsError(try encoder.encode(deep)) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .encodingFailed, "\(error)")
                XCTAssertTrue((error as? LogStoreError)?.underlyingError is CodingFailure)
            }
            XCTAssertThrowsError(try AttributeCoding.encodeBytes(deep)) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .encodingFailed, "\(error)")
            }
        }
        // A reference cycle is reported, not a stack overflow.
        let node = Node()
        node.next = node
        XCTAssertThrowsError(try AttributeCoding.encodeBytes(node))
        node.next = nil
    }

    func testDepthLimitMatchesTheEngine() throws {
        // The deepest tree the encoder accepts is one the engine decodes, and one level more is refused.
        struct Arrays: Encodable {
            var depth: Int
            func encode(to encoder: any Encoder) throws {
                var c = encoder.unkeyedContainer()
                for _ in 0..<depth { c = c.nestedUnkeyedContainer() }
                try c.encode(1)
            }
        }
        let ok = try AttributeCoding.encodeBytes(Arrays(depth: AttributeValue.maxDepth - 2))
        XCTAssertNoThrow(try AttributeValue.decode(ok))
        XCTAssertThrowsError(try AttributeCoding.encodeBytes(Arrays(depth: AttributeValue.maxDepth - 1)))
        XCTAssertThrowsError(try encoder.encode(Arrays(depth: AttributeValue.maxDepth - 1)))
    }

    func testErrorsThrownByEncodeToAreWrapped() throws {
        XCTAssertThrowsError(try encoder.encode(Failing())) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .encodingFailed)
            XCTAssertTrue(e?.underlyingError is Failing.Oops)
        }
    }

    func testUserInfoReachesEncodeAndDecode() throws {
        var enc = AttributeEncoder()
        enc.userInfo[UserInfoProbe.key] = "hello"
        XCTAssertEqual(try enc.encode(UserInfoProbe(seen: "")), .string("hello"))
        XCTAssertEqual(try encoder.encode(UserInfoProbe(seen: "")), .string("none"))
        var dec = AttributeDecoder()
        dec.userInfo[UserInfoProbe.key] = "world"
        XCTAssertEqual(try dec.decode(UserInfoProbe.self, from: .null).seen, "world")
        XCTAssertEqual(try decoder.decode(UserInfoProbe.self, from: .null).seen, "none")
    }

    func testRandomValuesRoundTrip() throws {
        var rng = SplitMix64(seed: 7)
        func string() -> String {
            let pool = Array("abcXYZ019 _-éß中😀\u{301}")
            return String((0..<Int(rng.next() % 12)).map { _ in pool[Int(rng.next() % UInt64(pool.count))] })
        }
        for _ in 0..<300 {
            let item = ItemV2(
                id: Int(truncatingIfNeeded: rng.next()), title: string(),
                price: Double(Int64(truncatingIfNeeded: rng.next())) / 1_000,
                tags: (0..<Int(rng.next() % 4)).map { _ in string() },
                discount: rng.next() % 2 == 0 ? nil : Double(Int64(truncatingIfNeeded: rng.next())),
                vendor: rng.next() % 2 == 0 ? nil : Address(street: string(), zip: Int(rng.next() % 100_000)))
            try roundTrip(item)
            var dict: [String: [UInt64]] = [:]
            for _ in 0..<Int(rng.next() % 6) { dict[string()] = [rng.next(), rng.next() >> 40] }
            try roundTrip(dict)
        }
    }
}
