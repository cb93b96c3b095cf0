import Foundation
import GRDB
import LogStore

/// The item every system stores: an id, a short name, an integer rating, a date, a list of tags
/// and about 200 bytes of text (2,000 for the LZ4 workload's text-heavy items): Zipf-distributed
/// words, about as compressible as English prose (see ``ItemFactory/word(_:)``).
///
/// - LogStore encodes it with its own Codable encoder (`DataStoreItem`).
/// - SQLite stores it through GRDB's Codable records, one column per property in table
///   `benchItem` (`id INTEGER PRIMARY KEY`; `tags` as JSON text, GRDB's encoding of arrays;
///   `date` as GRDB's default `YYYY-MM-DD HH:MM:SS.SSS` text). No other index: LogStore has only
///   its primary id index.
/// - LMDB and the raw LogStore engine rows store ``BinaryItemCodec``'s compact binary form.
struct BenchItem: DataStoreItem, Codable, Sendable, Identifiable, Equatable, FetchableRecord, PersistableRecord {
    static var itemType: String { "BenchItem" }
    static var databaseTableName: String { "benchItem" }

    var id: Int
    var name: String
    var rating: Int
    var date: Date
    var tags: [String]
    var text: String
}

/// A small, fast, deterministic random number generator (SplitMix64), so that every system gets
/// the same items, ids and read order.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Makes items. The same (id, version) always gives the same item.
enum ItemFactory {
    static let words = [
        "the", "of", "and", "to", "in", "is", "was", "that", "for", "on", "with", "as", "by", "at",
        "from", "this", "which", "or", "an", "are", "be", "it", "not", "but", "had", "have", "one",
        "all", "were", "they", "their", "there", "been", "more", "when", "will", "would", "who",
        "so", "no", "log", "store", "record", "segment", "frame", "index", "table", "river",
        "garden", "kitchen", "window", "morning", "evening", "market", "harbour", "station",
        "quiet", "bright", "narrow", "ancient", "golden", "crowded", "gentle", "restaurant",
        "menu", "dinner", "service", "review", "price", "friendly", "excellent", "average",
    ]
    /// Text vocabulary: the common words above, then 1,000 made-up words of 2 to 4 syllables.
    static let vocabulary: [String] = {
        let syllables = [
            "ka", "lo", "mi", "ne", "ru", "ta", "shi", "ven", "dor", "al", "en", "is", "or", "ul", "tra",
            "ber", "gon", "pel", "sar", "ith", "mo", "qua", "zen", "fi", "dre",
        ]
        var rng = SplitMix64(seed: 5)
        var seen = Set(words)
        var out = words
        while out.count < words.count + 1_000 {
            var w = ""
            for _ in 0..<Int(2 + rng.next() % 3) { w += syllables[Int(rng.next() % UInt64(syllables.count))] }
            if seen.insert(w).inserted { out.append(w) }
        }
        return out
    }()
    /// Cumulative Zipf weights (rank r has weight 1/(r+1)), normalized to 1.
    static let zipfCDF: [Double] = {
        var acc = 0.0
        var cdf = vocabulary.indices.map { r -> Double in
            acc += 1 / Double(r + 1)
            return acc
        }
        for i in cdf.indices { cdf[i] /= acc }
        return cdf
    }()

