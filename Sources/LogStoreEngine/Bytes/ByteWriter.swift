/// An append-only little-endian byte buffer used by every encoder in the engine.
///
/// Grammar helpers (see Docs/FileFormat.md, "Primitive types"):
///
///     u8 | u16le | u32le | u64le | uvarint (LEB128, at most 10 bytes) | f64le (IEEE 754 bits)
///
/// Runs on the caller's thread; not thread-safe (a value type: copy it instead of sharing).
@usableFromInline
package struct _ByteWriter {
    @usableFromInline package var bytes: [UInt8]

    @inlinable package init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable package var count: Int { bytes.count }

    @inlinable package mutating func u8(_ v: UInt8) { bytes.append(v) }

    @inlinable package mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    @inlinable package mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable package mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable package mutating func f64(_ v: Double) { u64(v.bitPattern) }

    /// Unsigned LEB128: 7 bits per byte, low group first, high bit set on every byte but the last.
    @inlinable package mutating func uvarint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inlinable package mutating func append<C: Collection>(contentsOf c: C) where C.Element == UInt8 {
        bytes.append(contentsOf: c)
    }

    /// `uvarint(count) bytes`.
    @inlinable package mutating func lengthPrefixed<C: Collection>(_ c: C) where C.Element == UInt8 {
        uvarint(UInt64(c.count))
        bytes.append(contentsOf: c)
    }

    /// `uvarint(utf8 count) utf8`.
    @inlinable package mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            uvarint(UInt64(buf.count))
            bytes.append(contentsOf: buf)
        }
    }

    /// Overwrites 4 bytes at `offset` (used to back-patch lengths and checksums).
    @inlinable package mutating func patchU32(_ v: UInt32, at offset: Int) {
        let le = v.littleEndian
        withUnsafeBytes(of: le) { src in
            for i in 0..<4 { bytes[offset + i] = src[i] }
        }
    }
}
