/// Builds LZ4 dictionaries (at most 64 KiB of history) from samples of one item type's values,
/// and measures how well a dictionary compresses values it was not trained on.
///
/// LZ4 has no trainer of its own. ``train(_:size:)`` picks the 64-byte segments of the samples
/// whose 8-byte substrings occur in the most samples (document frequency, as zstd's COVER trainer
/// scores them), one per slice of the samples, and lays them out with the best nearest the end
/// (where LZ4's matches are found first). ``concatenate(_:size:)`` is the plainest alternative:
/// whole values, the latest nearest the end; the recompression pass keeps whichever compresses a
/// held-out part of the samples better. Pure functions; any thread; memory: a few MiB of counters
/// while training.
package enum DictionaryTrainer {
    /// Substring length scored.
    static let k = 8
    /// Segment length selected.
    static let segment = 64
    /// Counters (hashed substrings): 2^21.
    static let tableBits = 21

    /// A dictionary of at most `size` bytes from `samples` (empty when they hold nothing).
    package static func train(_ samples: [[UInt8]], size: Int = RecordCodec.maxDictionarySize) -> [UInt8] {
        let total = samples.reduce(0) { $0 + $1.count }
        if total <= size { return concatenate(samples, size: size) }
        let mask = (1 << tableBits) - 1
        var counts = [UInt16](repeating: 0, count: 1 << tableBits)
        var stamps = [UInt32](repeating: UInt32.max, count: 1 << tableBits)
        // Document frequency: each substring counts once per sample it occurs in.
        for (n, sample) in samples.enumerated() where sample.count >= k {
            sample.withUnsafeBytes { b in
                for i in 0...(b.count - k) {
                    let h = hash(b, i) & mask
                    if stamps[h] != UInt32(truncatingIfNeeded: n) {
                        stamps[h] = UInt32(truncatingIfNeeded: n)
                        if counts[h] < UInt16.max { counts[h] += 1 }
                    }
                }
            }
        }
        stamps = []
        // One segment per slice of the concatenated samples: the window whose substrings score
        // highest; their counts are then zeroed, so later slices pick new content.
        var all: [UInt8] = []
        all.reserveCapacity(total)
        for s in samples { all.append(contentsOf: s) }
        let slices = max(1, size / segment)
        let sliceLength = max(segment, all.count / slices)
        var chosen: [(score: Int, start: Int)] = []
        all.withUnsafeBytes { b in
            var start = 0
            while start + segment <= b.count && chosen.count < slices {
                let end = min(b.count, start + sliceLength)
                var best = (score: -1, start: start)
                // Sliding window of `segment - k + 1` substrings.
                let window = segment - k + 1
                var score = 0
                var i = start
                while i + k <= end {
                    score += Int(counts[hash(b, i) & mask])
                    if i - start >= window { score -= Int(counts[hash(b, i - window) & mask]) }
                    if i - start >= window - 1 && score > best.score { best = (score, i - window + 1) }
                    i += 1
                }
                if best.score > 0 {
                    chosen.append(best)
                    for j in best.start..<(best.start + window) where j + k <= b.count { counts[hash(b, j) & mask] = 0 }
                }
                start = end
            }
        }
        // The best segments last: nearest the data LZ4 compresses.
        chosen.sort { $0.score < $1.score }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        for c in chosen where out.count + segment <= size { out.append(contentsOf: all[c.start..<(c.start + segment)]) }
        return out
    }

    /// Whole samples, the first ones dropped when they do not fit, at most `size` bytes.
    package static func concatenate(_ samples: [[UInt8]], size: Int = RecordCodec.maxDictionarySize) -> [UInt8] {
        var out: [UInt8] = []
        for s in samples.reversed() {
            if out.count + s.count > size { break }
            out.insert(contentsOf: s, at: 0)
        }
        return out
    }

    /// The bytes `values` take stored one by one: LZ4-compressed against `dictionary` (none: alone)
    /// at `level` where that is smaller, raw otherwise.
    package static func storedSize(_ values: [[UInt8]], dictionary: [UInt8]?, level: Int) -> Int {
        let compressor = dictionary.map { LZ4.DictionaryCompressor(dictionary: $0) }
        var total = 0
        for v in values {
            let c = v.withUnsafeBytes { b in compressor.map { $0.compress(b, level: level) } ?? LZ4.compress(b) }
            total += min(c?.count ?? v.count, v.count)
        }
        return total
    }

    @inline(__always)
    static func hash(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int {
        let v = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        return Int(truncatingIfNeeded: (v &* 0x9E37_79B9_7F4A_7C15) >> 40)
    }
}
