import LogStoreEngine

extension AttributeValue {
    /// The rank of a value's kind in attribute sorts: null, bool, number, string, bytes, date,
    /// uuid, array, map.
    var sortRank: Int {
        switch self {
        case .null: return 0
        case .bool: return 1
        case .int, .double: return 2
        case .string: return 3
        case .bytes: return 4
        case .date: return 5
        case .uuid: return 6
        case .array: return 7
        case .map: return 8
        }
    }

    /// Total order used by attribute sorts (see ``DataStoreRequest/setSort(whereAttribute:ascending:)``)
    /// and attribute filters' number equality: kinds by ``sortRank``; numbers (`.int` and
    /// `.double` together) and dates in ``NumberOrder``'s exact total order (NaN last, `-0.0 ==
    /// 0.0`); strings in ``NumberOrder/compareStrings(_:_:)``'s order (the bytes of their NFC
    /// form; canonically equivalent strings are equal), as secondary indexes keep them; arrays
    /// element by element; all maps equal. Transitive, so sorting and the bounded heap agree.
    static func compare(_ a: AttributeValue?, _ b: AttributeValue?) -> Int {
        // Arrays compare element by element with an explicit stack (not recursion), so a deeply
        // nested value costs no stack.
        var pending: [(ArraySlice<AttributeValue>, ArraySlice<AttributeValue>)] = []
        var pair = (a ?? .null, b ?? .null)
        while true {
            if case (.array(let x), .array(let y)) = pair {
                pending.append((x[...], y[...]))
            } else {
                let c = compareScalars(pair.0, pair.1)
                if c != 0 { return c }
            }
            while true {
                guard let (x, y) = pending.popLast() else { return 0 }
                guard let p = x.first, let q = y.first else {
                    if x.count != y.count { return x.isEmpty ? -1 : 1 }
                    continue
                }
                pending.append((x.dropFirst(), y.dropFirst()))
                pair = (p, q)
                break
            }
        }
    }

    /// ``compare(_:_:)`` for everything but two arrays.
    static func compareScalars(_ a: AttributeValue, _ b: AttributeValue) -> Int {
        let ra = a.sortRank
        let rb = b.sortRank
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.int(let x), .int(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.int(let x), .double(let y)): return NumberOrder.compare(x, y)
        case (.double(let x), .int(let y)): return -NumberOrder.compare(y, x)
        case (.double(let x), .double(let y)): return NumberOrder.compare(x, y)
        case (.string(let x), .string(let y)): return NumberOrder.compareStrings(x, y)
        case (.bytes(let x), .bytes(let y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case (.date(let x), .date(let y)): return NumberOrder.compareDates(x, y)
        case (.uuid(let x), .uuid(let y)):
            let kx = ItemKey.uuid(x)
            let ky = ItemKey.uuid(y)
            return kx == ky ? 0 : (kx < ky ? -1 : 1)
        default: return 0
        }
    }

    /// Equality for attribute filters: numbers compare by value across int and double.
    static func filterEquals(_ stored: AttributeValue?, _ wanted: AttributeValue) -> Bool {
        let stored = stored ?? .null
        switch (stored, wanted) {
        case (.int, .double), (.double, .int): return compare(stored, wanted) == 0
        default: return stored == wanted
        }
    }
}
