// The machinery behind AttributeEncoder and AttributeCoding.encodeBytes.
//
// One encode call fills one arena. Map keys and scalar values are written at once, in the value
// grammar (AttributeBytes.swift, Docs/FileFormat.md "Values"), into a scratch buffer; containers
// are index-linked lists of plain entries pointing at those bytes or at nested containers, so
// nothing is allocated or reference-counted per field. Map entries are kept in key order (UTF-8
// bytes, as the format requires) as they arrive; only large maps are sorted at the end. When
// `encode(to:)` returns, `bytes()` copies the pieces into the final value and
// `attributeValue()` builds the tree instead.

internal import Foundation
internal import LogStoreEngine

extension EncodingArena {
    /// A map entry, an array element or the root value. Offsets are into the arena's `scratch`.
    struct Entry {
        /// The container holding this entry, or -1 for the root.
        var owner: Int32
        /// The owner's next entry (in key order for sorted maps, else in encoding order), or -1.
        var next: Int32
        /// The container that is this entry's value, or -1.
        var child: Int32
        /// Levels nested inside the pre-encoded value (0: a scalar; 1: an array of scalars).
        var innerDepth: Int32
        /// The array position, or -1 for map entries and the root.
        var index: Int
        /// The encoded key (`uvarint(length) utf8`) at `keyStart..<keyEnd`, its UTF-8 from `keyUTF8`;
        /// all equal for array elements and the root.
        var keyStart: Int
        var keyUTF8: Int
        var keyEnd: Int
        /// The first 8 key bytes, big-endian and zero-padded (orders keys except on ties).
        var prefix: UInt64
        /// The pre-encoded value at `valueStart..<valueEnd` (when `child` is -1). Empty: nothing was
        /// encoded, which is written as an empty map (as JSONEncoder writes `{}`).
        var valueStart: Int
        var valueEnd: Int
    }

    /// A keyed (map) or unkeyed (array) container: a linked list of entries.
    struct Container {
        var isMap: Bool
        /// Maps: whether the list is in key order with unique keys (kept so up to `sortedLimit`
        /// entries; larger maps are sorted by `bytes()`).
        var isSorted = true
        /// The entry whose value this container is.
        var entry: Int32
        var first: Int32 = -1
        var last: Int32 = -1
        var count: Int32 = 0

        init(isMap: Bool, entry: Int32) {
            self.isMap = isMap
            self.entry = entry
        }
    }
}

/// The state of one encode call. Used by one thread at a time (the caller's, for the duration
/// of the call) and never shared while in use; idle arenas wait in `ArenaPool` so that their
/// buffers are reused. Its stored properties opt out of dynamic exclusivity checks: every access
/// is a short read, append or field store that never overlaps another access (no access spans a
/// call back into user code), which is the invariant those checks would verify.
final class EncodingArena {
    /// Maps with more entries than this are sorted once at the end instead of on insertion.
    static let sortedLimit: Int32 = 32

    @exclusivity(unchecked) var entries: [Entry] = []
    @exclusivity(unchecked) var containers: [Container] = []
    /// Keys and scalar values, encoded as soon as `encode(to:)` hands them over.
    let scratch = ValueWriter(capacity: 512)
    /// The final value, written by `bytes()`.
    let out = ValueWriter(capacity: 512)
    /// A stack of entry numbers used while sorting large maps in `bytes()`.
    @exclusivity(unchecked) var order: [Int32] = []
    @exclusivity(unchecked) var userInfo: [CodingUserInfoKey: Any] = [:]

    init() {
        entries.reserveCapacity(32)
        containers.reserveCapacity(8)
    }

    /// Forgets the last encode call, keeping the buffers' memory.
    func reset() {
        entries.removeAll(keepingCapacity: true)
        containers.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        scratch.count = 0
        out.count = 0
        if !userInfo.isEmpty { userInfo = [:] }
    }

    /// Whether the buffers are small enough to keep for the next call.
    var isWorthKeeping: Bool {
        scratch.capacity <= 1 << 20 && out.capacity <= 1 << 20 && entries.capacity <= 1 << 14
            && order.capacity <= 1 << 14
    }

