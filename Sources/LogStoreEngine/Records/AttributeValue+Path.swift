import Foundation

extension AttributeValue {
    /// The byte range, within `bytes`, of the value found by following `path` (map keys as UTF-8
    /// bytes, outermost first) from the encoded value that fills `bytes`; nil when a step is not a
    /// map or lacks the key. An empty path is the whole value.
    ///
    /// Reads only the map keys on the way and skips the values beside them: keys are stored in
    /// strictly ascending byte order (FileFormat.md section 8), so a map is searched until its keys
    /// pass the wanted one, with no `String` made. Used by attribute filters, predicates evaluated
    /// on stored bytes, and secondary-index extraction. Throws `.corruption` on malformed bytes;
    /// pure, any thread.
    ///
    ///     lookup := for each key in path: tag(map) count (keyLen key value)*  -- until key >= wanted
    package static func valueRange(at path: [[UInt8]], in bytes: UnsafeRawBufferPointer) throws -> Range<Int>? {
        var r = _ByteReader(bytes)
        do throws(_DecodeError) {
            for (depth, wanted) in path.enumerated() {
                guard try r.u8() == Tag.map.rawValue else { return nil }
                let n = try r.length()
                var found = false
                for _ in 0..<n {
                    let k = try r.lengthPrefixed()
                    let order = compareBytes(k, wanted)
                    if order == 0 {
                        found = true
                        break
                    }
                    if order > 0 { return nil }
                    try skip(&r, depth: depth + 1)
                }
                guard found else { return nil }
            }
            let start = r.offset
            try skip(&r, depth: path.count)
            return start..<r.offset
        } catch {
            throw LogStoreError(.corruption, "Malformed attribute value: \(error.reason).", offset: UInt64(error.offset))
        }
    }

    /// The value at `path` (see ``valueRange(at:in:)``), decoded; nil when absent. Throws
    /// `.corruption` on malformed bytes. Pure; any thread.
    public static func lookupAttribute(path: [[UInt8]], in bytes: UnsafeRawBufferPointer) throws -> AttributeValue? {
        guard let range = try valueRange(at: path, in: bytes) else { return nil }
        return try decode(UnsafeRawBufferPointer(rebasing: bytes[range]))
    }

    /// memcmp order of two byte strings (a prefix first): -1, 0 or 1.
    static func compareBytes(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
        let n = Swift.min(a.count, b.count)
        let c = b.withUnsafeBytes { bb -> Int32 in
            guard n > 0, let pa = a.baseAddress, let pb = bb.baseAddress else { return 0 }
            return memcmp(pa, pb, n)
        }
        if c != 0 { return c < 0 ? -1 : 1 }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}
