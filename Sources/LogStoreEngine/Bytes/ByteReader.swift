/// A bounds-checked little-endian reader over a byte buffer; the decoding twin of `_ByteWriter`.
///
/// Every read checks bounds and throws `_DecodeError` instead of trapping, because every byte it
/// reads may come from a damaged or foreign file. Callers turn a `_DecodeError` into a
/// `LogStoreError` with the file and offset they know.
@usableFromInline
struct _ByteReader {
    @usableFromInline package let base: UnsafeRawBufferPointer
    @usableFromInline package var offset: Int

    @inlinable package init(_ base: UnsafeRawBufferPointer, offset: Int = 0) {
        self.base = base
        self.offset = offset
    }

    @inlinable package var remaining: Int { base.count - offset }
    @inlinable package var isAtEnd: Bool { offset >= base.count }

    @inlinable package mutating func need(_ n: Int) throws(_DecodeError) {
        guard n >= 0, n <= base.count - offset else {
            throw _DecodeError("truncated: need \(n) bytes, \(base.count - offset) left", at: offset)
        }
    }

    @inlinable package mutating func u8() throws(_DecodeError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return base[offset]
    }

    @inlinable package mutating func u16() throws(_DecodeError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(base[offset]) | UInt16(base[offset + 1]) << 8
    }

    @inlinable package mutating func u32() throws(_DecodeError) -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
    }

    @inlinable package mutating func u64() throws(_DecodeError) -> UInt64 {
        try need(8)
        defer { offset += 8 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian
    }

    @inlinable package mutating func f64() throws(_DecodeError) -> Double { Double(bitPattern: try u64()) }

    /// Unsigned LEB128; rejects encodings longer than 10 bytes or overflowing 64 bits.
    @inlinable package mutating func uvarint() throws(_DecodeError) -> UInt64 {
        // With 10 bytes left no read can run out: decode without per-byte bounds checks (a
        // checkpoint holds five varints per entry).
        if base.count - offset >= 10 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            var i = offset
            while true {
                let b = base[i]
                i += 1
                if shift == 63 && b > 1 { throw _DecodeError("varint overflows 64 bits", at: offset) }
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 {
                    offset = i
                    return result
                }
                shift += 7
                if shift > 63 { throw _DecodeError("varint longer than 10 bytes", at: offset) }
            }
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            let b = try u8()
            if shift == 63 && b > 1 { throw _DecodeError("varint overflows 64 bits", at: start) }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw _DecodeError("varint longer than 10 bytes", at: start) }
        }
    }

    /// A length read as uvarint and checked against the bytes left (so a corrupt length can never
    /// make the caller allocate or loop beyond the buffer).
    @inlinable package mutating func length() throws(_DecodeError) -> Int {
        let start = offset
        let n = try uvarint()
        guard n <= UInt64(remaining) else { throw _DecodeError("length \(n) exceeds the \(remaining) bytes left", at: start) }
        return Int(n)
    }

    @inlinable package mutating func bytes(_ n: Int) throws(_DecodeError) -> UnsafeRawBufferPointer {
        try need(n)
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: base[offset..<(offset + n)])
    }

    @inlinable package mutating func lengthPrefixed() throws(_DecodeError) -> UnsafeRawBufferPointer {
        try bytes(try length())
    }

    @inlinable package mutating func string() throws(_DecodeError) -> String {
        let start = offset
        let raw = try lengthPrefixed()
        guard let s = String(validating: raw, as: UTF8.self) else { throw _DecodeError("invalid UTF-8 in string", at: start) }
        return s
    }
}

/// A decoding failure inside a buffer: what was wrong and where (offset within the buffer).
@usableFromInline
package struct _DecodeError: Error, Sendable {
    @usableFromInline package let reason: String
    @usableFromInline package let offset: Int
    @inlinable package init(_ reason: String, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }
}
