import Foundation
public import LogStore
public import LogStoreEngine

/// The migration step of the DataStore crash workload (``DataStoreCrashStep/migrate(_:)``): a
/// migration that walks one item type through ``MigrationTransaction`` (raw items, no Swift
/// type), rewrites or deletes each item by a pure function of its key and value, and inserts the
/// transaction's marker. The model computes the same operations from its state
/// (``DataStoreCrashModel/migrationOperations(type:)``), so the oracle's rule for it is the rule
/// for any transaction: after a crash the store shows it whole or not at all, before or after the
/// step. Pure functions and a registration; any thread.
public enum DataStoreCrashMigration {
    /// The name of the migration that is transaction `n`.
    public static func name(_ n: UInt64) -> String { "crash-migration-\(n)" }

    /// What the migration of transaction `n` makes of record (`type`, `key`) holding `value`: a
    /// new value (written by `n`, its payload "m" and the old payload's first bytes), or nil to
    /// delete it (every key whose last byte is a multiple of 5).
    public static func transform(type: String, key: RecordKey, value: [UInt8], transaction n: UInt64) -> [UInt8]? {
        if let last = key.bytes.last, last % 5 == 0 { return nil }
        let old = value.count >= 16 ? Array(value[12..<(value.count - 4)]) : []
        return CrashWorkloadValue.encode(txn: n, type: type, key: key, payload: Array("m".utf8) + old.prefix(8))
    }

    /// The marker record of migration transaction `n`.
    public static func marker(_ n: UInt64) -> (key: RecordKey, value: [UInt8]) {
        let key = CrashWorkloadValue.markerKey(n)
        return (key, CrashWorkloadValue.encode(txn: n, type: CrashWorkloadValue.markerType, key: key, payload: Array("migrate".utf8)))
    }

    /// Registers on `migrations` the migration that is transaction `n` over `type`. Its body
    /// throws a ``CrashOracleViolation`` when a walked item is not a crash record.
    public static func register(type: String, transaction n: UInt64, on migrations: DataStoreMigrations) {
        migrations.register(name(n)) { tx in
            let kind = try DataStoreCrashTypes.kind(type)
            try tx.forEachItem(ofType: type) { item in
                guard case .int(let id) = item.id, case .string(let text)? = item.object(forKey: "value"),
                    let old = Data(base64Encoded: text)
                else { throw CrashOracleViolation("Migration \(n) walked a \(type) that is not a crash record: \(item)") }
                if let new = transform(type: type, key: kind.key(forID: id), value: [UInt8](old), transaction: n) {
                    var copy = item
                    copy.setObject(.string(Data(new).base64EncodedString()), forKey: "value")
                    try tx.insert(copy)
                } else {
                    try tx.delete(item)
                }
            }
            let m = marker(n)
            try tx.insert(
                DynamicItem(
                    itemType: CrashWorkloadValue.markerType, id: .int(Int64(bitPattern: n)),
                    attributes: ["value": .string(Data(m.value).base64EncodedString())]))
        }
    }
}
