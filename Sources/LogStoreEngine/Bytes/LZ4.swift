internal import CLZ4
import Foundation

/// The engine's only door to liblz4 (LZ4 block format, no frame header). No C type leaves this file.
package enum LZ4 {
    /// Compresses `input`; returns nil when the result would not be smaller than the input.
    /// Clears a fresh 16 KiB hash table for every call: a caller that compresses many blocks keeps
    /// a ``Compressor`` instead.
    package static func compress(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        compressed(input) { src, dst, count, capacity in LZ4_compress_default(src, dst, count, capacity) }
    }

    /// The output buffer (uninitialized, of LZ4's worst-case size, so that LZ4 runs its faster
    /// unbounded loop) and the call of one compressor; nil unless the result is smaller.
    fileprivate static func compressed(
        _ input: UnsafeRawBufferPointer, _ call: (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>, Int32, Int32) -> Int32
    ) -> [UInt8]? {
        guard input.count > 0, input.count <= Int(LZ4_MAX_INPUT_SIZE), let src = input.baseAddress else { return nil }
        let capacity = Int(LZ4_compressBound(Int32(input.count)))
        let out = [UInt8](unsafeUninitializedCapacity: capacity) { dst, initialized in
            initialized = 0
            guard let d = dst.baseAddress else { return }
            let written = call(
                src.assumingMemoryBound(to: CChar.self), UnsafeMutableRawPointer(d).assumingMemoryBound(to: CChar.self),
                Int32(input.count), Int32(capacity))
            initialized = Int(max(0, written))
        }
        return !out.isEmpty && out.count < input.count ? out : nil
    }

    /// A reusable compression state, reset cheaply before each block instead of cleared whole:
    /// LZ4's fast mode (a 16 KiB hash table, `LZ4_resetStream_fast`) or, with a `level` from 1 to
    /// 12, LZ4HC (about 256 KiB of state, `LZ4_resetStreamHC_fast`): same block format and the same
    /// decompression speed, smaller output, several times slower to compress (compaction output,
    /// ``LogEngineOptions/recompressionLevel``). Each block is still compressed on its own
    /// (no dictionary), so ``decompress(_:rawLength:)`` reads it alone. For callers that compress
    /// many frames: the committing writer, a compaction's two threads.
    ///
    /// Any thread; calls are serialized by its own mutex (each owner uses it from one thread at a
    /// time, so the mutex is never contended).
    package final class Compressor: @unchecked Sendable {
        // @unchecked Sendable: `fast` and `high` are used only while `lock` is held.
        private let lock = NSLock()
        private let fast: UnsafeMutablePointer<LZ4_stream_t>?
        private let high: UnsafeMutablePointer<LZ4_streamHC_t>?
        /// The LZ4HC level, or 0 for LZ4's fast mode.
        package let level: Int

        /// A compressor with its own state: fast mode when `level` is 0 (the default), else LZ4HC
        /// at `level` (clamped to 1...12).
        package init(level: Int = 0) {
            self.level = level <= 0 ? 0 : min(level, 12)
            fast = self.level == 0 ? LZ4_createStream() : nil
            high = self.level == 0 ? nil : LZ4_createStreamHC()
        }

        deinit {
            if let fast { _ = LZ4_freeStream(fast) }
            if let high { _ = LZ4_freeStreamHC(high) }
        }

        /// Like ``LZ4/compress(_:)``.
        package func compress(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
            lock.lock()
            defer { lock.unlock() }
            if let high {
                LZ4_resetStreamHC_fast(high, Int32(level))
                return LZ4.compressed(input) { src, dst, count, capacity in LZ4_compress_HC_continue(high, src, dst, count, capacity) }
            }
            guard let fast else { return LZ4.compress(input) }
            LZ4_resetStream_fast(fast)
            return LZ4.compressed(input) { src, dst, count, capacity in LZ4_compress_fast_continue(fast, src, dst, count, capacity, 1) }
        }
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

extension LZ4 {
    /// Decompresses the LZ4 block `input` into `out`, with `dictionary` (up to its last 64 KiB) as
    /// the history the block was compressed against, or none. True only when the block decodes to
    /// exactly `out.count` bytes. Safe on any input: `LZ4_decompress_safe_usingDict` never reads
    /// or writes outside the buffers it is given.
    package static func decompress(
        _ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, dictionary: UnsafeRawBufferPointer? = nil
    ) -> Bool {
        guard input.count > 0, input.count <= Int(Int32.max), out.count <= Int(Int32.max), let src = input.baseAddress else {
            return false
        }
        guard let dst = out.baseAddress else { return false }
        let s = src.assumingMemoryBound(to: CChar.self)
        let d = dst.assumingMemoryBound(to: CChar.self)
        let n: Int32
        if let dictionary, let dict = dictionary.baseAddress, dictionary.count > 0 {
            n = LZ4_decompress_safe_usingDict(
                s, d, Int32(input.count), Int32(out.count), dict.assumingMemoryBound(to: CChar.self), Int32(dictionary.count))
        } else {
            n = LZ4_decompress_safe(s, d, Int32(input.count), Int32(out.count))
        }
        return n >= 0 && Int(n) == out.count
    }

    /// Compression of single blocks against one dictionary (a type's, ``DictionaryRef``): LZ4's
    /// fast mode or LZ4HC at a level, each block alone but with the dictionary as its history, so
    /// that ``decompress(_:into:dictionary:)`` reads it with the same dictionary. The dictionary is
    /// loaded once into a template state per mode, which each block starts from by copying it
    /// (16 KiB for the fast mode, 256 KiB for LZ4HC): much cheaper than loading the dictionary
    /// again. States are built on first use.
    ///
    /// Any thread; calls are serialized by its own lock.
    package final class DictionaryCompressor: @unchecked Sendable {
        // @unchecked Sendable: every state below is used only while `lock` is held; `dictionary`
        // is written once, in init.
        private let lock = NSLock()
        private let dictionary: UnsafeMutableRawBufferPointer
        private var fastTemplate: UnsafeMutablePointer<LZ4_stream_t>? = nil
        private var fastWork: UnsafeMutablePointer<LZ4_stream_t>? = nil
        private var highTemplate: UnsafeMutablePointer<LZ4_streamHC_t>? = nil
        private var highWork: UnsafeMutablePointer<LZ4_streamHC_t>? = nil
        private var highLevel = 0

        /// A compressor for `dictionary` (empty: no history; only its last 64 KiB count).
        package init(dictionary bytes: [UInt8]) {
            let kept = bytes.suffix(64 << 10)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(kept.count, 1), alignment: 16)
            kept.withUnsafeBytes { buffer.copyMemory(from: $0) }
            dictionary = buffer
            count = kept.count
        }

        private let count: Int

        deinit {
            if let fastTemplate { _ = LZ4_freeStream(fastTemplate) }
            if let fastWork { _ = LZ4_freeStream(fastWork) }
            if let highTemplate { _ = LZ4_freeStreamHC(highTemplate) }
            if let highWork { _ = LZ4_freeStreamHC(highWork) }
            dictionary.deallocate()
        }

        /// The dictionary's bytes (valid while this object lives).
        package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: dictionary[0..<count]) }

        /// `input` compressed against the dictionary: LZ4's fast mode with `level` 0, LZ4HC at
        /// `level` (1...12) otherwise; nil unless the block is smaller than `input`.
        package func compress(_ input: UnsafeRawBufferPointer, level: Int = 0) -> [UInt8]? {
            lock.lock()
            defer { lock.unlock() }
            let dict = dictionary.baseAddress?.assumingMemoryBound(to: CChar.self)
            if level <= 0 {
                if fastTemplate == nil {
                    fastTemplate = LZ4_createStream()
                    fastWork = LZ4_createStream()
                    if let t = fastTemplate { _ = LZ4_loadDict(t, dict, Int32(count)) }
                }
                guard let t = fastTemplate, let w = fastWork else { return LZ4.compress(input) }
                UnsafeMutableRawPointer(w).copyMemory(from: t, byteCount: MemoryLayout<LZ4_stream_t>.size)
                return LZ4.compressed(input) { src, dst, n, capacity in LZ4_compress_fast_continue(w, src, dst, n, capacity, 1) }
            }
            let level = min(level, 12)
            if highTemplate == nil || highLevel != level {
                if highTemplate == nil {
                    highTemplate = LZ4_createStreamHC()
                    highWork = LZ4_createStreamHC()
                }
                if let t = highTemplate {
                    LZ4_resetStreamHC_fast(t, Int32(level))
                    _ = LZ4_loadDictHC(t, dict, Int32(count))
                }
                highLevel = level
            }
            guard let t = highTemplate, let w = highWork else { return LZ4.compress(input) }
            UnsafeMutableRawPointer(w).copyMemory(from: t, byteCount: MemoryLayout<LZ4_streamHC_t>.size)
            return LZ4.compressed(input) { src, dst, n, capacity in LZ4_compress_HC_continue(w, src, dst, n, capacity) }
        }
    }
}
