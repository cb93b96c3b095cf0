// Coding paths and error translation shared by AttributeEncoder and AttributeDecoder.

internal import Foundation
internal import LogStoreEngine

/// One step of a coding path, kept cheap until someone asks for `codingPath` (array indices are
/// not turned into `"Index 3"` strings unless an error needs them).
enum PathComponent {
    case key(String, Int?)
    case index(Int)

    var codingKey: PathKey {
        switch self {
        case .key(let s, let i): PathKey(stringValue: s, intValue: i)
        case .index(let i): PathKey(index: i)
        }
    }
}

/// The `CodingKey` the coders put in coding paths they build themselves.
struct PathKey: CodingKey, Sendable {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    init(stringValue: String, intValue: Int?) {
        self.stringValue = stringValue
        self.intValue = intValue
    }

    /// An array position (`codingPath` entries for unkeyed containers, as JSONDecoder names them).
    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }
}

extension TooDeep {
    /// The `EncodingError` this depth violation stands for.
    var encodingError: EncodingError {
        let why =
            equivalentKey.map {
                _ in
                "The map has two keys that are equal as Swift strings but differ in bytes (one NFC, one NFD); stored maps may not (Docs/FileFormat.md, Values)."
            } ?? "The value is nested deeper than \(AttributeValue.maxDepth) levels, the most stored items may nest."
        return .invalidValue(Optional<Int>.none as Any, .init(codingPath: path.map(\.codingKey), debugDescription: why))
    }
}

enum CodingErrors {
    /// The most levels of a coding path an error message shows.
    static let shownPathLevels = 24

