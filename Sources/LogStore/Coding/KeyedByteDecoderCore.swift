internal import Foundation
internal import LogStoreEngine

/// What ``KeyedByteDecoder`` does, without its generic `Key` parameter: finding an attribute by
/// name and reading the scalars stored natively.
///
/// An item's `init(from:)` reaches the keyed container through `KeyedDecodingContainer`'s box,
/// so the container's methods run unspecialized for `Key`; inside them the scalar reads were not
/// specialized for their value type either and called `init(exactly:)` and the read closures
/// through witness tables and thunks. Here every read is a plain function of a concrete type:
/// the generic container only turns its key into a name and calls one of these. Used on the
/// decoding thread, within one decode call.
struct KeyedByteDecoderCore {
    let decoder: ByteDecoder
    let entries: ContiguousArray<MapEntry>

    /// The value offset of the attribute named `name`, or nil when the item has none.
    func find(_ name: String) -> Int? {
        let n = entries.count
        if n == 0 { return nil }
        var k = name
        let b = decoder.input.bytes
        return k.withUTF8 { kb -> Int? in
            do {
                if n <= 12 {
                    for e in entries where BoundedRead.equal(b, e.keyStart, e.keyCount, kb) { return e.value }
                    return nil
                }
                var lo = 0
                var hi = n
                while lo < hi {
                    let mid = (lo &+ hi) >> 1
                    let e = entries[mid]
                    let c = BoundedRead.compare(b, e.keyStart, e.keyCount, kb)
                    if c == 0 { return e.value }
                    if c < 0 { lo = mid + 1 } else { hi = mid }
                }
                return nil
            }
        }
    }

    /// The value offset of the attribute named `name`, or nil when the item has none or it is
    /// null (what `decodeIfPresent` reads).
    func present(_ name: String) throws -> Int? {
        guard let off = find(name), try decoder.input.tag(at: off) != TagByte.null else { return nil }
        return off
    }

    func bool(at off: Int) throws -> Bool { try decoder.input.read(off) { b throws(DecodeProblem) in try ScalarReads.bool(b, off).0 } }
    func string(at off: Int) throws -> String {
        try decoder.input.read(off) { b throws(DecodeProblem) in try ScalarReads.string(b, off).0 }
    }
    func double(at off: Int) throws -> Double {
        try decoder.input.read(off) { b throws(DecodeProblem) in try ScalarReads.double(b, off).0 }
    }
    func float(at off: Int) throws -> Float { try decoder.input.read(off) { b throws(DecodeProblem) in try ScalarReads.float(b, off).0 } }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_: T.Type, at off: Int) throws -> T {
        try decoder.input.read(off) { b throws(DecodeProblem) in try ScalarReads.integer(T.self, b, off).0 }
    }

    func int(at off: Int) throws -> Int { try integer(Int.self, at: off) }
    func int8(at off: Int) throws -> Int8 { try integer(Int8.self, at: off) }
    func int16(at off: Int) throws -> Int16 { try integer(Int16.self, at: off) }
    func int32(at off: Int) throws -> Int32 { try integer(Int32.self, at: off) }
    func int64(at off: Int) throws -> Int64 { try integer(Int64.self, at: off) }
    func uint(at off: Int) throws -> UInt { try integer(UInt.self, at: off) }
    func uint8(at off: Int) throws -> UInt8 { try integer(UInt8.self, at: off) }
    func uint16(at off: Int) throws -> UInt16 { try integer(UInt16.self, at: off) }
    func uint32(at off: Int) throws -> UInt32 { try integer(UInt32.self, at: off) }
    func uint64(at off: Int) throws -> UInt64 { try integer(UInt64.self, at: off) }
}
