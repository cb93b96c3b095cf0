import Foundation
import LogStore
import LogStoreCommandSupport
import LogStoreSQLite

/// A store named on the command line: a LogStore directory or a SQLite file.
///
///     logstore:<directory>    a LogStore store (a directory; created if missing)
///     sqlite:<file>           a SQLite store (a file; created if missing)
///     <path>                  an existing directory: LogStore; an existing file, or a path ending
///                             in .sqlite, .sqlite3 or .db: SQLite; anything else: LogStore
struct StoreLocation: CustomStringConvertible {
    enum Kind: String {
        case logStore = "logstore"
        case sqlite
    }

    let kind: Kind
    let path: String

    /// Parses `argument`. Throws a usage failure for an empty path.
    init(_ argument: String) throws {
        if argument.hasPrefix("sqlite:") {
            kind = .sqlite
            path = String(argument.dropFirst("sqlite:".count))
        } else if argument.hasPrefix("logstore:") {
            kind = .logStore
            path = String(argument.dropFirst("logstore:".count))
        } else {
            path = argument
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory)
            let ext = (argument as NSString).pathExtension.lowercased()
            if exists {
                kind = isDirectory.boolValue ? .logStore : .sqlite
            } else {
                kind = ["sqlite", "sqlite3", "db"].contains(ext) ? .sqlite : .logStore
            }
        }
        guard !path.isEmpty else { throw ToolFailure(.usage, "A store path is empty: give a LogStore directory or a SQLite file (optionally prefixed logstore: or sqlite:).") }
    }

    /// `sqlite:/data/app.sqlite`.
    var description: String { "\(kind.rawValue):\(path)" }

    /// Opens the store (`setup()`: takes its lock, creates it if missing when `create`). Throws a
    /// not-a-store failure for a missing source, and the store's `LogStoreError`s.
    func open(create: Bool) throws -> any DataStore {
        if !create && !FileManager.default.fileExists(atPath: path) {
            throw ToolFailure(.notAStore, "There is no store at \(path).", path: path)
        }
        let store: any DataStore
        switch kind {
        case .logStore: store = LogDataStore(directory: URL(fileURLWithPath: path))
        case .sqlite: store = SQLiteDataStore(path: path)
        }
        try store.setup()
        return store
    }
}