    /// Encodes `value` with an arena from the pool and passes it (its root is entry 0) to `body`.
    /// The arena goes back to the pool afterwards: `body` must not keep it.
    static func withEncoded<T: Encodable, R>(
        _ value: T, userInfo: [CodingUserInfoKey: any Sendable], _ body: (EncodingArena) throws -> R
    ) throws -> R {
        let arena = ArenaPool.shared.take()
        defer { ArenaPool.shared.give(arena) }
        if !userInfo.isEmpty { arena.userInfo = userInfo.mapValues { $0 as Any } }
        arena.entries.append(
            Entry(
                owner: -1, next: -1, child: -1, innerDepth: 0, index: -1, keyStart: 0, keyUTF8: 0, keyEnd: 0, prefix: 0,
                valueStart: 0, valueEnd: 0))
        if let inner = arena.appendFast(value) {
            arena.setScalar(0, start: 0, innerDepth: inner)
        } else {
            try arena.encodeValue(value, entry: 0, depth: 0)
        }
        return try body(arena)
    }

    // MARK: Building

    /// Writes `key` into `scratch`; returns where it starts (pass it to `link`).
    @inline(__always)
    func writeKey(_ key: String) -> Int {
        let start = scratch.count
        scratch.rawString(key)
        return start
    }

    /// Appends an entry to container `c`: for maps, the key written at `keyStart` (by `writeKey`)
    /// and the value written since `valueStart`; for arrays (`keyStart` -1), that value alone.
    @inline(__always) @discardableResult
    func link(_ c: Int, keyStart: Int, valueStart: Int, innerDepth: Int32) -> Int {
        let e = entries.count
        var entry = Entry(
            owner: Int32(truncatingIfNeeded: c), next: -1, child: -1, innerDepth: innerDepth, index: -1,
            keyStart: valueStart, keyUTF8: valueStart, keyEnd: valueStart, prefix: 0,
            valueStart: valueStart, valueEnd: scratch.count)
        if keyStart >= 0 {
            entry.keyStart = keyStart
            entry.keyEnd = valueStart
            var utf8 = keyStart
            while scratch.base[utf8] & 0x80 != 0 { utf8 += 1 }
            entry.keyUTF8 = utf8 + 1
            entry.prefix = keyPrefix(entry.keyUTF8, valueStart)
        } else {
            entry.index = Int(containers[c].count)
        }
        entries.append(entry)
        if containers[c].isMap && containers[c].isSorted {
            insertSorted(e, into: c)
        } else {
            append(e, to: c)
        }
        return e
    }

    @inline(__always)
    private func append(_ e: Int, to c: Int) {
        let last = containers[c].last
        if last >= 0 {
            entries[Int(last)].next = Int32(truncatingIfNeeded: e)
        } else {
            containers[c].first = Int32(truncatingIfNeeded: e)
        }
        containers[c].last = Int32(truncatingIfNeeded: e)
        containers[c].count += 1
    }

    /// Links entry `e` into sorted map `c` at its key's place; an entry with the same key is
    /// replaced (the last value encoded for a key wins).
    private func insertSorted(_ e: Int, into c: Int) {
        guard containers[c].count < Self.sortedLimit else {
            containers[c].isSorted = false
            append(e, to: c)
            return
        }
        let e32 = Int32(truncatingIfNeeded: e)
        // Synthesized code often encodes keys in order: check the end first.
        let last = Int(containers[c].last)
        if last < 0 || compareKeys(last, e) < 0 {
            append(e, to: c)
            return
        }
        var previous = -1
        var current = Int(containers[c].first)
        while current >= 0 {
            let order = compareKeys(current, e)
            if order == 0 {
                entries[e].next = entries[current].next
                if previous >= 0 { entries[previous].next = e32 } else { containers[c].first = e32 }
                if containers[c].last == Int32(truncatingIfNeeded: current) { containers[c].last = e32 }
                return
            }
            if order > 0 { break }
            previous = current
            current = Int(entries[current].next)
        }
        entries[e].next = Int32(truncatingIfNeeded: current)
        if previous >= 0 { entries[previous].next = e32 } else { containers[c].first = e32 }
        if current < 0 { containers[c].last = e32 }
        containers[c].count += 1
    }

    /// The first 8 bytes of `scratch[from..<to]`, big-endian, zero-padded.
    @inline(__always)
    private func keyPrefix(_ from: Int, _ to: Int) -> UInt64 {
        let n = to - from
        if n >= 8 {
            return UInt64(bigEndian: UnsafeRawPointer(scratch.base + from).loadUnaligned(as: UInt64.self))
        }
        var p: UInt64 = 0
        var shift: UInt64 = 56
        for i in from..<to {
            p |= UInt64(scratch.base[i]) << shift
            shift &-= 8
        }
        return p
    }

