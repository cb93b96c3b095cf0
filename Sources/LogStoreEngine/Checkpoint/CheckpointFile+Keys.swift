extension CheckpointFile {
    /// A type's keys as a checkpoint is decoded, already in the representation its index will hold
    /// them in (``TypeIndex``): 8-byte keys go straight into ``Key8`` words (16-byte keys into
    /// ``Key16``), and only a key of another length converts what was read so far to
    /// ``RecordKey``s. Opening 1M integer-keyed entries makes no ``RecordKey`` at all.
    struct DecodedKeys {
        enum Keys {
            case key8([Key8])
            case key16([Key16])
            case bytes([RecordKey])
        }
        private(set) var keys: Keys = .key8([])
        private var reserved = 0

        /// Room for `n` keys (the type section's count, already checked against the file size).
        mutating func reserveCapacity(_ n: Int) { reserved = n }

        /// Appends a key's bytes.
        mutating func append(_ bytes: UnsafeRawBufferPointer) {
            switch keys {
            case .key8(var k) where bytes.count == 8:
                keys = .bytes([])  // drop the reference: `k` stays unique and grows in place
                if k.isEmpty { k.reserveCapacity(reserved) }
                k.append(Key8(word: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))))
                keys = .key8(k)
            case .key16(var k) where bytes.count == 16:
                keys = .bytes([])
                k.append(
                    Key16(
                        high: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
                        low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))))
                keys = .key16(k)
            case .bytes(var k):
                keys = .key8([])
                k.append(RecordKey(bytes))
                keys = .bytes(k)
            case .key8(let k) where k.isEmpty && bytes.count == 16:
                var k16: [Key16] = []
                k16.reserveCapacity(reserved)
                keys = .key16(k16)
                append(bytes)
            case .key8(let k):
                keys = .bytes(Self.widened(k, reserving: reserved))
                append(bytes)
            case .key16(let k):
                keys = .bytes(Self.widened(k, reserving: reserved))
                append(bytes)
            }
        }

        private static func widened<K: IndexKey>(_ keys: [K], reserving n: Int) -> [RecordKey] {
            var all: [RecordKey] = []
            all.reserveCapacity(n)
            for k in keys { all.append(k.recordKey) }
            return all
        }

        /// The type's index of `locations` (in the keys' order). A checkpoint lists each type's
        /// entries in key order, so it is built bottom-up in O(n); one written by an older build
        /// lists them in hash order, and they are sorted first (O(n log n)). Nil if a key repeats.
        func index(_ locations: [RecordLocation]) -> TypeIndex? {
            switch keys {
            case .key8(let k):
                return TypeIndex(sortedKeys: k, locations: locations)
                    ?? Self.sorted(k, locations).flatMap { TypeIndex(sortedKeys: $0, locations: $1) }
            case .key16(let k):
                return TypeIndex(sortedKeys: k, locations: locations)
                    ?? Self.sorted(k, locations).flatMap { TypeIndex(sortedKeys: $0, locations: $1) }
            case .bytes(let k):
                return TypeIndex(sortedKeys: k, locations: locations)
                    ?? Self.sorted(k, locations).flatMap { TypeIndex(sortedKeys: $0, locations: $1) }
            }
        }

        private static func sorted<K: Comparable>(_ keys: [K], _ locations: [RecordLocation]) -> ([K], [RecordLocation])? {
            guard keys.count == locations.count else { return nil }
            let order = keys.indices.sorted { keys[$0] < keys[$1] }
            return (order.map { keys[$0] }, order.map { locations[$0] })
        }
    }
}
