import Foundation
import LogStore

// Requests article: a #Predicate means what it means in Swift. Every backend must return exactly
// the items `Predicate.evaluate` accepts, whatever it does underneath (SQL, stored bytes): nil,
// NaN, -0.0, Int.min/Int.max, numbers near 2^53, canonically equivalent strings (composed and
// decomposed, the Kelvin and Angstrom signs), dates, UUIDs, Booleans, arrays, nested values, and
// parts only the decoded item can decide.

/// An item with a field of every kind predicates compare.
struct Probe: DataStoreItem {
    static let itemType = "Probe"
    enum Kind: String, Codable, Sendable { case alpha, beta }
    struct Address: Codable, Sendable {
        var city: String
        var zip: Int?
    }
    var id: Int
    var int: Int
    var double: Double
    var text: String
    var flag: Bool
    var date: Date
    var uuid: UUID
    var tags: [String]
    var optInt: Int?
    var optText: String?
    var optDouble: Double?
    var address: Address
    var kind: Kind
}

/// The fields of ``Probe``: the predicate battery is written once over them and runs on `Probe`
/// (no index) and on ``IndexedProbe`` (the same fields, with declared indexes).
protocol ProbeShape: DataStoreItem where ID == Int {
    init(_ probe: Probe)
    var id: Int { get }
    var int: Int { get }
    var double: Double { get }
    var text: String { get }
    var flag: Bool { get }
    var date: Date { get }
    var uuid: UUID { get }
    var tags: [String] { get }
    var optInt: Int? { get }
    var optText: String? { get }
    var optDouble: Double? { get }
    var address: Probe.Address { get }
    var kind: Probe.Kind { get }
}

extension Probe: ProbeShape {
    init(_ probe: Probe) { self = probe }
}

/// ``Probe`` with secondary indexes on most fields (single, compound, nested, unique-free), so
/// the battery checks that indexed plans give Swift's answers too.
struct IndexedProbe: ProbeShape {
    static let itemType = "IndexedProbe"
    static let indexes: [DataStoreIndex<IndexedProbe>] = [
        .init(\.int), .init(\.text), .init(\.kind, \.int), .init(\.double), .init(\.date), .init(\.optInt),
        .init(\.address.city), .init(\.uuid), .init(\.flag, \.text), .init(\.optText), .init(\.optDouble),
    ]
    var id: Int
    var int: Int
    var double: Double
    var text: String
    var flag: Bool
    var date: Date
    var uuid: UUID
    var tags: [String]
    var optInt: Int?
    var optText: String?
    var optDouble: Double?
    var address: Probe.Address
    var kind: Probe.Kind

    init(_ p: Probe) {
        (id, int, double, text, flag, date, uuid, tags) = (p.id, p.int, p.double, p.text, p.flag, p.date, p.uuid, p.tags)
        (optInt, optText, optDouble, address, kind) = (p.optInt, p.optText, p.optDouble, p.address, p.kind)
    }
}

