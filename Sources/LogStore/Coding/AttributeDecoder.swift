internal import Foundation
public import LogStoreEngine

/// Decodes `Decodable` values from self-describing `AttributeValue` trees (the inverse of
/// ``AttributeEncoder``).
///
/// Lenient where stored data outlives the code that wrote it:
/// - Attributes the type does not declare are ignored.
/// - A missing attribute or a `.null` decodes as `nil` for an `Optional` property, so adding an
///   optional property needs no migration.
/// - `Double`/`Float` accept `.int`; integers accept `.double` only when it is an exact integer;
///   `Date` accepts `.double`/`.int` (seconds since 2001), `UUID` a UUID `.string`, `Decimal`
///   `.int`/`.double`.
///
/// Strict where it would lose data: an integer that does not fit the requested width (300 into
/// `UInt8`) is an error, never a trap or a truncation.
///
/// A value type with no shared state: use one from any thread, or share it freely.
public struct AttributeDecoder: Sendable {
    /// Values handed to `init(from:)` implementations through `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Creates a decoder with empty ``userInfo``.
    public init() {}

    /// Decodes a `T` from `value`. Runs on the caller's thread; the result is an independent value.
    ///
    /// - Throws: `LogStoreError` with code `.decodingFailed` whose message names the coding path
    ///   (for example `address.street`) and what to do, and whose `underlyingError` is the
    ///   `DecodingError` (`keyNotFound`, `typeMismatch`, `valueNotFound`, `dataCorrupted`) or the
    ///   error `T`'s `init(from:)` threw.
    public func decode<T: Decodable>(_ type: T.Type, from value: AttributeValue) throws -> T {
        let w = ValueWriter(capacity: 256)
        do {
            try w.value(value, depth: 0)
            return try w.bytes.withUnsafeBytes { try ByteDecoder.decode(T.self, fromRaw: $0, userInfo: userInfo) }
        } catch {
            throw CodingErrors.decodingFailed(error, type: T.self, malformedIsCorruption: false)
        }
    }
}

// MARK: - Input

/// One item's bytes and the user info, shared by every decoder of one `decode` call (on the
/// caller's thread, for the duration of the call).
///
/// The bytes are not the input's own: they may be a record in a mapped segment, valid only while
/// the read that found it lasts. So the input is invalidated when the decode call returns
/// (``invalidate()``): a `Decodable` whose `init(from:)` keeps its `Decoder` and uses it later
/// reads an empty buffer (a "truncated value" error), never memory that was unmapped or reused.
final class DecodingInput {
    /// The item's bytes, valid for the duration of the one decode call that made this input;
    /// empty after it. (Written once more, by ``invalidate()``, on the decoding thread after the
    /// last read: no access overlaps another.)
    @exclusivity(unchecked) private(set) var bytes: UnsafeRawBufferPointer
    let userInfo: [CodingUserInfoKey: Any]
    /// Coding paths of decoders for absent values (`superDecoder` of a missing key), which have
    /// no offset in `bytes`: decoder offset -(i + 1) stands for `absentPaths[i]`. Only touched on
    /// that rare path, never while another access to it is in progress.
    @exclusivity(unchecked) var absentPaths: [[any CodingKey]] = []

    init(bytes: UnsafeRawBufferPointer, userInfo: [CodingUserInfoKey: Any]) {
        self.bytes = bytes
        self.userInfo = userInfo
    }

    /// Makes the bytes empty: the decode call is over (the lifetime rule above).
    func invalidate() { bytes = UnsafeRawBufferPointer(start: nil, count: 0) }
}

/// A value that does not decode as the requested type; turned into a `DecodingError` with the
/// coding path by `ByteDecoder.fail`.
enum DecodeProblem: Error {
    case mismatch(Any.Type, expected: String, found: UInt8)
    case null(Any.Type)
    case notRepresentable(Any.Type, String)
    case invalid(String)
    case malformed(Malformed)
}

/// One map entry: where its key bytes and its value start.
struct MapEntry {
    let keyStart: Int
    let keyCount: Int
    let value: Int
}