    /// Orders the keys of entries `a` and `b` by their UTF-8 bytes: <0, 0 or >0.
    @inline(__always)
    func compareKeys(_ a: Int, _ b: Int) -> Int {
        let pa = entries[a].prefix
        let pb = entries[b].prefix
        if pa != pb { return pa < pb ? -1 : 1 }
        let la = entries[a].keyEnd - entries[a].keyUTF8
        let lb = entries[b].keyEnd - entries[b].keyUTF8
        let n = Swift.min(la, lb)
        if n > 8 {
            let c = memcmp(scratch.base + entries[a].keyUTF8 + 8, scratch.base + entries[b].keyUTF8 + 8, n - 8)
            if c != 0 { return Int(c) }
        }
        return la - lb
    }

    /// The key of entry `e` as a String (for coding paths and trees).
    func key(_ e: Int) -> String {
        String(
            decoding: UnsafeBufferPointer(start: scratch.base + entries[e].keyUTF8, count: entries[e].keyEnd - entries[e].keyUTF8),
            as: UTF8.self)
    }

    /// Makes `scratch[start...]` the value of entry `e` (replacing what it held).
    @inline(__always)
    func setScalar(_ e: Int, start: Int, innerDepth: Int32) {
        entries[e].child = -1
        entries[e].innerDepth = innerDepth
        entries[e].valueStart = start
        entries[e].valueEnd = scratch.count
    }

    /// The container that is entry `e`'s value, created if needed. A subclass and its superclass
    /// asking the same encoder for a keyed container share one.
    func container(for e: Int, isMap: Bool) -> Int {
        let existing = Int(entries[e].child)
        if existing >= 0 && containers[existing].isMap == isMap { return existing }
        let c = containers.count
        containers.append(Container(isMap: isMap, entry: Int32(truncatingIfNeeded: e)))
        entries[e].child = Int32(truncatingIfNeeded: c)
        entries[e].valueEnd = entries[e].valueStart
        return c
    }

    /// Runs `value.encode(to:)` with entry `e` as its destination. `depth` counts nested calls;
    /// it stops reference cycles and runaway recursion long before the stack runs out.
    func encodeValue<T: Encodable>(_ value: T, entry e: Int, depth: Int) throws {
        guard depth < 2 * AttributeValue.maxDepth else {
            throw EncodingError.invalidValue(
                value,
                .init(
                    codingPath: codingPath(e),
                    debugDescription:
                        "The value is nested deeper than \(AttributeValue.maxDepth) levels (a reference cycle?)."))
        }
        try value.encode(to: ArenaEncoder(arena: self, entry: e, depth: depth))
    }

