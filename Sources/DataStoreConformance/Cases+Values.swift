import Foundation
import LogStore

// Values: every kind of attribute a Codable item encodes to is stored exactly, and read back as
// the same canonical bytes on every backend (what the data migrator's verification compares).

/// An item holding every attribute kind, with edge values.
struct Everything: DataStoreItem {
    static let itemType = "Everything"
    enum Shape: Codable, Sendable {
        case circle(radius: Double)
        case label(String, Int)
    }
    var id: String
    var bool: Bool
    var int: Int
    var int8: Int8
    var uint64: UInt64
    var double: Double
    var float: Float
    var text: String
    var data: Data
    var date: Date
    var uuid: UUID
    var url: URL
    var decimal: Decimal
    var optional: Int?
    var explicitNil: [Int?]
    var array: [String]
    var nested: [[Double]]
    var dictionary: [String: Int]
    var intKeyed: [Int: String]
    var shape: Shape
}

extension DataStoreConformance {
    static func everything() -> [Everything] {
        let texts = [
            "", "plain", "caf\u{E9}", "cafe\u{301}", "\u{212A}", "\u{0}\u{1}\u{1F}\"\\/", "😀🇫🇷", "$date", "tab\tnew\nline",
            String(repeating: "long ", count: 400),
        ]
        return (0..<edgeDoubles.count).map { i in
            let d = edgeDoubles[i]
            return Everything(
                id: String(format: "e%02d", i),
                bool: i % 2 == 0,
                int: edgeInts[i % edgeInts.count],
                int8: Int8(truncatingIfNeeded: i * 37 - 128),
                uint64: i % 3 == 0 ? .max : UInt64(i) << 60,
                double: d,
                float: Float(d),
                text: texts[i % texts.count],
                data: Data((0..<(i * 7 % 40)).map { UInt8(truncatingIfNeeded: $0 * 31 + i) }),
                date: Date(timeIntervalSinceReferenceDate: i % 4 == 3 ? d : Double(i) * 1234.5678),
                uuid: probeUUIDs[i % probeUUIDs.count],
                url: URL(string: "https://example.com/\(i)?q=\(i)")!,
                decimal: Decimal(string: "\(i).\(i)1")!,
                optional: i % 2 == 0 ? nil : i,
                explicitNil: [nil, i, nil],
                array: Array(texts.prefix(i % 5)),
                nested: [[d, -d], [], [Double(i)]],
                dictionary: ["a": i, "$b": -i, "caf\u{E9}": 1, "$": 0, "$$x": 2],
                intKeyed: [i: "v", -i - 1: "w"],
                shape: i % 2 == 0 ? .circle(radius: d) : .label(texts[i % texts.count], i))
        }
    }

    static var valueCases: [ConformanceCase] {
        [
            ConformanceCase(
                "values.everyKindRoundTripsExactly",
                "Values: an item reads back as the exact value stored: every integer width, doubles and floats bit for bit (NaN, -0.0, infinities), strings byte for byte (composed and decomposed), Data, Date, UUID, URL, Decimal, optionals, nulls, arrays, maps, enums."
            ) { c in
                let store = try c.openStore()
                let items = everything()
                try store.writeSync { a in for e in items { try a.insert(e) } }
                let encoder = AttributeEncoder()
                let back = try allOf(Everything.self, in: store)
                c.expectEqual(back.count, items.count)
                for (stored, read) in zip(items, back) {
                    c.expectEqual(try encoder.encode(read).encoded(), try encoder.encode(stored).encoded(), "item \(stored.id) read back")
                    c.expectEqual(read.double.bitPattern, stored.double.bitPattern, "item \(stored.id): double bits")
                    c.expectEqual(Array(read.text.utf8), Array(stored.text.utf8), "item \(stored.id): text bytes")
                }
                if c.capabilities.contains(.recordAccess) {
                    // The canonical bytes are the same as the encoder's, whatever the backend stores.
                    try store.read { a in
                        var i = 0
                        try a.forEachRecord(ofType: Everything.itemType, after: nil) { key, bytes in
                            if i < items.count {
                                c.expectEqual(
                                    Array(bytes), try encoder.encode(items[i]).encoded(), "record \(items[i].id): canonical bytes")
                                c.expectEqual(key, try ItemKey.make(items[i].id), "record \(items[i].id): key")
                            }
                            i += 1
                            return true
                        }
                        c.expectEqual(i, items.count, "records")
                    }
                }
            },
            ConformanceCase(
                "values.roundTripSurvivesReopen",
                "Values: the exact values survive a reopen.", requires: .persistsAcrossReopen
            ) { c in
                let location = try c.makeLocation()
                let store = try location.makeStore()
                try store.setup()
                let items = everything()
                try store.writeSync { a in for e in items { try a.insert(e) } }
                try store.tearDown()
                let again = try location.makeStore()
                try again.setup()
                let encoder = AttributeEncoder()
                let back = try allOf(Everything.self, in: again)
                c.expectEqual(try back.map { try encoder.encode($0).encoded() }, try items.map { try encoder.encode($0).encoded() })
                try again.tearDown()
            },
        ]
    }
}