/// Scalar reads at a value's tag offset; each returns the value and the offset after it.
/// A negative offset stands for an absent value and reads as null.
enum ScalarReads {
    @inline(__always)
    static func tag(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> UInt8 {
        if off < 0 { return TagByte.null }
        guard off < b.count else { throw .malformed(Malformed(reason: "truncated value", offset: off)) }
        return b[off]
    }

    @inline(__always)
    static func f64(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> Double {
        do { return try BoundedRead.f64(b, off) } catch { throw .malformed(error) }
    }

    @inline(__always)
    static func int64Payload(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (Int64, Int) {
        var o = off + 1
        do {
            let z = try BoundedRead.uvarint(b, &o)
            return (BoundedRead.zigzag(z), o)
        } catch { throw .malformed(error) }
    }

    @inline(__always)
    static func bool(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (Bool, Int) {
        let t = try tag(b, off)
        switch t {
        case TagByte.true: return (true, off + 1)
        case TagByte.false: return (false, off + 1)
        case TagByte.null: throw .null(Bool.self)
        default: throw .mismatch(Bool.self, expected: "Bool", found: t)
        }
    }

    @inline(__always)
    static func integer<I: FixedWidthInteger>(_: I.Type, _ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (I, Int) {
        let t = try tag(b, off)
        switch t {
        case TagByte.int:
            let (v, next) = try int64Payload(b, off)
            if !I.isSigned && I.bitWidth == 64 {
                // UInt64 values above Int64.max are stored by bit pattern.
                return (I(truncatingIfNeeded: UInt64(bitPattern: v)), next)
            }
            guard let r = I(exactly: v) else {
                throw .notRepresentable(I.self, "The stored integer does not fit in \(I.self).")
            }
            return (r, next)
        case TagByte.double:
            let d = try f64(b, off + 1)
            guard let r = I(exactly: d) else {
                throw .notRepresentable(I.self, "The stored number is not exactly representable as \(I.self).")
            }
            return (r, off + 9)
        case TagByte.null: throw .null(I.self)
        default: throw .mismatch(I.self, expected: "\(I.self)", found: t)
        }
    }

    @inline(__always)
    static func double(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (Double, Int) {
        let t = try tag(b, off)
        switch t {
        case TagByte.double: return (try f64(b, off + 1), off + 9)
        case TagByte.int:
            let (v, next) = try int64Payload(b, off)
            return (Double(v), next)
        case TagByte.null: throw .null(Double.self)
        default: throw .mismatch(Double.self, expected: "Double", found: t)
        }
    }

    @inline(__always)
    static func float(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (Float, Int) {
        let t = try tag(b, off)
        switch t {
        case TagByte.double:
            let d = try f64(b, off + 1)
            let f = Float(d)
            if d.isFinite && !f.isFinite {
                throw .notRepresentable(Float.self, "The stored number does not fit in Float.")
            }
            return (f, off + 9)
        case TagByte.int:
            let (v, next) = try int64Payload(b, off)
            return (Float(v), next)
        case TagByte.null: throw .null(Float.self)
        default: throw .mismatch(Float.self, expected: "Float", found: t)
        }
    }

    @inline(__always)
    static func string(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (String, Int) {
        let t = try tag(b, off)
        guard t == TagByte.string else {
            if t == TagByte.null { throw .null(String.self) }
            throw .mismatch(String.self, expected: "String", found: t)
        }
        var o = off + 1
        let n: Int
        do { n = try BoundedRead.length(b, &o) } catch { throw .malformed(error) }
        guard let s = BoundedRead.string(UnsafeRawBufferPointer(rebasing: b[o..<(o + n)])) else {
            throw .malformed(Malformed(reason: "invalid UTF-8 in string", offset: off))
        }
        return (s, o + n)
    }

    static func date(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (Date, Int) {
        let t = try tag(b, off)
        switch t {
        case TagByte.date, TagByte.double: return (Date(timeIntervalSinceReferenceDate: try f64(b, off + 1)), off + 9)
        case TagByte.int:
            let (v, next) = try int64Payload(b, off)
            return (Date(timeIntervalSinceReferenceDate: Double(v)), next)
        case TagByte.null: throw .null(Date.self)
        default: throw .mismatch(Date.self, expected: "Date", found: t)
        }
    }

    static func uuid(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> (UUID, Int) {
        let t = try tag(b, off)
        switch t {
        case TagByte.uuid:
            guard b.count - off >= 17 else { throw .malformed(Malformed(reason: "truncated UUID", offset: off)) }
            var u: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &u) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[(off + 1)..<(off + 17)])) }
            return (UUID(uuid: u), off + 17)
        case TagByte.string:
            let (s, next) = try string(b, off)
            guard let u = UUID(uuidString: s) else { throw .invalid("The stored string \"\(s)\" is not a UUID.") }
            return (u, next)
        case TagByte.null: throw .null(UUID.self)
        default: throw .mismatch(UUID.self, expected: "UUID", found: t)
        }
    }

    /// `nil` when the value is not `.bytes` (then `Data`'s own `init(from:)` decides).
    static func data(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> Data? {
        guard try tag(b, off) == TagByte.bytes else { return nil }
        var o = off + 1
        let n: Int
        do { n = try BoundedRead.length(b, &o) } catch { throw .malformed(error) }
        return Data(UnsafeRawBufferPointer(rebasing: b[o..<(o + n)]))
    }

    /// `nil` when the value is not `.string` (then `URL`'s own `init(from:)` decides).
    static func url(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> URL? {
        guard try tag(b, off) == TagByte.string else { return nil }
        let s = try string(b, off).0
        guard let u = URL(string: s) else { throw .invalid("The stored string \"\(s)\" is not a valid URL.") }
        return u
    }

    /// `nil` when the value is not a string or number (then `Decimal`'s own `init(from:)` decides).
    static func decimal(_ b: UnsafeRawBufferPointer, _ off: Int) throws(DecodeProblem) -> Decimal? {
        let t = try tag(b, off)
        switch t {
        case TagByte.string:
            let s = try string(b, off).0
            if s == "NaN" { return Decimal.nan }
            guard let d = Decimal(string: s, locale: nil) else {
                throw .invalid("The stored string \"\(s)\" is not a decimal number.")
            }
            return d
        case TagByte.int: return Decimal(try int64Payload(b, off).0)
        case TagByte.double: return Decimal(try f64(b, off + 1))
        case TagByte.null: throw .null(Decimal.self)
        default: return nil
        }
    }
}