    /// `address.street`, `tags[2]`, or `(top level)`.
    /// A path deeper than ``shownPathLevels`` shows its first and last levels around a count of
    /// those left out, so that describing it is cheap whatever the value's depth.
    static func describe(_ path: [any CodingKey]) -> String {
        if path.isEmpty { return "(top level)" }
        if path.count > shownPathLevels {
            let head = describe(Array(path.prefix(shownPathLevels / 4)))
            let tail = describe(Array(path.suffix(shownPathLevels - shownPathLevels / 4)))
            return "\(head)…(\(path.count - shownPathLevels) more levels)…\(tail.hasPrefix("[") ? "" : ".")\(tail)"
        }
        var s = ""
        for k in path {
            if let i = k.intValue, k.stringValue == "Index \(i)" {
                s += "[\(i)]"
            } else {
                if !s.isEmpty { s += "." }
                s += k.stringValue
            }
        }
        return s
    }

    /// Wraps any error out of encoding a `T` in `LogStoreError(.encodingFailed)`.
    static func encodingFailed(_ error: any Error, type: Any.Type) -> LogStoreError {
        if let e = error as? LogStoreError, e.code == .encodingFailed { return e }
        if let deep = error as? TooDeep { return encodingFailed(deep.encodingError, type: type) }
        switch error {
        case EncodingError.invalidValue(_, let ctx):
            // The error keeps the coding path and the reason as text, never the value the
            // EncodingError holds: printing or keeping that could walk (and keep alive) the
            // whole item.
            let failure = CodingFailure(codingPath: describe(ctx.codingPath), reason: ctx.debugDescription)
            return LogStoreError(
                .encodingFailed,
                "Cannot encode \(type) as attributes: \(failure) "
                    + "Change the value or its encode(to:) so that it encodes less deeply nested or valid values.",
                underlying: failure)
        default:
            return LogStoreError(
                .encodingFailed, "Cannot encode \(type) as attributes: its encode(to:) threw \(Swift.type(of: error)).", underlying: error)
        }
    }

    /// Wraps any error out of decoding a `T` in `LogStoreError(.decodingFailed)` (or `.corruption`
    /// for bytes that break the value grammar, when `malformedIsCorruption`).
    static func decodingFailed(_ error: any Error, type: Any.Type, malformedIsCorruption: Bool) -> LogStoreError {
        if let e = error as? LogStoreError, e.code == .decodingFailed || e.code == .corruption { return e }
        if let deep = error as? TooDeep {
            let failure = CodingFailure(
                codingPath: describe(deep.path.map(\.codingKey)), reason: "nested deeper than \(AttributeValue.maxDepth) levels")
            return LogStoreError(
                .decodingFailed,
                "Cannot decode \(type): the attribute value is nested deeper than \(AttributeValue.maxDepth) levels "
                    + "at `\(failure.codingPath)`. Flatten the value.",
                underlying: failure)
        }
        let subject = "Cannot decode \(type) from the stored attributes"
        let message: String
        switch error {
        case DecodingError.keyNotFound(let key, let ctx):
            let path = describe(ctx.codingPath + [key])
            message =
                "\(subject): the attribute `\(path)` is missing and its property is not optional. "
                + "Declare the property Optional (a missing optional decodes as nil), or decode it with "
                + "decodeIfPresent and a default in init(from:), or rewrite the stored items so they have it."
        case DecodingError.valueNotFound(let expected, let ctx):
            message =
                "\(subject): the attribute `\(describe(ctx.codingPath))` is null but \(expected) is not optional. "
                + "Declare the property Optional, or rewrite the stored items."
        case DecodingError.typeMismatch(_, let ctx):
            message =
                "\(subject): the attribute `\(describe(ctx.codingPath))` has another type: \(ctx.debugDescription) "
                + "Make the property's type match the stored data, or convert old values in a custom "
                + "init(from:), or rewrite the stored items."
        case DecodingError.dataCorrupted(let ctx):
            if let m = ctx.underlyingError as? Malformed {
                let failure = CodingFailure(codingPath: describe(ctx.codingPath), reason: "\(m)")
                return LogStoreError(
                    malformedIsCorruption ? .corruption : .decodingFailed,
                    "\(subject): the item's bytes are damaged (\(m)) at `\(failure.codingPath)`. "
                        + "Run the store's verification or restore the item from a backup.",
                    offset: UInt64(max(0, m.offset)), underlying: failure)
            }
            message =
                "\(subject): the attribute `\(describe(ctx.codingPath))` is invalid: \(ctx.debugDescription) "
                + "Rewrite the stored items or make the property accept the stored value."
        default:
            return LogStoreError(.decodingFailed, "\(subject): its init(from:) threw \(Swift.type(of: error)).", underlying: error)
        }
        return LogStoreError(.decodingFailed, message, underlying: CodingFailure(error))
    }
}

/// The array types the coders read and write natively, as metatypes looked up once. In generic
/// code that is not specialized for the value's type (an item's `init(from:)` or `encode(to:)`
/// in another module calls the coders through the `Decoder` and `Encoder` protocols),
/// `T.self == [String].self` asks the runtime for the array's metadata at every comparison, a
/// hash lookup of about 400 instructions (callgrind, a point read of an item with one `[String]`
/// and one `Date` property: three lookups per read). Comparing with these costs a load.
enum NativeArrayTypes {
    static let strings: Any.Type = [String].self
    static let ints: Any.Type = [Int].self
    static let doubles: Any.Type = [Double].self
    static let int64s: Any.Type = [Int64].self
    static let bools: Any.Type = [Bool].self
    static let uuids: Any.Type = [UUID].self
    static let dates: Any.Type = [Date].self
}

/// Why an item could not be encoded or decoded: where in the item (its coding path, shortened
/// when deep) and what was wrong, as text. It holds no value of the item, so an error that carries
/// it can be kept, logged and printed on any thread (a deep value's own description can exhaust
/// a small stack, and would keep the value alive). The `underlyingError` of `.encodingFailed`
/// and `.decodingFailed` errors. A value; any thread.
public struct CodingFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where in the item: `address.street`, `tags[2]`, `(top level)`; the first and last levels
    /// of a deep path around a count of the others.
    public let codingPath: String
    /// What was wrong, as the coder described it.
    public let reason: String

    /// A failure at `codingPath` (already described) for `reason`.
    init(codingPath: String, reason: String) {
        self.codingPath = codingPath
        self.reason = reason
    }

    /// The path and description of a `DecodingError` or `EncodingError` (not its values).
    init(_ error: any Error) {
        switch error {
        case DecodingError.keyNotFound(let key, let ctx):
            self.init(codingPath: CodingErrors.describe(ctx.codingPath + [key]), reason: "missing")
        case DecodingError.valueNotFound(_, let ctx), DecodingError.typeMismatch(_, let ctx), DecodingError.dataCorrupted(let ctx):
            self.init(codingPath: CodingErrors.describe(ctx.codingPath), reason: ctx.debugDescription)
        case EncodingError.invalidValue(_, let ctx):
            self.init(codingPath: CodingErrors.describe(ctx.codingPath), reason: ctx.debugDescription)
        default:
            self.init(codingPath: "(unknown)", reason: "\(Swift.type(of: error))")
        }
    }

    /// `at `path`: reason`.
    public var description: String { "at `\(codingPath)`: \(reason)" }
}
