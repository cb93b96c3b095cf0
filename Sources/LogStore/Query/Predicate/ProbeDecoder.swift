import Foundation

/// Builds instances of a `Decodable` type whose stored values are all distinct markers, so that
/// ``KeyPathResolver`` can find where each property lands in the type's encoded form.
///
/// Every leaf the type's `init(from:)` asks for gets a fresh value: strings `" \u{1}pQn "`, numbers
/// `n` (plus 0.5 for floating point; `n` starts high and differs in every probe), dates from `n`, UUIDs and `Data` from `n`'s bytes, URLs
/// `probe://n`; optionals are present; arrays hold one element; dictionaries are empty. Values
/// with only a few possible states (Booleans, and enums that reject a marker) cannot be made
/// distinct in one instance, so each gets an ordinal and probe `p` sets it from bit `p` of that
/// ordinal: across ``probeCount`` instances every such leaf has its own pattern.
///
/// A nested value whose `init(from:)` rejects the markers (an enum with raw values, a validated
/// string) is made from raw memory when the type is plain data (`_isPOD`) of one byte (an enum
/// without payloads: pattern 0 or 1 selects its first or second case) or any size (all zeros);
/// otherwise the whole probe fails and the type's key paths stay unresolved.
struct ProbeDecoder: Decoder {
    /// How many instances are built (and so how many two-state leaves can be told apart: 2^7 - 1).
    static let probeCount = 7

    final class State {
        let probe: Int
        var counter: Int
        var twoState = 0
        /// Markers start high and differ in every probe, so a value derived from stored ones (a
        /// count, a sum, a copy with its case changed) does not equal another marker in all of
        /// them by accident.
        init(probe: Int) {
            self.probe = probe
            counter = 1_000_003 + probe * 104_729
        }

        func next() -> Int {
            counter += 7_919
            return counter
        }

        /// The next two-state leaf's value in this probe.
        func nextBit() -> Bool {
            twoState += 1
            return (twoState >> probe) & 1 == 1
        }
    }

    let state: State
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Instance number `probe` of `T`; throws when the type's decoding cannot be satisfied.
    static func instance<T: Decodable>(of type: T.Type, probe: Int) throws -> T {
        try ProbeDecoder(state: State(probe: probe), codingPath: []).make(T.self)
    }

    func make<T: Decodable>(_ type: T.Type) throws -> T {
        if let v = special(T.self) { return v }
        do {
            return try T(from: self)
        } catch {
            guard _isPOD(T.self), MemoryLayout<T>.size > 0 else { throw error }
            let p = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.size, alignment: MemoryLayout<T>.alignment)
            defer { p.deallocate() }
            p.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
            if MemoryLayout<T>.size == 1 && state.nextBit() { p.storeBytes(of: 1, as: UInt8.self) }
            return p.load(as: T.self)
        }
    }

    /// Markers for the Foundation types whose own decoding would reject them.
    func special<T>(_ type: T.Type) -> T? {
        guard type is UUID.Type || type is Date.Type || type is URL.Type || type is Data.Type || type is Decimal.Type else { return nil }
        let n = state.next()
        switch type {
        case is UUID.Type:
            var u = UUID(uuid: (0xA5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)).uuid
            withUnsafeMutableBytes(of: &u) { $0.storeBytes(of: UInt64(n).bigEndian, toByteOffset: 8, as: UInt64.self) }
            return UUID(uuid: u) as? T
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: Double(n) + 0.5) as? T
        case is URL.Type: return URL(string: "probe://\(n)") as? T
        case is Data.Type: return withUnsafeBytes(of: UInt64(n).bigEndian) { Data($0) } as? T
        default: return Decimal(n) as? T
        }
    }

    func string() -> String { " \u{1}pQ\(state.next()) " }
    func integer<I: FixedWidthInteger>(_: I.Type) -> I { I(truncatingIfNeeded: state.next()) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed(decoder: self) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    func child(_ key: any CodingKey) -> ProbeDecoder {
        ProbeDecoder(state: state, codingPath: codingPath + [key])
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: ProbeDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { decoder.state.nextBit() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { decoder.string() }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { Double(decoder.state.next()) + 0.5 }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(decoder.state.next()) + 0.5 }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { decoder.integer(Int.self) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { decoder.integer(Int8.self) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { decoder.integer(Int16.self) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { decoder.integer(Int32.self) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { decoder.integer(Int64.self) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { decoder.integer(UInt.self) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { decoder.integer(UInt8.self) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { decoder.integer(UInt16.self) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { decoder.integer(UInt32.self) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { decoder.integer(UInt64.self) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.child(key).make(T.self) }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<
            NestedKey
        > {
            try decoder.child(key).container(keyedBy: NestedKey.self)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { Unkeyed(decoder: decoder.child(key)) }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder.child(key) }
    }

    /// One element, then the end.
    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: ProbeDecoder
        var currentIndex = 0
        init(decoder: ProbeDecoder) { self.decoder = decoder }
        var codingPath: [any CodingKey] { decoder.codingPath }
        var count: Int? { 1 }
        var isAtEnd: Bool { currentIndex >= 1 }
        mutating func decodeNil() throws -> Bool { false }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            currentIndex += 1
            return try decoder.make(T.self)
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            currentIndex += 1
            return try decoder.container(keyedBy: NestedKey.self)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            currentIndex += 1
            return Unkeyed(decoder: decoder)
        }
        mutating func superDecoder() throws -> any Decoder { decoder }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: ProbeDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { decoder.state.nextBit() }
        func decode(_ type: String.Type) throws -> String { decoder.string() }
        func decode(_ type: Double.Type) throws -> Double { Double(decoder.state.next()) + 0.5 }
        func decode(_ type: Float.Type) throws -> Float { Float(decoder.state.next()) + 0.5 }
        func decode(_ type: Int.Type) throws -> Int { decoder.integer(Int.self) }
        func decode(_ type: Int8.Type) throws -> Int8 { decoder.integer(Int8.self) }
        func decode(_ type: Int16.Type) throws -> Int16 { decoder.integer(Int16.self) }
        func decode(_ type: Int32.Type) throws -> Int32 { decoder.integer(Int32.self) }
        func decode(_ type: Int64.Type) throws -> Int64 { decoder.integer(Int64.self) }
        func decode(_ type: UInt.Type) throws -> UInt { decoder.integer(UInt.self) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { decoder.integer(UInt8.self) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { decoder.integer(UInt16.self) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { decoder.integer(UInt32.self) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { decoder.integer(UInt64.self) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.make(T.self) }
    }
}
