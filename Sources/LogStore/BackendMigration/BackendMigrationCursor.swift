import Foundation
import LogStoreEngine

/// Where an interrupted copy stands, kept in the destination as one record of the reserved item
/// type `logstore.migration` (key `cursor`), written in the same transaction as each batch of
/// items, so after a crash or kill it always names the last batch that committed.
///
///     cursor := map {
///         "version": 1, "source": string (what the copy was started from),
///         "types": [string] (the types to copy, in order), "index": int (the type being copied),
///         "after": bytes (the last key copied of that type; absent before its first batch),
///         "copied": [int] (items copied per type), "bytes": [int] (bytes copied per type),
///         "token": string (optional: the source's change token, JSON, taken before the copy's
///                  snapshot and advanced by each catch-up; absent when the source has none)
///     }
///
/// The last batch leaves it with `index` equal to the number of types (complete), so a copy
/// killed after its last batch resumes to nothing left; `BackendMigrator.finish()` deletes it
/// once the copy is verified.
struct BackendMigrationCursor: Equatable {
    static let itemType = "logstore.migration"
    static let key = RecordKey(Array("cursor".utf8))

    var source: String
    var types: [String]
    var index = 0
    var after: RecordKey? = nil
    var copied: [Int]
    var bytes: [Int]
    /// The source's change token the destination is caught up to (``BackendMigrator/catchUp()``).
    var token: DataStoreChangeToken? = nil

    init(source: String, types: [String]) {
        self.source = source
        self.types = types
        copied = Array(repeating: 0, count: types.count)
        bytes = Array(repeating: 0, count: types.count)
    }

    var encoded: [UInt8] {
        var m: [String: AttributeValue] = [
            "version": .int(1), "source": .string(source), "types": .array(types.map { .string($0) }), "index": .int(Int64(index)),
            "copied": .array(copied.map { .int(Int64($0)) }), "bytes": .array(bytes.map { .int(Int64($0)) }),
        ]
        if let after { m["after"] = .bytes(after.bytes) }
        if let token, let json = try? JSONEncoder().encode(token) { m["token"] = .string(String(decoding: json, as: UTF8.self)) }
        return AttributeValue.map(m).encoded()
    }

    /// Reads a cursor record. Throws `.corruption` when it is not one this version wrote.
    init(decoding bytes: [UInt8]) throws {
        func bad() -> LogStoreError {
            LogStoreError(
                .corruption,
                "The destination's migration cursor (item type \(Self.itemType)) is damaged or from another version. Delete the destination's items and copy again."
            )
        }
        guard case .map(let m) = try AttributeValue.decode(bytes), m["version"] == .int(1),
            case .string(let source)? = m["source"], case .array(let types)? = m["types"], case .int(let index)? = m["index"],
            case .array(let copied)? = m["copied"], case .array(let sizes)? = m["bytes"],
            copied.count == types.count, sizes.count == types.count, index >= 0, Int(index) <= types.count
        else { throw bad() }
        self.source = source
        self.types = try types.map { v -> String in
            guard case .string(let s) = v else { throw bad() }
            return s
        }
        self.index = Int(index)
        self.copied = try copied.map { v -> Int in
            guard case .int(let i) = v else { throw bad() }
            return Int(i)
        }
        self.bytes = try sizes.map { v -> Int in
            guard case .int(let i) = v else { throw bad() }
            return Int(i)
        }
        switch m["after"] {
        case nil: after = nil
        case .bytes(let b)?: after = RecordKey(b)
        default: throw bad()
        }
        switch m["token"] {
        case nil: token = nil
        case .string(let json)?:
            guard let t = try? JSONDecoder().decode(DataStoreChangeToken.self, from: Data(json.utf8)) else { throw bad() }
            token = t
        default: throw bad()
        }
    }
}
