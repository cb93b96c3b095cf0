internal import CLZ4

/// The engine's only door to liblz4 (LZ4 block format, no frame header). No C type leaves this file.
package enum LZ4 {
    /// Compresses `input`; returns nil when the result would not be smaller than the input.
    package static func compress(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        guard input.count > 0, input.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        var out = [UInt8](repeating: 0, count: bound)
        guard let src = input.baseAddress else { return nil }
        let written = out.withUnsafeMutableBytes { dst -> Int32 in
            guard let d = dst.baseAddress else { return 0 }
            return LZ4_compress_default(
                src.assumingMemoryBound(to: CChar.self), d.assumingMemoryBound(to: CChar.self),
                Int32(input.count), Int32(dst.count))
        }
        guard written > 0, Int(written) < input.count else { return nil }
        out.removeSubrange(Int(written)...)
        return out
    }

    /// Decompresses the first `prefix` bytes (at most `rawLength`) of the block `input`, which
    /// decompresses to `rawLength` bytes: a read that needs one record near the start of a frame
    /// stops there (`LZ4_decompress_safe_partial`). `input` must be the whole block. Returns nil
    /// if the block does not yield `prefix` bytes. Safe on any input, like ``decompress(_:rawLength:)``.
    package static func decompress(_ input: UnsafeRawBufferPointer, rawLength: Int, prefix: Int) -> [UInt8]? {
        let target = min(max(prefix, 0), rawLength)
        guard target < rawLength else { return decompress(input, rawLength: rawLength) }
        guard target > 0 else { return [] }
        guard input.count > 0, input.count <= Int(Int32.max), let src = input.baseAddress else { return nil }
        var n: Int32 = -1
        let out = [UInt8](unsafeUninitializedCapacity: target) { dst, initialized in
            if let d = dst.baseAddress {
                n = LZ4_decompress_safe_partial(
                    src.assumingMemoryBound(to: CChar.self), UnsafeMutableRawPointer(d).assumingMemoryBound(to: CChar.self),
                    Int32(input.count), Int32(target), Int32(target))
            }
            initialized = n > 0 ? Int(n) : 0
        }
        guard n == Int32(target) else { return nil }
        return out
    }

    /// Decompresses exactly `rawLength` bytes from `input`. Safe on any input: liblz4's `_safe`
    /// decoder never reads or writes out of bounds; a mismatch in size returns nil.
    package static func decompress(_ input: UnsafeRawBufferPointer, rawLength: Int) -> [UInt8]? {
        guard rawLength >= 0, input.count > 0, input.count <= Int(Int32.max) else { return rawLength == 0 && input.isEmpty ? [] : nil }
        guard let src = input.baseAddress else { return nil }
        var n: Int32 = -1
        let out = [UInt8](unsafeUninitializedCapacity: rawLength) { dst, initialized in
            if let d = dst.baseAddress {
                n = LZ4_decompress_safe(
                    src.assumingMemoryBound(to: CChar.self), UnsafeMutableRawPointer(d).assumingMemoryBound(to: CChar.self),
                    Int32(input.count), Int32(rawLength))
            }
            initialized = n > 0 ? Int(n) : 0
        }
        guard n == Int32(rawLength) else { return nil }
        return out
    }
}