extension DataStoreConformance {
    static let edgeInts: [Int] = [0, 1, -1, 2, 3, 4, 100, -100, .max, .min, .max - 1, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1]
    static let edgeStrings: [String] = [
        "", "a", "A", "b", "B", "K", "\u{212A}", "caf\u{E9}", "cafe\u{301}", "caf", "cafe", "café au lait", "Z", "z", "zz",
        "\u{0}", "a\u{0}b", "😀", "e\u{301}\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}", "ß", "ss", "N1", "N10", "n2", "\"q\\",
        "\u{1F1EB}\u{1F1F7}",
    ]
    static let edgeDates: [Date] = [
        Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: 1), Date(timeIntervalSinceReferenceDate: -1),
        Date(timeIntervalSinceReferenceDate: 1e9), Date(timeIntervalSinceReferenceDate: 1e9 + 0.1),
        Date(timeIntervalSinceReferenceDate: (1e9 + 0.1).nextUp),
        .distantPast, .distantFuture, Date(timeIntervalSinceReferenceDate: 700_000_000.123456),
    ]
    static let probeUUIDs: [UUID] = (0..<5).map { UUID(uuidString: "00000000-0000-4000-8000-00000000000\($0)")! }

    /// 64 items mixing the edge values.
    static func probes() -> [Probe] {
        (0..<64).map { i in
            Probe(
                id: i,
                int: edgeInts[i % edgeInts.count],
                double: edgeDoubles[(i * 7) % edgeDoubles.count],
                text: edgeStrings[(i * 5) % edgeStrings.count],
                flag: i % 3 == 0,
                date: edgeDates[(i * 2) % edgeDates.count],
                uuid: probeUUIDs[i % probeUUIDs.count],
                tags: i % 4 == 0 ? [] : Array(edgeStrings[(i % 7)..<(i % 7 + i % 3 + 1)]),
                optInt: i % 5 == 0 ? nil : edgeInts[(i * 3) % edgeInts.count],
                optText: i % 2 == 0 ? nil : edgeStrings[(i * 11) % edgeStrings.count],
                optDouble: i % 6 == 0 ? nil : edgeDoubles[(i * 5) % edgeDoubles.count],
                address: Probe.Address(city: edgeStrings[(i * 13) % edgeStrings.count], zip: i % 4 == 1 ? nil : i * 10),
                kind: i % 2 == 0 ? .alpha : .beta)
        }
    }

    /// Predicates over `Probe`, named.
    static func probePredicates<P: ProbeShape>(_ type: P.Type = Probe.self) -> [(String, Predicate<P>)] {
        var out: [(String, Predicate<P>)] = []
        for x in edgeInts {
            out += [
                ("int == \(x)", #Predicate<P> { $0.int == x }), ("int != \(x)", #Predicate<P> { $0.int != x }),
                ("int < \(x)", #Predicate<P> { $0.int < x }), ("int <= \(x)", #Predicate<P> { $0.int <= x }),
                ("int > \(x)", #Predicate<P> { $0.int > x }), ("int >= \(x)", #Predicate<P> { $0.int >= x }),
                ("\(x) < int", #Predicate<P> { x < $0.int }),
            ]
        }
        for x in edgeDoubles {
            out += [
                ("double == \(x)", #Predicate<P> { $0.double == x }), ("double != \(x)", #Predicate<P> { $0.double != x }),
                ("double < \(x)", #Predicate<P> { $0.double < x }), ("double <= \(x)", #Predicate<P> { $0.double <= x }),
                ("double > \(x)", #Predicate<P> { $0.double > x }), ("double >= \(x)", #Predicate<P> { $0.double >= x }),
                ("optDouble == \(x)", #Predicate<P> { $0.optDouble == x }), ("optDouble != \(x)", #Predicate<P> { $0.optDouble != x }),
            ]
        }
        for x in edgeStrings {
            let d = x.debugDescription
            out += [
                ("text == \(d)", #Predicate<P> { $0.text == x }), ("text != \(d)", #Predicate<P> { $0.text != x }),
                ("text < \(d)", #Predicate<P> { $0.text < x }), ("text <= \(d)", #Predicate<P> { $0.text <= x }),
                ("text > \(d)", #Predicate<P> { $0.text > x }), ("text >= \(d)", #Predicate<P> { $0.text >= x }),
                ("optText == \(d)", #Predicate<P> { $0.optText == x }), ("address.city == \(d)", #Predicate<P> { $0.address.city == x }),
                ("tags contains \(d)", #Predicate<P> { $0.tags.contains(x) }),
            ]
        }
        for x in edgeDates {
            out += [
                ("date == \(x)", #Predicate<P> { $0.date == x }), ("date != \(x)", #Predicate<P> { $0.date != x }),
                ("date < \(x)", #Predicate<P> { $0.date < x }), ("date <= \(x)", #Predicate<P> { $0.date <= x }),
                ("date > \(x)", #Predicate<P> { $0.date > x }), ("date >= \(x)", #Predicate<P> { $0.date >= x }),
            ]
        }
        for u in probeUUIDs.prefix(2) {
            out += [("uuid == \(u)", #Predicate<P> { $0.uuid == u }), ("uuid != \(u)", #Predicate<P> { $0.uuid != u })]
        }
        let three: Int? = 3
        let none: Int? = nil
        let empty = ""
        let twoTexts = ["a", "cafe\u{301}"]
        let someInts = [1, -1, Int.max]
        let alpha = Probe.Kind.alpha
        let oneHundred = 100
        out += [
            ("flag", #Predicate<P> { $0.flag }), ("!flag", #Predicate<P> { !$0.flag }),
            ("flag == true", #Predicate<P> { $0.flag == true }), ("flag != true", #Predicate<P> { $0.flag != true }),
            ("optInt == nil", #Predicate<P> { $0.optInt == nil }), ("optInt != nil", #Predicate<P> { $0.optInt != nil }),
            ("optInt == 3?", #Predicate<P> { $0.optInt == three }), ("optInt == none", #Predicate<P> { $0.optInt == none }),
            ("optText == nil", #Predicate<P> { $0.optText == nil }), ("optDouble == nil", #Predicate<P> { $0.optDouble == nil }),
            ("address.zip == nil", #Predicate<P> { $0.address.zip == nil }),
            ("address.zip != nil", #Predicate<P> { $0.address.zip != nil }),
            ("optInt > 2 ?? false", #Predicate<P> { $0.optInt.flatMap { $0 > 2 } ?? false }),
            ("optInt > 2 ?? true", #Predicate<P> { $0.optInt.flatMap { $0 > 2 } ?? true }),
            ("text in [a, cafe\u{301}]", #Predicate<P> { twoTexts.contains($0.text) }),
            ("int in [1, -1, max]", #Predicate<P> { someInts.contains($0.int) }),
            ("kind == alpha", #Predicate<P> { $0.kind == alpha }),
            ("int >= 0 && flag", #Predicate<P> { $0.int >= 0 && $0.flag }),
            ("int < 0 || text == \"\"", #Predicate<P> { $0.int < 0 || $0.text == empty }),
            ("!(int > 3 && double < 1)", #Predicate<P> { !($0.int > 3 && $0.double < 1) }),
            ("(int > 3 || flag) && !(text == \"a\")", #Predicate<P> { ($0.int > 3 || $0.flag) && !($0.text == "a") }),
            // Parts only the decoded item can decide, alone and mixed with ones SQL can.
            ("text.count > 2", #Predicate<P> { $0.text.count > 2 }),
            ("text.hasPrefix(\"ca\")", #Predicate<P> { $0.text.starts(with: "ca") }),
            ("int % 2 == 0", #Predicate<P> { $0.int % 2 == 0 }),
            ("int > 0 && text.count > 1", #Predicate<P> { $0.int > 0 && $0.text.count > 1 }),
            ("int > 100 || tags.count == 2", #Predicate<P> { $0.int > oneHundred || $0.tags.count == 2 }),
            ("!(tags.isEmpty) && double >= 0", #Predicate<P> { !$0.tags.isEmpty && $0.double >= 0 }),
            ("true", #Predicate<P> { _ in true }), ("false", #Predicate<P> { _ in false }),
        ]
        return out
    }

    /// Checks `predicate` on `store` (or inside `accessor`) against `Predicate.evaluate` on `items`.
    static func checkPredicate<P: ProbeShape>(
        _ c: ConformanceContext, _ name: String, _ predicate: Predicate<P>, items: [P],
        _ a: any DataStoreReadAccessor
    ) throws {
        let expected = try items.filter { try predicate.evaluate($0) }.map(\.id).sorted()
        var req = DataStoreRequest(itemType: P.self)
        req.predicate = predicate
        c.expectEqual(try a.items(forRequest: req).map(\.id), expected, name)
        c.expectEqual(try a.countItems(forRequest: req), expected.count, "count of \(name)")
        req.offset = 1
        req.limit = 2
        c.expectEqual(try a.items(forRequest: req).map(\.id), Array(expected.dropFirst().prefix(2)), "\(name), offset 1, limit 2")
        req.offset = 0
        req.limit = 3
        req.sortDescriptors = [SortDescriptor(\.int, order: .reverse)]
        let sorted = try items.filter { try predicate.evaluate($0) }.sorted { $0.int > $1.int || ($0.int == $1.int && $0.id < $1.id) }
        c.expectEqual(try a.items(forRequest: req).map(\.id), sorted.prefix(3).map(\.id), "\(name), sorted by int descending, limit 3")
    }

    static var predicateCases: [ConformanceCase] {
        [
            ConformanceCase(
                "predicates.answersEqualSwiftEvaluation",
                "Requests: the items a request returns, and its count, are exactly those Predicate.evaluate accepts (edge values of every kind, nested values, optionals, parts only the decoded item decides)."
            ) { c in
                let store = try c.openStore()
                let items = probes()
                try store.writeSync { a in for p in items { try a.insert(p) } }
                try store.read { a in
                    for (name, predicate) in probePredicates() { try checkPredicate(c, name, predicate, items: items, a) }
                }
            },
            ConformanceCase(
                "predicates.indexedAnswersEqualSwiftEvaluation",
                "Indexes: with secondary indexes declared on most fields, requests give exactly the items, counts and order Predicate.evaluate and the sort give (indexes change plans, never answers)."
            ) { c in
                let store = try c.openStore()
                let items = probes().map(IndexedProbe.init)
                try store.writeSync { a in for p in items.prefix(40) { try a.insert(p) } }
                try store.writeSync { a in
                    for p in items.dropFirst(40) { try a.insert(p) }
                    try a.delete(items[3])
                    try a.insert(IndexedProbe(probes()[3]))
                }
                try store.read { a in
                    for (name, predicate) in probePredicates(IndexedProbe.self) {
                        try checkPredicate(c, "indexed: " + name, predicate, items: items, a)
                    }
                }
            },
            ConformanceCase(
                "predicates.insideWriteBlockSeeUncommittedItems",
                "Rule 4 with requests: predicates in a write block answer over the block's own changes."
            ) { c in
                let store = try c.openStore()
                let items = probes()
                try store.writeSync { a in for p in items.prefix(40) { try a.insert(p) } }
                try store.writeSync { a in
                    for p in items.dropFirst(40) { try a.insert(p) }
                    for p in items.prefix(10) { try a.delete(p) }
                    let visible = Array(items.dropFirst(10))
                    for (name, predicate) in probePredicates()
                    where name.hasPrefix("int") || name.hasPrefix("text ==") || name.hasPrefix("double <") {
                        try checkPredicate(c, "in a write block: " + name, predicate, items: visible, a)
                    }
                }
            },
        ]
    }
}
