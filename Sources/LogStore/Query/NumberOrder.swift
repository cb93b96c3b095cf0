import Foundation

/// LogStore's one total order for numbers, used by every sort (``DataStoreRequest/sortDescriptors``
/// on `Double`, `Float` and `Date` key paths, ``DataStoreRequest/setSort(whereAttribute:ascending:)``,
/// the bounded heap behind `limit`) and to be used by future indexes:
///
///     -inf < ... < -1 < -0.0 == +0.0 < 1 < ... < +inf < NaN
///
/// - Every NaN (any sign, any payload) equals every other NaN and is greater than `+inf`: NaN
///   sorts last ascending, first descending. IEEE 754's `totalOrder` would split NaNs by their
///   sign bit, which arithmetic sets arbitrarily (`0.0 / 0.0` is a *negative* NaN on x86-64), so
///   the same "not a number" would sort first or last depending on how it was computed.
/// - `-0.0` equals `+0.0`, as `==` says and as attribute filters compare, so a sort and a filter
///   never disagree about which values are equal. Equal values are ordered by id.
/// - Integers and doubles compare by exact mathematical value (no detour through `Double`, which
///   rounds integers above 2^53), so the order is transitive across `.int` and `.double`.
///
/// Pure functions; any thread. Results: -1, 0 or 1.
enum NumberOrder {
    /// Compares two floating-point values in the total order above.
    static func compare<F: BinaryFloatingPoint>(_ x: F, _ y: F) -> Int {
        if x.isNaN { return y.isNaN ? 0 : 1 }
        if y.isNaN { return -1 }
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    /// Compares an integer with a double by exact value; NaN is greater than every integer.
    static func compare(_ x: Int64, _ y: Double) -> Int {
        if y.isNaN { return -1 }
        // 2^63 is exact as a Double; every double at or above it is above every Int64, and every
        // double below -2^63 is below every Int64.
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = y.rounded(.towardZero)
        let w = Int64(whole)  // exact: |whole| < 2^63, or whole == -2^63
        if x != w { return x < w ? -1 : 1 }
        return y == whole ? 0 : (y > whole ? -1 : 1)
    }

    /// Compares two optionals: nil before every value (as Foundation's `SortDescriptor` does).
    static func compare<T>(_ x: T?, _ y: T?, by compare: (T, T) -> Int) -> Int {
        switch (x, y) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case (let a?, let b?): return compare(a, b)
        }
    }

    /// A comparison for `descriptor` that uses this total order when its key path leads to a
    /// `Double`, `Float` or `Date` (optional or not), LogStore's string order (``compareStrings(_:_:)``)
    /// for a `String` (optional or not) without a localized comparator, and Foundation's own
    /// comparison otherwise.
    /// `order: .reverse` gives the exact reverse. Needs `SortDescriptor.keyPath`, which
    /// swift-corelibs/swift-foundation (Linux) sets for every key path; Apple documents it as nil
    /// for types that are not `NSObject` subclasses, and then Foundation's comparison is used
    /// (in which NaN is unordered): attribute sorts are total everywhere.
    static func comparator<Item>(_ descriptor: SortDescriptor<Item>) -> @Sendable (Item, Item) -> ComparisonResult {
        // `& Sendable`: key paths are immutable values; the casts let the closures be `@Sendable`,
        // so an observation can keep them on its own thread.
        let ascending: (@Sendable (Item, Item) -> Int)?
        switch descriptor.keyPath {
        case let k as any KeyPath<Item, Double> & Sendable: ascending = { compare($0[keyPath: k], $1[keyPath: k]) }
        case let k as any KeyPath<Item, Double?> & Sendable: ascending = { compare($0[keyPath: k], $1[keyPath: k], by: compare) }
        case let k as any KeyPath<Item, Float> & Sendable: ascending = { compare($0[keyPath: k], $1[keyPath: k]) }
        case let k as any KeyPath<Item, Float?> & Sendable: ascending = { compare($0[keyPath: k], $1[keyPath: k], by: compare) }
        case let k as any KeyPath<Item, Date> & Sendable: ascending = { compareDates($0[keyPath: k], $1[keyPath: k]) }
        case let k as any KeyPath<Item, Date?> & Sendable: ascending = { compare($0[keyPath: k], $1[keyPath: k], by: compareDates) }
        case let k as any KeyPath<Item, String> & Sendable where usesStringOrder(descriptor):
            ascending = { compareStrings($0[keyPath: k], $1[keyPath: k]) }
        case let k as any KeyPath<Item, String?> & Sendable where usesStringOrder(descriptor):
            ascending = { compare($0[keyPath: k], $1[keyPath: k], by: compareStrings) }
        default: ascending = nil
        }
        guard let ascending else { return { descriptor.compare($0, $1) } }
        let reverse = descriptor.order == .reverse
        return { a, b in
            let c = ascending(a, b)
            if c == 0 { return .orderedSame }
            return (c < 0) != reverse ? .orderedAscending : .orderedDescending
        }
    }

    /// Whether `x` sorts before `y` by `comparators` (a request's sort descriptors, each from
    /// ``comparator(_:)``, most significant first): the first that tells them apart decides; nil
    /// when every one says they are the same (the caller breaks the tie by key). The one loop
    /// behind every descriptor sort (requests, and observation's maintained results).
    static func precedes<Item>(_ x: Item, _ y: Item, by comparators: [@Sendable (Item, Item) -> ComparisonResult]) -> Bool? {
        for compare in comparators {
            switch compare(x, y) {
            case .orderedAscending: return true
            case .orderedDescending: return false
            case .orderedSame: continue
            }
        }
        return nil
    }

    /// Whether a descriptor on a `String` key path sorts in LogStore's string order: it has no
    /// comparator of its own, or the lexical one (a localized comparator keeps its own order).
    static func usesStringOrder<Item>(_ descriptor: SortDescriptor<Item>) -> Bool {
        guard let c = descriptor.stringComparator else { return true }
        return c == .lexical
    }

    /// LogStore's string order, the one secondary indexes keep: the UTF-8 bytes of each string's
    /// Unicode NFC form. Canonically equivalent strings are equal (as `==` says); otherwise it
    /// agrees with Swift's `<` on every string that is NFC already (ASCII included), and stays a
    /// total order on the rest, where Swift's `<` is not always the NFC order.
    static func compareStrings(_ x: String, _ y: String) -> Int {
        if x.utf8.allSatisfy({ $0 < 0x80 }) && y.utf8.allSatisfy({ $0 < 0x80 }) {
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : (x.utf8.elementsEqual(y.utf8) ? 0 : 1)
        }
        let a = x.precomposedStringWithCanonicalMapping.utf8
        let b = y.precomposedStringWithCanonicalMapping.utf8
        return a.lexicographicallyPrecedes(b) ? -1 : (a.elementsEqual(b) ? 0 : 1)
    }

    /// Dates by their `timeIntervalSinceReferenceDate`, in the total order (a decoded date may be NaN).
    static func compareDates(_ x: Date, _ y: Date) -> Int {
        compare(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
    }
}
