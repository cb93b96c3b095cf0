import Foundation
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Values

    /// The value codec, ``AttributeValue``.
    ///
    /// Input: `mode:u8 bytes`. Mode bit 0 clear: `bytes` is decoded; if it decodes to `v`, then
    /// `v.encoded()` must decode to a value identical to `v` (doubles compared by bit pattern) and
    /// re-encode to the same bytes, and for a map every attribute must read the same through
    /// ``AttributeValue/lookupAttribute(_:in:)``. Lookups on any bytes never trap, nor does
    /// decoding them as a store history record (``historyEntry(_:)``). Bit 0 set:
    /// `bytes` is a recipe for a value (see `buildValue`); encoding it and decoding the result
    /// must give the same value back, and decoding must fail exactly when the value nests deeper
    /// than ``AttributeValue/maxDepth``. Throws ``FuzzPropertyViolation``.
    public static func attributeValue(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        let bytes = Array(data.dropFirst())
        if mode & 1 != 0 {
            var recipe = Recipe(bytes: bytes)
            let v = buildValue(&recipe, depth: 1)
            let encoded = v.encoded()
            let depth = nesting(v)
            do {
                let back = try AttributeValue.decode(encoded)
                guard depth <= AttributeValue.maxDepth else {
                    throw FuzzPropertyViolation("a value nested \(depth) deep decoded, the limit is \(AttributeValue.maxDepth)")
                }
                guard identical(back, v) else { throw FuzzPropertyViolation("encode/decode changed a value: \(v) became \(back)") }
                guard back.encoded() == encoded else { throw FuzzPropertyViolation("a decoded value re-encodes differently") }
            } catch let e as FuzzPropertyViolation {
                throw e
            } catch {
                guard depth > AttributeValue.maxDepth else {
                    throw FuzzPropertyViolation("a value built in memory (nesting \(depth)) encodes to bytes that do not decode: \(error)")
                }
                try expectCorruption(error, "decode")
            }
            return
        }

        try historyEntry(bytes)
        // Lookups must never trap, whatever the bytes; they only throw `.corruption`.
        let probe = probeKey(bytes)
        do {
            _ = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(probe, in: $0) }
        } catch {
            try expectCorruption(error, "lookupAttribute")
        }
        let v: AttributeValue
        do {
            v = try AttributeValue.decode(bytes)
        } catch {
            try expectCorruption(error, "decode")
            return
        }
        let encoded = v.encoded()
        let back: AttributeValue
        do {
            back = try AttributeValue.decode(encoded)
        } catch {
            throw FuzzPropertyViolation("decode(x) succeeded but decode(encode(decode(x))) failed: \(error)")
        }
        guard identical(back, v) else { throw FuzzPropertyViolation("decode(encode(v)) differs from v = \(v): \(back)") }
        guard back.encoded() == encoded else { throw FuzzPropertyViolation("encoding is not a fixpoint after one round trip") }
        if case .map(let m) = v {
            for (k, expected) in m {
                let found: AttributeValue?
                do {
                    found = try bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(k, in: $0) }
                } catch {
                    throw FuzzPropertyViolation("lookupAttribute(\(k)) threw on bytes that decode: \(error)")
                }
                guard let found, identical(found, expected) else {
                    throw FuzzPropertyViolation("lookupAttribute(\(k)) returned \(String(describing: found)), decode gives \(expected)")
                }
            }
            if m[probe] == nil {
                if let found = (try? bytes.withUnsafeBytes { try AttributeValue.lookupAttribute(probe, in: $0) }) ?? nil {
                    _ = found
                    throw FuzzPropertyViolation("lookupAttribute found \(probe), which the decoded map does not hold")
                }
            }
        }
    }

    /// A short key derived from the input, to probe lookups of absent and present attributes.
    /// The store history's record decoder (``StoreHistory/Entry``, an attribute map with a
    /// schema; FileFormat.md section 7b) on any bytes: it throws `.corruption`, or gives an entry
    /// whose encoding decodes to an entry with the same encoding.
    static func historyEntry(_ bytes: [UInt8]) throws {
        let entry: StoreHistory.Entry
        do {
            entry = try StoreHistory.Entry(key: StoreHistory.key(ordinal: UInt64(bytes.count)), value: bytes)
        } catch {
            try expectCorruption(error, "StoreHistory.Entry")
            return
        }
        let again: StoreHistory.Entry
        do {
            again = try StoreHistory.Entry(key: entry.key, value: entry.encoded)
        } catch {
            throw FuzzPropertyViolation("a history entry re-encodes to bytes that do not decode: \(error)")
        }
        // (Compared by encoding: a date may be NaN, which is not equal to itself.)
        guard again.encoded == entry.encoded, again.ordinal == entry.ordinal else {
            throw FuzzPropertyViolation("a history entry changed through encode and decode: \(entry) became \(again)")
        }
    }

    static func probeKey(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.suffix(2).map { 0x61 + $0 % 4 }, as: UTF8.self)
    }

    /// Reads a value recipe: every byte consumed picks the next choice; missing bytes read as 0.
    struct Recipe {
        var bytes: [UInt8]
        var at = 0
        var budget = 4096

        mutating func next() -> UInt8 {
            budget -= 1
            defer { at += 1 }
            return at < bytes.count ? bytes[at] : 0
        }
        mutating func u64() -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(next()) << (8 * UInt64(i)) }
            return v
        }
        var isExhausted: Bool { at >= bytes.count || budget <= 0 }
    }

    /// Builds a value from a recipe: tag byte, then the body's bytes (lengths are one byte).
    static func buildValue(_ r: inout Recipe, depth: Int) -> AttributeValue {
        let tag = r.next() % 12
        switch tag {
        case 0: return .null
        case 1: return .bool(r.next() & 1 != 0)
        case 2: return .int(Int64(bitPattern: r.u64()))
        case 3: return .int(Int64(Int8(bitPattern: r.next())))
        case 4: return .double(Double(bitPattern: r.u64()))
        case 5: return .string(recipeString(&r))
        case 6:
            let n = Int(r.next() % 32)
            return .bytes((0..<n).map { _ in r.next() })
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: r.u64())))
        case 8:
            let b = (0..<16).map { _ in r.next() }
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case 9, 10:
            // Deep chains are cheap to describe: a count byte of 0xFF means one element, nested.
            let count = r.next()
            let n = count == 0xFF ? 1 : Int(count % 8)
            var elements: [AttributeValue] = []
            for _ in 0..<n where !r.isExhausted || elements.isEmpty {
                elements.append(depth > 300 ? .null : buildValue(&r, depth: depth + 1))
            }
            if tag == 10 {
                var m: [String: AttributeValue] = [:]
                for (i, e) in elements.enumerated() { m[recipeString(&r) + (i % 2 == 0 ? "" : "\u{e9}")] = e }
                return .map(m)
            }
            return .array(elements)
        default:
            return .string(String(decoding: (0..<Int(r.next() % 8)).map { _ in r.next() }, as: UTF8.self))
        }
    }

    /// A string of 0-7 characters drawn from a small alphabet that includes multi-byte UTF-8.
    static func recipeString(_ r: inout Recipe) -> String {
        let alphabet: [String] = ["a", "b", "z", "A", "0", " ", "\u{0}", "\u{e9}", "\u{20ac}", "\u{1f600}", "\u{fffd}", "/"]
        return (0..<Int(r.next() % 8)).map { _ in alphabet[Int(r.next()) % alphabet.count] }.joined()
    }

    /// Nesting levels: 1 for a scalar, 1 + the deepest element for arrays and maps.
    static func nesting(_ v: AttributeValue) -> Int {
        switch v {
        case .array(let a): return 1 + (a.map(nesting).max() ?? 0)
        case .map(let m): return 1 + (m.values.map(nesting).max() ?? 0)
        default: return 1
        }
    }

    /// Structural equality with doubles and dates compared by bit pattern (NaN equals itself).
    static func identical(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.date(let x), .date(let y)): return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.map(let x), .map(let y)):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { identical(v, $0) } ?? false }
        default: return a == b
        }
    }
}
