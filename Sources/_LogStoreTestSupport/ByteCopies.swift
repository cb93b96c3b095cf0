#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The simulated file systems' byte copies and zero fills, done as memory copies. Tests run in
/// debug builds, where the generic element-by-element code of `Array(bytes)`,
/// `append(contentsOf: repeatElement(0, ...))` or a byte loop takes most of a crash sweep's time
/// once its files hold index runs and preallocated segments.
enum ByteCopies {
    /// A new array holding `bytes`.
    static func array(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: bytes)
            initialized = bytes.count
        }
    }

    /// A new array holding `source[range]` (`range` within `source`).
    static func array(_ source: [UInt8], _ range: Range<Int>) -> [UInt8] {
        source.withUnsafeBytes { array(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// `data` cut to `count` bytes, or grown to it with zeros.
    static func resize(_ data: inout [UInt8], to count: Int) {
        if count <= data.count {
            data.removeSubrange(count...)
            return
        }
        let old = data
        data = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            old.withUnsafeBytes { raw.copyMemory(from: $0) }
            if let base = raw.baseAddress { memset(base + old.count, 0, count - old.count) }
            initialized = count
        }
    }

    /// Overwrites `data` from `offset` with `bytes` (`offset + bytes.count <= data.count`).
    static func copy(_ bytes: UnsafeRawBufferPointer, into data: inout [UInt8], at offset: Int) {
        data.withUnsafeMutableBytes { out in
            UnsafeMutableRawBufferPointer(rebasing: out[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
        }
    }

    /// Overwrites `data[range]` with `source[range]`, zeros where `source` ends before it.
    static func copy(_ range: Range<Int>, of source: [UInt8], into data: inout [UInt8]) {
        let within = range.clamped(to: 0..<source.count)
        source.withUnsafeBytes { copy(UnsafeRawBufferPointer(rebasing: $0[within]), into: &data, at: within.lowerBound) }
        let zeros = max(range.lowerBound, within.upperBound)..<range.upperBound
        if !zeros.isEmpty {
            data.withUnsafeMutableBytes { out in
                if let base = out.baseAddress { memset(base + zeros.lowerBound, 0, zeros.count) }
            }
        }
    }
}
