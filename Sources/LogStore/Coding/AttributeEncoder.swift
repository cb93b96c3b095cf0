internal import Foundation
public import LogStoreEngine

/// Encodes `Encodable` values into self-describing `AttributeValue` trees: the form in which
/// DataStore items are stored (not JSON).
///
/// Mapping:
/// - `Bool` -> `.bool`; every integer width -> `.int` (`UInt64`/`UInt` above `Int64.max` by bit
///   pattern); `Double`/`Float` -> `.double` (NaN, -0 and infinities exact); `String` -> `.string`.
/// - `Data` -> `.bytes`, `Date` -> `.date` (exact), `UUID` -> `.uuid`,
///   `URL` -> `.string` of its `absoluteString` (as JSONEncoder does; a base URL is folded in),
///   `Decimal` -> `.string` of its `description` (exact).
/// - Keyed containers (structs, classes, `[String: V]`, `[Int: V]`, enums with associated values)
///   -> `.map`; unkeyed containers (arrays, sets) -> `.array`.
/// - `nil` in a keyed container -> the key is left out (`encodeIfPresent`, what synthesized code
///   uses); an explicit `encodeNil` or a `nil` in an array -> `.null`.
///
/// A value type with no shared state: use one from any thread, or share it freely.
public struct AttributeEncoder: Sendable {
    /// Values handed to `encode(to:)` implementations through `Encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Creates an encoder with empty ``userInfo``.
    public init() {}

    /// Encodes `value` into an attribute tree. Runs on the caller's thread; the result is an
    /// independent value.
    ///
    /// - Throws: `LogStoreError` with code `.encodingFailed` whose `underlyingError` is the
    ///   `EncodingError` (for example a value nested deeper than `AttributeValue/maxDepth`) or the
    ///   error the value's `encode(to:)` threw.
    public func encode<T: Encodable>(_ value: T) throws -> AttributeValue {
        do {
            return try EncodingArena.withEncoded(value, userInfo: userInfo) { try $0.attributeValue() }
        } catch {
            throw CodingErrors.encodingFailed(error, type: T.self)
        }
    }
}
