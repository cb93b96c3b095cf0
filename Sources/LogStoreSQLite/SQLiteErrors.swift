import Foundation
import GRDB
import GRDBSQLite
import LogStore

/// SQLite's failures as LogStore's typed errors (Docs/SQLBackends.md, "SQLite", failure
/// table): the code says what happened, the message what to do, the SQLite error is the cause.
enum SQLiteErrors {
    /// `error` (anything thrown by GRDB or by a raw statement) as a `LogStoreError` for the store
    /// at `path`. A `LogStoreError` passes through unchanged.
    static func map(_ error: any Error, path: String) -> LogStoreError {
        if let e = error as? LogStoreError { return e }
        guard let db = error as? DatabaseError else {
            return LogStoreError(.io, "The SQLite store failed: \(error).", path: path, underlying: error)
        }
        return map(code: db.resultCode.primaryResultCode.rawValue, message: db.message ?? "\(db)", path: path, underlying: db)
    }

    /// A primary SQLite result `code` as a `LogStoreError`.
    static func map(code: Int32, message: String, path: String, underlying: (any Error)? = nil) -> LogStoreError {
        switch code {
        case SQLITE_FULL:
            return LogStoreError(
                .diskFull,
                "The disk is full (SQLite: \(message)). The transaction was rolled back; nothing committed was lost. Free space and retry.",
                path: path, underlying: underlying)
        case SQLITE_CORRUPT:
            return LogStoreError(
                .corruption,
                "The SQLite file is damaged (\(message)). Restore it from a backup, or copy what is readable with logstore-migrate into a new store.",
                path: path, underlying: underlying)
        case SQLITE_NOTADB:
            return LogStoreError(
                .notAStore,
                "The file is not a SQLite database (\(message)), so it is not a LogStore SQLite store. Give the path of a store, or a path that does not exist yet.",
                path: path, underlying: underlying)
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH:
            return LogStoreError(
                .permissionDenied,
                "SQLite may not write the store (\(message)). Check the file's and its directory's owner and mode, and that the file system is writable.",
                path: path, underlying: underlying)
        case SQLITE_CANTOPEN:
            return LogStoreError(
                .permissionDenied, "SQLite cannot open the store (\(message)). Check that the directory exists and is writable.",
                path: path, underlying: underlying)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return LogStoreError(
                .locked,
                "Another process holds the SQLite file's lock (\(message)). Close the other program (an app, the sqlite3 shell) and retry.",
                path: path, underlying: underlying)
        case SQLITE_CONSTRAINT:
            // The only constraints besides the key (written with an upsert) are unique indexes.
            return LogStoreError(
                .uniqueConstraintViolation,
                "A write would give two items equal values in every column of a unique index (\(message)). The write block was rolled back; change or delete the other item first.",
                path: path, underlying: underlying)
        case SQLITE_TOOBIG:
            return LogStoreError(.itemTooLarge, "An item is larger than SQLite accepts (\(message)).", path: path, underlying: underlying)
        case SQLITE_MISUSE where message.lowercased().contains("closed"):
            return StoreErrors.notOpen(path: path, underlying: underlying)
        default:
            if message.contains("malformed JSON") {
                return LogStoreError(
                    .corruption, "A stored item is not valid JSON (\(message)). Restore the store from a backup or delete the item.",
                    path: path, underlying: underlying)
            }
            return LogStoreError(.io, "SQLite failed (\(message)).", path: path, underlying: underlying)
        }
    }
}