    /// The word at quantile `u` (0..<1) of the Zipf distribution over ``vocabulary``. Text made
    /// this way compresses about like English prose: LZ4 shrinks it about 1.75x, and the GPL-3
    /// text 1.8x (lz4 -1, 64 KiB blocks).
    static func word(_ u: Double) -> String {
        var lo = 0
        var hi = zipfCDF.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if zipfCDF[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return vocabulary[lo]
    }

    static let tagPool = ["italian", "cheap", "vegan", "family", "seafood", "late", "terrace", "quiet", "new", "classic"]
    static let baseDate = Date(timeIntervalSinceReferenceDate: 700_000_000)

    static func make(id: Int, version: UInt64 = 0, textBytes: Int = 200) -> BenchItem {
        var rng = SplitMix64(seed: UInt64(bitPattern: Int64(id)) &* 0x2545_F491_4F6C_DD1D ^ (version &* 0x9E37_79B9))
        let name =
            words[Int(rng.next() % UInt64(words.count))].capitalized + " "
            + words[Int(rng.next() % UInt64(words.count))] + " \(id % 1000)"
        let rating = Int(rng.next() % 5) + 1
        let date = baseDate.addingTimeInterval(Double(rng.next() % 100_000_000) / 8)
        var tags: [String] = []
        for _ in 0..<Int(rng.next() % 3 + 1) { tags.append(tagPool[Int(rng.next() % UInt64(tagPool.count))]) }
        var text = ""
        text.reserveCapacity(textBytes + 24)
        while text.utf8.count < textBytes {
            if !text.isEmpty { text += " " }
            text += word(Double(rng.next() >> 11) / Double(1 << 53))
        }
        return BenchItem(id: id, name: name, rating: rating, date: date, tags: tags, text: text)
    }
}

/// The compact binary form that LMDB, and the raw-engine LogStore rows, store:
///
///     value := rating:i64le date:f64le(seconds since 2001) nameLen:u16le name
///              tagCount:u8 (tagLen:u8 tag)* textLen:u32le text
///
/// (Strings are UTF-8.) It is the cheapest reasonable encoding: with it the LMDB rows measure
/// LMDB, not an encoder, which makes LMDB the strictest peer.
enum BinaryItemCodec {
    static func encode(_ item: BenchItem) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32 + item.name.utf8.count + item.text.utf8.count + item.tags.count * 10)
        func le<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        le(Int64(item.rating))
        le(item.date.timeIntervalSinceReferenceDate.bitPattern)
        le(UInt16(item.name.utf8.count))
        out.append(contentsOf: item.name.utf8)
        out.append(UInt8(item.tags.count))
        for t in item.tags {
            out.append(UInt8(t.utf8.count))
            out.append(contentsOf: t.utf8)
        }
        le(UInt32(item.text.utf8.count))
        out.append(contentsOf: item.text.utf8)
        return out
    }

    struct Malformed: Error {}

    static func decode(id: Int, _ raw: UnsafeRawBufferPointer) throws -> BenchItem {
        var at = 0
        func take(_ n: Int) throws -> UnsafeRawBufferPointer {
            guard at + n <= raw.count else { throw Malformed() }
            defer { at += n }
            return UnsafeRawBufferPointer(rebasing: raw[at..<at + n])
        }
        func int<T: FixedWidthInteger>(_: T.Type) throws -> T {
            let b = try take(MemoryLayout<T>.size)
            return T(littleEndian: b.loadUnaligned(as: T.self))
        }
        func string(_ n: Int) throws -> String { String(decoding: try take(n), as: UTF8.self) }
        let rating = Int(try int(Int64.self))
        let date = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try int(UInt64.self)))
        let name = try string(Int(try int(UInt16.self)))
        var tags: [String] = []
        for _ in 0..<Int(try int(UInt8.self)) { tags.append(try string(Int(try int(UInt8.self)))) }
        let text = try string(Int(try int(UInt32.self)))
        return BenchItem(id: id, name: name, rating: rating, date: date, tags: tags, text: text)
    }

    /// Just the rating (first field), for filters that need nothing else.
    static func rating(_ raw: UnsafeRawBufferPointer) -> Int {
        raw.count >= 8 ? Int(Int64(littleEndian: raw.loadUnaligned(as: Int64.self))) : 0
    }
}

/// Ids as 8-byte big-endian keys (LMDB): byte order is id order, like LogStore's integer keys.
func bigEndianKey(_ id: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(bitPattern: Int64(id)).bigEndian) { Array($0) }
}