    /// Writes the types the format stores natively, the primitives (which reach generic `encode`
    /// through arrays and dictionaries) and arrays of common scalars straight into `scratch`,
    /// without calling their `encode(to:)`. Returns the levels nested inside what it wrote, or
    /// nil (writing nothing) for other types.
    @inline(__always)
    func appendFast<T: Encodable>(_ value: T) -> Int32? {
        // `unsafeBitCast` is an identity conversion here: each branch runs only when T is that type.
        if T.self == String.self {
            scratch.string(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            scratch.int(Int64(unsafeBitCast(value, to: Int.self)))
        } else if T.self == Double.self {
            scratch.double(unsafeBitCast(value, to: Double.self))
        } else if T.self == Bool.self {
            scratch.bool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == Date.self {
            scratch.date(unsafeBitCast(value, to: Date.self))
        } else if T.self == UUID.self {
            scratch.uuid(unsafeBitCast(value, to: UUID.self))
        } else if T.self == Data.self {
            scratch.bytes(unsafeBitCast(value, to: Data.self))
        } else if T.self == Int64.self {
            scratch.int(unsafeBitCast(value, to: Int64.self))
        } else if T.self == NativeArrayTypes.strings {
            return scratch.array(unsafeBitCast(value, to: [String].self)) { $0.string($1) }
        } else if T.self == URL.self {
            scratch.string(unsafeBitCast(value, to: URL.self).absoluteString)
        } else if T.self == Decimal.self {
            scratch.string(unsafeBitCast(value, to: Decimal.self).description)
        } else if T.self == Float.self {
            scratch.double(Double(unsafeBitCast(value, to: Float.self)))
        } else if T.self == Int32.self {
            scratch.int(Int64(unsafeBitCast(value, to: Int32.self)))
        } else if T.self == UInt64.self {
            scratch.int(Int64(bitPattern: unsafeBitCast(value, to: UInt64.self)))
        } else if T.self == UInt.self {
            scratch.int(Int64(bitPattern: UInt64(unsafeBitCast(value, to: UInt.self))))
        } else if T.self == UInt8.self {
            scratch.int(Int64(unsafeBitCast(value, to: UInt8.self)))
        } else if T.self == Int16.self {
            scratch.int(Int64(unsafeBitCast(value, to: Int16.self)))
        } else if T.self == Int8.self {
            scratch.int(Int64(unsafeBitCast(value, to: Int8.self)))
        } else if T.self == UInt16.self {
            scratch.int(Int64(unsafeBitCast(value, to: UInt16.self)))
        } else if T.self == UInt32.self {
            scratch.int(Int64(unsafeBitCast(value, to: UInt32.self)))
        } else if T.self == NativeArrayTypes.ints {
            return scratch.array(unsafeBitCast(value, to: [Int].self)) { $0.int(Int64($1)) }
        } else if T.self == NativeArrayTypes.doubles {
            return scratch.array(unsafeBitCast(value, to: [Double].self)) { $0.double($1) }
        } else if T.self == NativeArrayTypes.int64s {
            return scratch.array(unsafeBitCast(value, to: [Int64].self)) { $0.int($1) }
        } else if T.self == NativeArrayTypes.bools {
            return scratch.array(unsafeBitCast(value, to: [Bool].self)) { $0.bool($1) }
        } else if T.self == NativeArrayTypes.uuids {
            return scratch.array(unsafeBitCast(value, to: [UUID].self)) { $0.uuid($1) }
        } else if T.self == NativeArrayTypes.dates {
            return scratch.array(unsafeBitCast(value, to: [Date].self)) { $0.date($1) }
        } else {
            return nil
        }
        return 0
    }

    /// The coding path of entry `e`.
    func codingPath(_ e: Int) -> [any CodingKey] {
        var path: [any CodingKey] = []
        var cur = e
        while entries[cur].owner >= 0 {
            let index = entries[cur].index
            path.append(index >= 0 ? PathKey(index: index) : PathKey(stringValue: key(cur)))
            cur = Int(containers[Int(entries[cur].owner)].entry)
        }
        return path.reversed()
    }

    // MARK: Output

    /// The encoded value (the same bytes as `attributeValue().encoded()`).
    func bytes() throws(TooDeep) -> [UInt8] {
        out.count = 0
        try write(entry: 0, depth: 0)
        return [UInt8](unsafeUninitializedCapacity: out.count) { buffer, initialized in
            if let dst = buffer.baseAddress { dst.update(from: out.base, count: out.count) }
            initialized = out.count
        }
    }

    /// The encoded value as a tree (a repeated map key keeps its last value).
    func attributeValue() throws(TooDeep) -> AttributeValue {
        try value(entry: 0, depth: 0)
    }

    /// Writes entry `e`'s value (and, with `withKey`, its key first).
    private func write(entry e: Int, depth: Int, withKey: Bool = false) throws(TooDeep) {
        let child = Int(entries[e].child)
        if withKey {
            let keyEnd = entries[e].keyEnd
            if child < 0 && keyEnd == entries[e].valueStart && entries[e].valueEnd > keyEnd {
                // Key and scalar value were written together: one copy.
                guard depth + Int(entries[e].innerDepth) < AttributeValue.maxDepth else { throw TooDeep(path: []) }
                out.append(from: scratch, start: entries[e].keyStart, end: entries[e].valueEnd)
                return
            }
            out.append(from: scratch, start: entries[e].keyStart, end: keyEnd)
        }
        if child >= 0 { return try writeContainer(child, depth: depth) }
        guard depth + Int(entries[e].innerDepth) < AttributeValue.maxDepth else { throw TooDeep(path: []) }
        let start = entries[e].valueStart
        let end = entries[e].valueEnd
        if end > start {
            out.append(from: scratch, start: start, end: end)
        } else {
            out.u8(TagByte.map)
            out.u8(0)
        }
    }

    private func writeContainer(_ c: Int, depth: Int) throws(TooDeep) {
        guard depth < AttributeValue.maxDepth else { throw TooDeep(path: []) }
        let n = Int(containers[c].count)
        var i = Int(containers[c].first)
        if !containers[c].isMap {
            out.u8(TagByte.array)
            out.uvarint(UInt64(n))
            var index = 0
            while i >= 0 {
                do { try write(entry: i, depth: depth + 1) } catch { throw error.prepending(.index(index)) }
                i = Int(entries[i].next)
                index += 1
            }
            return
        }
        try checkEquivalentKeys(c)
        if containers[c].isSorted {
            out.u8(TagByte.map)
            out.uvarint(UInt64(n))
            while i >= 0 {
                do { try write(entry: i, depth: depth + 1, withKey: true) } catch { throw error.prepending(.key(key(i), nil)) }
                i = Int(entries[i].next)
            }
            return
        }
        // A large map: sort its entries by key (ties: encoding order), keep the last of each key.
        let base = order.count
        defer { order.removeLast(order.count - base) }
        while i >= 0 {
            order.append(Int32(truncatingIfNeeded: i))
            i = Int(entries[i].next)
        }
        let end = base + n
        order.withUnsafeMutableBufferPointer { all in
            var o = UnsafeMutableBufferPointer(rebasing: all[base..<end])
            o.sort { a, b in
                let c = compareKeys(Int(a), Int(b))
                return c != 0 ? c < 0 : a < b
            }
        }
        var unique = n
        for j in base..<(end - 1) where compareKeys(Int(order[j]), Int(order[j + 1])) == 0 { unique -= 1 }
        out.u8(TagByte.map)
        out.uvarint(UInt64(unique))
        for j in base..<end {
            let e = Int(order[j])
            if j + 1 < end && compareKeys(e, Int(order[j + 1])) == 0 { continue }
            do { try write(entry: e, depth: depth + 1, withKey: true) } catch { throw error.prepending(.key(key(e), nil)) }
        }
    }

    /// Throws when map `c` has two keys that differ in bytes but are equal as Swift strings (a
    /// `CodingKey` pair such as NFC and NFD "é"): the decoders reject such a map, so it is never
    /// written. Maps whose keys are all ASCII (nearly all) are checked by their key prefixes only.
    private func checkEquivalentKeys(_ c: Int) throws(TooDeep) {
        var i = Int(containers[c].first)
        var nonASCII = false
        while i >= 0 && !nonASCII {
            let e = entries[i]
            if e.prefix & 0x8080_8080_8080_8080 != 0 {
                nonASCII = true
            } else {
                var j = e.keyUTF8 + 8
                while j < e.keyEnd && !nonASCII {
                    nonASCII = scratch.base[j] >= 0x80
                    j += 1
                }
            }
            i = Int(e.next)
        }
        guard nonASCII else { return }
        var seen: [String: Int] = [:]
        i = Int(containers[c].first)
        while i >= 0 {
            let k = key(i)
            if let other = seen.updateValue(i, forKey: k), compareKeys(other, i) != 0 {
                throw TooDeep(path: [], equivalentKey: k)
            }
            i = Int(entries[i].next)
        }
    }

    private func value(entry e: Int, depth: Int) throws(TooDeep) -> AttributeValue {
        let child = Int(entries[e].child)
        if child >= 0 {
            guard depth < AttributeValue.maxDepth else { throw TooDeep(path: []) }
            var i = Int(containers[child].first)
            if containers[child].isMap {
                try checkEquivalentKeys(child)
                var map = [String: AttributeValue](minimumCapacity: Int(containers[child].count))
                while i >= 0 {
                    let k = key(i)
                    do { map[k] = try value(entry: i, depth: depth + 1) } catch { throw error.prepending(.key(k, nil)) }
                    i = Int(entries[i].next)
                }
                return .map(map)
            }
            var array: [AttributeValue] = []
            array.reserveCapacity(Int(containers[child].count))
            while i >= 0 {
                do { array.append(try value(entry: i, depth: depth + 1)) } catch { throw error.prepending(.index(array.count)) }
                i = Int(entries[i].next)
            }
            return .array(array)
        }
        guard depth + Int(entries[e].innerDepth) < AttributeValue.maxDepth else { throw TooDeep(path: []) }
        let start = entries[e].valueStart
        let end = entries[e].valueEnd
        guard end > start else { return .map([:]) }
        // These bytes were written by ValueWriter just now, so they always decode.
        return (try? AttributeValue.decode(UnsafeRawBufferPointer(start: scratch.base + start, count: end - start))) ?? .null
    }
}

/// Idle encoding arenas, reused so that encoding an item allocates little more than its result.
/// `@unchecked Sendable`: `arenas` is only touched with `lock` held.
final class ArenaPool: @unchecked Sendable {
    static let shared = ArenaPool()
    private let lock = NSLock()
    private var arenas: [EncodingArena] = []

    func take() -> EncodingArena {
        lock.lock()
        let arena = arenas.popLast()
        lock.unlock()
        return arena ?? EncodingArena()
    }

    func give(_ arena: EncodingArena) {
        guard arena.isWorthKeeping else { return }
        arena.reset()
        lock.lock()
        if arenas.count < 16 { arenas.append(arena) }
        lock.unlock()
    }
}
